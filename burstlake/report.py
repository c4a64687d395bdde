"""One self-contained HTML report of a lake: its figures beside the papers' and every what-if.

The report is a single file with its images inline (PNG, base64) and no script or network
reference, so that it can be mailed to a colleague. It reads only lake tables:

- ``platform_summary`` beside the values of paper 004 (Table 3, §3–§6);
- ``interval_metrics``: top-1 % node, top-20 % cabinet and top-10 % ION shares over time
  (004 §4.1, Fig. 8);
- ``node_io`` with ``topology``: a cabinet × time traffic heatmap (the view behind 004 Fig. 7–8);
- ``cabinet_load`` and ``ion_load`` (004 Fig. 7);
- ``job_io_metrics``: the I/O NUD of all-rank jobs (004 Fig. 2);
- ``darshan_dxt``: a rank × time heat map of the jobs with the most traced bytes, as pydarshan's
  job summary draws one (:mod:`burstlake.report_dxt`);
- ``replay_scores``: each scenario's policies side by side (004 §7.4, Fig. 15; papers 000, 001),
  and papers 002's and 003's what-ifs beside their tables (:mod:`burstlake.report_papers`); a
  scenario replayed on several seeds with the mean, its 95 % interval as error bars, and each
  policy's difference from the first said significant or within noise
  (:mod:`burstlake.replay.spread`); the lake's windows under both contention models
  (:mod:`burstlake.report_windows`).

A section whose table is empty says which command fills it instead of drawing an empty axis.
A lake holding several machines gets these sections once per machine (docs/design.md, "Several
machines in one lake"), and each what-if once per machine it replayed.
"""

from __future__ import annotations

import base64
import html
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyarrow as pa

from burstlake import lake as lake_io
from burstlake import paths
from burstlake.jobs.metrics.settings import recorded
from burstlake.replay import spread
from burstlake.report_dxt import DXT_JOBS, dxt_section
from burstlake.report_papers import paper_sections
from burstlake.report_parts import MAX_ROWS, MAX_TIME_BINS, Section, figure_png, table_row
from burstlake.report_windows import windows_section

log = logging.getLogger(__name__)

# Policies' bars per scenario: metrics beyond this many are listed in the table only.
MAX_SCORE_PANELS = 12


def _read(lake: lake_io.Cluster, table: str) -> pd.DataFrame:
    return lake.read(table).to_pandas()


def _pct(value: float | None) -> str:
    return "–" if value is None or pd.isna(value) else f"{100 * value:.1f} %"


def _value(value: float | None, unit: str) -> str:
    if value is None or pd.isna(value):
        return "–"
    return _pct(value) if unit == "fraction" else f"{value:.3g}"


def platform_section(lake: lake_io.Cluster) -> Section:
    """The platform summary beside the values paper 004 measured (Table 3, §3–§6)."""
    title = "Platform summary beside paper 004"
    caption = (
        "The lake's headline figures next to what Yu et al. measured on Tianhe-1A and CS19 "
        "(paper 004, §3.2–§6.2 and Table 3). The bars show the figures the paper gives a value "
        "for; the table lists every figure with the number of jobs, intervals or applications "
        "it is computed over."
    )
    summary = _read(lake, "platform_summary")
    if summary.empty:
        return Section(
            "platform", title, caption, empty="no platform summary: run `burstlake metrics`"
        )
    rows = "".join(
        table_row(
            html.escape(r.description),
            html.escape(r.section),
            _value(r.value, r.unit),
            _value(r.tianhe1a, r.unit),
            _value(r.cs19, r.unit),
            int(r.basis),
        )
        for r in summary.itertuples()
    )
    table = (
        "<table><thead><tr><th>figure</th><th>004</th><th>this lake</th><th>Tianhe-1A</th>"
        f"<th>CS19</th><th>over</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    fractions = summary[
        (summary.unit == "fraction") & (summary.tianhe1a.notna() | summary.cs19.notna())
    ]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(fractions) + 1.2))
    y = np.arange(len(fractions))
    for offset, column, label in (
        (-0.27, "value", "this lake"),
        (0, "tianhe1a", "Tianhe-1A"),
        (0.27, "cs19", "CS19"),
    ):
        ax.barh(
            y + offset, fractions[column].astype(float).fillna(0) * 100, height=0.27, label=label
        )
    ax.set_yticks(y, fractions.figure)
    ax.invert_yaxis()
    ax.set_xlabel("% of jobs, intervals or traffic")
    ax.legend(loc="lower right")
    return Section("platform", title, caption, png=figure_png(fig), table_html=table)


def burstiness_section(lake: lake_io.Cluster) -> Section:
    """Top-k shares per interval over time (004 §4.1, Fig. 8)."""
    title = "Spatial burstiness over time"
    caption = (
        "Per interval with traffic: the share of system traffic carried by the busiest 1 % of "
        "nodes, 20 % of cabinets and 10 % of I/O nodes (paper 004 §4.1 and §7.4; the cabinet "
        "line mirrors Fig. 8, where the top 20 % of cabinets carry about 80 % at all times)."
    )
    frame = _read(lake, "interval_metrics").sort_values("ts")
    if frame.empty:
        return Section("burstiness", title, caption, empty="no intervals: run `burstlake metrics`")
    fig, ax = plt.subplots(figsize=(10, 3.6))
    for column, label in (
        ("top_node_share", "top 1 % nodes"),
        ("top_cabinet_share", "top 20 % cabinets"),
        ("top_ion_share", "top 10 % I/O nodes"),
    ):
        if frame[column].notna().any():
            ax.plot(frame.ts, frame[column] * 100, lw=0.8, label=label)
    ax.set_ylim(0, 101)
    ax.set_ylabel("% of system traffic")
    ax.legend(loc="lower left", ncol=3)
    fig.autofmt_xdate()
    return Section("burstiness", title, caption, png=figure_png(fig))


HEATMAP_COLUMNS = {"node": "VARCHAR", "ts": "TIMESTAMPTZ", "read_bytes": "BIGINT",
                   "write_bytes": "BIGINT", "cluster": "VARCHAR"}  # fmt: skip


def _node_io_source(lake: lake_io.Cluster) -> str | None:
    """The machine's ``node_io`` rows as a DuckDB subquery over the read version's Parquet
    files (a column the files lack reads as null), or None without files. DuckDB reads the
    files itself, row group by row group: an Arrow reader handed to it held memory growing
    with the lake (1 to 8 days of node_io: 446 to 735 MB peak)."""
    files, stored = lake_io.table_layout(lake.lake, "node_io")
    if not files:
        return None
    paths = "[" + ", ".join(lake_io.sql_literal(str(f)) for f in files) + "]"
    columns = ", ".join(
        f'"{c}"' if c in stored else f'CAST(NULL AS {kind}) AS "{c}"'
        for c, kind in HEATMAP_COLUMNS.items()
    )
    read = f"read_parquet({paths}, hive_partitioning = false, union_by_name = true)"
    return f"(SELECT * FROM (SELECT {columns} FROM {read}) WHERE {lake.sql()})"


def heatmap_grid(lake: lake_io.Cluster) -> tuple[pd.DataFrame, int, pd.Timestamp, float] | None:
    """The heatmap's cells, aggregated in DuckDB from ``node_io``'s files read by DuckDB, so
    memory stays flat as the lake grows: bytes per level (cabinet, or node without a
    topology) × time bin of the busiest :data:`MAX_ROWS` levels (sorted by name), the number of
    levels, the first time and the span in seconds. None without ``node_io`` rows."""
    import duckdb

    topology = _read(lake, "topology")[["node", "cabinet"]].drop_duplicates("node")
    level = "cabinet" if not topology.empty else "node"
    source = _node_io_source(lake)
    if source is None:
        return None
    lake_io.checkpoint("report-heatmap")  # the fault tests' pause: files named, not yet read
    with duckdb.connect(config={"memory_limit": "512MB", "threads": 1}) as con:
        con.execute("SET enable_progress_bar = false")  # the library never draws progress
        con.register("topo", topology)
        start, end, times = con.execute(
            f"SELECT min(ts), max(ts), count(DISTINCT ts) FROM {source}"
        ).fetchone()
        if start is None:
            return None
        span = max((end - start).total_seconds(), 1.0)
        bins = min(MAX_TIME_BINS, max(1, times))
        where = "coalesce(t.cabinet, '(no topology)')" if level == "cabinet" else "n.node"
        cells = con.execute(
            f"SELECT {where} AS level, least(CAST(floor((epoch_us(n.ts) - $start) / 1e6 / $span "
            f"* $bins) AS BIGINT), $bins - 1) AS bin, "
            "sum(coalesce(n.read_bytes, 0) + coalesce(n.write_bytes, 0))::DOUBLE AS bytes "
            f"FROM {source} n LEFT JOIN topo t USING (node) GROUP BY ALL",
            {"start": int(pd.Timestamp(start).value // 1000), "span": span, "bins": bins},
        ).df()
    totals = cells.groupby("level")["bytes"].sum()
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    rows = sorted(name for name, _ in ranked[:MAX_ROWS])
    grid = (
        cells[cells.level.isin(rows)]
        .pivot_table(index="level", columns="bin", values="bytes", aggfunc="sum", fill_value=0)
        .reindex(index=rows, columns=range(bins), fill_value=0)
    )
    grid.index.name = level
    return grid, len(totals), pd.Timestamp(start), span


def heatmap_section(lake: lake_io.Cluster) -> Section:
    """Traffic per cabinet (or node, without a topology) and time bin."""
    title = "Traffic heatmap"
    found = heatmap_grid(lake)
    level = found[0].index.name if found else "node"
    caption = (
        f"Bytes read and written per {level} and time bin, log scale: where and when the "
        "traffic happens. Spatially bursty I/O shows as a few bright rows at any moment "
        "(paper 004 §4.1, the view behind Figs. 7 and 8)."
    )
    if found is None:
        return Section(
            "heatmap", title, caption, empty="no node_io: ingest Zabbix or run `burstlake synth`"
        )
    grid, levels, start, span = found
    fig, ax = plt.subplots(figsize=(10, min(8, 1.5 + 0.06 * len(grid))))
    image = ax.imshow(
        np.log10(grid.to_numpy(dtype=float) + 1),
        aspect="auto",
        interpolation="nearest",
        cmap="magma",
        extent=(0, span / 3600, len(grid), 0),
    )
    ax.set_xlabel(f"hours since {start:%Y-%m-%d %H:%M} UTC")
    ax.set_ylabel(f"{level} ({len(grid)} of {levels}, by name)")
    if len(grid) <= 40:
        ax.set_yticks(np.arange(len(grid)) + 0.5, grid.index)
    fig.colorbar(image, ax=ax, label="log10 bytes per bin")
    return Section("heatmap", title, caption, png=figure_png(fig))


def loads_section(lake: lake_io.Cluster) -> Section:
    """Total traffic per cabinet and per I/O node, busiest first (004 Fig. 7)."""
    title = "Cabinet and I/O-node loads"
    caption = (
        "Share of all traffic per cabinet and per I/O node over the whole trace, busiest first "
        "(paper 004 Fig. 7: a few cabinets carry most of the I/O)."
    )
    loads = [(level, _read(lake, f"{level}_load")) for level in ("cabinet", "ion")]
    loads = [(level, frame) for level, frame in loads if not frame.empty]
    if not loads:
        return Section("loads", title, caption, empty="no loads: run `burstlake metrics`")
    fig, axes = plt.subplots(1, len(loads), figsize=(10, 3.4), squeeze=False)
    for ax, (level, frame) in zip(axes[0], loads, strict=True):
        shares = frame.share.fillna(0).sort_values(ascending=False).to_numpy() * 100
        ax.bar(np.arange(1, len(shares) + 1), shares, width=1.0)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_title(f"{len(shares)} {'cabinets' if level == 'cabinet' else 'I/O nodes'}")
        ax.set_xlabel(f"{level} rank, busiest first")
        ax.set_ylabel("% of traffic")
    return Section("loads", title, caption, png=figure_png(fig))


def nud_section(lake: lake_io.Cluster) -> Section:
    """Distribution of the I/O NUD of all-rank jobs (004 Fig. 2)."""
    title = "I/O distribution of all-rank jobs"
    uneven = recorded(lake.lake).uneven_nud  # the threshold the lake's metrics ran with
    caption = (
        "Histogram of the I/O traffic NUD of multi-node all-rank jobs; jobs right of the dashed "
        f"line (NUD > {uneven:g}) have uneven I/O (paper 004 §3.2.2, Fig. 2)."
    )
    jobs = _read(lake, "job_io_metrics")
    nuds = jobs.loc[jobs.all_rank.fillna(False), "io_nud"].dropna() if not jobs.empty else []
    if len(nuds) == 0:
        return Section("nud", title, caption, empty="no all-rank jobs with traffic in the lake")
    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.hist(nuds, bins=np.linspace(0, 1, 41))
    ax.axvline(uneven, ls="--", color="k", lw=1)
    ax.set_xlabel("I/O NUD")
    ax.set_ylabel("jobs")
    return Section("nud", title, caption, png=figure_png(fig))


# The papers' values of replay scores, per policy, shown under the burstlake row: paper 004
# Fig. 15c (Tianhe-1A, the busiest 10 % of IONs) and Fig. 17a (CS19: the busiest 1 % of nodes
# use about twice as many IONs under remapping; the paper gives the ratio, not the counts).
PAPER_SCORES: dict[str, tuple[str, dict[str, str]]] = {
    "top10_ion_share": ("004 Fig. 15c, Tianhe-1A", {"block": "0.586", "cyclic": "0.379"}),
    "busiest1pct_nodes_ions": ("004 Fig. 17a, CS19", {"block": "n", "cyclic": "≈ 2n"}),
}


def _paper_row(metric: str, policies: list[str]) -> str:
    """The paper's values of ``metric`` under ``policies`` as a table row, or ''."""
    if metric not in PAPER_SCORES:
        return ""
    cite, values = PAPER_SCORES[metric]
    cells = "".join(f"<td>{html.escape(values.get(p, '–'))}</td>" for p in policies)
    return f"<tr><td><i>paper ({html.escape(cite)})</i></td>{cells}</tr>"


def seeded(frame: pd.DataFrame) -> bool:
    """Whether a scenario's ``replay_scores`` rows are runs on several seeds."""
    return "seed" in frame and bool(frame.seed.notna().any())


def spread_of(frame: pd.DataFrame) -> pd.DataFrame:
    """The spread over the seeds of one scenario's rows on one machine
    (:func:`burstlake.replay.spread.summary`: the ``replay_spread`` rows), indexed by policy,
    metric and ``against`` ('' for a policy's own score)."""
    columns = ["scenario", "cluster", "policy", "metric", "unit", "seed", "value"]
    rows = [
        {
            **{c: (None if pd.isna(r[c]) else r[c]) for c in columns},
            "seed": int(r["seed"]),
        }
        for r in frame[frame.seed.notna()][columns].to_dict("records")
    ]
    out = spread.summary(pa.Table.from_pylist(rows)).to_pandas()
    out["against"] = out.against.fillna("")
    return out.set_index(["policy", "metric", "against"])


def _cell(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None or pd.isna(value):
        return "–"
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return f"{value:.4g}"
    return f"{value:.4g} [{low:.4g}, {high:.4g}]"


def _noise(row: pd.Series) -> str:
    """'significant' or 'within noise' for a paired difference (None: undefined)."""
    if pd.isna(row.within_noise):
        return "undefined"
    return "within noise" if row.within_noise else "significant"


def scenario_sections(scores: pd.DataFrame) -> list[Section]:
    """One section per replay scenario and machine (``scores``: the lake's ``replay_scores``):
    its policies side by side, a panel per score; over several seeds the bars are means with
    their 95 % interval and the table marks each policy's difference from the first."""
    if scores.empty:
        return [
            Section(
                "replay",
                "What-if replays",
                "Scores of the replayed what-ifs (paper 004 §7.4, Fig. 15; 000 §5; 001 §IV).",
                empty="no replay scores: run `burstlake replay`",
            )
        ]
    sections = []
    several = scores.cluster.nunique() > 1
    for (scenario, cluster), frame in scores.groupby(
        ["scenario", "cluster"], sort=True, dropna=False
    ):
        on = f" on {cluster}" if several and isinstance(cluster, str) else ""
        policies = list(dict.fromkeys(frame.policy))
        metrics = list(dict.fromkeys(frame.metric))
        spreads = spread_of(frame) if seeded(frame) else None
        shown = metrics[:MAX_SCORE_PANELS]
        columns = min(4, len(shown))
        rows = -(-len(shown) // columns)
        fig, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 2.3 * rows), squeeze=False)
        for ax, metric in zip(axes.flat, shown, strict=False):
            values = (
                frame[frame.metric == metric].drop_duplicates("policy").set_index("policy")
            ).reindex(policies)
            heights, errors = values.value.astype(float).fillna(0), None
            if spreads is not None:
                own = spreads.xs("", level="against").xs(metric, level="metric").reindex(policies)
                heights = own["mean"].astype(float).fillna(0)
                errors = np.array(
                    [
                        (heights - own["low"].astype(float)).fillna(0).clip(lower=0),
                        (own["high"].astype(float) - heights).fillna(0).clip(lower=0),
                    ]
                )
            ax.bar(
                range(len(policies)),
                heights,
                yerr=errors,
                capsize=3 if errors is not None else 0,
                color=[f"C{i}" for i in range(len(policies))],
            )
            ax.set_xticks(range(len(policies)), policies, rotation=30, ha="right", fontsize=8)
            unit = values.unit.dropna().iloc[0] if values.unit.notna().any() else ""
            ax.set_title(f"{metric}" + (f" ({unit})" if unit else ""), fontsize=9)
        for ax in list(axes.flat)[len(shown) :]:
            ax.set_visible(False)
        fig.tight_layout()
        if spreads is None:
            wide = frame.pivot_table(
                index="metric", columns="policy", values="value", aggfunc="first"
            ).reindex(index=metrics, columns=policies)
            body = "".join(
                f"<tr><td>{html.escape(m)}</td>"
                + "".join(f"<td>{_cell(v)}</td>" for v in wide.loc[m])
                + "</tr>"
                + _paper_row(m, policies)
                for m in metrics
            )
        else:
            body = "".join(_spread_rows(spreads, m, policies) for m in metrics)
        head = "".join(f"<th>{html.escape(p)}</th>" for p in policies)
        topology = ", ".join(sorted(frame.topology.unique()))
        model = ", ".join(sorted(frame.model.dropna().unique())) if "model" in frame else ""
        caption = (
            f"Scenario <b>{html.escape(str(scenario) + on)}</b> on {html.escape(topology)}, "
            f'{html.escape(model or "flow")} contention model (docs/design.md, "Contention '
            'models"): each '
            "panel compares the policies on one score (ION shares and loads as in paper 004 "
            "§7.4 and Fig. 15; slowdowns, latencies and interference factors as in papers 000 "
            "§5 and 001 §IV)."
        )
        if spreads is not None:
            runs = frame.seed.nunique()
            caption += (
                f" Over {runs} seeds: bars are the mean with its 95 % interval (Student's t, or "
                "a bootstrap where the runs are skewed; the table says which), and each policy's "
                f"paired difference from {html.escape(policies[0])} over the same seeds is "
                "marked significant or within noise (its interval holds 0). At 95 %, about one "
                "score in twenty of two equal policies is marked significant by chance."
            )
        sections.append(
            Section(
                f"replay-{scenario}" + (f"-{cluster}" if on else ""),
                f"What-if: {scenario}{on}",
                caption,
                png=figure_png(fig),
                table_html=f"<table><thead><tr><th>score</th>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>",
            )
        )
    return sections


def _spread_rows(spreads: pd.DataFrame, metric: str, policies: list[str]) -> str:
    """A metric's rows over the seeds: each policy's mean [interval], then each policy's
    difference from the first [interval] and whether it is within noise."""
    own, diff = [], ["–"]
    methods = set()
    for policy in policies:
        key = (policy, metric, "")
        if key not in spreads.index:
            own.append("–")
            continue
        row = spreads.loc[key]
        methods.add(row.interval)
        own.append(_cell(row["mean"], row.low, row.high))
    for policy in policies[1:]:
        key = (policy, metric, policies[0])
        if key not in spreads.index:
            diff.append("–")
            continue
        row = spreads.loc[key]
        diff.append(f"{_cell(row['mean'], row.low, row.high)} <b>{_noise(row)}</b>")
    name = html.escape(metric)
    how = html.escape(", ".join(sorted(methods)))
    return (
        f"<tr><td>{name} <small>({how})</small></td>"
        + "".join(f"<td>{c}</td>" for c in own)
        + f"</tr><tr><td><i>{name}: − {html.escape(policies[0])}</i></td>"
        + "".join(f"<td>{c}</td>" for c in diff)
        + "</tr>"
        + _paper_row(metric, policies)
    )


MACHINE_BUILDERS: tuple[Callable[[lake_io.Cluster], Section], ...] = (
    platform_section,
    burstiness_section,
    heatmap_section,
    loads_section,
    nud_section,
)


def machine_traffic(root: Path) -> dict[str | None, int]:
    """Bytes of ``node_io`` traffic per machine (the report opens on the busiest)."""
    from burstlake.schemas.tables import NODE_IO_TRAFFIC

    table = lake_io.read_table(root, "node_io", columns=["cluster", *NODE_IO_TRAFFIC])
    if not table.num_rows:
        return {}
    frame = table.to_pandas()
    totals = (
        frame[list(NODE_IO_TRAFFIC)]
        .fillna(0)
        .sum(axis=1)
        .groupby(frame.cluster.astype(object).where(frame.cluster.notna(), None), dropna=False)
    )
    return {(None if pd.isna(k) else k): int(v) for k, v in totals.sum().items()}


def verdicts(scores: pd.DataFrame) -> list[str]:
    """One line per what-if policy of ``replay_scores``: what it changes against the scenario's
    first policy (the baseline), on the scenario's first score, by how much, on which topology
    and under which contention model; over several seeds the means, the paired difference's
    95 % interval and whether it is significant or within noise."""
    lines = []
    for (scenario, cluster), frame in scores.groupby(
        ["scenario", "cluster"], sort=True, dropna=False
    ):
        policies = list(dict.fromkeys(frame.policy))
        metric = frame.metric.iloc[0]
        spreads = spread_of(frame) if seeded(frame) else None
        values = frame[frame.metric == metric].drop_duplicates("policy").set_index("policy").value
        if spreads is not None:
            values = spreads.xs("", level="against").xs(metric, level="metric")["mean"]
        unit = frame[frame.metric == metric].unit.dropna()
        unit = f" {unit.iloc[0]}" if len(unit) else ""
        topology = ", ".join(sorted(frame.topology.unique()))
        model = ", ".join(sorted(frame.model.dropna().unique())) if "model" in frame else ""
        on = f" on {cluster}" if isinstance(cluster, str) else ""
        base = values.get(policies[0])
        for policy in policies[1:]:
            new = values.get(policy)
            if pd.isna(base) or pd.isna(new):
                change = "undefined"
            else:
                pct = f" ({(new - base) / base:+.1%})" if base else ""
                change = f"{base:.4g} → {new:.4g}{unit}{pct}"
            if spreads is not None and (policy, metric, policies[0]) in spreads.index:
                row = spreads.loc[(policy, metric, policies[0])]
                interval = _cell(row["mean"], row.low, row.high)
                change += (
                    f", mean over {row.runs} seeds; difference {interval} (95 %, "
                    f"{row.interval}): {_noise(row)}"
                )
            lines.append(
                f"<b>{html.escape(str(scenario) + on)}</b>: {html.escape(policy)} against "
                f"{html.escape(policies[0])}, {html.escape(metric)} {html.escape(change)} "
                f"({html.escape(topology)}, {html.escape(model or 'flow')} model)"
            )
    return lines


# Paper 000's full setting (§3.1, §5.1: 612 MPI + 612 I/O clients on a 1,296-node fat-tree,
# random-node placement): the slowdown the paper reports, beside the lake's own replays. CODES'
# figures are the benchmark's (`python -m bench packet_vs_codes`), not the product's.
MPI_REFERENCES = (("paper 000 §5.1", None, None, None, None, None, 8.0),)
MPI_METRICS = ("baseline_latency_mean", "latency_mean", "latency_median", "latency_p99",
               "latency_max", "slowdown")  # fmt: skip


def models_section(scores: pd.DataFrame) -> list[Section]:
    """MPI latency under each contention model for every jobs scenario with an MPI job in
    ``replay_scores``, on its first policy, beside CODES' and paper 000's figures (000 §5.1;
    docs/design.md, "Contention models")."""
    scores = scores.assign(model=scores["model"].fillna("flow") if "model" in scores else "flow")
    rows = []
    mpi = scores[scores.metric.str.startswith("mpi_")]
    for (scenario, model), frame in mpi.groupby(["scenario", "model"], sort=True):
        first = frame.policy.iloc[0]
        values = frame[frame.policy == first].groupby("metric").value.mean()  # over any seeds
        got = [values.get(f"mpi_{m}") for m in MPI_METRICS]
        label = f"{scenario} ({first}), {model} model"
        rows.append(_latency_row(label, *got))
    rows += [_latency_row(*reference) for reference in MPI_REFERENCES] if rows else []
    if not rows:  # no MPI what-if in the lake: no section
        return []
    head = "".join(
        f"<th>{h}</th>"
        for h in ("replay", "alone mean", "mean", "median", "p99", "max", "MPI slowdown")
    )
    return [
        Section(
            "models",
            "MPI latency under the two contention models",
            "The MPI job's latency (µs) with the I/O job, under the flow model (max-min fluid, no "
            "buffers) and the packet model (lossless buffers and credits, as CODES), beside "
            "paper 000 §5.1 at the paper's full size; the lake's scenarios are reduced (CODES' "
            "own figures: python -m bench packet_vs_codes).",
            table_html=f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>",
        )
    ]


def _latency_row(label: str, *values: float | None) -> str:
    *latencies, slowdown = values
    cells = [("–" if v is None or pd.isna(v) else f"{v * 1e6:.3g}") for v in latencies]
    cells.append("–" if slowdown is None or pd.isna(slowdown) else f"{slowdown:.3g}×")
    return table_row(html.escape(label), *cells)


def answers_section(
    scores: pd.DataFrame, busy: list[lake_io.Cluster], idle: list[lake_io.Cluster], traffic: dict
) -> Section:
    """The top of the report: each machine with traffic, every what-if's verdict in one
    line, and the machines without traffic in one line."""
    items = [
        f"<li>machine <b>{html.escape(m.label)}</b>: {traffic[m.name] / 1e9:.4g} GB of node "
        "traffic; its figures follow, beside the paper's (004 Table 3)</li>"
        for m in busy
    ]
    items += [f"<li>{line}</li>" for line in verdicts(scores)]
    if idle:
        names = ", ".join(html.escape(m.label) for m in idle)
        items.append(f"<li>without node traffic (no figures drawn): {names}</li>")
    return Section(
        "answers",
        "Answers first",
        "The machines with traffic, busiest first, and each what-if's verdict (paper 004 §7.4; "
        "000 §5; 001 §IV); the figures follow.",
        table_html=f"<ul>{''.join(items)}</ul>",
        empty="" if items else "no traffic and no replay: run `burstlake ingest` and `replay`",
    )


def sections_of(root: Path, dxt_jobs: int = DXT_JOBS) -> list[Section]:
    """Every section of the report: the answers, the busiest machine's figures, the what-ifs,
    then the other machines with traffic (machines without any are named in the answers)."""
    machines = lake_io.clusters(root) or [lake_io.Cluster(root, None)]
    by_name = machine_traffic(root)
    traffic = {
        m.name: by_name.get(m.name, 0) + (by_name.get(None, 0) if m.unnamed else 0)
        for m in machines
    }
    ranked = sorted(machines, key=lambda m: -traffic[m.name])
    busy = [m for m in ranked if traffic[m.name] > 0]
    idle = [m for m in ranked if traffic[m.name] <= 0]
    if not busy:  # nothing measured yet: every machine's sections say what fills them
        busy, idle = ranked, []
    figures = [_machine_sections(m, len(machines) > 1, dxt_jobs) for m in busy]
    scores = lake_io.read_table(root, "replay_scores").to_pandas()  # read once, for every what-if

    return [
        answers_section(scores, busy, idle, traffic),
        *figures[0],
        *models_section(scores),
        *windows_section(scores),
        *scenario_sections(scores),
        *paper_sections(scores),
        *(s for sections in figures[1:] for s in sections),
    ]


def _machine_sections(machine: lake_io.Cluster, named: bool, dxt_jobs: int) -> list[Section]:
    sections = []
    for builder in (*MACHINE_BUILDERS, partial(dxt_section, jobs=dxt_jobs)):
        section = builder(machine)
        if named:
            section = replace(
                section,
                key=f"{section.key}-{machine.label}",
                title=f"{machine.label}: {section.title}",
            )
        sections.append(section)
    return sections


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
figure{margin:0}figcaption{color:#444;margin:.4em 0 1em}img{max-width:100%}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}td:first-child{text-align:left}
.empty{color:#a40;font-style:italic}
"""


def render(
    lake: str | os.PathLike | None,
    sections: list[Section] | None = None,
    dxt_jobs: int = DXT_JOBS,
) -> str:
    """The report of ``lake`` as one HTML string (DXT heat maps of the ``dxt_jobs`` jobs with
    the most traced bytes). Its reads hold the lake's :data:`~burstlake.lake.READERS` lock
    shared, as a query does, so ``burstlake lake vacuum`` never deletes a file it reads."""
    root = lake_io.lake_path(lake)
    if sections is None:  # the readers' lock, shared: a vacuum waits for the report's reads
        with lake_io.shared(root, lake_io.READERS):
            sections = sections_of(root, dxt_jobs)
    parts = []
    for s in sections:
        body = (
            f'<img alt="{html.escape(s.title)}" data-figure="{html.escape(s.key)}" '
            f'src="data:image/png;base64,{base64.b64encode(s.png).decode()}">'
            if s.png
            else f'<p class="empty">{html.escape(s.empty)}</p>'
            if s.empty
            else ""
        )
        parts.append(
            f'<section id="{html.escape(s.key)}"><h2>{html.escape(s.title)}</h2><figure>{body}'
            f"<figcaption>{s.caption}</figcaption></figure>{s.table_html}</section>"
        )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>burstlake report: {html.escape(root.name)}</title><style>{STYLE}</style>"
        f"</head><body><h1>burstlake report</h1><p>Lake <code>{html.escape(str(root))}</code>, "
        f"written {stamp}. Figures cite the papers they mirror.</p>{''.join(parts)}"
        "</body></html>"
    )


def write(
    lake: str | os.PathLike | None,
    out: str | os.PathLike | None = None,
    dxt_jobs: int = DXT_JOBS,
) -> Path:
    """Write the report (default ``<lake>/report.html``) and return its path."""
    root = lake_io.lake_path(lake)
    if not root.is_dir():
        raise FileNotFoundError(f"no lake at {root}")
    target = paths.output_file(out if out is not None else root / "report.html")
    text = render(root, dxt_jobs=dxt_jobs)
    paths.write_text(target, text)
    log.info("report written to %s (%d kB)", target, len(text) // 1024)
    return target
