"""Paper 002's comparison (Taffet et al., SC17): each application's figure of merit (1/T, 002
§2.1) under a placement as a percent change from *Control* (Table 2), and cyclic against block
task mapping (Table 3), from the ``split_tapered`` scenarios (an application's jobs are named
after it: ``amg0``, ``amg1`` → ``amg``; its figure is the mean over its jobs)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from burstlake.replay.scenario import Scenario
from burstlake.replay.scenario import scores as scenario_scores

# 002 Table 2, block mapping (percent change of the figure of merit from Control)
PAPER_TABLE2_BLOCK = {
    "split3": {"amg": -2.1, "umt": -0.1, "pf3d": 8.3},
    "split6": {"amg": -2.8, "umt": -0.4, "pf3d": 0.4},
    "random": {"amg": -1.5, "umt": -0.1, "pf3d": 5.7},
}
# 002 Table 2, cyclic mapping
PAPER_TABLE2_CYCLIC = {
    "split3": {"amg": -0.2, "umt": -0.2, "pf3d": -1.5},
    "split6": {"amg": -0.3, "umt": -0.3, "pf3d": -0.7},
    "random": {"amg": -0.2, "umt": -0.4, "pf3d": -1.7},
}
# 002 Table 2, "Bully MPIBW" (each application split 2 ways beside the bully), per mapping
PAPER_BULLY_MPIBW = {
    "block": {"amg": 0.1, "umt": -0.3, "pf3d": 0.4},
    "cyclic": {"amg": -0.3, "umt": 0.0, "pf3d": 0.2},
}
# 002 Table 3: percent by which cyclic beat block
PAPER_TABLE3 = {
    "control": {"amg": 3.5, "umt": 1.5, "pf3d": 9.8},
    "split6": {"amg": 6.0, "umt": 1.6, "pf3d": 8.7},
    "random": {"amg": 4.9, "umt": 1.2, "pf3d": 2.5},
}

FIGURE_OF_MERIT = "_figure_of_merit"  # a job's score: <job>_figure_of_merit
Table = dict[str, dict[str, float]]  # policy label → application → value


def application(job: str) -> str:
    """The application a job runs: its name without the trailing number (``pf3d1`` → pf3d)."""
    return re.sub(r"\d+$", "", job)


def figures_of_merit(scenario: Scenario) -> Table:
    """Each application's figure of merit (1/s, the mean over its jobs) under each policy of a
    ``jobs`` scenario."""
    return applications(scenario_scores(scenario))


def applications(scored: Mapping[str, Mapping[str, float | None]]) -> Table:
    """Each application's figure of merit (the mean over its jobs) under each policy, from a
    scenario's scores (policy label → metric → value, e.g. its ``replay_scores`` rows)."""
    out: Table = {}
    for label, scores in scored.items():
        apps: dict[str, list[float]] = {}
        for metric, value in scores.items():
            if metric.endswith(FIGURE_OF_MERIT) and value is not None:
                apps.setdefault(application(metric[: -len(FIGURE_OF_MERIT)]), []).append(value)
        out[label] = {app: float(np.mean(v)) for app, v in apps.items()}
    return out


def change(table: Mapping[str, Mapping[str, float]], base: Mapping[str, float]) -> Table:
    """Percent change of every figure of merit from ``base`` (positive: better); an application
    without a figure in ``base`` has none."""
    return {
        label: {app: 100.0 * (fom / base[app] - 1.0) for app, fom in row.items() if base.get(app)}
        for label, row in table.items()
    }


def versus_control(foms: Table, control: str = "control") -> Table:
    """002 Table 2: each placement's figures of merit against Control's."""
    return change({k: v for k, v in foms.items() if k != control}, foms[control])


def cyclic_over_block(block: Table, cyclic: Table) -> Table:
    """002 Table 3: per placement replayed under both, the percent by which cyclic mapping
    beats block."""
    return {
        label: change({label: cyclic[label]}, block[label])[label]
        for label in block
        if label in cyclic
    }
