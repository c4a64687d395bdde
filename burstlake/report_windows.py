"""The report's two fidelities side by side: the lake's jobs replayed window by window
(``lake_window`` scenarios, docs/design.md "The lake's jobs at two fidelities") under the flow
and the packet model, as "flow says x, packet says y" per window, job, policy and measure."""

from __future__ import annotations

import html
from datetime import UTC, datetime

import pandas as pd

from burstlake.report_parts import Section, table_row

MEASURES = {"io_time": "I/O time (s)", "mpi_latency_mean": "MPI latency, mean (s)"}
MAX_ROWS = 60  # the rows where the models differ most; the rest stay in replay_scores


def windows_section(scores: pd.DataFrame) -> list[Section]:
    """One table of the windows both models replayed (``scores``: ``replay_scores``), the rows
    where they differ most first; none when no window was replayed under both."""
    if scores.empty or "model" not in scores:
        return []
    scores = scores.assign(
        model=scores["model"].fillna("flow"), cluster=scores["cluster"].fillna("")
    )
    keys = ["cluster", "policy", "w"]
    starts = scores[scores.metric.str.fullmatch(r"w\d+\.start")]
    starts = starts.assign(w=starts.metric.str.split(".").str[0])
    starts = starts[[*keys, "value"]].rename(columns={"value": "start"}).drop_duplicates(keys)
    pattern = rf"^(w\d+)\.(.+)\.({'|'.join(MEASURES)})$"
    per = scores[scores.metric.str.match(pattern)]
    if per.empty:
        return []
    parts = per.metric.str.extract(pattern)
    per = per.assign(w=parts[0], job=parts[1], measure=parts[2]).merge(starts, on=keys)
    table = per.pivot_table(
        index=["cluster", "start", "job", "policy", "measure"],
        columns="model",
        values="value",
        aggfunc="first",
    )
    if not {"flow", "packet"} <= set(table.columns):
        return []
    table = table.dropna(subset=["flow", "packet"]).reset_index()
    if table.empty:
        return []
    table["ratio"] = table["packet"] / table["flow"].where(table["flow"] > 0)
    table = table.sort_values("ratio", ascending=False, key=lambda r: (r - 1).abs())
    rows = [
        table_row(
            html.escape(r.cluster or "(unnamed)"),
            datetime.fromtimestamp(r.start, UTC).strftime("%Y-%m-%d %H:%M:%S"),
            html.escape(str(r.job)),
            html.escape(str(r.policy)),
            MEASURES[r.measure],
            f"flow says {r.flow:.4g}, packet says {r.packet:.4g}",
            "–" if pd.isna(r.ratio) else f"{r.ratio:.3g}×",
        )
        for r in table.head(MAX_ROWS).itertuples()
    ]
    head = "".join(
        f"<th>{h}</th>"
        for h in ("machine", "window start (UTC)", "job", "policy", "measure", "", "packet/flow")
    )
    return [
        Section(
            "windows",
            "The lake's jobs at two fidelities",
            "Each window of the lake replayed job by job under the flow model (max-min fluid) "
            "and the packet model (buffers and credits, as CODES: paper 000 §2.5), where they "
            f"differ most first (at most {MAX_ROWS} rows; every score is in replay_scores).",
            table_html=f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>",
        )
    ]
