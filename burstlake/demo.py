"""``burstlake demo``: the main job end to end on the embedded defaults.

Ingests the real samples when they are present (``$BURSTLAKE_SAMPLES``, or ``../shared/data``
seen from the working directory, beside a development checkout) as the machine ``edison``,
synthesizes the ``tiny`` machine, and returns a summary from DuckDB, one per machine: the
lake holds two machines, each measured alone (docs/design.md, "Several machines in one
lake"). Each step is a function of ``(lake, samples)``; a step whose
input is absent says so and is skipped. Progress lines go to a callback (``logging`` by
default; ``burstlake demo`` prints them). The stages are those of docs/design.md.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from burstlake import catalog
from burstlake.formatting import format_table
from burstlake.jobs.ingest import source_module
from burstlake.jobs.ingest.accounting import describe, totals
from burstlake.jobs.ingest.landing import expand_paths, ingest

log = logging.getLogger(__name__)

DEMO_JOB = "4478544"  # the Edison allocation that ties the Slurm, Darshan and topology samples
EDISON = "edison"  # the samples' machine: its sacct dump names no Cluster, so --cluster does
TINY = "tiny"  # the synthetic machine (the preset's name)


@dataclass(frozen=True)
class Outcome:
    """What a step did: one line for the progress list, details for after the summary."""

    line: str
    details: str = ""


def samples_path() -> Path | None:
    """The real input samples, if present: ``$BURSTLAKE_SAMPLES``, else ``../shared/data`` from
    the working directory (beside a checkout). The installed package never needs them."""
    candidates = [os.environ.get("BURSTLAKE_SAMPLES"), str(Path.cwd().parent / "shared" / "data")]
    return next((Path(c) for c in candidates if c and Path(c).is_dir()), None)


Step = Callable[[Path, Path | None], Outcome]


def _ingest_samples(source: str, relative: str, **options) -> Step:
    def step(lake: Path, samples: Path | None) -> Outcome:
        if samples is None or not (samples / relative).exists():
            return Outcome(f"skipped: no samples at {relative}")
        module = source_module(source)
        files = expand_paths([samples / relative], getattr(module, "FILE_PATTERN", "*"))
        return Outcome(describe(totals(ingest(module.SOURCE, files, lake, options))))

    step.__name__ = f"ingest {source}"
    return step


def synth_tiny(lake: Path, samples: Path | None) -> Outcome:
    """Node-level traffic the samples cannot give: a one-day trace of the ``tiny`` machine."""
    from burstlake.jobs.synth.run import synthesize

    written = synthesize(TINY, lake=lake, seed=0)
    return Outcome(", ".join(f"{n} {table}" for table, n in written.items()))


def compute_metrics(lake: Path, samples: Path | None) -> Outcome:
    """The Spark metrics (paper 004 §3, §4, §6) of every machine in the lake, each computed
    alone, and one summary per machine: its headline figures beside the paper's."""
    from burstlake.jobs.metrics.run import run as metrics

    written = metrics(lake)
    con = catalog.connect(lake)
    try:
        rows = con.execute(  # the figures the paper reports, where the machine has a value
            "SELECT cluster, figure, round(value, 3), tianhe1a, cs19, basis FROM platform_summary "
            "WHERE value IS NOT NULL AND (tianhe1a IS NOT NULL OR cs19 IS NOT NULL) "
            "ORDER BY cluster NULLS FIRST, section, figure"
        ).fetchall()
    finally:
        con.close()
    columns = ["figure", "this machine", "paper Tianhe-1A", "paper CS19", "over"]
    summaries = []
    for cluster in dict.fromkeys(r[0] for r in rows):
        mine = [r[1:] for r in rows if r[0] == cluster]
        summaries.append(
            f"platform summary of machine {cluster or '(unnamed)'}, the figures paper 004 reports "
            "(§3, §4.1, §6.2, Table 3; all of them: the report and platform_summary):\n"
            + format_table(columns, mine, len(mine))
        )
    return Outcome(", ".join(f"{n} {table}" for table, n in written.items()), "\n".join(summaries))


def render_notebook(lake: Path, samples: Path | None) -> Outcome:
    """The analyst notebook, executed on this lake, saved with its figures inside the lake."""
    from burstlake.jobs.metrics.notebook import render_notebook as render

    return Outcome(f"wrote {render(lake, lake / 'notebooks' / 'spatial_burstiness.ipynb')}")


def replay_ion_mapping(lake: Path, samples: Path | None) -> Outcome:
    """Block vs cyclic ION mapping (004 §5.1) replayed on the tiny machine's traffic."""
    import dataclasses

    from burstlake.replay.scenario import SCENARIOS, comparison, load
    from burstlake.replay.scenario import run as replay

    scenario = load(SCENARIOS / "ion_remap.yaml")
    scenario = dataclasses.replace(
        scenario, name="demo_ion_remap", topology={**scenario.topology, "name": TINY}, cluster=TINY
    )
    columns, rows = comparison(replay(scenario, lake))
    shown = [r for r in rows if r[0] in DEMO_SCORES]
    grid = format_table(columns, shown, len(shown))
    share = {r[0]: r[2:] for r in rows}["top10_ion_share"]
    return Outcome(
        f"top-10 % ION share {share[0]} (block) -> {share[1]} (cyclic)",
        f"block vs cyclic ION mapping on the tiny machine (every score: the report and "
        f"replay_scores):\n{grid}",
    )


DEMO_SCORES = (  # the what-if's headline scores (004 §7.4, Fig. 15)
    "top10_ion_share",
    "ion_load_max_over_mean",
    "ion_load_nud",
    "busiest1pct_nodes_ions",
    "backlog_seconds",
    "job_slowdown_mean",
)


def write_report(lake: Path, samples: Path | None) -> Outcome:
    """The lake's HTML report: figures beside the papers and the what-if side by side."""
    from burstlake.report import write

    return Outcome(f"wrote {write(lake)}")


STEPS: list[Step] = [
    _ingest_samples(
        "topology", "topology/edison.xtdb2proc.gz", ion_per_cabinet=True, cluster=EDISON
    ),
    _ingest_samples("slurm", "slurm", tz="America/Los_Angeles", cluster=EDISON),  # local time
    _ingest_samples("darshan", "darshan", cluster=EDISON),
    synth_tiny,
    compute_metrics,
    render_notebook,
    replay_ion_mapping,
    write_report,
]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary(lake: Path) -> str:
    """Jobs and nodes per machine, and the cabinets spanned by the demo job, from DuckDB."""
    con = catalog.connect(lake)
    try:
        machines = con.execute(
            "SELECT j.cluster, count(DISTINCT j.job_id), count(DISTINCT n.node) FROM jobs j "
            "LEFT JOIN job_nodes n ON n.job_id = j.job_id "
            "AND n.cluster IS NOT DISTINCT FROM j.cluster GROUP BY 1 ORDER BY 1 NULLS FIRST"
        ).fetchall()
        cabinets = con.execute(
            "SELECT t.cabinet, count(*) FROM job_nodes j JOIN topology t ON t.node = j.node "
            "AND t.cluster IS NOT DISTINCT FROM j.cluster "
            "WHERE j.job_id = ? AND j.cluster = ? GROUP BY 1 ORDER BY 1",
            [DEMO_JOB, EDISON],
        ).fetchall()
        logs = con.execute(
            "SELECT regexp_extract(split_part(d.exe, ' ', 1), '[^/]+$') AS exe, s.step_name "
            "FROM darshan_jobs d "
            "LEFT JOIN job_steps s ON s.job_id = d.job_id "
            "AND s.cluster IS NOT DISTINCT FROM d.cluster AND d.start >= s.start "
            "AND d.\"end\" <= s.\"end\" AND s.step_id NOT IN ('batch', 'extern') "
            "WHERE d.job_id = ? AND d.cluster = ? ORDER BY d.start",
            [DEMO_JOB, EDISON],
        ).fetchall()
    finally:
        con.close()
    jobs = sum(m[1] for m in machines)
    lines = [f"lake {lake}: {_count(jobs, 'job')} on {_count(len(machines), 'machine')}"]
    lines += [
        f"  machine {cluster or '(unnamed)'}: {_count(n, 'job')}, {nodes} distinct nodes allocated"
        for cluster, n, nodes in machines
    ]
    if cabinets:  # the Edison sample job: only when the real samples were ingested
        spread = ", ".join(f"{cab} ({n} nodes)" for cab, n in cabinets)
        steps = ", ".join(f"{exe} in step {step or '?'}" for exe, step in logs) or "none"
        lines += [
            f"job {DEMO_JOB} spans {len(cabinets)} cabinets: {spread}",
            f"its Darshan logs: {steps}",
        ]
    return "\n".join(lines)


def run(lake: Path, progress: Callable[[str], None] = log.info) -> str:
    """Run every demo step into ``lake``, reporting one line per step to ``progress``; return
    the summary and each step's details."""
    samples = samples_path()
    progress(f"burstlake demo → {lake} (samples: {samples or 'none found'})")
    details = []
    for step in STEPS:
        started = time.monotonic()
        outcome = step(lake, samples)
        progress(f"  {step.__name__:<22} {outcome.line}  [{time.monotonic() - started:.1f}s]")
        details += [outcome.details] if outcome.details else []
    catalog.refresh(lake)
    return "\n".join([summary(lake), *details, f"report: {lake / 'report.html'}"])
