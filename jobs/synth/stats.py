"""A small NumPy/pandas reading of paper 004's headline figures, for calibration checks only.

Independent of the Spark metrics (jobs/metrics): it reads a lake's ``jobs``, ``job_nodes``,
``node_io`` and ``topology`` and returns the figures the synthesizer is calibrated to, under the
names of ``platform_summary.figure`` (docs/design.md, "Metrics"). It shares the definitions of
the metrics, not their code paths: the NUD of :mod:`burstlake.jobs.metrics.nud` (004 Def. 2)
and the thresholds of :class:`~burstlake.jobs.metrics.settings.MetricSettings` — rank-0 above
``rank0_share`` (§3.2.1), uneven above ``uneven_nud`` (§3.2.2, §3.3.2), minimal cabinets
⌈N / nodes per cabinet⌉ (§3.3.1), data-intensive above ``data_intensive_bytes``,
low-communication when I/O bytes > net − Lustre bytes, optimizable = data-intensive ∧ all-rank
∧ low-comm (§6.2), the busiest ``top_node_fraction`` of nodes and ``top_cabinet_fraction`` of
cabinets per interval, traffic-weighted (§4.1). A job's bytes are the ``node_io`` rows of its
nodes with ``ts`` in [start, end).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
from numba import njit

from burstlake.jobs.metrics.nud import nud_of
from burstlake.jobs.metrics.settings import MetricSettings, top_count
from burstlake.jobs.synth.trace import Trace, traffic_days
from burstlake.lake import read_table


def _frames(lake: str | os.PathLike) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    jobs = read_table(lake, "jobs", ["job_id", "start", "end", "nnodes"]).to_pandas()
    nodes = read_table(lake, "job_nodes", ["job_id", "node", "node_index"]).to_pandas()
    io = read_table(
        lake,
        "node_io",
        ["node", "ts", "read_bytes", "write_bytes", "net_rx_bytes", "net_tx_bytes"],
    ).to_pandas()
    return jobs, nodes, io


def job_bytes(lake: str | os.PathLike) -> pd.DataFrame:
    """Per job × allocated node: Lustre bytes and communication bytes (0 where no rows)."""
    jobs, nodes, io = _frames(lake)
    io["io"] = io.read_bytes + io.write_bytes
    io["comm"] = io.net_rx_bytes + io.net_tx_bytes - io["io"]
    spans = nodes.merge(jobs, on="job_id").sort_values("start")
    rows = pd.merge_asof(
        io.sort_values("ts"), spans, left_on="ts", right_on="start", by="node"
    ).dropna(subset=["job_id"])
    rows = rows[rows.ts < rows.end]
    sums = rows.groupby(["job_id", "node"], as_index=False)[["io", "comm"]].sum()
    out = nodes.merge(sums, on=["job_id", "node"], how="left").fillna({"io": 0, "comm": 0})
    return out.sort_values(["job_id", "node_index"]).reset_index(drop=True)


def job_labels(per_node: pd.DataFrame, settings: MetricSettings | None = None) -> pd.DataFrame:
    """Per job: total bytes, NUD, max node share and the §3.2 / §6.2 labels."""
    settings = settings or MetricSettings()
    rows = []
    for job_id, group in per_node.groupby("job_id", sort=True):
        shares = group["io"].to_numpy(dtype=np.float64)
        total, n = shares.sum(), len(shares)
        peak = shares.max() / total if total > 0 else math.nan
        degree = nud_of(shares)
        rank0 = None if n < 2 or total <= 0 else bool(peak > settings.rank0_share)
        rows.append(
            {
                "job_id": job_id,
                "nnodes": n,
                "io_bytes": int(total),
                "comm_bytes": int(group["comm"].sum()),
                "io_nud": degree,
                "max_node_share": peak,
                "rank0": rank0,
                "uneven": None if math.isnan(degree) else bool(degree > settings.uneven_nud),
            }
        )
    labels = pd.DataFrame(rows)
    labels["data_intensive"] = labels.io_bytes > settings.data_intensive_bytes
    labels["low_comm"] = labels.io_bytes > labels.comm_bytes
    labels["optimizable"] = labels.data_intensive & (labels.rank0 == False) & labels.low_comm  # noqa: E712
    return labels


def cabinet_spread(lake: str | os.PathLike, nodes_per_cabinet: int) -> pd.DataFrame:
    """Per multi-node job: cabinets spanned, minimal cabinets and cabinet NUD (§3.3)."""
    nodes = read_table(lake, "job_nodes", ["job_id", "node"]).to_pandas()
    topology = read_table(lake, "topology", ["node", "cabinet"]).to_pandas()
    counts = nodes.merge(topology, on="node").groupby(["job_id", "cabinet"]).size()
    rows = []
    for job_id, per_cabinet in counts.groupby(level=0):
        n = int(per_cabinet.sum())
        if n < 2:
            continue
        spanned = len(per_cabinet)
        rows.append(
            {
                "job_id": job_id,
                "nnodes": n,
                "cabinets": spanned,
                "in_min_cabinets": spanned == math.ceil(n / nodes_per_cabinet),
                "cabinet_nud": nud_of(per_cabinet.to_numpy(dtype=np.float64)),
            }
        )
    return pd.DataFrame(rows)


def _top_groups(io: pd.DataFrame, group: str, k: int) -> tuple[float, pd.Series]:
    """The busiest ``k`` groups (cabinets, IONs) of each interval: their share of all bytes,
    and their share interval by interval."""
    per_group = io.groupby(["ts", group], as_index=False).bytes.sum()
    busiest = per_group.sort_values("bytes", ascending=False).groupby("ts").head(k)
    per_interval = busiest.groupby("ts").bytes.sum() / per_group.groupby("ts").bytes.sum()
    return busiest.bytes.sum() / io.bytes.sum(), per_interval


def spatial_shares(
    lake: str | os.PathLike, settings: MetricSettings | None = None
) -> dict[str, float]:
    """Traffic-weighted share of the busiest 1 % of nodes and 20 % of cabinets (§4.1), the
    median over intervals with traffic of the latter (Fig. 8 plots it interval by interval),
    and the share of the busiest 10 % of IONs under the lake's (block) mapping (§7.4.1,
    Fig. 15c: 58.6 % on Tianhe-1A)."""
    settings = settings or MetricSettings()
    io = read_table(lake, "node_io", ["node", "ts", "read_bytes", "write_bytes"]).to_pandas()
    topology = read_table(lake, "topology", ["node", "cabinet", "ion"]).to_pandas()
    io["bytes"] = io.read_bytes + io.write_bytes
    io = io[io.bytes > 0].merge(topology, on="node")
    top_nodes = top_count(settings.top_node_fraction, len(topology))
    node_top = io.sort_values("bytes", ascending=False).groupby("ts").head(top_nodes).bytes.sum()
    cabinet_k = top_count(settings.top_cabinet_fraction, topology.cabinet.nunique())
    cabinet_share, per_interval = _top_groups(io, "cabinet", cabinet_k)
    ion_k = top_count(settings.top_ion_fraction, topology.ion.nunique())
    return {
        "top_node_share": node_top / io.bytes.sum(),
        "top_cabinet_share": cabinet_share,
        "top_cabinet_share_median": float(per_interval.median()),
        "top_ion_share": _top_groups(io, "ion", ion_k)[0],
    }


def calibration_figures(
    lake: str | os.PathLike, nodes_per_cabinet: int, settings: MetricSettings | None = None
) -> dict[str, float]:
    """The paper 004 reference figures of a lake, as fractions, keyed like
    ``platform_summary.figure`` (and :func:`~burstlake.jobs.metrics.headline_sql.headline`)."""
    settings = settings or MetricSettings()
    labels = job_labels(job_bytes(lake), settings)
    multi = labels[labels.nnodes > 1]
    allrank = multi[multi.rank0 == False]  # noqa: E712
    spread = cabinet_spread(lake, nodes_per_cabinet)
    multi_cabinet = spread[spread.cabinets > 1]
    di = labels.data_intensive
    return {
        "rank0_jobs": float((multi.rank0 == True).mean()),  # noqa: E712
        "even_io_all_rank": float((allrank.uneven == False).mean()),  # noqa: E712
        "in_min_cabinets": float(spread.in_min_cabinets.mean()),
        "uneven_nodes": float((multi_cabinet.cabinet_nud > settings.uneven_nud).mean()),
        "data_intensive_jobs": float(di.mean()),
        "data_intensive_traffic": float(labels.io_bytes[di].sum() / max(labels.io_bytes.sum(), 1)),
        "low_comm_jobs": float(labels.low_comm.mean()),
        "optimizable_jobs": float(labels.optimizable.mean()),
        **spatial_shares(lake, settings),
    }


def _top_per_interval(interval: np.ndarray, key: np.ndarray, weight: np.ndarray, k: int) -> float:
    """Bytes of the busiest ``k`` keys (nodes, IONs) of each interval, summed over the
    intervals (``weight`` summed per interval and key first): the plain NumPy reading that
    :func:`_interval_figures` is checked against."""
    width = int(key.max(initial=0)) + 1
    pairs, inverse = np.unique(interval.astype(np.int64) * width + key, return_inverse=True)
    per_pair = np.bincount(inverse, weights=weight)
    owner = pairs // width
    order = np.lexsort((-per_pair, owner))
    owner, per_pair = owner[order], per_pair[order]
    first = np.searchsorted(owner, owner, side="left")
    return float(per_pair[np.arange(len(owner)) - first < k].sum())


def _ions_of_busiest(interval: np.ndarray, weight: np.ndarray, ion: np.ndarray, k: int) -> float:
    """Σ over intervals of the distinct IONs serving the interval's ``k`` busiest nodes (one
    row per interval and node; ties: the earlier row)."""
    order = np.lexsort((-weight, interval))
    interval, ion = interval[order], ion[order]
    first = np.searchsorted(interval, interval, side="left")
    top = np.arange(len(interval)) - first < k
    width = int(ion.max(initial=0)) + 1
    return float(len(np.unique(interval[top].astype(np.int64) * width + ion[top])))


@njit(cache=True)
def _interval_figures(starts, weight, block, cyclic, ions, k_nodes, k_ions):  # pragma: no cover
    """One pass over rows sorted by interval (``starts``: where each interval's rows begin,
    one row per node): Σ over intervals of the busiest ``k_nodes`` nodes' bytes, of the
    busiest ``k_ions`` IONs' bytes under ``block`` and ``cyclic``, and of the distinct IONs
    serving the busiest nodes under each."""
    out = np.zeros(5)
    load = np.zeros((2, ions))
    seen = np.full((2, ions), -1, np.int64)
    for i in range(len(starts) - 1):
        a, b = starts[i], starts[i + 1]
        order = np.argsort(-weight[a:b], kind="mergesort")[:k_nodes] + a
        used = np.zeros(2)
        for r in order:
            out[0] += weight[r]
            for m, ion in enumerate((block[r], cyclic[r])):
                if seen[m, ion] != i:
                    seen[m, ion] = i
                    used[m] += 1
        out[3] += used[0]
        out[4] += used[1]
        load[:] = 0.0
        for r in range(a, b):
            load[0, block[r]] += weight[r]
            load[1, cyclic[r]] += weight[r]
        for m in range(2):
            out[1 + m] += np.sort(load[m])[ions - k_ions :].sum()
    return out


def label_shares(trace: Trace) -> dict[str, float]:
    """Table 3's job shares (§6.2) and the data-intensive share of the bytes, of the trace's
    own labels (``synth_truth``; the metrics measure the same from the bytes). The bytes are
    the ones :func:`~burstlake.jobs.synth.trace.traffic_days` recounted: call it after the
    trace is written or its shares taken."""
    b, multi = trace.behaviour, trace.jobs.nnodes > 1
    return {
        "data_intensive_jobs": float(b.data_intensive.mean()),
        "all_rank_jobs": float((multi & ~b.rank0).mean()),
        "low_comm_jobs": float(b.low_comm.mean()),
        "optimizable_jobs": float((b.data_intensive & multi & ~b.rank0 & b.low_comm).mean()),
        "data_intensive_traffic": float(
            trace.io_bytes[b.data_intensive].sum() / max(trace.io_bytes.sum(), 1)
        ),
    }


def trace_shares(trace: Trace, settings: MetricSettings | None = None) -> dict[str, float]:
    """The spatial figures of a trace in memory, without a lake (to calibrate over many
    seeds): the traffic-weighted share of the busiest 1 % of nodes (§4.1, as
    :func:`spatial_shares`), of the busiest 10 % of IONs under block mapping (ION
    ``i // nodes_per_ion``, the lake's; §7.4.1) and under cyclic mapping (``i mod IONs``,
    §5.2) — the offered traffic, before any ION's capacity — and the mean over intervals with
    traffic of the distinct IONs serving the busiest 1 % of nodes under each (§7.5, Fig. 17a;
    as the replay's ``busiest1pct_nodes_ions``); with :func:`label_shares`."""
    settings = settings or MetricSettings()
    machine = trace.machine
    ions = machine.ions
    top_nodes = top_count(settings.top_node_fraction, machine.nodes)
    top_ions = top_count(settings.top_ion_fraction, ions)
    names = ("node", "block", "cyclic", "used_block", "used_cyclic")
    sums = dict.fromkeys(("all", *names), 0.0)
    intervals = 0
    for rows in traffic_days(trace):  # sorted by interval and node
        weight = (rows["read_bytes"] + rows["write_bytes"]).astype(np.float64)
        keep = weight > 0
        key = rows["interval"][keep].astype(np.int64) * machine.nodes + rows["node"][keep]
        if not len(key):
            continue
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        weight = np.add.reduceat(weight[keep], first)  # one row per interval and node
        interval, node = key[first] // machine.nodes, key[first] % machine.nodes
        starts = np.flatnonzero(np.r_[True, interval[1:] != interval[:-1], True])
        intervals += len(starts) - 1
        sums["all"] += weight.sum()
        got = _interval_figures(
            starts, weight, node // machine.nodes_per_ion, node % ions, ions, top_nodes, top_ions
        )
        for name, value in zip(names, got, strict=True):
            sums[name] += value
    total, intervals = sums["all"] or 1.0, intervals or 1
    return {
        **label_shares(trace),
        "top_node_share": sums["node"] / total,
        "top_ion_share": sums["block"] / total,
        "top_ion_share_cyclic": sums["cyclic"] / total,
        "busiest1pct_nodes_ions_block": sums["used_block"] / intervals,
        "busiest1pct_nodes_ions_cyclic": sums["used_cyclic"] / intervals,
    }
