"""make test-yarn's PySpark job (run.sh): a Python worker that outgrows its executor's container.

In the first attempt of partition 0, the worker running the partition's function takes a bytearray
of 64 MiB every quarter of a second, every page written, up to GROW_MIB, and holds it: memory of a
process below the executor's JVM, which YARN's NodeManager counts in the container (its process
tree) and kills it over. The partition's retry, on a new container, takes nothing, so the job
completes. The pod guard cannot make a Python worker give way; what the test checks is that it
sees the worker's memory in the container's total, and that the diagnosis of the lost executor
names it (the executor memory ledger's python.workers).

    spark-submit --master yarn ... pyspark_job.py <run dir> <grow MiB>

Prints RESULT lines and READY <application id>, then waits for <run dir>/release (at most ten
minutes) before it stops, as YarnSortJob does.
"""
import os
import sys
import time

from pyspark import TaskContext
from pyspark.sql import SparkSession


def grow(grow_mib):
    def run(rows):
        ctx = TaskContext.get()
        held = []
        if ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            step = 64 << 20
            for _ in range(grow_mib // 64):
                held.append(bytearray(b"\x01") * step)
                time.sleep(0.25)
            time.sleep(60)  # the NodeManager's check kills the container first
        n = 0
        total = 0
        for r in rows:
            n += 1
            total += r
        yield "partition=%d attempt=%d pid=%d rows=%d sum=%d held_mib=%d" % (
            ctx.partitionId(), ctx.attemptNumber(), os.getpid(), n, total,
            sum(len(b) for b in held) >> 20)
    return run


def main():
    run_dir, grow_mib = sys.argv[1], int(sys.argv[2])
    spark = SparkSession.builder.appName("nativepool-yarn-pyspark").getOrCreate()
    sc = spark.sparkContext
    for line in sc.parallelize(range(1000), 2).mapPartitions(grow(grow_mib)).collect():
        print("RESULT " + line, flush=True)
    print("READY " + sc.applicationId, flush=True)
    release = os.path.join(run_dir, "release")
    for _ in range(1200):
        if os.path.exists(release):
            break
        time.sleep(0.5)
    spark.stop()


if __name__ == "__main__":
    main()
