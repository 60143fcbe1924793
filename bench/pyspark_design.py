"""The reference PySpark design of the engagement publish, as a yardstick for
the Spark engine (docs/benchmark.md).

It is the plain design, on one Spark in local mode: read the raw events of
the ingest window with a column list, derive event_date in UTC, left-join the
lesson manifest pin by broadcast, left-join the enrollment snapshot by a
shuffle join salted for the hot courses, aggregate once to the fact grain and
once to course_day, and write each table as Parquet partitioned by
event_date. No gate, no pointer, no staging read-back: what it measures is
the transform and the two writes.

Run it with spark-submit from the distribution scripts/spark.sh installs:

    eval "$(bash scripts/spark.sh pyspark)"
    "$SPARK_HOME/bin/spark-submit" --master 'local[2]' --driver-memory 8g \\
        bench/pyspark_design.py --data .cache/bench/design-6000000-seed7 --out /tmp/design-out

The pins, the dates and the hot course come from the day's expected.json
unless given; the figures are checked by `bench run --pyspark`, not here.
"""

import argparse
import json
import os
import sys
import time
from datetime import date, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

FACT = "fact_lesson_engagement"
COURSE_DAY = "course_day"


def log(msg: str) -> None:
    # The bench passes through only the lines that start with this prefix;
    # Spark's own log goes to a file.
    print(f"pyspark_design: {msg}", file=sys.stderr, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="design day: raw/, lessons/, enrollments/, expected.json")
    p.add_argument("--out", required=True, help="output directory; both tables are replaced")
    p.add_argument("--master", default="local[2]", help="Spark master (it overrides spark-submit's --master)")
    p.add_argument("--dates", default="", help="event dates, comma-separated (default: expected.json's)")
    p.add_argument("--manifest-id", default="", help="manifest pin (default: expected.json's)")
    p.add_argument("--snapshot-id", default="", help="enrollment snapshot pin (default: expected.json's)")
    p.add_argument("--hot-courses", default=None, help="salted courses, comma-separated (default: expected.json's hot_course)")
    p.add_argument("--salt-buckets", type=int, default=8, help="salts per hot course (engagement.saltBuckets' default)")
    p.add_argument("--lateness-days", type=int, default=2, help="ingest dates read past the last event date")
    p.add_argument("--shuffle-partitions", type=int, default=200, help="spark.sql.shuffle.partitions (AQE coalesces)")
    p.add_argument("--joined", choices=("persist", "recompute"), default="persist",
                   help="persist the joined events for the two writes (the design's advice), or let each write recompute them")
    p.add_argument("--job-id", default="bench-pyspark", help="the job_id column's value")
    a = p.parse_args(argv)
    with open(os.path.join(a.data, "expected.json"), encoding="utf-8") as f:
        exp = json.load(f)
    a.dates = [d for d in a.dates.split(",") if d] or exp["dates"]
    a.manifest_id = a.manifest_id or exp["manifest_id"]
    a.snapshot_id = a.snapshot_id or exp["enrollment_snapshot_id"]
    a.hot_courses = tuple(c for c in (a.hot_courses.split(",") if a.hot_courses is not None else [exp["hot_course"]]) if c)
    if a.salt_buckets < 1:
        p.error("--salt-buckets must be at least 1")
    return a


def build_spark(a) -> SparkSession:
    # The design's production settings: AQE with skew join on, 64 MB advisory
    # partitions, parallelismFirst off, a 10 MB broadcast threshold plus an
    # explicit broadcast of the pin, no speculation, dynamic overwrite.
    return (
        SparkSession.builder.appName("engagement-pyspark-design")
        .master(a.master)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(a.shuffle_partitions))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.parallelismFirst", "false")
        .config("spark.sql.adaptive.advisoryPartitionSizeInBytes", "64MB")
        .config("spark.sql.adaptive.skewJoin.enabled", "true")
        .config("spark.sql.autoBroadcastJoinThreshold", "10MB")
        .config("spark.speculation", "false")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        # Lets AQE coalesce the shuffles inside the persisted joined events;
        # without it that plan keeps all spark.sql.shuffle.partitions (200
        # tasks a stage for a small day, 3x slower at 600K events).
        .config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
        # The engine's writes are zstd too; the seed names no codec.
        .config("spark.sql.parquet.compression.codec", "zstd")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


def events(spark: SparkSession, a) -> DataFrame:
    first = date.fromisoformat(min(a.dates))
    last = date.fromisoformat(max(a.dates)) + timedelta(days=a.lateness_days)
    # ingest_date is a partition column: the predicate prunes directories.
    # event_date is derived from event_time in the session zone, UTC.
    return (
        spark.read.parquet(os.path.join(a.data, "raw"))
        .where(F.col("ingest_date").between(F.lit(first), F.lit(last)))
        .select("event_id", "learner_key", "lesson_id", "course_id", "event_time")
        .withColumn("event_date", F.to_date("event_time"))
        .where(F.col("event_date").isin(*[date.fromisoformat(d) for d in a.dates]))
    )


def salt_for(hot_courses: tuple, buckets: int):
    # The design's deterministic salt: a function of the event alone, so a
    # retried task puts every event in the same bucket.
    hot = F.col("course_id").isin(*hot_courses) if hot_courses else F.lit(False)
    return F.when(hot, F.pmod(F.hash("event_id"), F.lit(buckets))).otherwise(F.lit(0))


def salts_for(hot_courses: tuple, buckets: int):
    # The enrollment side: one row per salt for a hot course, salt 0 otherwise.
    hot = F.col("course_id").isin(*hot_courses) if hot_courses else F.lit(False)
    return F.when(hot, F.sequence(F.lit(0), F.lit(buckets - 1))).otherwise(F.array(F.lit(0)))


def joined(spark: SparkSession, a) -> DataFrame:
    manifest = (
        spark.read.parquet(os.path.join(a.data, "lessons"))
        .where(F.col("manifest_id") == a.manifest_id)
        .select("lesson_id", "manifest_id", "lesson_title")
    )
    enrollments = (
        spark.read.parquet(os.path.join(a.data, "enrollments"))
        .where(F.col("snapshot_id") == a.snapshot_id)
        .select("learner_key", "course_id")
        .withColumn("_salt", F.explode(salts_for(a.hot_courses, a.salt_buckets)))
        .withColumn("_enrolled", F.lit(True))
    )
    ev = events(spark, a).withColumn("_salt", salt_for(a.hot_courses, a.salt_buckets))
    # The pin is broadcast; the enrollments meet the events in a sort-merge
    # shuffle join even where a small day's snapshot would fit under the
    # broadcast threshold, because at design volume it must not be broadcast.
    return (
        ev.join(F.broadcast(manifest), "lesson_id", "left")
        .join(enrollments.hint("merge"), ["learner_key", "course_id", "_salt"], "left")
        .drop("_salt")
        .withColumn("enrolled", F.col("_enrolled").isNotNull())
        .drop("_enrolled")
    )


def fact(j: DataFrame, a) -> DataFrame:
    return j.groupBy("learner_key", "lesson_id", "event_date").agg(
        F.min("course_id").alias("course_id"),
        F.min("manifest_id").alias("manifest_id"),
        F.min("lesson_title").alias("lesson_title"),
        F.count(F.lit(1)).alias("event_count"),
        F.min("event_time").alias("first_event_time"),
        F.max("event_time").alias("last_event_time"),
        F.bool_or("enrolled").alias("enrolled"),
    ).select(
        "learner_key", "lesson_id", "course_id", "manifest_id", "lesson_title", "event_count",
        "first_event_time", "last_event_time", "enrolled",
        F.lit(a.snapshot_id).alias("enrollment_snapshot_id"), F.lit(a.job_id).alias("job_id"), "event_date",
    )


def course_day(j: DataFrame, a) -> DataFrame:
    # From the joined events, not the fact: enrolled_event_count counts
    # events, and learner_count is an exact distinct count.
    return j.groupBy("course_id", "event_date").agg(
        F.count(F.lit(1)).alias("event_count"),
        F.count("manifest_id").alias("matched_lesson_count"),
        (F.count(F.lit(1)) - F.count("manifest_id")).alias("unknown_lesson_count"),
        F.count(F.when(F.col("enrolled"), True)).alias("enrolled_event_count"),
        F.countDistinct("learner_key").alias("learner_count"),
    ).select(
        "course_id", "event_count", "matched_lesson_count", "unknown_lesson_count",
        "enrolled_event_count", "learner_count", F.lit(a.job_id).alias("job_id"), "event_date",
    )


def write(df: DataFrame, path: str) -> None:
    # One shuffle partition per date, so each date is one file: the day's
    # tables are far below the design's 128-256 MB a file.
    df.repartition("event_date").write.mode("overwrite").partitionBy("event_date").parquet(path)


def main(argv) -> int:
    a = parse_args(argv)
    spark = build_spark(a)
    spark.sparkContext.setLogLevel("WARN")
    j = joined(spark, a)
    if a.joined == "persist":
        j = j.persist(StorageLevel.MEMORY_AND_DISK)
    for name, df in ((FACT, fact(j, a)), (COURSE_DAY, course_day(j, a))):
        # The plan goes to stdout, the log: the broadcast of the pin and
        # the sort-merge join of the enrollments are visible there.
        print(f"== plan of {name}", flush=True)
        df.explain(mode="formatted")
        start = time.monotonic()
        write(df, os.path.join(a.out, name))
        log(f"wrote {name} in {time.monotonic() - start:.2f}s")
    if a.joined == "persist":
        j.unpersist()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
