package javaconsts

import (
	"fmt"
	"strings"

	"github.com/nativepool/nativepool/internal/bridge"
)

// generatedFrom is the last paragraph of every generated class's Javadoc.
func generatedFrom(source string) string {
	return escape("Generated from " + source + "; do not edit: change the Go declarations and run " + Command + ".")
}

// constantName is a code or a configuration name as a Java constant:
// upper case, '-' as '_' ("java-arrow": JAVA_ARROW).
func constantName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// constants writes enum constants, each with its Javadoc, separated by ','
// and ended by ';'. args is the constructor's argument list of each, or ""
// for none.
func constants(b *strings.Builder, names, docs, args []string) {
	for i, name := range names {
		b.WriteString(javadoc("  ", []string{escape(docs[i])}))
		b.WriteString("  " + name)
		if args[i] != "" {
			b.WriteString("(" + args[i] + ")")
		}
		if i == len(names)-1 {
			b.WriteString(";\n")
		} else {
			b.WriteString(",\n")
		}
	}
}

// statEnum is the Java enum of a stats table: one constant per row, in
// index order, and for a table with gauges a gaugeName() (null for a row
// without one).
func statEnum(t bridge.StatTable) string {
	var b strings.Builder
	b.WriteString(header(t.Source))
	b.WriteString("\npackage " + JNIPackage + ";\n\n")
	b.WriteString(javadoc("", []string{escape(t.Doc), generatedFrom(t.Source)}))
	b.WriteString("public enum " + t.Enum + " {\n")
	names := make([]string, len(t.Rows))
	docs := make([]string, len(t.Rows))
	args := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		names[i], docs[i] = r.Name, r.Doc
		if t.Gauges {
			args[i] = "null"
			if r.Gauge != "" {
				args[i] = javaStringLiteral(r.Gauge)
			}
		}
	}
	constants(&b, names, docs, args)
	if t.Gauges {
		fmt.Fprintf(&b, `
  private final String gaugeName;

  %s(String gaugeName) {
    this.gaugeName = gaugeName;
  }

`, t.Enum)
		b.WriteString(javadoc("  ", []string{"The name of this figure's gauge in the plugin's metric source."},
			"@return the gauge's name, or null if the figure has no gauge"))
		b.WriteString(`  public String gaugeName() {
    return gaugeName;
  }
`)
	}
	b.WriteString("}\n")
	return b.String()
}

// leakKindEnum is LeakKind: one constant per kind, with its code, of() to
// parse a code.
func leakKindEnum(kinds []bridge.LeakKind) string {
	const source = "leakKinds in internal/bridge/kinds.go"
	var b strings.Builder
	b.WriteString(header(source))
	b.WriteString("\npackage " + JNIPackage + ";\n\n")
	b.WriteString(javadoc("", []string{
		"What leaked at a task's end: the kinds of leak that reportLeak0 takes, recentLeaks0 lists and the logs name, by their code.",
		generatedFrom(source),
	}))
	b.WriteString("public enum LeakKind {\n")
	names := make([]string, len(kinds))
	docs := make([]string, len(kinds))
	args := make([]string, len(kinds))
	for i, k := range kinds {
		names[i], docs[i], args[i] = constantName(k.Code), k.Doc, javaStringLiteral(k.Code)
	}
	constants(&b, names, docs, args)
	b.WriteString(`
  private final String code;

  LeakKind(String code) {
    this.code = code;
  }

`)
	b.WriteString(javadoc("  ", []string{"The kind's code, as the natives and the log name it."}, "@return the code"))
	b.WriteString(`  public String code() {
    return code;
  }

`)
	b.WriteString(javadoc("  ", []string{"The kind whose code is {@code code}."},
		"@param code a kind's code, as recentLeaks0 gives it",
		"@return the kind",
		"@throws IllegalArgumentException if no kind has that code"))
	b.WriteString(`  public static LeakKind of(String code) {
    for (LeakKind k : values()) {
      if (k.code.equals(code)) {
        return k;
      }
    }
    throw new IllegalArgumentException("nativepool: unknown leak kind '" + code + "'");
  }
}
`)
	return b.String()
}

// goLoggersClass is GoLoggers: the root logger, the loggers Go is given
// levels for, and the level codes with their names.
func goLoggersClass(root string, names, levels []string) string {
	const source = "RootLogger, loggerNames and the Level* codes in internal/logsink"
	var b strings.Builder
	b.WriteString(header(source))
	b.WriteString("\npackage " + JNIPackage + ";\n\nimport java.util.List;\n\n")
	b.WriteString(javadoc("", []string{
		"The Go side's logger names and log levels: the level code each record of GoLog.log carries, the level names of configureLog0's string, and the loggers configureLog0 is given a level for.",
		generatedFrom(source),
	}))
	b.WriteString("public final class GoLoggers {\n")
	b.WriteString(javadoc("  ", []string{"The logger of records Go could not place (no call site): the parent of every Go logger."}))
	b.WriteString("  public static final String ROOT = " + javaStringLiteral(root) + ";\n\n")
	b.WriteString(javadoc("  ", []string{"The loggers whose levels Go is given in configureLog0, in order: " + escape(root) +
		", the module's packages that log, and the parent of engines' loggers. A Go logger not listed takes the level of its closest listed ancestor in Go's filter; SLF4J then applies its own."}))
	b.WriteString(listConstant("NAMES", names))
	for code, name := range levels {
		doc := fmt.Sprintf("Level code %d: records at %s, and loggers whose effective level is %s.", code, name, name)
		if code == len(levels)-1 {
			doc = fmt.Sprintf("Level code %d: loggers that log nothing (%s); no record has this level.", code, name)
		}
		b.WriteString("\n" + javadoc("  ", []string{escape(doc)}))
		fmt.Fprintf(&b, "  public static final int %s = %d;\n", name, code)
	}
	b.WriteString("\n" + javadoc("  ", []string{"The level names, indexed by level code: the levels of configureLog0's string."}))
	b.WriteString(listConstant("LEVEL_NAMES", levels))
	b.WriteString("\n  private GoLoggers() {}\n}\n")
	return b.String()
}

// listConstant declares a public static final List<String> of values, laid
// out as Google Java Format does: on one line if it fits, else the
// initializer on the next line, else one value per line.
func listConstant(name string, values []string) string {
	lits := make([]string, len(values))
	for i, v := range values {
		lits[i] = javaStringLiteral(v)
	}
	decl := "  public static final List<String> " + name + " ="
	call := "List.of(" + strings.Join(lits, ", ") + ");"
	if columns(decl+" "+call) <= maxColumns {
		return decl + " " + call + "\n"
	}
	if columns("      "+call) <= maxColumns {
		return decl + "\n      " + call + "\n"
	}
	return decl + "\n      List.of(\n          " + strings.Join(lits, ",\n          ") + ");\n"
}

// poolKindEnum is PoolKind: one constant per kind with its code and
// configuration name, parse() and toString().
func poolKindEnum(kinds []bridge.PoolKind) string {
	const source = "poolKinds in internal/bridge/kinds.go"
	var b strings.Builder
	b.WriteString(header(source))
	b.WriteString("\npackage " + ConfigPackage + ";\n\nimport java.util.Locale;\n\n")
	b.WriteString(javadoc("", []string{
		"The unified pool kinds a task can open, with their native codes and configuration names.",
		generatedFrom(source),
	}))
	b.WriteString("public enum PoolKind {\n")
	names := make([]string, len(kinds))
	docs := make([]string, len(kinds))
	args := make([]string, len(kinds))
	configNames := make([]string, len(kinds))
	for i, k := range kinds {
		names[i], docs[i] = constantName(k.ConfigName), k.Doc
		args[i] = fmt.Sprintf("%d, %s", k.Code, javaStringLiteral(k.ConfigName))
		configNames[i] = k.ConfigName
	}
	constants(&b, names, docs, args)
	b.WriteString(`
  private final int code;
  private final String configName;

  PoolKind(int code, String configName) {
    this.code = code;
    this.configName = configName;
  }

`)
	b.WriteString(javadoc("  ", []string{"The {@code kind} argument of {@code openPool0}."}, "@return the kind's native code"))
	b.WriteString(`  public int code() {
    return code;
  }

`)
	b.WriteString(javadoc("  ", []string{"The name used in {@code spark.nativepool.pool}."}, "@return the configuration name"))
	b.WriteString(`  public String configName() {
    return configName;
  }

`)
	accepted := escape(oneOf(configNames))
	b.WriteString(javadoc("  ", []string{"Parses a configuration name (" + codeList(configNames) + ", case and surrounding blanks ignored)."},
		"@param name the configured value",
		"@return the kind it names",
		"@throws IllegalArgumentException for any other value, naming it and the accepted ones"))
	b.WriteString(`  public static PoolKind parse(String name) {
    if (name != null) {
      String n = name.trim().toLowerCase(Locale.ROOT);
      for (PoolKind k : values()) {
        if (k.configName.equals(n)) {
          return k;
        }
      }
    }
    throw new IllegalArgumentException(
        "nativepool: unknown pool kind '" + name + "' (expected ` + accepted + `)");
  }

`)
	b.WriteString(javadoc("  ", []string{"The configuration name."}, "@return {@link #configName()}"))
	b.WriteString(`  @Override
  public String toString() {
    return configName;
  }
}
`)
	return b.String()
}

// oneOf lists names as "a", "a or b", "a, b or c".
func oneOf(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// codeList is oneOf with each name in {@code …}.
func codeList(names []string) string {
	coded := make([]string, len(names))
	for i, n := range names {
		coded[i] = "{@code " + escape(n) + "}"
	}
	return oneOf(coded)
}
