"""The report's sections that set a replayed what-if beside its paper's own tables, from
``replay_scores`` only (the report runs no simulation):

- paper 002 (Taffet et al., SC17) Table 2 (each application's figure of merit under a split or
  random placement against Control, block and cyclic task mapping, and beside an MPIBW bully)
  and Table 3 (cyclic against block), from the ``split_tapered``, ``split_tapered_cyclic`` and
  ``split_bully`` scenarios;
- paper 003 (Malakar et al., BG/Q bridge nodes: "Results — Network counter", "Conclusions"):
  write time, messages routed through a bridge node and the spread of the messages bridge nodes
  send, at boot and after the reassignment, from every scenario scoring bridge-node messages.

A paper whose scenarios the lake has not replayed gets a section saying which command fills it.
"""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from burstlake.replay import bridge_figures, splits
from burstlake.report_parts import Section, figure_png, table_row

# 002's scenarios as shipped (burstlake/replay/scenarios): the task mapping each one replays
SPLIT_SCENARIOS = {"block": "split_tapered", "cyclic": "split_tapered_cyclic"}
BULLY_SCENARIO = "split_bully"
APPLICATIONS = ("amg", "umt", "pf3d")
APPLICATION_NAMES = {"amg": "AMG", "umt": "UMT", "pf3d": "pF3D"}
Table = dict[str, dict[str, float]]


def _scored(scores: pd.DataFrame, scenario: str) -> dict[str, dict[str, float | None]]:
    """A scenario's scores as policy label → metric → value (empty when not replayed); the
    mean over the seeds of a scenario replayed on several."""
    rows = scores[scores.scenario == scenario]
    means = rows.groupby(["policy", "metric"], sort=False).value.mean()
    out: dict[str, dict[str, float | None]] = {}
    for (policy, metric), value in means.items():
        out.setdefault(policy, {})[metric] = None if pd.isna(value) else float(value)
    return out


def _pct(value: float | None) -> str:
    """A percent change to 002's one decimal ('0.0 %', not '-0.0 %', for a change under it)."""
    if value is None or pd.isna(value):
        return "–"
    return "0.0 %" if round(value, 1) == 0 else f"{value:+.1f} %"


def split_tables(scores: pd.DataFrame) -> list[tuple[str, str, Table, Table]]:
    """002's comparisons the lake can make: (label, 002 table, ours, 002's), each a placement
    → application → percent change of the figure of merit (positive: better)."""
    foms = {m: splits.applications(_scored(scores, s)) for m, s in SPLIT_SCENARIOS.items()}
    foms = {m: t for m, t in foms.items() if "control" in t}
    out = []
    for mapping, paper in (
        ("block", splits.PAPER_TABLE2_BLOCK),
        ("cyclic", splits.PAPER_TABLE2_CYCLIC),
    ):
        if mapping in foms:
            out.append(
                (
                    f"{mapping}, against Control",
                    "Table 2",
                    splits.versus_control(foms[mapping]),
                    paper,
                )
            )
    bully = splits.applications(_scored(scores, BULLY_SCENARIO))
    if "control" in bully and "split2" in bully:
        ours = {"split2": splits.versus_control(bully)["split2"]}
        paper = {"split2": splits.PAPER_BULLY_MPIBW["block"]}
        out.append(("block, split 2 ways beside MPIBW", "Table 2, Bully MPIBW", ours, paper))
    if len(foms) == 2:
        ours = splits.cyclic_over_block(foms["block"], foms["cyclic"])
        out.append(("cyclic over block", "Table 3", ours, splits.PAPER_TABLE3))
    return out


def split_section(scores: pd.DataFrame) -> Section:
    """002 Tables 2 and 3: each application's figure of merit, ours beside 002's."""
    title = "Paper 002: splitting applications over a tapered fat-tree"
    replayed = scores[scores.scenario.isin([*SPLIT_SCENARIOS.values(), BULLY_SCENARIO])]
    models = ", ".join(sorted(replayed.model.dropna().unique())) if "model" in scores else ""
    caption = (
        "Each application's figure of merit (1/T) as a percent change: under a 2-, 3- or 6-way "
        "split over the leaves of quartz186 or a random placement against Control (every "
        "application on one leaf), block and cyclic task mapping, and beside an MPIBW-like bully "
        "(paper 002 Table 2); and cyclic against block per placement (002 Table 3). Bars: this "
        f"lake's replays ({html.escape(models or 'flow')} model) beside paper 002's measurements "
        "on Quartz; 002 reports splits as 'minimally or negligibly affected' and calls Table 3 "
        "surprising."
    )
    tables = split_tables(scores)
    if not tables:
        names = ", ".join(f"{s}.yaml" for s in (*SPLIT_SCENARIOS.values(), BULLY_SCENARIO))
        return Section(
            "paper-002",
            title,
            caption,
            empty=f"002's scenarios not replayed: run `burstlake replay --scenario` with {names}",
        )
    body = []
    for label, cite, ours, paper in tables:
        for placement in dict.fromkeys([*ours, *paper]):
            mine, theirs = ours.get(placement, {}), paper.get(placement, {})
            cells = [c for a in APPLICATIONS for c in (_pct(mine.get(a)), _pct(theirs.get(a)))]
            body.append(table_row(html.escape(label), html.escape(placement), *cells, cite))
    head = "".join(
        f"<th>{APPLICATION_NAMES[a]}</th><th>{APPLICATION_NAMES[a]}, 002</th>" for a in APPLICATIONS
    )
    table = (
        f"<table><thead><tr><th>comparison</th><th>placement</th>{head}<th>002</th></tr>"
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )
    return Section("paper-002", title, caption, png=_split_figure(tables), table_html=table)


def _split_figure(tables: list[tuple[str, str, Table, Table]]) -> bytes:
    """One panel per comparison: for every placement and application 002 gives, our bar beside
    002's."""
    fig, axes = plt.subplots(1, len(tables), figsize=(3.4 * len(tables), 3.2), squeeze=False)
    for ax, (label, cite, ours, paper) in zip(axes[0], tables, strict=True):
        keys = [(p, a) for p in paper for a in APPLICATIONS if a in paper[p]]
        x = np.arange(len(keys))
        mine = [ours.get(p, {}).get(a, np.nan) for p, a in keys]
        ax.bar(x - 0.2, np.nan_to_num(mine), width=0.4, label="this lake")
        ax.bar(x + 0.2, [paper[p][a] for p, a in keys], width=0.4, label="paper 002")
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xticks(x, [f"{APPLICATION_NAMES[a]} {p}" for p, a in keys], rotation=60, fontsize=7)
        ax.set_title(f"{label} (002 {cite})", fontsize=8)
        ax.set_ylabel("% change of figure of merit", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return figure_png(fig)


# 003's figures beside burstlake's scores: (metric, label, 003 default, 003 optimized, where)
BRIDGE_ROWS = (
    ("write_time", "write time (s)", None, None, "60 % lower on average, up to 15× (64 KB)"),
    (
        "bridge_messages_through_mean",
        "messages routed through a bridge node (mean)",
        *bridge_figures.PAPER_THROUGH[64 * bridge_figures.KB],
        "2,048 nodes, 4 ranks/node, 64 KB",
    ),
    (
        "bridge_messages_sent_sd",
        "messages sent per bridge node (sd/mean)",
        *bridge_figures.PAPER_SENT_SD[512, 64 * bridge_figures.KB],
        "512 nodes, 1 rank/node, 64 KB",
    ),
)
BOOT, REASSIGNED = "given", "bridge-route"


def bridge_section(scores: pd.DataFrame) -> Section:
    """003: write time and bridge-node messages at boot and after reassignment, ours beside
    003's network counters."""
    title = "Paper 003: bridge-node reassignment on BG/Q"
    caption = (
        "Each bridge-node what-if at boot (given: every bridge node serves an equal block of "
        "nodes) and after the route-aware reassignment (bridge-route; bridge-load also keeps "
        "the loads even), beside paper 003's figures: file-system writes 60 % faster on average "
        "(slides 'Conclusions', 'Results — Weak scaling'), fewer messages routed through a "
        "bridge node and a smaller spread of the messages bridge nodes send ('Results — Network "
        "counter'). 003's counters are at other sizes than the lake's scenarios (the last column)."
    )
    bridged = scores[scores.metric == "bridge_messages_sent_sd"].scenario.unique()
    scenarios = [s for s in sorted(bridged) if {BOOT, REASSIGNED} <= set(_scored(scores, s))]
    if not scenarios:
        return Section(
            "paper-003",
            title,
            caption,
            empty="no bridge-node what-if: run `burstlake replay --scenario "
            "bridges_mira512_all.yaml`",
        )
    body = []
    for scenario in scenarios:
        scored = _scored(scores, scenario)
        policies = [p for p in scored if p not in (BOOT, REASSIGNED)]
        for metric, label, default, optimized, where in BRIDGE_ROWS:
            boot, moved = scored[BOOT].get(metric), scored[REASSIGNED].get(metric)
            change = 100 * (moved / boot - 1) if boot and moved is not None else None
            paper = "–" if default is None else f"{default:g} → {optimized:g}"
            paper_change = (
                f"{-bridge_figures.PAPER_GAIN_PCT:+.0f} % (average)"
                if default is None
                else _pct(100 * (optimized / default - 1))
            )
            others = ", ".join(f"{p} {_num(scored[p].get(metric))}" for p in policies)
            body.append(
                table_row(
                    html.escape(scenario),
                    label,
                    f"{_num(boot)} → {_num(moved)}",
                    _pct(change),
                    html.escape(others) or "–",
                    paper,
                    paper_change,
                    where,
                )
            )
    table = (
        "<table><thead><tr><th>scenario</th><th>score</th><th>given → bridge-route</th>"
        "<th>change</th><th>other policies</th><th>003 default → optimized</th>"
        "<th>003 change</th><th>003 case</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    return Section(
        "paper-003",
        title,
        caption,
        png=_bridge_figure(scores, scenarios),
        table_html=table,
    )


def _num(value: float | None) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.4g}"


def _bridge_figure(scores: pd.DataFrame, scenarios: list[str]) -> bytes:
    """Write time lower after reassignment (%), and the sd of messages sent per bridge node at
    boot and after it: each scenario beside 003's."""
    scored = [_scored(scores, s) for s in scenarios]
    fig, (gain, spread) = plt.subplots(1, 2, figsize=(9, 3.0))
    lower = [
        100 * (1 - s[REASSIGNED]["write_time"] / s[BOOT]["write_time"])
        if s[BOOT].get("write_time") and s[REASSIGNED].get("write_time") is not None
        else np.nan
        for s in scored
    ]
    names = [*scenarios, "003 (average)"]
    gain.bar(range(len(names)), [*np.nan_to_num(lower), bridge_figures.PAPER_GAIN_PCT],
             color=[*["C0"] * len(scenarios), "C1"])  # fmt: skip
    gain.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=7)
    gain.set_ylabel("write time lower after reassignment (%)", fontsize=8)
    pairs = [(s[BOOT].get("bridge_messages_sent_sd"), s[REASSIGNED].get("bridge_messages_sent_sd"))
             for s in scored]  # fmt: skip
    pairs.append(bridge_figures.PAPER_SENT_SD[512, 64 * bridge_figures.KB])
    x = np.arange(len(pairs))
    spread.bar(x - 0.2, [np.nan_to_num(p[0] or 0.0) for p in pairs], width=0.4, label=BOOT)
    spread.bar(x + 0.2, [np.nan_to_num(p[1] or 0.0) for p in pairs], width=0.4, label=REASSIGNED)
    spread.set_xticks(x, [*scenarios, "003 (512 nodes)"], rotation=20, ha="right", fontsize=7)
    spread.set_ylabel("sd/mean of messages sent per bridge node", fontsize=8)
    spread.legend(fontsize=7)
    fig.tight_layout()
    return figure_png(fig)


PAPER_BUILDERS = (split_section, bridge_section)


def paper_sections(scores: pd.DataFrame) -> list[Section]:
    """002's and 003's sections (each says which command fills it when not replayed)."""
    return [build(scores) for build in PAPER_BUILDERS]
