"""Every workload under every contention model (docs/design.md, "Contention models"): a score
is labelled ``packet`` only when the packet model replayed it. A workload that cannot run under
a model refuses it in one line before any work (the ``lake`` workload's interval replay is the
flow model's); every other one, run under ``packet`` with a long router delay, gives scores the
flow model does not (issue 41: the lake's scores were the flow model's, labelled ``packet``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from burstlake.replay import models, scenario, workloads

# A small scenario of each workload that reads no lake (``{model}``: the model line)
SMALL = {
    "ior": "workload: {source: ior, nodes: [1, 2], bytes_per_node: 4.0e+6, "
    "request_bytes: 1.0e+6}\ntopology: tiny\npolicies: [block]\n",
    "io_alltoall": "workload: {source: io_alltoall, nodes: [4], io_bytes: 1.0e+6, "
    "request_bytes: 1.0e+6, message_bytes: 4096, rounds: 4}\ntopology: tiny\n"
    "policies: [given]\n",
    "incremental": "workload: {source: incremental, nodes: [4], bytes_max: 1.0e+6, "
    "request_bytes: 1.0e+6}\ntopology: tiny\npolicies: [given]\n",
    "bridge_write": "workload: {source: bridge_write, bytes_per_node: 1.0e+6, "
    "request_bytes: 1.0e+6, writers: 0.25, writer_layout: job}\ntopology: mira512\n"
    "policies: [given]\n",
    "phases": "workload: {source: phases, request_bytes: 1.0e+6, phases: "
    "[{app: A, nodes: 4, bytes_per_node: 4.0e+6}, {app: B, nodes: 4, bytes_per_node: 1.0e+6}]}"
    "\ntopology: tiny\npolicies: [interfere]\n",
    "jobs": "workload: {source: jobs, seed: 1, placement: random-node, jobs: "
    "[{name: io, kind: io, nodes: 8, request_bytes: 1048576, interval_s: 0, requests: 4}]}\n"
    "topology: {name: fattree, radix: 8, leaves: 4, server_leaves: [3]}\npolicies: [given]\n",
    "synthetic": "workload: {source: synthetic, pattern: nearest-group, load: 0.2, messages: 5}\n"
    "topology: dfdally_72\npolicies: [given, {name: routing, routing: ugal}]\n",
}
# Workloads whose demand comes from the lake, each refusing or replaying by the same rule
# (lake_window under both models, its workers included: tests/replay/test_lake_window.py)
READS_LAKE = {"lake", "lake_phases", "lake_window"}
SLOW = "model: {name: packet, router_delay: 1.0e-3}"


def _load(tmp_path: Path, text: str) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return scenario.load(path)


def test_every_workload_is_in_the_grid() -> None:
    assert set(workloads.names()) == set(SMALL) | READS_LAKE


@pytest.mark.parametrize("model", ["flow", "packet"])
@pytest.mark.parametrize("source", sorted(set(SMALL) | READS_LAKE))
def test_a_workload_under_a_model(source: str, model: str, tmp_path: Path) -> None:
    kind = workloads.kind(source)
    honoured = kind.models is None or model in kind.models
    if source == "lake":  # the interval replay is the flow model's
        assert kind.models == frozenset({"flow"})
    if not honoured:
        text = f"name: s\nworkload: {{source: {source}}}\ntopology: tiny\npolicies: [given]\n"
        with pytest.raises(ValueError) as caught:
            _load(tmp_path, text + f"model: {model}\n")
        message = str(caught.value)
        assert f"workload {source} replays under the flow model only, not model {model}" in (
            message
        )
        assert "\n" not in message
        return
    if source in READS_LAKE:  # a lake's replays: tests/replay/test_realloc_scenarios.py and
        # test_coordination.py; the run-time check of _scored holds for them too
        assert (source, model) != ("lake", "packet")
        return
    flow = scenario.scores(_load(tmp_path, f"name: s\n{SMALL[source]}"))
    if model == "flow":
        assert flow and all(v for v in flow.values())
        return
    packet = scenario.scores(_load(tmp_path, f"name: s\n{SMALL[source]}{SLOW}\n"))
    assert packet.keys() == flow.keys()
    assert packet != flow, f"{source}: packet with a 1 ms router delay gave the flow scores"


def test_scores_no_model_replayed_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workload whose scores never go through the topology's model (a new one, say) is
    refused under ``packet`` after its run rather than labelled ``packet``."""
    from burstlake.replay.scores import Score

    ior = workloads.kind("ior")
    fake = workloads.Kind(
        keys=ior.keys,
        check=ior.check,
        demand=ior.demand,
        scores=lambda given, topology, demand, progress: [Score("x", 1.0, "s")],
    )
    monkeypatch.setattr(workloads, "KINDS", workloads.KINDS.copy())
    workloads.register("closed_form", fake)
    text = SMALL["ior"].replace("source: ior", "source: closed_form")
    assert scenario.scores(_load(tmp_path, f"name: s\n{text}")) == {"block": {"x": 1.0}}
    with pytest.raises(ValueError, match="replayed nothing under model packet"):
        scenario.scores(_load(tmp_path, f"name: s\n{text}model: packet\n"))
    assert models.DEFAULT.name == "flow"


@pytest.mark.parametrize(
    "nodes, message",
    [
        ("[2.7, 4]", "workload ior: nodes[0] must be an integer >= 1, got 2.7"),
        (".inf", "workload ior: nodes[0] must be an integer >= 1, got inf"),
        ("[1, .nan]", "workload ior: nodes[1] must be an integer >= 1, got nan"),
        ("[0]", "workload ior: nodes[0] must be an integer >= 1, got 0"),
    ],
)
def test_ior_node_counts_are_whole(nodes: str, message: str, tmp_path: Path) -> None:
    text = SMALL["ior"].replace("nodes: [1, 2]", f"nodes: {nodes}")
    with pytest.raises(ValueError) as caught:
        _load(tmp_path, f"name: s\n{text}")
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "topology, message",
    [
        (
            "{name: fattree, radix: 36, leaves: 100000}",
            "topology fattree: 1,800,000 nodes (about 2.2 GB to build); a topology has at most",
        ),
        (
            "{name: torus, dims: [100000, 100000]}",
            "topology torus: 10,000,000,000 nodes (about 12,000.0 GB to build)",
        ),
        (
            "{name: dragonfly, groups: 1001, routers: 1000, hosts: 1, global_links: 1}",
            "topology dragonfly: 1,001,000 nodes (about 1.2 GB to build); a topology has at most",
        ),
    ],
)
def test_a_topology_too_large_is_refused_before_it_is_built(
    topology: str, message: str, tmp_path: Path
) -> None:
    text = SMALL["ior"].replace("topology: tiny", f"topology: {topology}")
    with pytest.raises(ValueError) as caught:
        _load(tmp_path, f"name: s\n{text}")
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("key", ["nic_delay", "router_delay"])
def test_a_delay_beyond_a_day_is_refused(key: str, tmp_path: Path) -> None:
    """``nic_delay: 1e308`` gave NULL latencies with exit 0."""
    text = f"name: s\n{SMALL['ior']}model: {{name: packet, {key}: 1.0e+308}}\n"
    with pytest.raises(ValueError) as caught:
        _load(tmp_path, text)
    assert f"{key} must be 0..86400 seconds, got 1e+308" in str(caught.value)
