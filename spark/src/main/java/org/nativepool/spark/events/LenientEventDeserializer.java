package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Parameter;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads one of the plugin's events from an event log without ever failing on its fields: the
 * History Server replays logs that any application wrote, and Spark's replay stops at the first
 * event Jackson cannot read ({@code ReplayListenerBus} rethrows a {@code JsonMappingException}), so
 * one malformed event would hide the rest of the application's history. Each field is read as
 * Jackson would read a well-formed one; a field of the wrong type, out of range or absent reads as
 * absent (0, false, null, or left out of a map or list), and the event's {@link JsonCreator}
 * constructor, which takes absent values, builds the event. Each event class names its subclass
 * with {@code @JsonDeserialize}. Stateless; safe for concurrent use.
 *
 * @param <T> the event class
 */
public abstract class LenientEventDeserializer<T> extends StdDeserializer<T> {
  private static final long serialVersionUID = 1L;

  private final transient Constructor<T> creator;

  /** A reader of {@code type}, through its {@link JsonCreator} constructor. */
  protected LenientEventDeserializer(Class<T> type) {
    super(type);
    this.creator = creatorOf(type);
  }

  @SuppressWarnings("unchecked")
  private static <T> Constructor<T> creatorOf(Class<T> type) {
    for (Constructor<?> c : type.getConstructors()) {
      if (c.isAnnotationPresent(JsonCreator.class)) {
        return (Constructor<T>) c;
      }
    }
    throw new IllegalStateException(type + " has no @JsonCreator constructor");
  }

  @Override
  public T deserialize(JsonParser p, DeserializationContext ctx) throws IOException {
    JsonNode node = p.readValueAsTree();
    Parameter[] params = creator.getParameters();
    Object[] args = new Object[params.length];
    for (int i = 0; i < params.length; i++) {
      JsonProperty name = params[i].getAnnotation(JsonProperty.class);
      JsonNode v = node == null || name == null ? null : node.get(name.value());
      args[i] = read(v, params[i].getParameterizedType(), ctx);
    }
    try {
      return creator.newInstance(args);
    } catch (InvocationTargetException | InstantiationException | IllegalAccessException e) {
      throw new IllegalStateException("nativepool: cannot build " + handledType().getName(), e);
    }
  }

  /** {@code v} as a value of {@code type}, or absent (a primitive's 0 or false, else null). */
  static Object read(JsonNode v, Type type, DeserializationContext ctx) {
    Class<?> raw = raw(type);
    boolean ok = v != null && !v.isNull() && !v.isMissingNode();
    if (raw == long.class || raw == Long.class) {
      Object n = ok && v.isIntegralNumber() && v.canConvertToLong() ? (Object) v.asLong() : null;
      return n == null && raw == long.class ? (Object) 0L : n;
    }
    if (raw == int.class || raw == Integer.class) {
      Object n = ok && v.isIntegralNumber() && v.canConvertToInt() ? (Object) v.asInt() : null;
      return n == null && raw == int.class ? (Object) 0 : n;
    }
    if (raw == double.class || raw == Double.class) {
      Object n = ok && v.isNumber() ? (Object) v.asDouble() : null;
      return n == null && raw == double.class ? (Object) 0.0 : n;
    }
    if (raw == boolean.class || raw == Boolean.class) {
      Object b = ok && v.isBoolean() ? (Object) v.asBoolean() : null;
      return b == null && raw == boolean.class ? Boolean.FALSE : b;
    }
    if (!ok) {
      return null;
    }
    if (raw == String.class) {
      return v.isValueNode() ? v.asText() : null;
    }
    if (raw.isEnum()) {
      for (Object c : raw.getEnumConstants()) {
        if (v.isTextual() && ((Enum<?>) c).name().equals(v.asText())) {
          return c;
        }
      }
      return null;
    }
    if (Map.class.isAssignableFrom(raw)) {
      if (!v.isObject()) {
        return null;
      }
      Type value = argument(type, 1);
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<String, JsonNode> e : v.properties()) {
        Object x = read(e.getValue(), value, ctx);
        if (x != null) {
          out.put(e.getKey(), x);
        }
      }
      return out;
    }
    if (List.class.isAssignableFrom(raw)) {
      if (!v.isArray()) {
        return null;
      }
      Type element = argument(type, 0);
      List<Object> out = new ArrayList<>();
      for (JsonNode e : v) {
        Object x = read(e, element, ctx);
        if (x != null) {
          out.add(x);
        }
      }
      return out;
    }
    try {
      return ctx.readTreeAsValue(v, ctx.getTypeFactory().constructType(type));
    } catch (IOException | RuntimeException e) {
      return null; // a nested value Jackson cannot read: absent, as the rest
    }
  }

  private static Class<?> raw(Type t) {
    if (t instanceof Class<?> c) {
      return c;
    }
    if (t instanceof ParameterizedType p) {
      return raw(p.getRawType());
    }
    return Object.class;
  }

  private static Type argument(Type t, int i) {
    return t instanceof ParameterizedType p && p.getActualTypeArguments().length > i
        ? p.getActualTypeArguments()[i]
        : Object.class;
  }
}
