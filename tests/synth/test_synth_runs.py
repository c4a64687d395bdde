"""The synthesizer's ``adjacent_run_nodes`` (004 §4.1: the traffic "concentrated on a small
number of adjacent compute nodes"): a data-intensive job's nodes write in runs of at least that
many adjacent nodes, the same bytes from fewer jobs at once. Bad values refused in one line;
the runs counted by hand on a hand-built phase and measured on a small synthesized trace."""

from __future__ import annotations

import numpy as np
import pytest

from burstlake.jobs.synth.behaviour import Behaviour, Phases, RunningJobs, traffic
from burstlake.jobs.synth.calibration import calibration
from burstlake.jobs.synth.run import build_trace
from burstlake.jobs.synth.trace import traffic_days


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (0, "calibration adjacent_run_nodes must be >= 1, not 0"),
        (-2, "calibration adjacent_run_nodes must be >= 1, not -2"),
        ("2.5", "calibration adjacent_run_nodes must be a int, not 2.5"),  # never cut to 2
        (2.5, "calibration adjacent_run_nodes must be a int, not 2.5"),
        ("four", "calibration adjacent_run_nodes must be a int, not 'four'"),
        (True, "calibration adjacent_run_nodes must be a int, not True"),
    ],
)
def test_bad_run_lengths_are_refused_in_one_line(value, reason) -> None:
    with pytest.raises(ValueError) as err:
        calibration("tianhe1a", overrides={"adjacent_run_nodes": value})
    assert str(err.value) == reason
    assert "\n" not in str(err.value)


def test_run_length_defaults_to_one_and_parses_from_strings() -> None:
    assert calibration("tianhe1a").adjacent_run_nodes == 1
    assert calibration("cs19", overrides={"adjacent_run_nodes": "8"}).adjacent_run_nodes == 8


RATE = 1 << 20  # bytes a writing node moves per interval


def _one_job_phase(run_nodes: int) -> dict[str, np.ndarray]:
    """One 8-node data-intensive job on nodes 100-107, writers strided over the job, 4 at once;
    one write phase of 4 intervals from interval 10, each node writing one interval's worth."""
    n = 8
    jobs = RunningJobs(
        app=np.zeros(1, np.int64),
        submit_s=np.zeros(1, np.int64),
        start_s=np.zeros(1, np.int64),
        end_s=np.full(1, 3600, np.int64),
        nnodes=np.array([n]),
        node_offset=np.zeros(1, np.int64),
        flat_nodes=np.arange(100, 100 + n),
    )
    one = np.ones(1)
    behaviour = Behaviour(
        rank0=np.zeros(1, bool),
        uneven=np.zeros(1, bool),
        data_intensive=np.ones(1, bool),
        low_comm=np.ones(1, bool),
        io_bytes=np.array([n * RATE]),
        writers=np.array([4]),
        run_nodes=np.array([run_nodes]),
        adjacent=np.zeros(1, bool),
        node_rate=one * RATE / 10,
        comm_bytes=np.zeros(1, np.int64),
        io_nud=np.zeros(1),
        max_node_share=one / n,
        flat_shares=np.full(n, 1 / n),
        cpu_load=one,
        mem_used_bytes=np.ones(1, np.int64),
    )
    phase = Phases(
        job=np.zeros(1, np.int64),
        first=np.array([10]),
        length=np.array([4]),
        read=np.zeros(1, bool),
        io_bytes=np.array([n * RATE]),
        comm_bytes=np.zeros(1, np.int64),
        node_bytes_per_interval=np.array([RATE]),
    )
    return traffic(phase, jobs, behaviour, np.array([1 << 20]))


@pytest.mark.parametrize(
    ("run_nodes", "first_wave", "second_wave"),
    [
        # 2 waves of 4 writers; wave w starts at 10 + w x (4 - 1 + 1) // 2 = 10 + 2w
        (1, [100, 102, 104, 106], [101, 103, 105, 107]),  # node p in wave p mod 2
        (2, [100, 101, 104, 105], [102, 103, 106, 107]),  # runs of 2: run p // 2 in run mod 2
        (4, [100, 101, 102, 103], [104, 105, 106, 107]),  # one run of 4 per wave
    ],
)
def test_writers_come_in_runs_of_adjacent_nodes(run_nodes, first_wave, second_wave) -> None:
    rows = _one_job_phase(run_nodes)
    assert sorted(set(rows["interval"].tolist())) == [10, 12]
    assert sorted(rows["node"][rows["interval"] == 10].tolist()) == first_wave
    assert sorted(rows["node"][rows["interval"] == 12].tolist()) == second_wave
    assert rows["write_bytes"].tolist() == [RATE] * 8  # every node its share, once


def _longest_runs(trace) -> np.ndarray:
    """Per (data-intensive job of 8+ nodes, interval with 2+ writing nodes): the longest run
    of writing nodes adjacent in the job's rank order (node_index)."""
    runs = []
    for rows in traffic_days(trace):
        job, slot = rows["job"], rows["slot"]
        writing = (rows["write_bytes"] > 0) & trace.behaviour.data_intensive[job]
        writing &= trace.jobs.nnodes[job] >= 8
        key = job[writing] * trace.intervals + rows["interval"][writing]
        position = (slot - trace.jobs.node_offset[job])[writing]
        order = np.lexsort((position, key))
        key, position = key[order], position[order]
        for group in np.split(np.arange(len(key)), np.flatnonzero(np.diff(key)) + 1):
            if len(group) < 2:
                continue
            breaks = np.flatnonzero(np.diff(position[group]) != 1)
            lengths = np.diff(np.r_[-1, breaks, len(group) - 1])
            runs.append(int(lengths.max()))
    return np.array(runs)


def test_a_longer_run_shows_in_a_synthesized_trace() -> None:
    """tiny (writers strided over the job) over 6 hours: with runs of 4 the writing nodes of a
    data-intensive job sit in runs of 4 or more adjacent nodes; the same job bytes."""
    base = {"adjacent_writers_share": 0.0}
    single = build_trace("tiny", days=0.25, seed=5, overrides={**base, "adjacent_run_nodes": 1})
    four = build_trace("tiny", days=0.25, seed=5, overrides={**base, "adjacent_run_nodes": 4})
    b1, b4, n = single.behaviour, four.behaviour, single.jobs.nnodes
    di = b1.data_intensive
    assert di.sum() > 5
    np.testing.assert_array_equal(b1.io_bytes, b4.io_bytes)  # the same bytes per job
    expected = np.where(di, np.maximum(b1.writers, np.minimum(4, n)), b1.writers)
    np.testing.assert_array_equal(b4.writers, expected)
    np.testing.assert_array_equal(b4.run_nodes, np.where(di, np.minimum(4, n), 1))
    runs1, runs4 = _longest_runs(single), _longest_runs(four)
    assert len(runs1) and len(runs4)
    assert np.median(runs1) == 1, np.bincount(runs1)
    assert np.median(runs4) >= 4, np.bincount(runs4)
