"""Where a synthesized trace goes: straight into the lake, or the raw files a centre has.

Lake (``--lake``): ``topology``, ``jobs``, ``job_nodes``, ``node_io`` and ``synth_truth``
through :mod:`burstlake.lake` writers under one contribution per machine
(``source_id='synth-<cluster>'``), so a new run replaces the previous one of the same machine
and leaves the other machines of the lake alone. Raw (``--raw``, small runs):
``slurm/sacct-<preset>.txt`` (``sacct -P``), ``zabbix/history-syncer-<k>.ndjson`` (Zabbix
real-time export, item_tags form, cumulative Lustre and network counters sampled every
interval on every node, with counter resets and sample gaps placed where the node is idle;
each value goes to a random one of the ``ZABBIX_FILES`` history syncers' files, as a Zabbix
server writes them),
``topology/topology-<preset>.csv`` (with a ``cluster`` column) and ``synth_truth.parquet``.
Ingesting the raw files (Zabbix with ``--cluster``: an export names no machine) gives the lake
path's rows.
"""

from __future__ import annotations

import contextlib
import csv
import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from burstlake import catalog
from burstlake.jobs.synth.behaviour import TRAFFIC_COLUMNS
from burstlake.jobs.synth.calibration import Calibration
from burstlake.jobs.synth.trace import (
    DAY_S,
    Trace,
    job_batches,
    job_nodes_table,
    jobs_table,
    node_io_days,
    topology_table,
    traffic_days,
    truth_table,
)
from burstlake.lake import SOURCE, ContributionWriter, table_files, write_table
from burstlake.presets import ForwardingMachine
from burstlake.progress import Report, Step, silent
from burstlake.schemas.sources import SYNTH_SACCT_COLUMNS as SACCT_COLUMNS
from burstlake.schemas.sources import SYNTH_SACCT_FIELDS as SACCT_FIELDS

SOURCE_ID = "synth"  # + '-<cluster>': see source_id
TOPOLOGY_COLUMNS = ("node", "cluster", "cabinet", "ion", "switch", "row", "col")
ZABBIX_FILES = 4
MAX_RAW_SAMPLES = 200_000_000
IDLE_CPU_LOAD = 0.05
IDLE_MEM_BYTES = 1 << 30
# (export name, node_io column, Zabbix value type, component tag)
ZABBIX_ITEMS = (
    ("Lustre read bytes", "read_bytes", 3, "lustre"),
    ("Lustre write bytes", "write_bytes", 3, "lustre"),
    ("Lustre read ops", "read_ops", 3, "lustre"),
    ("Lustre write ops", "write_ops", 3, "lustre"),
    ("Lustre OSC read bytes", "osc_read_bytes", 3, "lustre"),
    ("Lustre OSC write bytes", "osc_write_bytes", 3, "lustre"),
    ("Network received bytes", "net_rx_bytes", 3, "network"),
    ("Network sent bytes", "net_tx_bytes", 3, "network"),
    ("CPU load (1 min average)", "cpu_load", 0, "cpu"),
    ("Memory used", "mem_used_bytes", 3, "memory"),
)
COUNTERS = len(TRAFFIC_COLUMNS)


def write_lake(trace: Trace, lake: str | os.PathLike, report: Report = silent) -> dict[str, int]:
    """Write the trace's tables into the lake; returns rows written per table.

    ``node_io`` goes in as it is made, one commit per :data:`DAYS_PER_COMMIT` UTC days (a
    Delta commit holds every day partition it writes in memory until it ends), so memory is
    set by the busiest days, not by the span; the first commit replaces the machine's earlier
    ``node_io``, later ones add their days as contributions of their own."""
    source = source_id(trace)
    rows = {
        "topology": write_table(lake, "topology", topology_table(trace), source),
        "jobs": write_table(lake, "jobs", job_batches(trace, jobs_table), source),
        "job_nodes": write_table(lake, "job_nodes", job_batches(trace, job_nodes_table), source),
    }
    days = -(-trace.window_s // DAY_S)
    earlier = sorted(_node_io_parts(lake, source))
    rows["node_io"] = 0
    writer: ContributionWriter | None = None
    try:
        for day, table in enumerate(node_io_days(trace)):
            if day % DAYS_PER_COMMIT == 0:
                if writer is not None:
                    rows["node_io"] += writer.commit()
                part = source if day == 0 else f"{source}{PART}{_day_label(trace, day)}"
                writer = ContributionWriter(lake, "node_io", part, earlier if day == 0 else ())
            writer.write(table)
            report(Step("synth node_io", 1, total=days, unit="day"))
        if writer is not None:
            rows["node_io"] += writer.commit()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    report(Step("synth node_io", done=True))
    rows["synth_truth"] = write_table(lake, "synth_truth", truth_table(trace), source)
    catalog.refresh(lake)
    return rows


DAYS_PER_COMMIT = 7
PART = "@"  # a node_io contribution after the first: '<source_id>@<its first day>'


def _day_label(trace: Trace, day: int) -> str:
    return datetime.fromtimestamp(trace.epoch_s + day * DAY_S, UTC).date().isoformat()


def _node_io_parts(lake: str | os.PathLike, source: str) -> set[str]:
    """The later ``node_io`` contributions of an earlier run of this machine (read one batch
    of the source column at a time: a year of rows stays on disk)."""
    files = [str(p) for p in table_files(lake, "node_io")]
    if not files:
        return set()
    found: set[str] = set()
    for batch in ds.dataset(files, format="parquet").to_batches(columns=[SOURCE]):
        found.update(pc.unique(batch.column(0)).to_pylist())
    return {each for each in found if each and each.startswith(f"{source}{PART}")}


def source_id(trace: Trace) -> str:
    """The lake contribution of one synthesized machine."""
    return f"{SOURCE_ID}-{trace.cluster}"


def write_raw(
    trace: Trace, out: str | os.PathLike, rng: np.random.Generator, report: Report = silent
) -> dict[str, int]:
    """Write the raw files under ``out``; returns lines (rows) written per kind of file."""
    check_raw_size(trace.machine, trace.cal, trace.window_s)
    root = Path(out)
    counts = {"zabbix": _write_zabbix(trace, root / "zabbix", rng, report)}
    counts["sacct"] = _write_sacct(trace, root / "slurm" / f"sacct-{trace.preset}.txt")
    counts["topology"] = _write_topology(trace, root / "topology" / f"topology-{trace.preset}.csv")
    truth = truth_table(trace)
    pq.write_table(truth, root / "synth_truth.parquet", compression="zstd")
    counts["synth_truth"] = truth.num_rows
    return counts


def check_raw_size(machine: ForwardingMachine, cal: Calibration, window_s: int) -> None:
    """Refuse raw output too large for text files (a month of Zabbix lines is billions)."""
    samples = machine.nodes * (window_s // cal.interval_s + 1) * len(ZABBIX_ITEMS)
    if samples > MAX_RAW_SAMPLES:
        raise ValueError(
            f"raw output would hold {samples:,} Zabbix samples (limit {MAX_RAW_SAMPLES:,}); "
            "write a full-scale run with --lake, or use fewer --days"
        )


def _sacct_time(value: datetime | None) -> str:
    return "Unknown" if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _write_sacct(trace: Trace, path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = jobs_table(trace).select(list(SACCT_COLUMNS)).to_pylist()
    with path.open("w", newline="") as handle:
        handle.write("|".join(SACCT_FIELDS) + "\n")
        for row in table:
            cells = [_sacct_time(v) if isinstance(v, datetime) else str(v) for v in row.values()]
            handle.write("|".join(cells) + "\n")
    return len(table)


def _write_topology(trace: Trace, path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = topology_table(trace).select(list(TOPOLOGY_COLUMNS)).to_pylist()
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=TOPOLOGY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    return len(rows)


def _dense_traffic(trace: Trace) -> np.ndarray:
    """Per-interval traffic as a [node, interval, counter] array (small runs only)."""
    dense = np.zeros((trace.machine.nodes, trace.intervals, COUNTERS), dtype=np.int64)
    for rows in traffic_days(trace):
        for k, column in enumerate(TRAFFIC_COLUMNS):
            dense[rows["node"], rows["interval"], k] = rows[column]
    return dense


def _gauges(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """CPU load and memory per [node, grid point]: the job's while one runs, else idle."""
    shape = (trace.machine.nodes, trace.intervals + 1)
    cpu = np.full(shape, IDLE_CPU_LOAD)
    mem = np.full(shape, IDLE_MEM_BYTES, dtype=np.int64)
    jobs, iv = trace.jobs, trace.cal.interval_s
    first, last = -(-jobs.start_s // iv), -(-jobs.end_s // iv)
    for j in range(len(jobs)):
        nodes = jobs.flat_nodes[jobs.node_offset[j] : jobs.node_offset[j] + jobs.nnodes[j]]
        cpu[nodes, first[j] : last[j]] = trace.behaviour.cpu_load[j]
        mem[nodes, first[j] : last[j]] = trace.behaviour.mem_used_bytes[j]
    return cpu, mem


def _idle_runs(busy: np.ndarray, rng: np.random.Generator, cal, days: int):
    """Per node: reset grid points and gap grid points, all where the node is idle.

    A grid point is idle when neither interval beside it has traffic, so a reset or a missing
    sample there changes no interval's delta.
    """
    nodes, grid = busy.shape[0], busy.shape[1] + 1
    idle = np.zeros((nodes, grid), dtype=bool)
    idle[:, 1:-1] = ~busy[:, :-1] & ~busy[:, 1:]
    resets = np.zeros_like(idle)
    present = np.ones_like(idle)
    for node in range(nodes):
        points = np.flatnonzero(idle[node])
        if not len(points):
            continue
        for _ in range(days):
            if rng.random() < cal.reset_share:
                resets[node, rng.choice(points)] = True
            if rng.random() < cal.gap_share:
                start = int(rng.choice(points))
                length = int(rng.integers(1, cal.gap_max_samples + 1))
                run = idle[node, start : start + length]
                stop = start + (int(np.argmin(run)) if not run.all() else length)
                present[node, start:stop] = False
    return resets & present, present


def _counter_values(dense: np.ndarray, resets: np.ndarray, rng: np.random.Generator):
    """Cumulative counters per [node, grid point, counter], restarting at 0 after a reset."""
    nodes, intervals, counters = dense.shape
    values = np.zeros((nodes, intervals + 1, counters), dtype=np.int64)
    values[:, 1:, :] = np.cumsum(dense, axis=1)
    values += rng.integers(1, 1 << 40, (nodes, 1, counters))  # counts since the last boot
    for node, point in zip(*np.nonzero(resets), strict=True):
        values[node, point:, :] -= values[node, point, :].copy()
    return values


def _write_zabbix(trace: Trace, directory: Path, rng: np.random.Generator, report: Report) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    dense = _dense_traffic(trace)
    days = -(-trace.window_s // DAY_S)
    resets, present = _idle_runs(dense.any(axis=2), rng, trace.cal, days)
    counters = _counter_values(dense, resets, rng)
    del dense
    cpu, mem = _gauges(trace)
    paths = [directory / f"history-syncer-{k + 1}.ndjson" for k in range(ZABBIX_FILES)]
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(path.open("wb")) for path in paths]
        nodes = np.arange(trace.machine.nodes)
        return _write_export(trace, handles, nodes, counters, cpu, mem, present, rng, report)


def _item_text(trace: Trace, nodes: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """The fixed text before ``clock`` and after ``value`` of each (node, item) sample."""
    heads, tails = [], []
    for node in nodes:
        name = trace.machine.node_name(int(node))
        for k, (label, _, kind, tag) in enumerate(ZABBIX_ITEMS):
            heads.append(
                f'{{"host":{{"host":"{name}","name":"{name}"}},"groups":["compute"],'
                f'"item_tags":[{{"tag":"component","value":"{tag}"}}],'
                f'"itemid":{100_000 + int(node) * 16 + k},"name":"{label}","clock":'
            )
            tails.append(f',"type":{kind}}}\n')
    return pa.array(heads), pa.array(tails)


def _write_export(trace, handles, nodes, counters, cpu, mem, present, rng, report) -> int:
    """Write every sample of ``nodes`` in grid order, each to the history syncer that took it
    (a random one, as a Zabbix server spreads an item's values over its syncers' files);
    returns lines written."""
    heads, tails = _item_text(trace, nodes)
    items = len(ZABBIX_ITEMS)
    iv, epoch = trace.cal.interval_s, trace.epoch_s
    is_cpu = np.array([column == "cpu_load" for _, column, _, _ in ZABBIX_ITEMS])
    chunk = max(1, 400_000 // (len(nodes) * items))
    written = 0
    starts = range(0, trace.intervals + 1, chunk)
    for g0 in starts:
        report(Step("synth zabbix", 1, total=len(starts), unit="chunk"))
        grid = np.arange(g0, min(g0 + chunk, trace.intervals + 1))
        ints = np.concatenate(
            [counters[nodes][:, grid, :], mem[nodes][:, grid, None], mem[nodes][:, grid, None]],
            axis=2,
        ).transpose(1, 0, 2)  # [grid, node, item]; the cpu slot is replaced below
        floats = np.broadcast_to(cpu[nodes][:, grid].T[:, :, None], ints.shape)
        keep = np.broadcast_to(present[nodes][:, grid].T[:, :, None], ints.shape).ravel()
        jitter = rng.uniform(-trace.cal.jitter_s, trace.cal.jitter_s, ints.shape)
        seconds = np.floor(jitter)
        clock = epoch + grid[:, None, None] * iv + seconds.astype(np.int64)
        ns = np.minimum(((jitter - seconds) * 1e9).astype(np.int64), 999_999_999)
        cpu_item = np.broadcast_to(is_cpu, ints.shape).ravel()
        value = pc.if_else(
            pa.array(cpu_item),
            pa.array(floats.ravel()).cast(pa.string()),
            pa.array(ints.ravel()).cast(pa.string()),
        )
        which = pa.array(np.tile(np.arange(len(nodes) * items), len(grid)))
        text = pc.binary_join_element_wise(
            pc.take(heads, which),
            pa.array(clock.ravel()).cast(pa.string()),
            ',"ns":',
            pa.array(ns.ravel()).cast(pa.string()),
            ',"value":',
            value,
            pc.take(tails, which),
            "",
        ).filter(pa.array(keep))
        syncer = rng.integers(0, len(handles), len(text))
        for k, handle in enumerate(handles):
            handle.write(_text_bytes(text.filter(pa.array(syncer == k))))
        written += len(text)
    report(Step("synth zabbix", done=True))
    return written


def _text_bytes(strings: pa.Array) -> bytes:
    """The concatenated characters of a string array, without copying it element by element."""
    strings = strings.combine_chunks() if isinstance(strings, pa.ChunkedArray) else strings
    if len(strings) == 0:
        return b""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)
    begin, end = offsets[strings.offset], offsets[strings.offset + len(strings)]
    return strings.buffers()[2].to_pybytes()[begin:end]
