"""Writes the two files of the page-checksum cases from the fixture.

raw-page-checksums-intact/part-0.parquet is the fixture's 2026-03-03 partition
rewritten by pyarrow with a CRC in every page header (row groups of 300 rows
and small pages, so each column has several; dictionaries on but for
event_time, which is plain and uncompressed). raw-page-checksum-mismatch/part-0.parquet is the same bytes with
one bit flipped in one event_time value: 2^40 microseconds, about 12.7 days
later, so an engine that does not verify the CRC publishes that event on no
requested date.

    python make.py   (pyarrow, from scripts/pyarrow.sh)
"""
import os
import struct

import pyarrow.parquet as pq

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
t = pq.read_table(os.path.join(root, "fixture", "raw", "ingest_date=2026-03-03", "part-0.parquet"))
cols = t.column_names
good = os.path.join(here, "..", "raw-page-checksums-intact", "part-0.parquet")
pq.write_table(t, good, write_page_checksum=True, data_page_size=4096, row_group_size=300,
               use_dictionary=[c for c in cols if c != "event_time"],
               compression={c: ("NONE" if c == "event_time" else "SNAPPY") for c in cols})
data = bytearray(open(good, "rb").read())
ts = t.column("event_time").cast("int64").to_pylist()
# a value whose 8 bytes occur once in the file
for v in ts[100:]:
    b = struct.pack("<q", v)
    if data.count(b) == 1:
        at = data.index(b)
        break
data[at + 5] ^= 0x01  # bit 40
open(os.path.join(here, "part-0.parquet"), "wb").write(bytes(data))
print("flipped bit 40 of the event_time at byte", at)
