"""A year on one machine (issue 37): ``burstlake synth --preset tianhe1a --days N`` and the
shipped ``ion_remap`` replay (``burstlake replay``, as a new user runs them) over growing
spans, each command in its own process tree (:func:`bench.measure`: peak RSS of the tree,
wall and CPU seconds).

Both stream over time, day by day: the synthesizer commits ``node_io`` a week at a time and
the interval replay reads one day partition at a time, carrying only the backlog and the jobs
in flight (docs/design.md, "A year on one machine"). Goals: at 365 days each under 4 GB peak,
and the replay's time linear in the span, within 20 % of span / 24 days × the 24-day time
(CPU seconds: the machine is shared, so wall time also measures the others' load).

``python -m bench.year [days ...]`` (default 24 72 365). A span whose synthesis would not end
by ``--until HH:MM`` UTC (from the slope of the spans before it) is left out and reported as
not measured, with the slope.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import Goal, load_average, measure, write_result

GOAL_GB = 4.0
LINEAR_TOLERANCE = 0.20
MONTH_DAYS = 24  # the tianhe1a preset's span: the reference of the linearity goal
YEAR_DAYS = 365
TIME = "/usr/bin/time"  # GNU time: the exact peak RSS of the command
SCENARIO = Path(__file__).resolve().parents[1] / "replay" / "scenarios" / "ion_remap.yaml"


def _cli(peak_file: Path, *args: str) -> list[str]:
    """The command line run under GNU time, which writes its exact peak RSS (KiB) to
    ``peak_file`` (the tree sampling of :func:`bench.measure` can miss a short spike)."""
    call = f"from burstlake.cli import main; raise SystemExit(main({list(args)!r}))"
    return [TIME, "-f", "%M", "-o", str(peak_file), sys.executable, "-c", call]


def _peak_gb(step, peak_file: Path) -> float:
    exact = int(peak_file.read_text().split()[-1]) / 2**20 if peak_file.exists() else 0.0
    return round(max(step.peak_mb / 1024, exact), 2)


def _lake_mb(lake: Path) -> float:
    return sum(p.stat().st_size for p in lake.rglob("*") if p.is_file()) / 2**20


def one_span(days: float, tmp: Path) -> dict:
    """Synthesize ``days`` of tianhe1a into a fresh lake, replay ion_remap on it, drop it."""
    lake = tmp / f"lake-{days:g}"
    load = load_average()
    peaks = tmp / f"synth-{days:g}.peak", tmp / f"replay-{days:g}.peak"
    synth = measure(
        _cli(peaks[0], "synth", "--preset", "tianhe1a", "--days", f"{days:g}", "--lake", str(lake))
    )
    replay = measure(_cli(peaks[1], "replay", "--scenario", str(SCENARIO), "--lake", str(lake)))
    out = {
        "days": days,
        "load_before": load,
        "load_after": load_average(),
        "lake_mb": round(_lake_mb(lake), 1),
        "synth": {
            "wall_s": round(synth.wall_s, 1),
            "cpu_s": round(synth.cpu_s, 1),
            "peak_rss_gb": _peak_gb(synth, peaks[0]),
            "printed": synth.stdout.strip().splitlines()[-1:],
        },
        "replay": {
            "wall_s": round(replay.wall_s, 1),
            "cpu_s": round(replay.cpu_s, 1),
            "peak_rss_gb": _peak_gb(replay, peaks[1]),
        },
    }
    shutil.rmtree(lake, ignore_errors=True)
    print(out, flush=True)
    return out


def _slope(spans: list[dict], step: str, key: str) -> float | None:
    """Per day, between the shortest and the longest span measured."""
    if len(spans) < 2:
        return None
    a, b = spans[0], spans[-1]
    return (b[step][key] - a[step][key]) / (b["days"] - a["days"])


def _at_year(spans: list[dict], step: str) -> tuple[float | None, str]:
    year = [s for s in spans if s["days"] == YEAR_DAYS]
    if year:
        peak = year[0][step]["peak_rss_gb"]
        return peak, f"{peak:.2f} GB at {YEAR_DAYS} days"
    last = spans[-1]
    slope = _slope(spans, step, "peak_rss_gb")
    if slope is None:
        return None, f"not measured: {last[step]['peak_rss_gb']:.2f} GB at {last['days']:g} days"
    guess = last[step]["peak_rss_gb"] + slope * (YEAR_DAYS - last["days"])
    return None, (
        f"not measured: {last[step]['peak_rss_gb']:.2f} GB at {last['days']:g} days, "
        f"{slope * 1024:+.1f} MB/day, {guess:.2f} GB at {YEAR_DAYS} days by that slope"
    )


def goals(spans: list[dict]) -> list[Goal]:
    out = []
    for step in ("synth", "replay"):
        peak, figure = _at_year(spans, step)
        out.append(
            Goal(
                f"{step} under {GOAL_GB:g} GB peak over a year",
                figure,
                peak is not None and peak < GOAL_GB,
            )
        )
    month = [s for s in spans if s["days"] == MONTH_DAYS]
    longest = spans[-1]
    if month and longest["days"] > MONTH_DAYS:
        ratio = longest["days"] / MONTH_DAYS
        wanted = month[0]["replay"]["cpu_s"] * ratio
        got = longest["replay"]["cpu_s"]
        off = got / wanted - 1
        year = longest["days"] == YEAR_DAYS
        figure = (
            f"{got:.0f} CPU-s at {longest['days']:g} days against {wanted:.0f} "
            f"({ratio:.2f} x {month[0]['replay']['cpu_s']:.0f} at {MONTH_DAYS}): {off:+.0%}"
        )
        if not year:
            figure += f"; the year not measured (linear up to {longest['days']:g} days)"
        out.append(
            Goal(
                f"replay time linear in the span (within {LINEAR_TOLERANCE:.0%} of "
                f"{YEAR_DAYS}/{MONTH_DAYS} x the month's)",
                figure,
                year and abs(off) <= LINEAR_TOLERANCE,
            )
        )
    return out


def main(spans: list[float] | None = None, until: str | None = None) -> Path:
    spans = spans or [MONTH_DAYS, 72, YEAR_DAYS]
    deadline = None
    if until is not None:
        hour, minute = (int(x) for x in until.split(":"))
        now = time.gmtime()
        deadline = time.time() + ((hour - now.tm_hour) * 60 + minute - now.tm_min) * 60
    done: list[dict] = []
    skipped: list[float] = []
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-year-") as tmp:
        for days in spans:
            if deadline is not None and done:
                per_day = max(
                    (s["synth"]["wall_s"] + s["replay"]["wall_s"]) / s["days"] for s in done
                )
                if time.time() + per_day * days > deadline:
                    skipped.append(days)
                    continue
            done.append(one_span(days, Path(tmp)))
    result = {
        "preset": "tianhe1a",
        "scenario": "ion_remap (shipped, job scores on: the job-alone replay too)",
        "spans": done,
        "not_measured_days": skipped,
        "slopes_mb_per_day": {
            step: None
            if _slope(done, step, "peak_rss_gb") is None
            else round(_slope(done, step, "peak_rss_gb") * 1024, 1)
            for step in ("synth", "replay")
        },
        "notes": [
            "Before streaming (issue 37, same machine): synth 3.7 GB at 24 days and 7.6 GB at "
            "72; the replay 2.6 GB / 23 s at 24 days, 6.7 GB / 66 s at 72.",
        ],
    }
    return write_result("year", result, goals(done))


if __name__ == "__main__":
    args = sys.argv[1:]
    until = None
    if "--until" in args:
        at = args.index("--until")
        until = args[at + 1]
        del args[at : at + 2]
    main([float(d) for d in args] or None, until)
