package org.nativepool.spark.jni;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Go side's log records, through SLF4J (so log4j in Spark): one SLF4J logger per Go package,
 * and the task a record is about in its text.
 *
 * <p><b>Loggers.</b> A record made in Go package {@code pool} is logged on {@code
 * org.nativepool.pool}; likewise {@code taskshared}, {@code ffi}, {@code jni}, {@code
 * internal/bridge} ({@code org.nativepool.bridge}); an engine's package {@code x} on {@code
 * org.nativepool.engine.x} (an engine's own c-shared {@code main} package on {@code
 * org.nativepool.engine}). Go's levels map to SLF4J's: below DEBUG is TRACE, DEBUG, INFO, WARN,
 * and ERROR and above is ERROR. The record's attributes follow its message as {@code key=value}.
 *
 * <p><b>Task.</b> Spark's default layout prints no MDC, so the task is in the text: {@code [task 12
 * stage 3.0 partition 5] message key=value}. It comes from the record's {@code task} attribute (Go
 * knows the task of every record a task pool makes, on any thread), else from {@link
 * TaskContext#get()} when the record is made on a task thread. Stage and partition come from the
 * thread's {@code TaskContext} if it is that task's, else from the tasks that opened a pool in
 * this JVM ({@link #taskStarted}); a task known only by id prints {@code [task 12]}.
 *
 * <p><b>Levels.</b> Go pays no upcall for a disabled record: {@link #configure} computes each Go
 * logger's effective SLF4J level once, and Go tests a record's level against them before it calls
 * Java. {@code spark.nativepool.logLevel}, if set, first sets the level of {@code
 * org.nativepool} and every logger below it in log4j (it wins over log4j's configuration for
 * them). A log4j reconfiguration after {@link #configure} is seen by Go at the next {@link
 * #configure} (the next plugin start); until then a level raised in log4j still filters here,
 * a level lowered lets through no more than Go already sends.
 *
 * <p>Before the plugin configures logging (and in a process without a JVM), Go's records go to
 * Go's own default handler, on stderr.
 */
public final class GoLog {
  private static final Logger LOG = LoggerFactory.getLogger(GoLog.class);

  /** The logger of records Go could not place (no call site): the parent of every Go logger. */
  public static final String ROOT = GoLoggers.ROOT;

  // Level codes of GoLog.log, and the loggers and level names configureLog0 takes: declared in Go,
  // generated into GoLoggers.
  static final int TRACE = GoLoggers.TRACE;
  static final int DEBUG = GoLoggers.DEBUG;
  static final int INFO = GoLoggers.INFO;
  static final int WARN = GoLoggers.WARN;
  static final int ERROR = GoLoggers.ERROR;
  static final int OFF = GoLoggers.OFF;

  /** Task attempt id → "task 12 stage 3.0 partition 5", for tasks with an open pool. */
  private static final Map<Long, String> TASKS = new ConcurrentHashMap<>();

  /** SLF4J loggers by name (LoggerFactory is slower than a map hit). */
  private static final Map<String, Logger> LOGGERS = new ConcurrentHashMap<>();

  /** Records Go sent whose SLF4J level is disabled (0 unless levels changed after configure). */
  private static final AtomicLong belowLevel = new AtomicLong();

  /** Records received from Go, all levels. */
  private static final AtomicLong received = new AtomicLong();

  private GoLog() {}

  /**
   * Makes every Go record go through SLF4J from now on, at levels computed now: first applies
   * {@code logLevel} ({@code spark.nativepool.logLevel}) if non-null, then hands Go the
   * effective level of each of {@link GoLoggers#NAMES}. The library must be loaded. Idempotent; call
   * again to pick up changed levels.
   *
   * @param logLevel TRACE, DEBUG, INFO, WARN, ERROR or OFF (any case), or null to keep log4j's
   * @throws IllegalArgumentException if {@code logLevel} is not a level
   */
  public static void configure(String logLevel) {
    if (logLevel != null && !logLevel.isBlank()) {
      setLog4jLevel(parseLevel(logLevel));
    }
    try {
      Natives.configureLog0(levels());
    } catch (UnsatisfiedLinkError e) {
      // An engine's own library built against an older nativepool: its records stay on stderr.
      LOG.warn("nativepool: the loaded library has no configureLog0; Go's logs stay on stderr", e);
    }
  }

  /** The {@code configureLog0} string: {@code name=LEVEL} for each of {@link GoLoggers#NAMES}. */
  static String levels() {
    StringBuilder b = new StringBuilder();
    for (String name : GoLoggers.NAMES) {
      if (b.length() > 0) {
        b.append(',');
      }
      b.append(name).append('=').append(GoLoggers.LEVEL_NAMES.get(effectiveLevel(logger(name))));
    }
    return b.toString();
  }

  /** The lowest level {@code log} has enabled, or {@link #OFF}. */
  static int effectiveLevel(Logger log) {
    if (log.isTraceEnabled()) {
      return TRACE;
    } else if (log.isDebugEnabled()) {
      return DEBUG;
    } else if (log.isInfoEnabled()) {
      return INFO;
    } else if (log.isWarnEnabled()) {
      return WARN;
    } else if (log.isErrorEnabled()) {
      return ERROR;
    }
    return OFF;
  }

  /**
   * A level name of {@code spark.nativepool.logLevel}, as a code.
   *
   * @throws IllegalArgumentException naming the setting, for anything else
   */
  static int parseLevel(String s) {
    String n = s.trim().toUpperCase(Locale.ROOT);
    for (int i = 0; i < GoLoggers.LEVEL_NAMES.size(); i++) {
      if (GoLoggers.LEVEL_NAMES.get(i).equals(n)) {
        return i;
      }
    }
    throw new IllegalArgumentException(
        "nativepool: log level '" + s + "': not one of TRACE, DEBUG, INFO, WARN, ERROR, OFF");
  }

  /**
   * Sets {@link #ROOT} and every logger below it to {@code code} in log4j 2, Spark's SLF4J backend
   * (as {@code SparkContext.setLogLevel} does for the root logger). With another backend it logs a
   * warning and changes nothing.
   */
  private static void setLog4jLevel(int code) {
    try {
      org.apache.logging.log4j.core.config.Configurator.setAllLevels(
          ROOT, org.apache.logging.log4j.Level.toLevel(GoLoggers.LEVEL_NAMES.get(code)));
    } catch (LinkageError | RuntimeException e) {
      LOG.warn(
          "nativepool: spark.nativepool.logLevel needs log4j 2 as SLF4J's backend; ignored", e);
    }
  }

  /**
   * Remembers the stage and partition of a task, so that records Go makes about it off its thread
   * name them. Called on the task thread by the open that creates the task's pool; {@link
   * #taskEnded} forgets it.
   */
  public static void taskStarted(TaskContext ctx) {
    TASKS.put(ctx.taskAttemptId(), describe(ctx));
  }

  /** Forgets a task remembered by {@link #taskStarted}. */
  public static void taskEnded(long taskAttemptId) {
    TASKS.remove(taskAttemptId);
  }

  private static String describe(TaskContext ctx) {
    return "task "
        + ctx.taskAttemptId()
        + " stage "
        + ctx.stageId()
        + "."
        + ctx.stageAttemptNumber()
        + " partition "
        + ctx.partitionId();
  }

  /**
   * The text of a record: {@code [task … stage … partition …] } (as much as is known) then {@code
   * message}.
   *
   * @param task the task attempt id Go gave, or -1
   * @param ctx the calling thread's task, or null
   */
  static String text(long task, TaskContext ctx, String message) {
    String where;
    if (ctx != null && (task < 0 || ctx.taskAttemptId() == task)) {
      where = describe(ctx);
    } else if (task >= 0) {
      where = TASKS.getOrDefault(task, "task " + task);
    } else {
      return message;
    }
    return "[" + where + "] " + message;
  }

  private static Logger logger(String name) {
    return LOGGERS.computeIfAbsent(name, LoggerFactory::getLogger);
  }

  /**
   * Called from native code through JNI (np_log, any thread, attached or not): logs one Go record.
   * Never throws and never calls native code (a record may be made while a Go pool's lock is
   * held); a failure is written to {@code System.err} with the record.
   *
   * @param level TRACE (0) … ERROR (4)
   * @param loggerName the Go package's logger
   * @param task the task attempt id, or -1 if Go does not know it
   * @param message the message and its {@code key=value} attributes
   */
  static void log(int level, String loggerName, long task, String message) {
    try {
      received.incrementAndGet();
      Logger log = logger(loggerName);
      if (!isEnabled(log, level)) {
        belowLevel.incrementAndGet();
        return;
      }
      String text = text(task, TaskContext.get(), message);
      switch (level) {
        case TRACE:
          log.trace(text);
          break;
        case DEBUG:
          log.debug(text);
          break;
        case INFO:
          log.info(text);
          break;
        case WARN:
          log.warn(text);
          break;
        default:
          log.error(text);
          break;
      }
    } catch (Throwable t) {
      System.err.println(
          "nativepool: Go record not logged (" + t + "): " + loggerName + ": " + message);
    }
  }

  private static boolean isEnabled(Logger log, int level) {
    switch (level) {
      case TRACE:
        return log.isTraceEnabled();
      case DEBUG:
        return log.isDebugEnabled();
      case INFO:
        return log.isInfoEnabled();
      case WARN:
        return log.isWarnEnabled();
      default:
        return log.isErrorEnabled();
    }
  }

  /** Records Go sent that SLF4J had disabled: 0 while the levels Go was given hold. */
  static long belowLevel() {
    return belowLevel.get();
  }

  /** Records received from Go since the class was loaded. */
  static long received() {
    return received.get();
  }
}
