"""Topology: node → cabinet → I/O node, from a CSV or a Cray ``xtdb2proc`` dump.

See docs/design.md, 'Sources'.

CSV: a header with at least ``node`` and ``cabinet`` (``cluster``, ``ion``, ``switch``, ``row``,
``col``, ``x``, ``y``, ``z``, ``node_type`` optional, other columns ignored). A row's machine is
``--cluster``, else its ``cluster`` field, else the unnamed one (source.record_cluster).

``xtdb2proc``: one ``key=value,...`` line per processor. The node name is ``nid%05d`` of
``processor_id`` (Slurm's name on Cray XC); the cabinet is the Cray cname ``c<cab_position>-
<cab_row>``; the Aries switch is the blade ``c<pos>-<row>c<cage>s<slot>``. Cray machines have
no per-cabinet ION in the dump: ``--ion-per-cabinet`` assumes one hypothetical ION per cabinet,
as paper 004 §2.1 does for Tianhe-1A.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest import inputs
from burstlake.jobs.ingest.source import (
    RECORD,
    Batch,
    Option,
    ParseContext,
    Reject,
    Source,
    UnusableInput,
    record_cluster,
)
from burstlake.lake import checked_keys, node_keys
from burstlake.schemas import REGISTRY, spec

FILE_PATTERN = "*"
CSV_COLUMNS = (
    *("node", "cluster", "cabinet", "ion", "switch"),
    *("row", "col", "x", "y", "z", "node_type"),
)
INT_COLUMNS = ("row", "col", "x", "y", "z")


OPTIONS = (
    Option(
        "ion_per_cabinet",
        "assume one hypothetical I/O node per cabinet where the input names none "
        "(paper 004 §2.1 does this for Tianhe-1A)",
        flag=True,
    ),
)


def _lines(path: Path) -> list[str | Reject]:
    """The file's lines (a BOM, as Excel's CSV export writes, dropped); a line that cannot be
    a record (not UTF-8, too long, lost in a broken gzip) is its Reject (see :mod:`.inputs`)."""
    found: list[str | Reject] = []
    try:
        for number, raw in enumerate(inputs.lines(inputs.text_chunks(path)), 1):
            if isinstance(raw, inputs.Overlong):
                found.append(Reject(f"line {number}", raw.preview, raw.reason))
                continue
            try:
                found.append(inputs.decode_line(raw).rstrip("\r\n"))
            except ValueError as err:
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                found.append(Reject(f"line {number}", text, str(err)))
    except inputs.BrokenStream as err:
        reason = f"corrupt gzip: {err}; the rest of the file is lost"
        found.append(Reject(f"byte {err.offset}", None, reason))
    return found


INT32 = 2**31


def _int(value: str | None) -> int | None:
    """A 32-bit integer field (the topology's row, col, x, y, z); ValueError otherwise."""
    if value is None or value.strip().lower() in ("", "null", "none"):
        return None
    number = int(value)
    if not -INT32 <= number < INT32:
        raise ValueError(f"{value.strip()[:40]} is out of range for a 32-bit integer")
    return number


def _xt_fields(line: str) -> dict[str, str]:
    fields = {}
    for part in line.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"field {part!r} is not key=value")
        fields[key.strip()] = value.strip().strip("'")
    return fields


def _xt_row(fields: dict[str, str]) -> dict:
    for key in ("processor_id", "cab_position", "cab_row"):
        if _int(fields.get(key)) is None:
            raise ValueError(f"missing {key}")
    cabinet = f"c{int(fields['cab_position'])}-{int(fields['cab_row'])}"
    blade = f"{cabinet}c{_int(fields.get('cage'))}s{_int(fields.get('slot'))}"
    return {
        "node": f"nid{int(fields['processor_id']):05d}",
        "cabinet": cabinet,
        "switch": blade,
        "row": _int(fields["cab_row"]),
        "col": _int(fields["cab_position"]),
        "x": _int(fields.get("x_coord")),
        "y": _int(fields.get("y_coord")),
        "z": _int(fields.get("z_coord")),
        "node_type": fields.get("processor_type") or None,
    }


def _csv_row(header: list[str], values: list[str]) -> dict:
    if len(values) != len(header):
        raise ValueError(f"{len(values)} fields, header has {len(header)}")
    row = {k: (v.strip() or None) for k, v in zip(header, values, strict=True) if k in CSV_COLUMNS}
    for key in INT_COLUMNS:
        if key in row:
            row[key] = _int(row[key])
    return row


def _records(lines: list[str | Reject]) -> Iterator[tuple[int, str, dict | Exception] | Reject]:
    """(line number, raw line, row or the error) for every record line of either format, and
    the Reject of every line that is no record."""
    unreadable = [line for line in lines if isinstance(line, Reject)]
    content = [(n, line) for n, line in enumerate(lines, 1) if str(line).strip()]
    body = [(n, line) for n, line in content if not str(line).lstrip().startswith("#")]
    body = [(n, line) for n, line in body if not isinstance(line, Reject)]
    if not body:
        reason = unreadable[0].reason if unreadable else ""
        raise UnusableInput(reason or "no topology records (empty or only comments)")
    yield from unreadable
    first = body[0][1]
    if "processor_id=" in first:
        parse = lambda line: _xt_row(_xt_fields(line))  # noqa: E731
    else:
        try:
            header = [h.strip().lower() for h in next(csv.reader([first]))]
        except csv.Error as err:
            raise UnusableInput(f"first record is not CSV: {err}") from None
        if "node" not in header or "cabinet" not in header:
            raise UnusableInput(
                "neither an xtdb2proc dump nor a CSV with 'node' and 'cabinet' columns "
                f"(first record: {first[:80]!r})"
            )
        body = body[1:]
        parse = lambda line: _csv_row(header, next(csv.reader(io.StringIO(line))))  # noqa: E731
    for number, line in body:
        try:
            yield number, line, parse(line)
        except (ValueError, csv.Error) as err:
            yield number, line, ValueError(str(err))


def parse(path: Path, context: ParseContext) -> Iterator[Batch]:
    """Parse one topology file into a single batch of ``topology`` rows."""
    rows, rejects, origins = {}, [], {}
    conflicts: dict[tuple, list[int]] = {}  # a node's first line -> the lines that contradict it
    records = 0
    for record in _records(_lines(path)):
        records += 1
        if isinstance(record, Reject):
            rejects.append(record)
            continue
        number, line, row = record
        if isinstance(row, Exception):
            rejects.append(Reject(f"line {number}", line, f"malformed record: {row}"))
            continue
        row["cluster"] = record_cluster(context.options, row.get("cluster"))
        if context.options.get("ion_per_cabinet") and not row.get("ion"):
            row["ion"] = f"ion-{row['cabinet']}"
        key = (row["cluster"], row["node"])
        if key in rows:
            first = rows[key][RECORD]
            if {**row, RECORD: first} == rows[key]:
                rejects.append(Reject(f"line {number}", line, f"duplicate of line {first}"))
            else:
                rejects.append(Reject(f"line {number}", line, _conflict(rows[key], row, first)))
                conflicts.setdefault(key, []).append(number)
            continue
        origins[number] = (f"line {number}", line)
        rows[key] = {**row, RECORD: number}
    for key, later in conflicts.items():  # no line of a contradicted node is trusted
        first = rows.pop(key)[RECORD]
        listed = ", ".join(map(str, later))
        rejects.append(Reject(*origins.pop(first), f"conflicts with line {listed}"))
    context.progress(path.stat().st_size)
    schema = spec("topology").schema.append(pa.field(RECORD, pa.int64()))
    table = pa.Table.from_pylist(list(rows.values()), schema=schema)
    yield Batch({"topology": table}, records=records, rejects=rejects, origins=origins)


def _conflict(first: dict, row: dict, line: int) -> str:
    """Why two lines of one node contradict each other: the fields that differ."""
    fields = [f for f in row if f != RECORD and row.get(f) != first.get(f)]
    shown = ", ".join(f"{f} {row.get(f)!r} vs {first.get(f)!r}" for f in fields[:3])
    return f"conflicts with line {line} ({shown}): both quarantined"


def unknown_nodes(lake: str | os.PathLike | None) -> dict[str, list[str]]:
    """Node names in the lake's tables that are not in their machine's topology, per table
    (sorted; ``cluster/node`` for a named machine, as node names are unique only within one).

    Ingest checks node names against the topology loaded at the time; rows that landed before
    their topology arrived are checked here, when it does (DAGs run in any order)."""
    from burstlake.lake import dataset, table_files

    if not table_files(lake, "topology"):
        return {}
    known = dataset(lake, "topology").to_table(columns=["cluster", "node"])
    keys = node_keys(known.column("cluster"), known.column("node")).to_pylist()
    found: dict[str, list[str]] = {}
    with duckdb.connect() as con:
        for table in REGISTRY.values():
            if (
                not table.node_columns
                or table.name == "topology"
                or not table_files(lake, table.name)
            ):
                continue
            con.register("rows", dataset(lake, table.name))
            missing = set()
            for column in table.node_columns:
                rows = con.execute(
                    f'SELECT DISTINCT cluster, "{column}" FROM rows'
                ).fetch_arrow_table()
                checked = checked_keys(rows.column(0), rows.column(1), keys)
                absent = pc.invert(pc.is_in(checked, pa.array(keys, pa.string())))
                missing |= {
                    (f"{cluster}/" if cluster else "") + node
                    for cluster, node in zip(*rows.filter(absent).to_pydict().values(), strict=True)
                }
            con.unregister("rows")
            if missing:
                found[table.name] = sorted(missing)
    return found


def describe_unknown(found: dict[str, list[str]]) -> list[str]:
    """One line per table: 'node_io: 2 node names not in topology (cn9, cn10)'."""
    return [
        f"{table}: {len(names)} node names not in topology ({', '.join(names[:5])}"
        + (", ..." if len(names) > 5 else "")
        + ")"
        for table, names in found.items()
    ]


def check_options(options: Mapping[str, Any]) -> None:
    """``ion_per_cabinet``: a flag (true or false)."""
    flag = options.get("ion_per_cabinet", False)
    if not isinstance(flag, bool):
        raise ValueError(f"--ion-per-cabinet is a flag (true or false), not {flag!r}")


def after_landing(lake: Path) -> dict[str, list[str]]:
    """Rows that landed before their topology, checked now that it has."""
    return {"not_in_topology": describe_unknown(unknown_nodes(lake))}


SOURCE = Source(
    name="topology",
    tables=("topology",),
    parse=parse,
    check_options=check_options,
    file_pattern=FILE_PATTERN,
    options=OPTIONS,
    after_landing=after_landing,
)
