"""The four recipes of docs/design.md ("Extension points"): a toy topology family with its own
link kind, a toy contention model, a toy workload and a toy policy, each added through its
recipe alone (a registration), then one scenario naming all four. Expected values by hand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from burstlake.replay import models, policies, topologies, workloads
from burstlake.replay.graph import ResourceSet, Router, Topology
from burstlake.replay.requests import Requests, Timeline, issue_time
from burstlake.replay.scenario import load, scores
from burstlake.replay.scores import Score
from burstlake.replay.topologies import Family

HOST, GLOBAL, STORE = 1e9, 2e9, 1e12  # bytes/s
HOP = 1e-6  # the family's link latency: seconds per link crossed


@pytest.fixture
def registries(monkeypatch):
    """Each registry as shipped, on a copy the toys are added to and dropped from after."""
    monkeypatch.setattr(topologies, "FAMILIES", topologies.FAMILIES.copy())
    monkeypatch.setattr(models, "MODELS", models.MODELS.copy())
    monkeypatch.setattr(workloads, "KINDS", workloads.KINDS.copy())
    monkeypatch.setattr(policies, "POLICIES", policies.POLICIES.copy())


# --- a topology: two groups joined by global links ---------------------------------------------


class PairRouter(Router):
    """Node → its host link → its target's global link → storage."""

    def __init__(self, up: list[int], global_link: list[int], storage: int) -> None:
        self.up, self.global_link, self.storage = up, global_link, storage

    def io_route(self, node: int, target: int) -> list[int]:
        return [self.up[node], self.global_link[target], self.storage]

    def route(self, src: int, dst: int) -> list[int]:
        return [self.up[src], self.global_link[dst * len(self.global_link) // len(self.up)]]

    def hops(self, node: int, target: int) -> int:
        return 2

    def groups(self) -> np.ndarray:
        return np.arange(len(self.up)) * len(self.global_link) // len(self.up)


def check_pair(name: str, settings: dict) -> None:
    nodes = settings.get("nodes", 4)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 2 or nodes % 2:
        raise ValueError(f"topology {name}: nodes must be an even integer >= 2, got {nodes!r}")


def build_pair(name: str, settings: dict, capacities: dict | None, _lake: object) -> Topology:
    n = settings.get("nodes", 4)
    caps = {"host": HOST, "global": GLOBAL, **(capacities or {})}
    r = ResourceSet()
    up = [r.add(f"up{i}", "host_link", caps["host"]) for i in range(n)]
    global_link = [r.add(f"g{g}", "global_link", caps["global"], switch_port=True) for g in (0, 1)]
    storage = r.add("storage", "storage", STORE)
    nodes = tuple(f"n{i}" for i in range(n))
    block = np.arange(n, dtype=np.int64) * 2 // n
    return Topology(name, r, nodes, ("t0", "t1"), block, PairRouter(up, global_link, storage))


def add_topology() -> None:
    topologies.register(
        "pair",
        Family(
            settings=frozenset({"nodes"}),
            capacities=("host", "global"),
            check=check_pair,
            build=build_pair,
            link_kinds=("host_link", "global_link"),
            link_latency=HOP,
        ),
    )


# --- a contention model: every request alone on its route --------------------------------------


@dataclass(frozen=True)
class AloneSettings:
    slowdown: float = 1.0


def alone_settings(given: dict, where: str) -> AloneSettings:
    value = given.get("slowdown", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{where}: slowdown must be a positive number, got {value!r}")
    return AloneSettings(float(value))


def simulate_alone(requests: Requests, capacity: np.ndarray, settings: AloneSettings) -> Timeline:
    """Each request moves at its route's bottleneck, as if alone: latency, then size over the
    bottleneck times ``slowdown``; its stream's next one issues by the one rule."""
    n = len(requests.stream)
    latency = np.zeros(n) if requests.latency is None else requests.latency
    release = np.full(n, -np.inf) if requests.release is None else requests.release
    window = np.zeros(n) if requests.window is None else requests.window
    start, end = np.zeros(n), np.zeros(n)
    for k in range(n):
        route = requests.paths.indices[requests.paths.indptr[k] : requests.paths.indptr[k + 1]]
        if k and requests.stream[k] == requests.stream[k - 1]:
            start[k] = issue_time(end[k - 1], requests.gap[k], release[k], start[k - 1], window[k])
        else:
            start[k] = issue_time(0.0, requests.gap[k], release[k], -np.inf, window[k])
        moving = requests.size[k] / capacity[route].min() * settings.slowdown
        end[k] = start[k] + latency[k] + moving
    return Timeline(start, end, np.asarray(requests.size, float), n)


def add_model() -> None:
    models.register(
        models.Model(
            "alone",
            frozenset({"slowdown"}),
            alone_settings,
            lambda requests, capacity, settings, _vcs, _ports, _progress: simulate_alone(
                requests, capacity, settings
            ),
            "every request alone on its route",
        )
    )


# --- a workload: every node writes once ---------------------------------------------------------


def check_write(spec: dict, _limits: workloads.ScenarioLimits) -> None:
    workloads.number("workload one_write: bytes", spec.get("bytes", 1), low=0, strict=True)


def write_scores(given: workloads.Settings, topology: Topology, _demand, _progress) -> list[Score]:
    n = len(topology.nodes)
    paths = topology.io_paths()
    size = float(given.workload.get("bytes", 1))
    requests = Requests(
        np.arange(n), np.full(n, size), np.zeros(n), paths, latency=topology.route_latency(paths)
    )
    timeline = topology.simulate(requests)
    return [Score("makespan", float(np.max(timeline.end)), "s")]


def add_workload() -> None:
    workloads.register(
        "one_write",
        workloads.Kind(
            keys=frozenset({"bytes"}),
            check=check_write,
            demand=lambda spec, topology, lake: None,
            scores=write_scores,
        ),
    )


# --- a policy: every node on one target ----------------------------------------------------------


def add_policy() -> None:
    @policies.register("one-target")
    def one_target(target: int = 0):
        def apply(topology: Topology, demand):
            return topology.remapped(np.full(len(topology.nodes), target)), demand

        return apply


SCENARIO = """name: toys
workload: {{source: one_write, bytes: 1000000}}
topology: {{name: pair, nodes: 4}}
policies: [given, one-target]
{model}
"""


def scenario(tmp_path: Path, model: str = "") -> Path:
    path = tmp_path / "toys.yaml"
    path.write_text(SCENARIO.format(model=model))
    return path


def test_the_four_recipes_replay_one_scenario(registries, tmp_path: Path) -> None:
    """1 MB per node, 4 nodes, 2 targets (block: nodes 0-1 on g0, 2-3 on g1). Each route
    crosses two links (host and global: 2 µs of latency) and storage (none). Flow model,
    given: two 1 GB/s flows share each 2 GB/s global link, 1 ms each: 1.002 ms. One target:
    four flows on g0, 0.5 GB/s each: 2.002 ms. The toy model, as if alone: the 1 GB/s host
    link, 1.002 ms under either policy; with slowdown 2, 2.002 ms."""
    add_topology()
    add_model()
    add_workload()
    add_policy()
    t = topologies.build({"name": "pair"})
    assert t.route_latency(t.io_paths()).tolist() == pytest.approx([2 * HOP] * 4)
    flow = scores(load(scenario(tmp_path)))
    assert flow["given"]["makespan"] == pytest.approx(1.002e-3, rel=1e-12)
    assert flow["one-target"]["makespan"] == pytest.approx(2.002e-3, rel=1e-12)
    alone = scores(load(scenario(tmp_path, "model: alone")))
    assert alone["given"]["makespan"] == pytest.approx(1.002e-3, rel=1e-12)
    assert alone["one-target"]["makespan"] == pytest.approx(1.002e-3, rel=1e-12)
    slower = scores(load(scenario(tmp_path, "model: {name: alone, slowdown: 2}")))
    assert slower["given"]["makespan"] == pytest.approx(2.002e-3, rel=1e-12)
    packet = scores(load(scenario(tmp_path, "model: packet")))  # any topology, either model
    assert packet["one-target"]["makespan"] > packet["given"]["makespan"] > 1e-3


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("{name: pair, nodes: 4}", "{name: pair, node: 4}"),
            "topology pair: unknown settings 'node'",
        ),
        (("{name: pair, nodes: 4}", "{name: pair, nodes: 3}"), "nodes must be an even integer"),
        (("{name: pair, nodes: 4}", "{name: pairs}"), "unknown topology 'pairs'; allowed: "),
        (("bytes: 1000000", "bytes: -1"), "workload one_write: bytes must be a number > 0"),
        (
            ("bytes: 1000000", "byte: 1"),
            "workload one_write: unknown settings 'byte'; allowed: bytes",
        ),
        (("one_write", "one_writes"), "workload: unknown workload 'one_writes'"),
        (
            ("one-target]", "{name: one-target, tgt: 1}]"),
            "policy one-target: unknown settings 'tgt'; allowed: target",
        ),
        (("one-target]", "one-targets]"), "policy: unknown policy 'one-targets'"),
        (
            ("\n\n", "\nmodel: {name: alone, slow: 2}\n"),
            "model alone: unknown settings 'slow'; allowed: slowdown",
        ),
        (
            ("\n\n", "\nmodel: {name: alone, slowdown: 0}\n"),
            "model alone: slowdown must be a positive",
        ),
    ],
)
def test_a_toy_is_refused_in_the_one_wording(registries, tmp_path: Path, edit, message) -> None:
    add_topology()
    add_model()
    add_workload()
    add_policy()
    path = scenario(tmp_path)
    path.write_text(path.read_text().replace(*edit) + ("\n" if edit[0] == "\n\n" else ""))
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as err:
        load(path)
    assert "\n" not in str(err.value)


def test_a_family_must_declare_its_link_kinds() -> None:
    """No default: a family that forgot its global links would replay them free."""
    with pytest.raises(TypeError, match="link_kinds"):
        Family(frozenset(), (), check_pair, build_pair)  # type: ignore[call-arg]


def test_a_toy_entry_leaves_the_shipped_registries_alone(registries) -> None:
    add_topology()
    add_policy()
    assert "pair" in topologies.names() and "one-target" in policies.names()


def test_the_shipped_registries_hold_no_toy() -> None:
    assert "pair" not in topologies.names() and "alone" not in models.names()
    assert "one_write" not in workloads.names() and "one-target" not in policies.names()
