"""Read one published date of engagement's tables with pyarrow and pandas.

Follows pointer.json to the exact files it names for the date, never a listing
or a glob of the warehouse: staging/ also holds rejected and abandoned attempts.
The files carry no event_date column (it is the partition), so it is added from
the pointer.

    python read_date.py WAREHOUSE TABLE DATE...

WAREHOUSE is a local directory or an s3://bucket/prefix URI (pyarrow's S3
filesystem, credentials from the standard AWS chain); TABLE is
fact_lesson_engagement or course_day. It loads pointer.json once and prints
one JSON line of figures per date; a date not published or a file that cannot
be read, or a WAREHOUSE whose pointer.json was lost (its history is there)
or whose first publish has not reached it yet, exits 1; a bad table or date
(before anything is read), a WAREHOUSE without pointer.json or history, or a
pointer.json of a format newer than this reader knows (as engagement does),
exits 2.
"""
import datetime
import json
import os
import re
import sys

import pyarrow as pa
import pyarrow.fs
import pyarrow.parquet as pq

FILES = {"fact_lesson_engagement": "fact_files", "course_day": "course_day_files"}
_TS = pa.timestamp("us", tz="UTC")
# The files' columns: a date without events lists no files, and reads as an
# empty table of these, not as an error.
SCHEMAS = {
    "fact_lesson_engagement": pa.schema([
        ("learner_key", pa.string()), ("lesson_id", pa.string()), ("course_id", pa.string()),
        ("manifest_id", pa.string()), ("lesson_title", pa.string()), ("event_count", pa.int64()),
        ("first_event_time", _TS), ("last_event_time", _TS), ("enrolled", pa.bool_()),
        ("enrollment_snapshot_id", pa.string()), ("job_id", pa.string())]),
    "course_day": pa.schema([
        ("course_id", pa.string()), ("event_count", pa.int64()), ("matched_lesson_count", pa.int64()),
        ("unknown_lesson_count", pa.int64()), ("enrolled_event_count", pa.int64()),
        ("learner_count", pa.int64()), ("job_id", pa.string())]),
}
NEWEST_FORMAT = 3  # the newest pointer format this reader knows


class NotPublished(LookupError):
    """The date is not in the pointer's generation (yet)."""


class BadArgument(ValueError):
    """A table or date the reader cannot mean: a usage error (exit 2)."""


class NewerFormat(ValueError):
    """A pointer written by a newer engagement: exit 2, as engagement's own."""


def check_args(table, dates):
    """Refuse a table or date before anything is read."""
    if table not in FILES:
        raise BadArgument(f"unknown table {table!r}: want {' or '.join(FILES)}")
    for date in dates:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            raise BadArgument(f"date {date!r}: want YYYY-MM-DD")
        try:
            datetime.date.fromisoformat(date)
        except ValueError as e:
            raise BadArgument(f"date {date!r}: {e}") from None


def filesystem(warehouse):
    """The filesystem and root of WAREHOUSE, its path taken literally as
    engagement takes it: in s3://b/a%20b or file:///w/c#d, '%20' and '#' are
    characters of the path, never an escape or a fragment (pyarrow's URI
    parser would read another warehouse's pointer.json)."""
    scheme, sep, rest = warehouse.partition("://")
    if not sep:
        return pyarrow.fs.LocalFileSystem(), os.path.abspath(warehouse)
    if scheme.lower() == "file":
        if rest.startswith("localhost/"):
            rest = rest[len("localhost"):]
        if not rest.startswith("/"):
            raise BadArgument(f"{warehouse}: a file URL names an absolute path, file:///dir (three slashes); a relative directory is written without file://")
        return pyarrow.fs.LocalFileSystem(), os.path.abspath(rest)
    if scheme.lower() not in ("s3", "s3a"):
        raise BadArgument(f"{warehouse}: unsupported URL scheme {scheme!r}: want a local path or s3://bucket/prefix")
    bucket, _, key = rest.rstrip("/").partition("/")
    if not bucket or (key and any(e in ("", ".", "..") for e in key.split("/"))):
        raise BadArgument(f"{warehouse}: want s3://bucket/prefix, without an empty, '.' or '..' element")
    # The filesystem from the bucket alone (a bucket name has no such
    # characters), configured as from_uri configures it.
    fs, _ = pyarrow.fs.FileSystem.from_uri("s3://" + bucket)
    return fs, bucket + ("/" + key if key else "")


def newest_generation(fs, root):
    """The highest generation pointer-history/ holds, or 0."""
    try:
        infos = fs.get_file_info(pyarrow.fs.FileSelector(root + "/pointer-history", allow_not_found=True))
    except OSError:
        return 0
    gens = [int(m.group(1)) for i in infos if (m := re.fullmatch(r"([0-9]+)\.json", i.base_name))]
    return max(gens, default=0)


def open_pointer(warehouse):
    """Load pointer.json once, as (filesystem, root, pointer): every date of
    one query must come from this one copy, or a publish landing between two
    loads would mix two generations in one answer."""
    fs, root = filesystem(warehouse)
    try:
        with fs.open_input_stream(root + "/pointer.json") as f:
            pointer = json.loads(f.read())
    except FileNotFoundError:
        # History without pointer.json is a damaged warehouse, not the wrong
        # place: say so (exit 1), as engagement status does. Generation 1
        # alone is a first publish that stopped after its commit, which the
        # next publish rolls forward: nothing is published yet (exit 1).
        newest = newest_generation(fs, root)
        if newest > 1:
            raise OSError(f"{warehouse} has no pointer.json, but pointer-history/ holds generations up to {newest}: "
                          f"it was lost or deleted by hand, and readers see nothing; copy pointer-history/{newest}.json over pointer.json") from None
        if newest == 1:
            raise NotPublished(f"no pointer.json and its history holds only generation 1: a first publish stopped after committing it; "
                               f"nothing is published until the next publish rolls it forward") from None
        # The wrong place, not a failed read: a retry would meet it again.
        raise BadArgument(f"no warehouse at {warehouse} (no pointer.json): nothing was published there; check WAREHOUSE") from None
    except (OSError, ValueError) as e:
        raise OSError(f"{warehouse}/pointer.json: {e}") from e
    if not (isinstance(pointer, dict) and isinstance(pointer.get("format_version"), int)
            and isinstance(pointer.get("generation"), int) and isinstance(pointer.get("dates"), dict)):
        raise ValueError(f"{warehouse}/pointer.json is JSON but not a pointer (no format_version, generation and dates): "
                         f"damaged; copy the newest pointer-history/<generation>.json over it")
    # A newer format may mean something this code does not know: refuse it.
    if pointer["format_version"] > NEWEST_FORMAT:
        raise NewerFormat(f"{warehouse}/pointer.json: format {pointer['format_version']} is newer than {NEWEST_FORMAT}: use a newer reader")
    return fs, root, pointer


def read_date(opened, date, table="fact_lesson_engagement"):
    """Return (pointer entry, pandas DataFrame) of one published date of the
    pointer open_pointer loaded."""
    fs, root, pointer = opened
    check_args(table, [date])
    day = datetime.date.fromisoformat(date)
    entry = pointer["dates"].get(date)
    if entry is None:
        raise NotPublished(f"{date} is not published (generation {pointer['generation']})")
    parts = []
    for f in entry[FILES[table]] or []:
        # ParquetFile reads exactly this file: no partition discovery, no glob.
        try:
            with fs.open_input_file(root + "/" + f["path"]) as src:
                part = pq.ParquetFile(src).read()
        except (OSError, pa.ArrowException) as e:
            raise OSError(f"{root}/{f['path']}: {e}") from e
        if part.num_rows != f["rows"]:
            raise ValueError(f"{f['path']}: {part.num_rows} rows, the pointer says {f['rows']}")
        parts.append(part)
    t = pa.concat_tables(parts) if parts else SCHEMAS[table].empty_table()
    t = t.append_column("event_date", pa.array([day] * t.num_rows, pa.date32()))
    return entry, t.to_pandas()


def summary(df, table):
    """The figures the tests compare with the fixture's expected.json."""
    s = {"rows": len(df), "event_count": int(df["event_count"].sum()),
         "columns": {c: str(t) for c, t in df.dtypes.items()}}
    if table == "fact_lesson_engagement":
        # a lesson the pinned manifest did not know has a null manifest_id
        s["unknown_lesson_count"] = int(df.loc[df["manifest_id"].isna(), "event_count"].sum())
        s["enrolled_event_count"] = int(df.loc[df["enrolled"], "event_count"].sum())
        s["learner_count"] = int(df["learner_key"].nunique())
    else:
        s["by_course"] = {c: int(n) for c, n in df.groupby("course_id")["event_count"].sum().items()}
    return s


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print("usage: read_date.py WAREHOUSE TABLE DATE...", file=sys.stderr)
        sys.exit(2)
    warehouse, table, *dates = sys.argv[1:]
    try:
        check_args(table, dates)
    except BadArgument as e:
        print(f"read_date.py: {e}", file=sys.stderr)
        sys.exit(2)
    try:
        opened = open_pointer(warehouse)  # once, for every date
        for date in dates:
            entry, df = read_date(opened, date, table)
            print(json.dumps({"date": date, "job_id": entry["job_id"], "table": table, **summary(df, table)}))
    except (BadArgument, NewerFormat) as e:
        print(f"read_date.py: {e}", file=sys.stderr)
        sys.exit(2)
    except NotPublished as e:
        sys.exit(f"read_date.py: {warehouse}: {e}")
    except (OSError, ValueError) as e:  # unreadable: exit 1, naming the file
        sys.exit(f"read_date.py: {e}")
