# nativepool — see README.md. Two commands matter to a newcomer:
#   make example   runs the main demo
#   make test      runs every test (Go with -race, every cgo-free package without cgo, go vet, gofmt check,
#                  Java/JUnit against real Spark, the demo in pod-sized cgroups with and without a burst,
#                  a standalone cluster on Spark 4.1 and on Spark 3.5 with Scala 2.12, two lines'
#                  artifacts installed and consumed from a scratch Maven repository, an executor
#                  killed at its memory limit, the streaming soak's 5-minute smoke)
# and, for the other Spark lines (docs/DEPLOYING.md, "Spark lines"):
#   make jar SPARK=3.5 SCALA=2.12      the plugin jar of one line (default: SPARK=4.1 SCALA=2.13)
#   make test-cluster SPARK=4.2        the standalone cluster test on that line's Spark
#   make test-matrix                   every other line: its jar, Spark-facing tests and cluster test
#   make test-yarn                     a real YARN (MiniYARNCluster): a container killed by its
#                                      NodeManager, the guarded run, a PySpark worker
SHELL := /bin/bash
GO ?= go
MVN ?= mvn -B -ntp
BUILD := $(CURDIR)/build
LIB := $(BUILD)/lib/libnativepool.so
# The Maven reactor (pom.xml): the default Spark line's plugin module (spark/lines/spark4.1_2.13,
# built from spark/src by spark/pom.xml) and the demo (examples/spark/). Every line's build output
# is under spark/target (spark/target/<line> but for the default line).
PLUGIN_DIR := spark
DEMO_DIR := examples/spark
# cgo in jni/ and ffi/ needs jni.h: take it from the JDK that provides javac.
JAVA_HOME ?= $(shell dirname $$(dirname $$(readlink -f $$(command -v javac))))
export JAVA_HOME
export CGO_CFLAGS := -O2 -g -I$(JAVA_HOME)/include -I$(JAVA_HOME)/include/linux

.PHONY: fuzz all lib lib-aarch64 jar line-dist config-table test-cluster test-repl test-cluster-oldest test-publish test-lost-executor test-yarn test-spark test-matrix bench-jni bench-container example-go test test-go test-java test-java-checkjni test-container vet fmt-check bench example soak soak-smoke clean

all: lib jar

## The Spark line (a module of its own, spark/lines/<line>/pom.xml; docs/DEPLOYING.md, "Spark
## lines"): SPARK=3.5, 4.0, 4.1, 4.2 or 4.3, SCALA=2.12 (3.5 only) or 2.13. 4.1 with Scala 2.13 by
## default; SPARK=3.5 alone means Scala 2.12, as Spark 3.5's own distribution. jar, test-cluster,
## test-spark, test-lost-executor and test-yarn build and test that line; every other target stays
## on the default line.
SPARK ?= 4.1
SCALA ?= $(if $(filter 3.5,$(SPARK)),2.12,2.13)
LINE := spark$(SPARK)_$(SCALA)
DEFAULT_LINE := spark4.1_2.13
LINES := spark3.5_2.12 spark3.5_2.13 spark4.0_2.13 spark4.1_2.13 spark4.2_2.13 spark4.3_2.13
ifeq ($(filter $(LINE),$(LINES)),)
$(error no Spark line SPARK=$(SPARK) SCALA=$(SCALA): the lines are $(LINES))
endif
# The line's module, built on its own (mvn -f): the root reactor holds the default line only.
LINE_POM := $(PLUGIN_DIR)/lines/$(LINE)/pom.xml
DEFAULT_POM := $(PLUGIN_DIR)/lines/$(DEFAULT_LINE)/pom.xml
# Spark 4.3 builds against its release as PyPI ships it (pyspark, installed by
# spark/dist/pyspark-home.sh into build/pyspark/<version>; spark/lines/spark4.3_2.13/pom.xml says
# why): LINE_DIST is that directory for such a line, empty for the others.
DIST_VERSION_spark4.3_2.13 := 4.3.0
LINE_DIST := $(if $(DIST_VERSION_$(LINE)),$(BUILD)/pyspark/$(DIST_VERSION_$(LINE)))
LINE_MVN := -f $(LINE_POM) $(if $(LINE_DIST),-Dnativepool.spark.dist=$(LINE_DIST))

## lib: the c-shared library the JVM loads (one Go runtime per process).
lib: $(LIB)
$(LIB): $(shell find pool taskshared ffi jni internal -name '*.go' -o -name '*.c' -o -name '*.h' 2>/dev/null) go.mod
	@mkdir -p $(BUILD)/lib
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -o $(LIB) ./jni/libnativepool

## lib-aarch64: the same library for linux-aarch64, cross-compiled with Debian's
## gcc-aarch64-linux-gnu when it is installed (skipped with a message otherwise), then checked
## with readelf: an AArch64 ELF exporting every jni.Natives native the x86-64 library exports.
LIB_ARM64 := $(BUILD)/lib/linux-aarch64/libnativepool.so
AARCH64_CC ?= aarch64-linux-gnu-gcc
lib-aarch64: $(LIB)
	@if ! command -v $(AARCH64_CC) >/dev/null; then \
		echo "lib-aarch64: no $(AARCH64_CC) (apt-get install gcc-aarch64-linux-gnu); the jar carries linux-x86_64 only"; \
		rm -f $(LIB_ARM64); exit 0; fi; \
	mkdir -p $(dir $(LIB_ARM64)) && \
	CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=$(AARCH64_CC) $(GO) build -buildmode=c-shared -o $(LIB_ARM64) ./jni/libnativepool && \
	readelf -h $(LIB_ARM64) | grep -q 'Machine: *AArch64' && \
	want=$$(nm -D --defined-only $(LIB) | grep -c ' T Java_org_nativepool_spark_jni_Natives_') && \
	got=$$(nm -D --defined-only $(LIB_ARM64) | grep -c ' T Java_org_nativepool_spark_jni_Natives_') && \
	if [ "$$got" != "$$want" ]; then echo "lib-aarch64: $$got jni.Natives exports, x86-64 has $$want"; exit 1; fi && \
	echo "lib-aarch64: $(LIB_ARM64): ELF AArch64, $$got jni.Natives exports"

## jar: the Spark plugin module (Spark itself is 'provided') for the line SPARK, SCALA:
## spark/target/nativepool-spark-spark4.1_2.13-*.jar by default, spark/target/<line>/nativepool-spark-
## <line>-*.jar for the others, carrying libnativepool.so (linux-x86_64, and linux-aarch64 when
## lib-aarch64 built it) and the arrow-c-data of that line's Arrow. Maven refuses to package without
## build/lib/libnativepool.so.
jar: lib lib-aarch64 line-dist
	$(MVN) -q $(LINE_MVN) -Dnativepool.lib.dir=$(BUILD)/lib -DskipTests package

## line-dist: the line's Spark release from PyPI, for a line that builds against it (LINE_DIST).
line-dist:
	$(if $(LINE_DIST),bash $(PLUGIN_DIR)/dist/pyspark-home.sh $(DIST_VERSION_$(LINE)) >/dev/null)

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './build/*' -not -path '*/target/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

## CGO_FREE: the packages that build without cgo, their tests included (every package whose
## CGO_ENABLED=0 build and test build are complete; jni, ffi and what imports them need cgo).
## Computed from go list, never written by hand. CGO_FREE_CORE must stay among them: test-go fails
## if one of them comes to need cgo, so the list cannot shrink silently.
MODULE := github.com/nativepool/nativepool
CGO_FREE = $(shell CGO_ENABLED=0 $(GO) list -e -test -f '{{if .ForTest}}{{.ForTest}}{{else}}{{.ImportPath}}{{end}} {{.Incomplete}}' ./... | \
	awk '$$1 !~ /\.test$$/ { if ($$2 == "true") bad[$$1] = 1; else ok[$$1] = 1 } END { for (p in ok) if (!(p in bad)) print p }' | sort)
CGO_FREE_CORE := pool arbiter taskshared internal/bridge internal/logsink internal/cdatacheck internal/engineapi internal/sharedref internal/guard internal/cgroup internal/writeback

## test-go: go test -race over everything, then go vet and go test with CGO_ENABLED=0 over CGO_FREE
## (no JDK, no C compiler).
test-go: vet fmt-check
	$(GO) test -race -count=1 ./...
	@pkgs="$(CGO_FREE)"; \
	echo "test-go: CGO_ENABLED=0 covers $$(echo $$pkgs | wc -w) packages:"; for p in $$pkgs; do echo "  $$p"; done; \
	for c in $(CGO_FREE_CORE); do case " $$(echo $$pkgs) " in *" $(MODULE)/$$c "*) ;; \
		*) echo "test-go: $(MODULE)/$$c no longer builds without cgo"; exit 1;; esac; done; \
	CGO_ENABLED=0 $(GO) vet $$pkgs && CGO_ENABLED=0 $(GO) test -count=1 $$pkgs

## test-java: every JUnit test of both Maven modules, the plugin's and the demo's.
test-java: lib
	$(MVN) -Dnativepool.lib.dir=$(BUILD)/lib test

## the whole JUnit suite once more under -Xcheck:jni; fails on any JNI warning raised in our
## natives (Arrow Java's own loader warnings are reported and ignored: check_jni_warnings.py).
test-java-checkjni: lib
	@mkdir -p $(BUILD)
	rm -f $(PLUGIN_DIR)/target/surefire-reports/*.dumpstream $(DEMO_DIR)/target/surefire-reports/*.dumpstream
	$(MVN) -Dnativepool.lib.dir=$(BUILD)/lib -Pcheckjni test > $(BUILD)/checkjni.log 2>&1; \
	rc=$$?; if [ $$rc -ne 0 ]; then tail -60 $(BUILD)/checkjni.log; exit $$rc; fi; \
	grep -E '^\[INFO\] (Tests run: .*Skipped: [0-9]+$$|Building nativepool|BUILD)' $(BUILD)/checkjni.log
	python3 $(PLUGIN_DIR)/check_jni_warnings.py $(BUILD)/checkjni.log $$(ls $(PLUGIN_DIR)/target/surefire-reports/*.dumpstream $(DEMO_DIR)/target/surefire-reports/*.dumpstream 2>/dev/null)

test: test-go test-java test-java-checkjni test-container test-cluster test-cluster-oldest test-publish test-lost-executor test-repl soak-smoke

## fuzz: every fuzz target of the doors nativepool takes input from (docs/TESTING.md), for FUZZTIME
## each (default 2m; N followed by s, m or h), one after the other and one worker at a time,
## under nice -n 19: the Go ones with go test -fuzz, the Java ones with Jazzer (JAZZER_FUZZ=1). A
## failure stops the run; Go keeps the failing input in the package's testdata/fuzz/<Target>/,
## Jazzer in src/test/resources/<package>/<Class>Inputs/<method>/, where make test (go test, and
## JUnit in Jazzer's regression mode) replays it with the seed corpus from then on.
FUZZTIME ?= 2m
GO_FUZZ_TARGETS := internal/cdatacheck:FuzzValidateImport internal/arrowruntime:FuzzImportBatchAt \
	internal/arrowruntime:FuzzBridgeCallSequences internal/cgroup:FuzzRead \
	internal/cgroup:FuzzProcessResident internal/cgroup:FuzzLocate internal/writeback:FuzzMappedFiles
JAVA_FUZZ_TARGETS := EventLogReplayFuzzTest\#aReplayedLogNeverStopsAndDrawsAWellFormedPage \
	ConfigFuzzTest\#everyKeyParsesOrRefusesWithItsName \
	HeapTextFuzzTest\#heapInfoAndSmapsParseAsTheKernelAndJvmWriteThem \
	LossReasonFuzzTest\#anyLossReasonIsReadAndDiagnosedWithoutThrowing
fuzz: lib
	@secs=$$(echo '$(FUZZTIME)' | awk '/^[0-9]+s$$/ {print $$0+0} /^[0-9]+m$$/ {print $$0*60} /^[0-9]+h$$/ {print $$0*3600}'); \
	if [ -z "$$secs" ]; then echo "fuzz: FUZZTIME=$(FUZZTIME): give N s, m or h (e.g. 30s, 2m, 1h)"; exit 2; fi; \
	for t in $(GO_FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		nice -n 19 $(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -timeout 0 -parallel 1 ./$${t%%:*}/ || exit 1; \
	done; \
	for t in $(JAVA_FUZZ_TARGETS); do \
		echo "== $$t for $(FUZZTIME)"; \
		JAZZER_FUZZ=1 nice -n 19 $(MVN) -f $(DEFAULT_POM) -Dnativepool.lib.dir=$(BUILD)/lib \
			-Dnativepool.sparkTests.skip=true "-Dtest=$$t" -Dsurefire.failIfNoSpecifiedTests=false \
			-Djazzer.internal.arg.0=fuzz -Djazzer.internal.arg.1=-max_total_time=$$secs test \
			> $(BUILD)/fuzz-$${t%%\#*}.log 2>&1 || { tail -60 $(BUILD)/fuzz-$${t%%\#*}.log; exit 1; }; \
		grep -a -E '^#[0-9]+.*DONE|^Done ' $(BUILD)/fuzz-$${t%%\#*}.log; \
	done

## test-spark: the plugin's Spark-facing JUnit tests on the line SPARK, SCALA: every test that starts
## a SparkContext (tagged "spark") and the config, events, arrow, memory, ledger, ui and driver
## packages (Spark's TaskMemoryManager, spills both ways, Arrow round trips, the event log's JSON, the
## Native Memory page in Spark's UI and History Server, the driver plugin and its diagnosis, the
## ledger, the line check). make test-java runs them, and every other test, on the default line.
SPARK_FACING := org/nativepool/spark/*Test*,org/nativepool/spark/config/**,org/nativepool/spark/events/**,org/nativepool/spark/arrow/**,org/nativepool/spark/memory/**,org/nativepool/spark/ledger/**,org/nativepool/spark/ui/**,org/nativepool/spark/driver/**,org/nativepool/spark/executor/PodGuardSparkTest*,org/nativepool/spark/executor/OffHeapGuardSparkTest*,org/nativepool/spark/executor/ExecutorGaugesSparkTest*,org/nativepool/spark/executor/MonitoringOffSparkTest*,org/nativepool/spark/jni/GoLogTest*
test-spark: lib line-dist
	$(MVN) $(LINE_MVN) -Dnativepool.lib.dir=$(BUILD)/lib '-Dtest=$(SPARK_FACING)' \
		-Dsurefire.failIfNoSpecifiedTests=false test

## config-table: renders the configuration table of docs/CONFIGURATION.md from the key registry
## (org.nativepool.spark.config.NativePoolConf); a test fails while the two differ.
config-table:
	$(MVN) -q -f $(DEFAULT_POM) -Dnativepool.lib.dir=$(BUILD)/lib -Dtest=ConfigTableTest \
		-Dsurefire.failIfNoSpecifiedTests=false -Dnativepool.updateReadme=true test

## test-cluster: a standalone Master and Worker on 127.0.0.1 (own JVMs, free ports, Spark's jars
## from Maven in build/spark-home), jobs submitted with only the plugin jar: the library loads
## from the jar on every executor, Spark makes native code spill, and a broken library fails the
## application fast and clearly without executors crash-looping (spark/cluster-test/run.sh).
## On the line SPARK, SCALA: that line's jar on a cluster of that line's Spark and Scala
## (build/spark-home/<line>), plus a jar of another line refused at start on the driver and in every
## task on executors. make test runs it on the default line and on the oldest (test-cluster-oldest).
test-cluster: jar
	LINE=$(LINE) bash $(PLUGIN_DIR)/cluster-test/run.sh

## test-cluster-oldest: test-cluster on the oldest line, Spark 3.5 with Scala 2.12 (part of make test).
test-cluster-oldest:
	$(MAKE) test-cluster SPARK=3.5 SCALA=2.12

## test-matrix: for every line but the default (3.5 with Scala 2.12 and 2.13, 4.0, 4.2, 4.3): its jar,
## test-spark and test-cluster, one line after the other; logs in build/matrix/<line>/, a table of
## the results and the time taken at the end (spark/test-matrix.sh). Fails if any line failed.
MATRIX_LINES ?= 3.5:2.12 3.5:2.13 4.0:2.13 4.2:2.13 4.3:2.13
test-matrix: lib
	$(MAKE) jar
	MAKE="$(MAKE)" bash $(PLUGIN_DIR)/test-matrix.sh $(MATRIX_LINES)

## test-publish: the plugin's artifacts as a Maven repository holds them (spark/publish-test/run.sh):
## two lines (PUBLISH_LINES) installed into a scratch local repository (links to ~/.m2's files, no
## nativepool artifact) with their flattened poms, source and javadoc jars; each installed pom names
## its own artifactId, Spark, Scala and Arrow and resolves offline from that repository alone to the
## line's Spark and Arrow, and a project depending on the artifact builds offline against it with
## the line's versions on its classpath. Part of make test.
PUBLISH_LINES ?= spark3.5_2.12 spark4.1_2.13
test-publish: lib
	bash $(PLUGIN_DIR)/publish-test/run.sh $(PUBLISH_LINES)

## test-lost-executor: an executor killed by its container's memory limit, end to end: a standalone
## Master and two Workers on 127.0.0.1, one Worker's executors in a memory cgroup sized like a pod; a
## task there takes direct buffers past the limit, the kernel kills the executor (exit code 137), the
## job completes on the other one; then the driver's diagnosis, the event log, and the Native Memory
## page live and in a History Server, loaded by headless Chromium (a screenshot in the run's
## directory). Skips without a writable cgroup-v1 memory controller or chromium
## (spark/cluster-test/lost-executor.sh). On the line SPARK, SCALA (make test: the default line).
test-lost-executor: jar
	LINE=$(LINE) bash $(PLUGIN_DIR)/cluster-test/lost-executor.sh

## test-yarn: nativepool on a real YARN (spark/yarn-test/run.sh): Hadoop's MiniYARNCluster with
## the NodeManager's physical-memory check on and no cgroups, and Spark in YARN client mode with only
## our jars: the demo's native sort with a burst of direct buffers, the pod guard off, killed by the
## NodeManager and diagnosed as YARN's memory kill (the container, YARN's limit, the part that grew;
## the live Native Memory page); the same job with the guard on, alive and correct; a PySpark worker
## outgrowing its container, counted by the guard and named by the diagnosis. On the line SPARK,
## SCALA, with that release of Spark from PyPI (spark/dist/pyspark-home.sh). Not part of make test
## (README.md says why).
test-yarn: jar
	LINE=$(LINE) bash $(PLUGIN_DIR)/yarn-test/run.sh

## test-repl: the driver's heap holders in a real spark-shell (the line's Spark release as PyPI's
## pyspark ships it, spark/dist/pyspark-home.sh, in build/pyspark/), driven through its standard
## input: an idle shell and statements keeping nothing get no report; statements returning fresh
## 100 MiB arrays without naming them get a report naming the arrays, held through the REPL's line
## wrappers, within those statements (spark/cluster-test/repl-leak.sh). On the line SPARK, SCALA
## (make test: the default line), with JAVA_HOME's Java (make test-repl JAVA_HOME=... for another).
test-repl: jar
	LINE=$(LINE) bash $(PLUGIN_DIR)/cluster-test/repl-leak.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./pool/ ./arbiter/ ./taskshared/ ./ffi/ | tee $(BUILD)/bench-go.txt

## bench-jni: Java -> JNI -> Go -> Spark TaskMemoryManager, exact vs chunked (see bench/jni/README.md).
bench-jni: lib
	$(MVN) -f $(DEFAULT_POM) -Pbench -Dnativepool.lib.dir=$(BUILD)/lib test

## bench-container: each system's smallest surviving memoryOverhead in a memory cgroup sized like a
## Kubernetes executor pod, bisected in 16 MiB steps (bench/container/run.sh; needs root, cgroup v1).
bench-container:
	bash bench/container/run.sh $(ARGS)

## test-container: the demo at a one-minute size inside such a cgroup, with the idle-JVM baseline plus
## a stated margin as its overhead: exit 0 and a correct result, or the test fails
## (bench/container/test-demo.sh); then the pod guard's test, the native sort, the full demo and a
## plain Spark job near their survival points with a burst of memory nobody accounts for: killed
## without the guard, alive and correct with it (bench/container/test-burst.sh). Both skip without
## a writable memory cgroup.
test-container:
	bash bench/container/test-demo.sh
	bash bench/container/test-burst.sh

## example: the main demo, a native Go sort inside Spark 4.1 local[2] (examples/spark/README.md).
## Options: make example ARGS="--rows 8000000 --budget 64m --chunk 8m --pool greedy_unified"
example:
	bash examples/spark/run.sh $(ARGS)

## soak: the streaming soak (examples/spark/README.md, "The streaming soak"): a Spark Structured
## Streaming query running a native Go aggregation on every micro-batch, in its own JVM, first the
## clean run for SOAK_MINUTES minutes (default 60: the executor memory ledger must stay flat and the
## growth detector silent), then the planted-leak run (the detector must name the leak within 200
## micro-batches). Outputs in build/soak/. Options: make soak SOAK_MINUTES=20 ARGS="--rate 10000"
SOAK_MINUTES ?= 60
soak:
	SOAK_MINUTES=$(SOAK_MINUTES) bash examples/spark/soak.sh $(ARGS)

## soak-smoke: the soak with a 5-minute clean run (part of make test; about 7 minutes in all).
soak-smoke:
	SOAK_MINUTES=5 bash examples/spark/soak.sh $(ARGS)

## example-go: the small Go-only program (two spillers sharing a fair pool).
example-go:
	$(GO) run ./examples/fairspill

clean:
	rm -rf $(BUILD) $(PLUGIN_DIR)/target $(DEMO_DIR)/target
