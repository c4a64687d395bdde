"""Every ingest source meets every kind of hostile input, through the real command line.

The rule for every source (docs/design.md, "Sources"; issue 14): empty, truncated, binary,
wrong encoding, enormous lines, duplicate files under other names, clocks running backwards.
Each gets a one-line reason with file and location, the good records land, and nothing is lost
silently. One table, :data:`CASES`, holds the whole grid; cases already tested one by one
elsewhere (tests/ingest/test_slurm.py, test_zabbix.py, test_topology.py, test_darshan.py) are here
too, so that the grid is complete in one place.

Each source's cases run as two ``burstlake ingest SOURCE FILE...`` commands into one lake per
source: every usable file in one (exit 0), every unusable one in the other (exit 1, one
``burstlake ingest SOURCE: FILE: reason`` line each on stderr). Cases use their own job ids,
host and node names, so they do not touch each other in the shared lake. Each case then checks
its files' rows of ``ingest_log`` (``records_in = landed + quarantined``, and for traffic
``seen = landed + quarantined + gap + reset``), its ``quarantine`` rows (one per problem, file
and location named, a one-line reason), and the records that must have landed.

Three more sections: the deployment file (``burstlake.yaml``), ``--db`` URLs, and the rows of
a real Zabbix database read through ``--db`` (issue 41).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import struct
import tracemalloc
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from burstlake.catalog import sql
from burstlake.cli import main
from burstlake.jobs.ingest import inputs
from burstlake.lake import read_table
from tests.builders.paths import SHARED_DATA
from tests.builders.sacct import sacct_hours as sacct
from tests.builders.zabbix import zabbix_line
from tests.builders.zabbix_db import db_ingest, mapping_file, node_io, run_sql

T0 = 1_700_000_000  # Zabbix clocks: 2023-11-14T22:13:20Z, on the 10 s grid
BIG = 20_000_000  # an enormous line or field: 20 MB
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
LATIN1 = "caf\xe9"  # 'café' in Latin-1: byte 0xE9 is not UTF-8
UNUSABLE = "unusable"  # the file as a whole: exit 1, one stderr line, one 'whole file' row
SAME = "same"  # same bytes as a file already landed: a no-op with a message
SAME_REFUSED = "same-refused"  # same bytes as a file refused: refused again, nothing logged


# ---------------------------------------------------------------- inputs of each source


def sacct_json(*jobs: int, name: str = "run") -> str:
    """``sacct --json`` (data_parser 0.0.40 shape, the fields the reader needs)."""
    return json.dumps(
        {
            "meta": {"plugin": {"data_parser": "data_parser/v0.0.40"}},
            "jobs": [
                {
                    "job_id": job,
                    "name": name,
                    "nodes": f"cn{job}",
                    "allocation_nodes": 1,
                    "state": {"current": ["COMPLETED"]},
                    "time": {"start": T0, "end": T0 + 600, "submission": T0 - 60},
                    "steps": [],
                }
                for job in jobs
            ],
        },
        ensure_ascii=False,
    )


def zline(host: str, offset: int, value: int) -> str:
    """One real-time export line: the 'Lustre read bytes' counter (packaged mapping)."""
    return zabbix_line(host, T0 + offset, value, itemid=101, ensure_ascii=False) + "\n"


def export(host: str, *samples: tuple[int, int]) -> str:
    return "".join(zline(host, offset, value) for offset, value in samples)


RISING = tuple((10 * k, 1000 * k) for k in range(6))  # 0..5000 B over 50 s: 5000 B land


def csv_topology(*nodes: str, cabinet: str = "c0") -> str:
    return "node,cabinet,ion\n" + "".join(f"{n},{cabinet},ion0\n" for n in nodes)


def noise(size: int, seed: int) -> bytes:
    """Bytes gzip cannot shrink, so a gzip cut in half still holds whole lines."""
    return random.Random(seed).randbytes(size)


def gzip_cut(lines: list[str]) -> tuple[bytes, int, bool]:
    """The lines gzipped and cut at 3/4; how many whole lines survive (read with zlib, apart
    from burstlake's reader) and whether a part of the next one does."""
    data = gzip.compress("".join(lines).encode(), compresslevel=1)
    cut = data[: len(data) * 3 // 4]
    prefix = zlib.decompressobj(wbits=31).decompress(cut)
    return cut, prefix.count(b"\n"), not prefix.endswith(b"\n")


def gzip_case(source: str, name: str, header: str, lines: list[str], lands) -> Case:
    """A gzip cut mid-stream: the whole lines before the cut land; the rest of the file is
    one record lost 'at byte N' (Zabbix also refuses the part of a line before the cut)."""
    data, whole, partial = gzip_cut([header, *lines])
    records = whole - bool(header)  # the header line is not a record
    lost = ((name, "byte ", "the rest of the file"),)
    if source == "zabbix" and partial:
        lost = ((name, f"line {whole + 1}", "not valid JSON"), *lost)
    landed = records
    accounts = {name: (landed + len(lost), landed, len(lost))}
    return Case(source, "truncated", "gzip-cut", {name: data}, accounts, lost, lands(landed))


def darshan_log(name: str) -> Callable[[Path], bytes]:
    return lambda shared: (shared / "darshan" / name).read_bytes()


def darshan_ending_before_start(shared: Path) -> bytes:
    """A real Darshan 3.4 log whose job header says it ended an hour before it started: the
    zlib job region after the 1328-byte header is rewritten, and the (offset, length) maps of
    the regions after it (name map at byte 32, then the module maps) move by the size change."""
    data = bytearray(darshan_log("mpi-io-test-x86_64-3.4.7.darshan")(shared))
    header, maps_end = 1328, 1328 - 64 * 4  # module versions (64 x uint32) end the header
    (name_map,) = struct.unpack_from("<Q", data, 32)
    job = bytearray(zlib.decompress(data[header:name_map]))
    (start,) = struct.unpack_from("<q", job, 8)  # struct darshan_job: uid, start_time_sec, ...
    struct.pack_into("<q", job, 24, start - 3600)  # ... start_time_nsec, end_time_sec
    region = zlib.compress(bytes(job), 9)
    moved = len(region) - (name_map - header)
    for at in range(32, maps_end, 16):
        offset, length = struct.unpack_from("<QQ", data, at)
        if length:
            struct.pack_into("<Q", data, at, offset + moved)
    return bytes(data[:header]) + region + bytes(data[name_map:])


# ---------------------------------------------------------------- the grid


@dataclass(frozen=True)
class Case:
    """One hostile input: its files (name -> bytes, or a function of the shared data directory
    for Darshan), what each file's accounting must be, the problems it must report, and what
    must land.

    ``accounts``: per file, (records_in, landed, quarantined), :data:`UNUSABLE`, :data:`SAME`
    or :data:`SAME_REFUSED`.
    ``problems``: (file, location, part of the reason), exactly the file's quarantine rows.
    ``lands``: (SQL over the lake, or a function of the files' paths giving it, expected rows)
    for the good records.
    """

    source: str
    kind: str
    name: str
    files: dict[str, bytes | str | Callable[[Path], bytes]]
    accounts: dict[str, tuple[int, int, int] | str]
    problems: tuple[tuple[str, str, str], ...] = ()
    lands: tuple[str | Callable[[dict[str, Path]], str], list] | None = None

    @property
    def unusable(self) -> bool:
        return UNUSABLE in self.accounts.values()


def _jobs(*ids: int) -> tuple[str, list]:
    listed = ", ".join(f"'{i}'" for i in ids)
    query = f"SELECT job_id FROM jobs WHERE job_id IN ({listed}) ORDER BY job_id"
    return query, [{"job_id": str(i)} for i in sorted(ids)]


def _nodes(*names: str) -> tuple[str, list]:
    listed = ", ".join(f"'{n}'" for n in names)
    query = f"SELECT node FROM topology WHERE node IN ({listed}) ORDER BY node"
    return query, [{"node": n} for n in sorted(names)]


def _read_bytes(host: str, total: int) -> tuple[str, list]:
    query = f"SELECT sum(read_bytes)::BIGINT AS b FROM node_io WHERE node = '{host}'"
    return query, [{"b": total}]


def _logs(count: int, *names: str) -> tuple[Callable[[dict[str, Path]], str], list]:
    """darshan_jobs rows of these files' logs (a log's id is what it says, not its bytes)."""

    def query(paths: dict[str, Path]) -> str:
        from burstlake.jobs.ingest.darshan import identify

        listed = ", ".join(f"'{identify(paths[n])}'" for n in names)
        return f"SELECT count(*) AS n FROM darshan_jobs WHERE log_id IN ({listed})"

    return query, [{"n": count}]


BINARY_REASON = "binary file (NUL bytes in its first 4096 bytes), not text"
UTF16_REASON = "UTF-16-encoded, not text in UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)"
TOO_LONG = "a line beyond the limit of 1048576 bytes"

CASES = [
    # ------------------------------------------------------------ slurm (sacct -P, --json)
    Case(
        "slurm",
        "empty",
        "zero-bytes",
        {"s-empty.sacct": b""},
        {"s-empty.sacct": UNUSABLE},
        (("s-empty.sacct", "whole file", "empty file: no sacct header line"),),
    ),
    Case(
        "slurm", "empty", "header-only", {"s-header.sacct": sacct()}, {"s-header.sacct": (0, 0, 0)}
    ),
    Case(
        "slurm",
        "empty",
        "whitespace-only",
        {"s-blank.sacct": " \n\t\n\n"},
        {"s-blank.sacct": UNUSABLE},
        (("s-blank.sacct", "whole file", "empty file: no sacct header line"),),
    ),
    Case(
        "slurm",
        "empty",
        "json-without-jobs",
        {"s-empty.json": "{}"},
        {"s-empty.json": UNUSABLE},
        (("s-empty.json", "whole file", "JSON without a 'jobs' list"),),
    ),
    # the same empty bytes under another name: refused again (exit 1, one stderr line), never
    # 'same content as s-void.sacct, already landed' with exit 0 (issue 25)
    Case(
        "slurm",
        "empty",
        "blank-lines-copied",
        {"s-void.sacct": b"\n\n\n", "s-void-copy.json": b"\n\n\n"},
        {"s-void.sacct": UNUSABLE, "s-void-copy.json": SAME_REFUSED},
        (("s-void.sacct", "whole file", "empty file: no sacct header line"),),
    ),
    # the last line is cut mid-record: the two before it land
    Case(
        "slurm",
        "truncated",
        "mid-line",
        {"s-cut.sacct": sacct((101, 0, 1), (102, 0, 1)) + "103|j103|COMPL"},
        {"s-cut.sacct": (3, 2, 1)},
        (("s-cut.sacct", "line 4", "truncated last line: 3 fields, the header has 7"),),
        _jobs(101, 102),
    ),
    gzip_case(
        "slurm",
        "s-cut.sacct.gz",
        "JobID|JobName|NodeList\n",
        [f"{1000 + k}|{noise(200, k).hex()}|cn1\n" for k in range(40)],
        lambda n: _jobs(*range(1000, 1000 + n)),
    ),
    Case(
        "slurm",
        "truncated",
        "json-cut",
        {"s-cut.json": sacct_json(120, 121)[:-60]},
        {"s-cut.json": (2, 1, 1)},
        (("s-cut.json", "byte ", "the rest is lost"),),
        _jobs(120),
    ),
    Case(
        "slurm",
        "binary",
        "random-bytes",
        {"s-random.sacct": noise(3000, 1)},
        {"s-random.sacct": UNUSABLE},
        (("s-random.sacct", "whole file", BINARY_REASON),),
    ),
    Case(
        "slurm",
        "binary",
        "png-renamed",
        {"s-picture.sacct": PNG},
        {"s-picture.sacct": UNUSABLE},
        (("s-picture.sacct", "whole file", BINARY_REASON),),
    ),
    # one Latin-1 job name: that line alone is refused, the others land
    Case(
        "slurm",
        "encoding",
        "latin-1-line",
        {
            "s-latin1.sacct": (
                sacct((130, 0, 1)) + f"131|{LATIN1}|COMPLETED|2020-01-01T00:00:00|"
                "2020-01-01T01:00:00|1|cn131\n" + sacct((132, 0, 1)).split("\n", 1)[1]
            ).encode("latin-1")
        },
        {"s-latin1.sacct": (3, 2, 1)},
        (("s-latin1.sacct", "line 3", "not valid UTF-8 text (Latin-1 or binary bytes)"),),
        _jobs(130, 132),
    ),
    Case(
        "slurm",
        "encoding",
        "utf-16-bom",
        {"s-utf16.sacct": sacct((140, 0, 1)).encode("utf-16")},
        {"s-utf16.sacct": UNUSABLE},
        (("s-utf16.sacct", "whole file", UTF16_REASON),),
    ),
    Case(
        "slurm",
        "encoding",
        "utf-8-bom-text",
        {"s-bom.sacct": b"\xef\xbb\xbf" + sacct((141, 0, 1)).encode()},
        {"s-bom.sacct": (1, 1, 0)},
        (),
        _jobs(141),
    ),
    Case(
        "slurm",
        "encoding",
        "utf-8-bom-json",
        {"s-bom.json": b"\xef\xbb\xbf" + sacct_json(142).encode()},
        {"s-bom.json": (1, 1, 0)},
        (),
        _jobs(142),
    ),
    # a 20 MB job name: that line is refused whole, memory bounded (see the last test)
    Case(
        "slurm",
        "enormous",
        "20-MB-field",
        {
            "s-huge.sacct": sacct((150, 0, 1))
            + "151|"
            + "x" * BIG
            + "|COMPLETED|2020-01-01T00:00:00|2020-01-01T01:00:00|1|cn151\n"
            + sacct((152, 0, 1)).split("\n", 1)[1]
        },
        {"s-huge.sacct": (3, 2, 1)},
        (("s-huge.sacct", "line 3", TOO_LONG),),
        _jobs(150, 152),
    ),
    Case(
        "slurm",
        "enormous",
        "20-MB-json-job",
        {"s-huge.json": sacct_json(153, name="x" * BIG)},
        {"s-huge.json": (1, 0, 1)},
        (("s-huge.json", "jobs[0]", "characters of JSON, beyond the limit"),),
    ),
    # the same bytes under another name: a no-op with a message; job 160 lands once
    Case(
        "slurm",
        "duplicate",
        "same-bytes",
        {"s-dump.sacct": sacct((160, 0, 1)), "s-dump-copy.sacct": sacct((160, 0, 1))},
        {"s-dump.sacct": (1, 1, 0), "s-dump-copy.sacct": SAME},
        (),
        _jobs(160),
    ),
    # the same record inside another file: it replaces the first (reported), never counted twice
    Case(
        "slurm",
        "duplicate",
        "same-records",
        {
            "s-day1.sacct": sacct((161, 0, 1), (162, 0, 1)),
            "s-day1-again.sacct": sacct((162, 0, 1), (163, 0, 1)),
        },
        {"s-day1.sacct": (2, 2, 0), "s-day1-again.sacct": (2, 2, 0)},
        (),
        (
            "SELECT job_id, count(*) AS n FROM jobs WHERE job_id IN ('161', '162', '163') "
            "GROUP BY 1 ORDER BY 1",
            [{"job_id": str(j), "n": 1} for j in (161, 162, 163)],
        ),
    ),
    # lines out of time order land; a job ending before it starts is refused alone
    Case(
        "slurm",
        "clock",
        "backwards",
        {"s-back.sacct": sacct((170, 5, 6), (171, 0, 1), (172, 4, 3))},
        {"s-back.sacct": (3, 2, 1)},
        (("s-back.sacct", "line 4", "column_A=end, column_B=start"),),
        _jobs(170, 171),
    ),
    # a dump of later jobs given before a dump of earlier ones: both land whole
    Case(
        "slurm",
        "clock",
        "files-backwards",
        {"s-tuesday.sacct": sacct((175, 20, 22)), "s-monday.sacct": sacct((176, 1, 2))},
        {"s-tuesday.sacct": (1, 1, 0), "s-monday.sacct": (1, 1, 0)},
        (),
        _jobs(175, 176),
    ),
    # ------------------------------------------------------------ zabbix (real-time export)
    Case(
        "zabbix",
        "empty",
        "zero-bytes",
        {"history-empty.ndjson": b""},
        {"history-empty.ndjson": UNUSABLE},
        (("history-empty.ndjson", "whole file", "empty file: no Zabbix history lines"),),
    ),
    Case(
        "zabbix",
        "empty",
        "header-only",
        {"history-header.tsv": "itemid\tclock\tvalue\n"},
        {"history-header.tsv": (0, 0, 0)},
    ),
    # blank lines are records of an export: each one is refused by line
    Case(
        "zabbix",
        "empty",
        "whitespace-only",
        {"history-blank.ndjson": " \n\t\n"},
        {"history-blank.ndjson": (2, 0, 2)},
        (
            ("history-blank.ndjson", "line 1", "empty line"),
            ("history-blank.ndjson", "line 2", "empty line"),
        ),
    ),
    Case(
        "zabbix",
        "truncated",
        "mid-line",
        {"history-cut.ndjson": export("zcut", *RISING) + zline("zcut", 60, 6000)[:50]},
        {"history-cut.ndjson": (7, 6, 1)},
        (("history-cut.ndjson", "line 7", "not valid JSON (truncated line?)"),),
        _read_bytes("zcut", 5000),
    ),
    gzip_case(
        "zabbix",
        "history-cut.ndjson.gz",
        "",
        [
            zline("zgz", 10 * k, 1000 * k)[:-2] + f', "pad": "{noise(200, k).hex()}"}}\n'
            for k in range(40)
        ],
        lambda n: _read_bytes("zgz", 1000 * (n - 1)),
    ),  # n rising samples: n - 1 rises
    Case(
        "zabbix",
        "binary",
        "random-bytes",
        {"history-random.ndjson": noise(3000, 2)},
        {"history-random.ndjson": UNUSABLE},
        (("history-random.ndjson", "whole file", BINARY_REASON),),
    ),
    Case(
        "zabbix",
        "binary",
        "darshan-log-given-to-zabbix",
        {"history-x.ndjson": darshan_log("imbalanced-io.darshan")},
        {"history-x.ndjson": UNUSABLE},
        (("history-x.ndjson", "whole file", BINARY_REASON),),
    ),
    # a Latin-1 host name: that line alone is refused (never a node named with U+FFFD)
    Case(
        "zabbix",
        "encoding",
        "latin-1-line",
        {
            "history-latin1.ndjson": (export("zlat", *RISING) + zline(LATIN1, 0, 5)).encode(
                "latin-1"
            )
        },
        {"history-latin1.ndjson": (7, 6, 1)},
        (("history-latin1.ndjson", "line 7", "not valid UTF-8 text"),),
        _read_bytes("zlat", 5000),
    ),
    Case(
        "zabbix",
        "encoding",
        "utf-16-bom",
        {"history-utf16.ndjson": export("zu16", *RISING).encode("utf-16")},
        {"history-utf16.ndjson": UNUSABLE},
        (("history-utf16.ndjson", "whole file", UTF16_REASON),),
    ),
    Case(
        "zabbix",
        "encoding",
        "utf-8-bom",
        {"history-bom.ndjson": b"\xef\xbb\xbf" + export("zbom", *RISING).encode()},
        {"history-bom.ndjson": (6, 6, 0)},
        (),
        _read_bytes("zbom", 5000),
    ),
    Case(
        "zabbix",
        "enormous",
        "20-MB-line",
        {
            "history-huge.ndjson": export("zbig", *RISING[:3])
            + '{"host": "'
            + "x" * BIG
            + '"}\n'
            + export("zbig", *RISING[3:])
        },
        {"history-huge.ndjson": (7, 6, 1)},
        (("history-huge.ndjson", "line 4", TOO_LONG),),
        _read_bytes("zbig", 5000),
    ),
    Case(
        "zabbix",
        "duplicate",
        "same-bytes",
        {
            "history-syncer-1.ndjson": export("zdup", *RISING),
            "history-syncer-1.ndjson.copy": export("zdup", *RISING),
        },
        {"history-syncer-1.ndjson": (6, 6, 0), "history-syncer-1.ndjson.copy": SAME},
        (),
        _read_bytes("zdup", 5000),
    ),
    # samples 30..50 s are in both files: reported as duplicates, counted once (0..80 s: 8000)
    Case(
        "zabbix",
        "duplicate",
        "same-records",
        {
            "history-syncer-2.ndjson": export("zrep", *RISING),
            "history-syncer-3.ndjson": export("zrep", *((10 * k, 1000 * k) for k in range(3, 9))),
        },
        {"history-syncer-2.ndjson": (6, 6, 0), "history-syncer-3.ndjson": (6, 3, 3)},
        tuple(
            ("history-syncer-3.ndjson", f"line {n}", f"history-syncer-2.ndjson line {n + 3}")
            for n in (1, 2, 3)
        ),
        _read_bytes("zrep", 8000),
    ),
    # lines in reverse time order give the same 5000 B as in order
    Case(
        "zabbix",
        "clock",
        "reversed-lines",
        {"history-back.ndjson": export("zback", *reversed(RISING))},
        {"history-back.ndjson": (6, 6, 0)},
        (),
        _read_bytes("zback", 5000),
    ),
    # a later file holding earlier samples continues the same series: 0..50 s, 5000 B
    Case(
        "zabbix",
        "clock",
        "files-backwards",
        {
            "history-late.ndjson": export("zfb", *RISING[3:]),
            "history-early.ndjson": export("zfb", *RISING[:3]),
        },
        {"history-late.ndjson": (3, 3, 0), "history-early.ndjson": (3, 3, 0)},
        (),
        _read_bytes("zfb", 5000),
    ),
    # the counter's clock goes back (sample at 5 s after 10 s): 5000 -> 100 is a reset
    # by time order 0:5000, 5:100, 10:6000, 20:7000; rises 5900 + 1000 land, the 100 after the
    # reset is counted as 'reset': seen 7000 = landed 6900 + reset 100
    Case(
        "zabbix",
        "clock",
        "counter-clock-back",
        {"history-reset.ndjson": export("zrst", (0, 5000), (10, 6000), (5, 100), (20, 7000))},
        {"history-reset.ndjson": (4, 4, 0)},
        (),
        _read_bytes("zrst", 6900),
    ),
    # ------------------------------------------------------------ topology (CSV, xtdb2proc)
    Case(
        "topology",
        "empty",
        "zero-bytes",
        {"t-empty.csv": b""},
        {"t-empty.csv": UNUSABLE},
        (("t-empty.csv", "whole file", "no topology records"),),
    ),
    Case(
        "topology",
        "empty",
        "header-only",
        {"t-header.csv": "node,cabinet\n"},
        {"t-header.csv": (0, 0, 0)},
    ),
    Case(
        "topology",
        "empty",
        "whitespace-only",
        {"t-blank.csv": " \n\n"},
        {"t-blank.csv": UNUSABLE},
        (("t-blank.csv", "whole file", "no topology records"),),
    ),
    Case(
        "topology",
        "truncated",
        "mid-line",
        {"t-cut.csv": csv_topology("tc1", "tc2") + "tc3,c"},
        {"t-cut.csv": (3, 2, 1)},
        (("t-cut.csv", "line 4", "2 fields, header has 3"),),
        _nodes("tc1", "tc2"),
    ),
    Case(
        "topology",
        "truncated",
        "xtdb2proc-mid-line",
        {
            "t-cut.xtdb2proc": "processor_id=901,cab_position=0,cab_row=0,cage=0,slot=0\n"
            "processor_id=902,cab_position=0,cab_row=0,cage=0,sl"
        },
        {"t-cut.xtdb2proc": (2, 1, 1)},
        (("t-cut.xtdb2proc", "line 2", "field 'sl' is not key=value"),),
        _nodes("nid00901"),
    ),
    gzip_case(
        "topology",
        "t-cut.csv.gz",
        "node,cabinet,ion,note\n",
        [f"tg{k:02},c0,ion0,{noise(200, k).hex()}\n" for k in range(40)],
        lambda n: _nodes(*(f"tg{k:02}" for k in range(n))),
    ),
    Case(
        "topology",
        "binary",
        "random-bytes",
        {"t-random.csv": noise(3000, 3)},
        {"t-random.csv": UNUSABLE},
        (("t-random.csv", "whole file", BINARY_REASON),),
    ),
    Case(
        "topology",
        "binary",
        "png-renamed",
        {"t-picture.csv": PNG + b"\x01"},
        {"t-picture.csv": UNUSABLE},
        (("t-picture.csv", "whole file", BINARY_REASON),),
    ),
    Case(
        "topology",
        "encoding",
        "latin-1-line",
        {"t-latin1.csv": (csv_topology("tl1", "tl2") + f"{LATIN1},c0,ion0\n").encode("latin-1")},
        {"t-latin1.csv": (3, 2, 1)},
        (("t-latin1.csv", "line 4", "not valid UTF-8 text (Latin-1 or binary bytes)"),),
        _nodes("tl1", "tl2"),
    ),
    Case(
        "topology",
        "encoding",
        "utf-16-bom",
        {"t-utf16.csv": csv_topology("tu1").encode("utf-16")},
        {"t-utf16.csv": UNUSABLE},
        (("t-utf16.csv", "whole file", UTF16_REASON),),
    ),
    Case(
        "topology",
        "encoding",
        "utf-8-bom",
        {"t-bom.csv": b"\xef\xbb\xbf" + csv_topology("tb1", "tb2").encode()},
        {"t-bom.csv": (2, 2, 0)},
        (),
        _nodes("tb1", "tb2"),
    ),
    Case(
        "topology",
        "enormous",
        "20-MB-field",
        {"t-huge.csv": csv_topology("th1") + "th2," + "x" * BIG + ",ion0\nth3,c0,ion0\n"},
        {"t-huge.csv": (3, 2, 1)},
        (("t-huge.csv", "line 3", TOO_LONG),),
        _nodes("th1", "th3"),
    ),
    Case(
        "topology",
        "duplicate",
        "same-bytes",
        {"t-machine.csv": csv_topology("td1"), "t-machine-copy.csv": csv_topology("td1")},
        {"t-machine.csv": (1, 1, 0), "t-machine-copy.csv": SAME},
        (),
        _nodes("td1"),
    ),
    # one node on two lines that disagree: neither is trusted, both quarantined (issue 25)
    Case(
        "topology",
        "duplicate",
        "conflicting-rows",
        {"t-conflict.csv": csv_topology("tc1", "tc2") + "tc1,c9,ion0\n"},
        {"t-conflict.csv": (3, 1, 2)},
        (
            ("t-conflict.csv", "line 2", "conflicts with line 4"),
            ("t-conflict.csv", "line 4", "conflicts with line 2 (cabinet 'c9' vs 'c0')"),
        ),
        _nodes("tc2"),
    ),
    # one node on two identical lines: the repeat is a duplicate, the node lands once
    Case(
        "topology",
        "duplicate",
        "repeated-row",
        {"t-repeat.csv": csv_topology("tr1", "tr2", "tr1")},
        {"t-repeat.csv": (3, 2, 1)},
        (("t-repeat.csv", "line 4", "duplicate of line 2"),),
        _nodes("tr1", "tr2"),
    ),
    # node te2 in both files: the later file's row replaces the earlier one, never two rows
    Case(
        "topology",
        "duplicate",
        "same-records",
        {
            "t-part1.csv": csv_topology("te1", "te2"),
            "t-part2.csv": csv_topology("te2", "te3", cabinet="c1"),
        },
        {"t-part1.csv": (2, 2, 0), "t-part2.csv": (2, 2, 0)},
        (),
        (
            "SELECT node, cabinet FROM topology WHERE node IN ('te1', 'te2', 'te3') ORDER BY 1",
            [
                {"node": "te1", "cabinet": "c0"},
                {"node": "te2", "cabinet": "c1"},
                {"node": "te3", "cabinet": "c1"},
            ],
        ),
    ),
    # ------------------------------------------------------------ darshan (binary logs)
    Case(
        "darshan",
        "empty",
        "zero-bytes",
        {"d-empty.darshan": b""},
        {"d-empty.darshan": UNUSABLE},
        (("d-empty.darshan", "whole file", "not a Darshan log darshan-util can read"),),
    ),
    Case(
        "darshan",
        "truncated",
        "half-a-log",
        {"d-cut.darshan": lambda d: darshan_log("imbalanced-io.darshan")(d)[:20_000]},
        {"d-cut.darshan": UNUSABLE},
        (("d-cut.darshan", "whole file", "truncated or corrupt"),),
    ),
    Case(
        "darshan",
        "binary",
        "png-renamed",
        {"d-picture.darshan": PNG},
        {"d-picture.darshan": UNUSABLE},
        (("d-picture.darshan", "whole file", "not a Darshan log darshan-util can read"),),
    ),
    Case(
        "darshan",
        "encoding",
        "utf-16-text",
        {"d-text.darshan": sacct((180, 0, 1)).encode("utf-16")},
        {"d-text.darshan": UNUSABLE},
        (("d-text.darshan", "whole file", "not a Darshan log darshan-util can read"),),
    ),
    # a real log's header followed by 20 MB of noise: read in the reader process, refused
    Case(
        "darshan",
        "enormous",
        "20-MB-body",
        {
            "d-huge.darshan": lambda d: (
                darshan_log("imbalanced-io.darshan")(d)[:4096] + noise(BIG, 4)
            )
        },
        {"d-huge.darshan": UNUSABLE},
        (("d-huge.darshan", "whole file", "truncated or corrupt"),),
    ),
    Case(
        "darshan",
        "duplicate",
        "same-bytes",
        {
            "d-run.darshan": darshan_log("mpi-io-test-x86_64-3.4.7.darshan"),
            "d-run-copy.darshan": darshan_log("mpi-io-test-x86_64-3.4.7.darshan"),
        },
        {"d-run.darshan": (22, 22, 0), "d-run-copy.darshan": SAME},  # 9 of them name records
        (),
        _logs(1, "d-run.darshan", "d-run-copy.darshan"),
    ),
    # a log ending before it starts: its header is refused by the 'start <= end' rule
    Case(
        "darshan",
        "clock",
        "end-before-start",
        {"d-backwards.darshan": darshan_ending_before_start},
        # its 12 module records and 9 name records go with the header
        {"d-backwards.darshan": (22, 0, 22)},
        (
            ("d-backwards.darshan", "log header", "column_A=end, column_B=start"),
            *(("d-backwards.darshan", "module=", "belongs to the log header"),) * 3,
            *(("d-backwards.darshan", "heatmap module=", "belongs to the log header"),) * 9,
            *(("d-backwards.darshan", "name record ", "belongs to the log header"),) * 9,
        ),
        _logs(0, "d-backwards.darshan"),
    ),
    # the 2017 Edison log after a 2021 run: both land whole
    Case(
        "darshan",
        "clock",
        "files-backwards",
        {
            "d-2021.darshan": darshan_log("mpi-io-test-ppc64-3.1.8.darshan"),
            "d-2017.darshan": darshan_log("edison_dbscan_read_job4478544.darshan"),
        },
        {"d-2021.darshan": (8, 8, 0), "d-2017.darshan": (135, 135, 0)},  # 4 name records each
        (),
        _logs(2, "d-2021.darshan", "d-2017.darshan"),
    ),
]


# ---------------------------------------------------------------- running the grid


@dataclass
class Run:
    """The two commands of one source: exit codes and output, and where each file was."""

    lake: Path
    paths: dict[str, Path]
    codes: dict[bool, int] = field(default_factory=dict)  # unusable group -> exit code
    out: str = ""
    err: str = ""
    log: list[dict] = field(default_factory=list)  # ingest_log rows after both commands
    quarantine: list[dict] = field(default_factory=list)


def _content(value: bytes | str | Callable[[Path], bytes]) -> bytes | None:
    if callable(value):
        return value(SHARED_DATA) if SHARED_DATA.is_dir() else None
    return value.encode() if isinstance(value, str) else value


def _ingest(source: str, root: Path) -> Run:
    """Write every case's files of a source, then ingest the usable and the unusable ones."""
    run = Run(root / "lake", {})
    for unusable in (False, True):
        files = []
        for case in (c for c in CASES if c.source == source and c.unusable == unusable):
            for name, value in case.files.items():
                data = _content(value)
                if data is not None:
                    run.paths[name] = root / name
                    run.paths[name].write_bytes(data)
                    files.append(str(run.paths[name]))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            run.codes[unusable] = main(["ingest", source, *files, "--lake", str(run.lake)])
        run.out += out.getvalue()
        run.err += err.getvalue()
    run.log = read_table(run.lake, "ingest_log").to_pylist()
    run.quarantine = read_table(run.lake, "quarantine").to_pylist()
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Run]:
    """One lake per source, ingested once for all its cases."""
    done: dict[str, Run] = {}

    def run(source: str) -> Run:
        if source not in done:
            done[source] = _ingest(source, tmp_path_factory.mktemp(source))
        return done[source]

    return run


def _account_line(path: Path, account: tuple[int, int, int] | str, copy_of: Path | None) -> str:
    if account == SAME:
        return f"{path}: same content as {copy_of}, already landed: nothing to do"
    if account == SAME_REFUSED:
        return f"{path}: same content as {copy_of}, refused: "
    if account == UNUSABLE:
        return f"{path}: 1 records in, 0 landed, 1 quarantined — unusable: "
    records, landed, quarantined = account
    return f"{path}: {records} records in, {landed} landed, {quarantined} quarantined"


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.source}-{c.kind}-{c.name}")
def test_hostile_input(case: Case, runs) -> None:
    run = runs(case.source)
    if any(name not in run.paths for name in case.files):
        pytest.skip(f"real samples not found at {SHARED_DATA}")
    # exit status as documented (README, 'Command line'): non-zero only for unusable files
    assert run.codes[case.unusable] == (1 if case.unusable else 0)
    assert "Traceback" not in run.out + run.err and "UNEXPLAINED" not in run.out
    paths = [run.paths[name] for name in case.files]
    log = {Path(r["file"]).name: r for r in run.log if Path(r["file"]) in paths}
    out_lines = run.out.splitlines()
    for path, account in zip(paths, case.accounts.values(), strict=True):
        expected = _account_line(path, account, paths[0])
        assert sum(line.startswith(expected) for line in out_lines) == 1, expected
        if account in (SAME, SAME_REFUSED):
            assert path.name not in log  # a no-op: nothing landed, nothing logged twice
            refused = f"burstlake ingest {case.source}: {path}: "
            assert sum(line.startswith(refused) for line in run.err.splitlines()) == (
                account == SAME_REFUSED
            )
            continue
        row = log[path.name]
        counts = (row["records_in"], row["landed"], row["quarantined"])
        assert counts == ((1, 0, 1) if account == UNUSABLE else account)
        assert row["records_in"] == row["landed"] + row["quarantined"]
        for parts in row["traffic"] or []:
            lost = parts["quarantined"] + parts["gap"] + parts["reset"]
            assert parts["seen"] == parts["landed"] + lost, parts
        reasons = [
            line
            for line in run.err.splitlines()
            if line.startswith(f"burstlake ingest {case.source}: {path}: ")
        ]
        assert len(reasons) == (account == UNUSABLE), reasons
    quarantined = sorted(
        (Path(r["file"]).name, r["location"], r["reason"])
        for r in run.quarantine
        if Path(r["file"]) in paths
    )
    assert len(quarantined) == len(case.problems), quarantined
    for (file, location, reason), (name, where, part) in zip(
        quarantined, sorted(case.problems), strict=True
    ):
        assert (file, "\n" in reason) == (name, False)
        assert location.startswith(where) and part in reason, (location, reason)
    if case.lands:
        query, rows = case.lands
        query = query(run.paths) if callable(query) else query
        assert sql(run.lake, query).to_pylist() == rows


@pytest.mark.parametrize("source", ["slurm", "zabbix", "topology", "darshan"])
def test_each_command_sums_its_files(source: str, runs) -> None:
    """The summary line of each command is the sum of its files' ingest_log rows."""
    run = runs(source)
    log = run.log
    summaries = [line for line in run.out.splitlines() if line.startswith(f"{source}: ")]
    logged = [sum(r[k] for r in log) for k in ("records_in", "landed", "quarantined")]
    numbers = [[int(w) for w in line.replace(",", "").split() if w.isdigit()] for line in summaries]
    assert [sum(n[i] for n in numbers) for i in (1, 2, 3)] == logged
    assert logged[0] == logged[1] + logged[2]


def test_an_enormous_line_is_never_held_whole(tmp_path: Path) -> None:
    """A 20 MB line is refused by its size alone: the readers hold at most the limit of it
    (1 MiB) and a few read blocks (1 MiB each), never the 20 MB."""
    path = tmp_path / "huge.txt"
    path.write_bytes(b"before\n" + b"x" * BIG + b"\nafter\n")
    tracemalloc.start()
    try:
        read = list(inputs.lines(inputs.text_chunks(path)))
        _, peak_lines = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        capped = sum(len(c) for c in inputs.cap_lines(inputs.text_chunks(path)))
        _, peak_capped = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read == [b"before\n", inputs.Overlong(BIG + 1, b"x" * inputs.PREVIEW_BYTES), b"after\n"]
    assert capped == len(b"before\n") + inputs.MAX_LINE_BYTES + 1 + len(b"\nafter\n")
    assert max(peak_lines, peak_capped) < 6 * inputs.MAX_LINE_BYTES < BIG // 3


# ---------------------------------------------------------------- the deployment file


def _many_machines(count: int) -> str:
    return "machines:\n" + "".join(f"  m{i}: {{}}\n" for i in range(count))


# (name, burstlake.yaml text, the key and reason the one line names); {lake} is the lake
DEPLOYMENT_CASES = [
    ("machine-twice", "machines:\n  m: {}\n  m: {}\n", "line 3: key 'm' is given twice"),
    (
        "alias-bomb",
        "machines:\n  m:\n    sources:\n      zabbix: &a {host_prefix: [x=y]}\n"
        "  n: {sources: {zabbix: *a}}\n",
        "line 5: aliases (*name) are not allowed",
    ),
    ("nested-5000", "x: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 32 deep"),
    (
        "password-in-source",
        "machines: {m: {sources: {zabbix: {db: 'postgresql://z:hunter2@h/z'}}}}\n",
        "machines.m.sources.zabbix.db: holds a password",
    ),
    (
        "password-parameter",
        "machines: {m: {}}\nzabbix_db: {m: {url: 'postgresql://z@h/z?password=hunter2'}}\n",
        "zabbix_db.m.url: holds a password",
    ),
    ("password-key", "machines: {m: {}}\npassword: hunter2\n", "password: passwords never live"),
    (
        "password-env-list",
        "machines: {m: {}}\nzabbix_db: {m: {url: 'postgresql://z@h/z', password_env: [X]}}\n",
        "zabbix_db.m.password_env: a name of letters, digits and _, not ['X']",
    ),
    (
        "machine-a-list",
        "machines: {m: {}}\ndrops: [{path: d, source: zabbix, machine: [m]}]\n",
        "drops[0].machine: a machine name is text, not ['m']",
    ),
    (
        "interval-overflow",
        "machines: {m: {sources: {zabbix: {interval: 9223372037}}}}\n",
        "machines.m.sources.zabbix.interval: --interval must be 1..86400 seconds (a day)",
    ),
    (
        "interval-1e23",
        "machines: {m: {sources: {zabbix: {interval: 100000000000000000000000}}}}\n",
        "machines.m.sources.zabbix.interval: --interval must be 1..86400 seconds (a day)",
    ),
    (
        "threads-1e8",
        "machines: {m: {sources: {zabbix: {threads: 100000000}}}}\n",
        "machines.m.sources.zabbix.threads: --threads must be 1..256, not 100000000",
    ),
    (
        "memory-lots",
        "machines: {m: {sources: {zabbix: {memory_limit: lots}}}}\n",
        "machines.m.sources.zabbix: --memory-limit 'lots': give a size such as 4GB",
    ),
    (
        "memory-1KB",
        "machines: {m: {sources: {zabbix: {memory_limit: 1KB}}}}\n",
        "machines.m.sources.zabbix: --memory-limit '1KB': must be 16MiB..1PiB",
    ),
    (
        "drop-is-the-lake",
        "machines: {m: {}}\ndrops: [{path: '{lake}', source: zabbix, machine: m}]\n",
        "drops[0].path: {lake} is or holds the lake",
    ),
    (
        "drop-holds-the-lake",
        "machines: {m: {}}\ndrops: [{path: '{lake}/..', source: zabbix, machine: m}]\n",
        "is or holds the lake",
    ),
    (
        "two-drops-one-folder",
        "machines: {m: {}, n: {}}\ndrops:\n  - {path: d, source: zabbix, machine: m}\n"
        "  - {path: d/, source: zabbix, machine: n}\n",
        "drops[1].path: ",
    ),
    ("machines-100000", _many_machines(100_000), "machines: 100000 machines; at most 1000"),
]


@pytest.mark.parametrize(
    "name, text, reason", DEPLOYMENT_CASES, ids=[c[0] for c in DEPLOYMENT_CASES]
)
def test_hostile_deployment_file(name: str, text: str, reason: str, tmp_path: Path, capsys) -> None:
    """``burstlake ingest zabbix`` with a hostile ``burstlake.yaml``: exit 2 before any work,
    one line naming the file, the key and the reason; nothing lands."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "burstlake.yaml"
    config.write_text(text.replace("{lake}", str(lake)))
    data = tmp_path / "history.ndjson"
    data.write_text(export("hcfg", *RISING))
    argv = ["ingest", "zabbix", str(data), "--lake", str(lake), "--config", str(config)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"burstlake ingest: {config}: "), err
    assert reason.replace("{lake}", str(lake)) in err, err
    assert "hunter2" not in err
    assert not read_table(lake, "ingest_log").num_rows


# ---------------------------------------------------------------- --db URLs

# (name, --db URL, what the one line says); none of these reaches a server
DB_CASES = [
    ("not-postgresql", "mysql://z:hunter2@h/z", "--db 'mysql://z@h/z': expected postgresql://"),
    (
        "upper-case-scheme",
        "POSTGRESQL://z:hunter2@h:5432/z",
        "--db postgresql://z@h:5432/z: the URL holds a password",
    ),
    (
        "port-99999",
        "postgresql://z@h:99999/z",
        "--db postgresql://z@h:99999/z: the port is not 1..65535",
    ),
    ("password-in-url", "postgresql://z:hunter2@h/z", "the URL holds a password"),
    ("password-parameter", "postgresql://z@h/z?password=hunter2", "the URL holds a password"),
    ("unparsable", "postgresql://z:hunter2@[::1/z", "--db postgresql://z@[::1/z"),
]


@pytest.mark.parametrize("name, url, said", DB_CASES, ids=[c[0] for c in DB_CASES])
def test_hostile_db_url(name: str, url: str, said: str, tmp_path: Path, capsys) -> None:
    """``burstlake ingest zabbix --db URL``: exit 2, one line naming --db and what is wrong,
    never the password; nothing lands."""
    lake = tmp_path / "lake"
    assert main(["ingest", "zabbix", "--db", url, "--lake", str(lake)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("burstlake ingest: ") and said in err, err
    assert "hunter2" not in err, err
    assert not read_table(lake, "ingest_log").num_rows


# ---------------------------------------------------------------- --db rows (real PostgreSQL)
# The database's own hostile rows, read by ``burstlake ingest zabbix --db`` from a real
# PostgreSQL with Zabbix 6.0's schema (the server of tests/builders/zabbix_db.py; skipped
# without it). Each case adds rows to the generated history; each bad row is one quarantine
# row naming its item and clock, and node_io equals a clean read of the history without them.
# The far-future, backfill, topology-added, duplicate, unnamed-then-named, NULL ns, text value
# type and server faults are in tests/ingest/test_zabbix_db.py, each also asserting the lake.

MID = 1700000010 + 30 * 10 + 15  # between two samples of the generated history

DB_ROW_CASES = [
    # (name, table, itemid, clock, value, ns, the quarantine reason)
    ("float-nan", "history", 101, MID, "'NaN'", 0, "value nan is not a number"),
    ("float-infinity", "history", 101, MID, "'Infinity'", 0, "value inf is not a number"),
    ("ns-past-a-second", "history_uint", 100, MID, 5, 1500000000, "ns 1500000000 is not 0.."),
    ("negative-clock", "history_uint", 100, -30, 5, 0, "clock -30 is not a Unix time"),
    ("negative-ns", "history_uint", 100, MID, 5, -1, "ns -1 is not 0..999999999"),
]  # fmt: skip


@pytest.mark.slow  # a PostgreSQL server
@pytest.mark.parametrize(
    "name, table, itemid, clock, value, ns, reason",
    DB_ROW_CASES,
    ids=[c[0] if isinstance(c, tuple) else c.id for c in DB_ROW_CASES],
)
def test_hostile_db_rows(
    name, table, itemid, clock, value, ns, reason, loaded, tmp_path, capsys
) -> None:
    mapping = mapping_file(tmp_path)
    clean = tmp_path / "clean"
    assert db_ingest(clean, loaded, mapping) == 0
    run_sql(loaded, f"INSERT INTO {table} VALUES ({itemid}, {clock}, {value}, {ns})")
    lake = tmp_path / "lake"
    capsys.readouterr()
    assert db_ingest(lake, loaded, mapping) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "231 history rows read" in out, (out, err)
    assert "231 records in, 230 landed, 1 quarantined" in out, out
    rows = read_table(lake, "quarantine", ["raw", "reason"]).to_pylist()
    assert len(rows) == 1 and rows[0]["reason"].startswith(reason), rows
    assert rows[0]["raw"].startswith(f"{itemid}\t{clock}\t"), rows  # the row, by item and clock
    assert node_io(lake) == node_io(clean)
    assert db_ingest(lake, loaded, mapping) == 0  # a re-run lands nothing more
    assert node_io(lake) == node_io(clean)
    assert read_table(lake, "quarantine").num_rows == 1


@pytest.mark.slow
def test_db_rows_in_reverse_order_and_an_empty_history(loaded, tmp_path, capsys) -> None:
    """The history stored newest first reads as it does oldest first; a database whose
    history is then emptied reads nothing and changes nothing."""
    mapping = mapping_file(tmp_path)
    clean = tmp_path / "clean"
    assert db_ingest(clean, loaded, mapping) == 0
    for table in ("history", "history_uint"):
        run_sql(
            loaded,
            f"CREATE TABLE saved_{table} AS SELECT * FROM {table}",
            f"DELETE FROM {table}",
            f"INSERT INTO {table} SELECT * FROM saved_{table} ORDER BY clock DESC",
            f"DROP TABLE saved_{table}",
        )
    lake = tmp_path / "lake"
    assert db_ingest(lake, loaded, mapping) == 0
    assert node_io(lake) == node_io(clean)
    run_sql(loaded, "DELETE FROM history", "DELETE FROM history_uint")
    empty = tmp_path / "empty"
    capsys.readouterr()
    assert db_ingest(empty, loaded, mapping) == 0
    assert "0 history rows read" in capsys.readouterr().out
    assert node_io(empty) == []
    assert db_ingest(lake, loaded, mapping) == 0
    assert node_io(lake) == node_io(clean)  # nothing deleted from the lake
