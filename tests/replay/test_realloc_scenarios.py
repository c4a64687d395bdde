"""The reallocation and bridge-node scenarios (papers 003, 004 §6.4, §7.2) from YAML: the shipped
examples load and run, and every key they add refuses malformed, empty, duplicated and
out-of-range values with one line naming the key."""

from __future__ import annotations

import pytest

from burstlake.replay.scenario import load, run
from tests.builders.paths import REPO

SCENARIOS = REPO / "replay" / "scenarios"
MINE = (
    "bridges_mira512",
    "bridges_mira512_all",
    "realloc_incremental",
    "realloc_alltoall",
    "realloc_lake",
)


@pytest.mark.parametrize("name", MINE)
def test_shipped_examples_load(name) -> None:
    scenario = load(SCENARIOS / f"{name}.yaml")
    assert scenario.name == name and len(scenario.policies) >= 3


def test_bridge_example_runs_and_writes_its_scores(lake) -> None:
    table = run(load(SCENARIOS / "bridges_mira512.yaml"), lake)
    s = {(r["policy"], r["metric"]): r["value"] for r in table.to_pylist()}
    assert s["given", "write_time"] == pytest.approx(128.0)  # one job's 128 nodes, 2 bridges
    assert s["bridge-route", "write_time"] == pytest.approx(32.0)
    assert s["bridge-load", "mean_hops"] == pytest.approx(3.0)


@pytest.mark.slow
def test_whole_partition_example_gains_under_the_packet_model(lake) -> None:
    """bridges_mira512_all (003 at its sizes: 512 nodes × 8 ranks × 64 KB, packet model):
    30.4 → 16.8 ms measured; the acceptance is at least 30 % lower and a lower spread of the
    messages bridge nodes send."""
    table = run(load(SCENARIOS / "bridges_mira512_all.yaml"), lake)
    s = {(r["policy"], r["metric"]): r["value"] for r in table.to_pylist()}
    for label in ("bridge-route", "bridge-load"):
        assert s[label, "write_time"] <= 0.7 * s["given", "write_time"], label
        assert s[label, "bridge_messages_sent_sd"] < s["given", "bridge_messages_sent_sd"]


def text(workload: str, topology: str = "{name: tiny}", policies: str = "[given]") -> str:
    return f"name: s\nworkload: {workload}\ntopology: {topology}\npolicies: {policies}\n"


INC = "{{source: incremental, {}}}"
A2A = "{{source: io_alltoall, {}}}"
BW = "{{source: bridge_write, {}}}"


@pytest.mark.parametrize(
    ("yaml", "reason"),
    [
        # incremental: malformed, empty, duplicated, out of range
        (text(INC.format("nodes: eight")), "workload incremental: nodes must be integers"),
        (text(INC.format("nodes: []")), "workload incremental: nodes must be integers"),
        (text(INC.format("nodes: [8, 8]")), "workload incremental: nodes lists a count twice"),
        (text(INC.format("nodes: [1]")), "nodes must be integers in 2..4096"),
        (text(INC.format("bytes_max: -1")), "workload incremental: bytes_max must be a number > 0"),
        (text(INC.format("request_bytes: null")), "request_bytes must be a number > 0"),
        (text(INC.format("nodes: 8, bytes_max: 1e12, request_bytes: 1")), "the limit is"),
        (text(INC.format("node: 8")), "workload incremental: unknown settings 'node'"),
        # io_alltoall
        (text(A2A.format("nodes: [4, x]")), "workload io_alltoall: nodes must be integers"),
        (text(A2A.format("nodes: []")), "workload io_alltoall: nodes must be integers"),
        (text(A2A.format("nodes: [4, 4]")), "workload io_alltoall: nodes lists a count twice"),
        (text(A2A.format("nodes: 1000")), "nodes must be integers in 2..256"),
        (text(A2A.format("rounds: 0")), "workload io_alltoall: rounds must be an integer > 0"),
        (text(A2A.format("rounds: 2.5")), "rounds must be an integer > 0"),
        (text(A2A.format("message_bytes: big")), "message_bytes must be a number > 0"),
        (text(A2A.format("seed: -2")), "seed must be an integer >= 0"),
        (text(A2A.format("nodes: 256, rounds: 100")), "the limit is"),
        # bridge_write
        (text(BW.format("writers: 2")), "workload bridge_write: writers is a fraction in (0, 1]"),
        (text(BW.format("writers: ''")), "workload bridge_write: writers must be a number > 0"),
        (text(BW.format("writer_layout: 3")), "workload bridge_write: writer_layout is one of"),
        (
            text(BW.format("bytes_per_node: 0")),
            "workload bridge_write: bytes_per_node must be a number > 0",
        ),
        # the torus settings
        (text(BW.format("writers: 1"), "{name: mira512, dims: []}"), "dims must be a list"),
        (text(BW.format("writers: 1"), "{name: mira512, dims: [4, 0]}"), "integers ≥ 2"),
        (
            text(BW.format("writers: 1"), "{name: mira512, nodes_per_bridge: 7}"),
            "nodes_per_bridge must be a positive integer dividing the 512 nodes, got 7",
        ),
        (
            text(BW.format("writers: 1"), "{name: mira512, nodes_per_bridge: x}"),
            "nodes_per_bridge must be",
        ),
        (text(BW.format("writers: 1"), "{name: mira512, bridges: 8}"), "unknown settings"),
        # the policies' settings
        (
            text("{source: lake}", policies="[{name: even-node, reserve_small: 2}]"),
            "policy even-node: reserve_small must be a fraction in [0, 1), got 2",
        ),
        (
            text("{source: lake}", policies="[{name: even-traffic, min_nodes_per_ion: 0}]"),
            "policy even-traffic: min_nodes_per_ion must be an integer ≥ 1",
        ),
        (
            text("{source: lake}", policies="[{name: even-traffic, large: []}]"),
            "policy even-traffic: large must be a positive number",
        ),
        (
            text("{source: lake}", policies="[{name: even-node, seed: x}]"),
            "policy even-node: seed must be an integer >= 0",
        ),
        (
            text("{source: lake}", policies="[{name: bridge-route, weights: bytes}]"),
            "policy bridge-route: unknown settings 'weights'",
        ),
        (text("{source: lake}", policies="[even-node, even-node]"), "policy labels must differ"),
        (text("{source: lake}", policies="[even-nodes]"), "unknown policy 'even-nodes'"),
    ],
)
def test_bad_keys_are_refused_in_one_line(tmp_path, yaml, reason) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml)
    with pytest.raises(ValueError) as err:
        load(path)
    assert reason in str(err.value) and "\n" not in str(err.value)
