"""Contention models chosen per scenario (burstlake.replay.models): the ``model:`` key, its
refusals, and the shapes where the flow and packet models must agree or differ (paper 000
§4.2, §5.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from burstlake.catalog import sql
from burstlake.replay import models
from burstlake.replay.requests import Requests
from burstlake.replay.scenario import load, run
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import build

# paper 000's setting shrunk: a radix-12 fat-tree (72 hosts, two pods), the six I/O servers
# of leaf 11 (isolated-target), 30 MPI clients (4 KiB every 100 µs) and 30 I/O clients
# (1 MiB back to back): five I/O clients per server link, as the paper's 8.5
SMALL = """name: small
workload:
  source: jobs
  seed: 1
  placement: random-node
  jobs:
    - {{name: mpi, kind: mpi, nodes: 30, message_bytes: 4096, interval_s: 1.0e-4,
        messages: 40, warmup: 5}}
    - {{name: io, kind: io, nodes: 30, request_bytes: 1048576, interval_s: 0,
        requests: 12, warmup: 1}}
topology: {{name: fattree, radix: 12, leaves: 12, server_leaves: [11]}}
{model}
policies:
  - given
  - {{name: random-switch, seed: 1}}
  - spread-target
"""


def scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def slowdowns(lake: Path) -> dict[str, float]:
    rows = sql(lake, "SELECT policy, value, model FROM replay_scores "
                     "WHERE metric = 'mpi_slowdown'").to_pylist()  # fmt: skip
    return {r["policy"]: (r["value"], r["model"]) for r in rows}


def test_the_packet_model_shows_paper_000s_placement_shapes(tmp_path, lake) -> None:
    # 000 §5.1: random-node placement slows MPI down several times, random-switch hardly;
    # §5.2: spreading the servers lowers the slowdown. Under CODES' fat-tree arbitration (one
    # arrival-order queue per output, `fcfs`, the default) an MPI packet waits behind every
    # I/O packet queued at a shared output, as in the paper's CODES runs.
    run(load(scenario(tmp_path, SMALL.format(model="model: packet"))), lake)
    packet = slowdowns(lake)
    assert {m for _, m in packet.values()} == {"packet"}
    assert packet["given"][0] >= 3 * packet["random-switch"][0]
    assert packet["spread-target"][0] < packet["given"][0]
    # under round robin it waits for one packet of each other input instead: the same order
    # of placements, a smaller slowdown
    turns = "model: {name: packet, arbitration: round-robin}"
    run(load(scenario(tmp_path, SMALL.format(model=turns))), lake)
    turns = slowdowns(lake)
    assert turns["random-switch"][0] < turns["given"][0] < packet["given"][0] / 2
    assert turns["spread-target"][0] < turns["given"][0]
    # the flow model (no buffers) sees none of it: the links MPI crosses are not saturated in
    # the fluid solution
    run(load(scenario(tmp_path, SMALL.format(model=""))), lake)
    flow = slowdowns(lake)
    assert {m for _, m in flow.values()} == {"flow"}
    assert flow["given"][0] < 1.2 < packet["given"][0] / 2


def test_packet_settings_reach_the_model(tmp_path) -> None:
    text = SMALL.format(model="model: {name: packet, buffer_bytes: 8192, router_delay: 1.0e-7}")
    chosen = load(scenario(tmp_path, text)).model
    assert chosen.name == "packet"
    assert chosen.settings.buffer_bytes == 8192 and chosen.settings.router_delay == 1e-7
    assert load(scenario(tmp_path, SMALL.format(model=""))).model is models.DEFAULT


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("model: fluid", "unknown model 'fluid'; allowed: flow, packet"),
        ("model: 3", "a model name"),
        ("model: [packet]", "a model name"),
        ("model: {name: packet, buffer: 1}", r"model packet: unknown settings 'buffer'"),
        ("model: {name: packet, packet_bytes: 0}", "packet_bytes must be positive"),
        ("model: {name: packet, packet_bytes: -4096}", "packet_bytes must be positive"),
        ("model: {name: packet, nic_delay: -1}", "nic_delay must be 0..86400 seconds"),
        ("model: {name: packet, router_delay: x}", "router_delay must be a number"),
        ("model: {name: packet, packet_bytes: 65537}", "larger than buffer_bytes"),
        ("model: {name: flow, buffer_bytes: 1}", "unknown settings 'buffer_bytes'; allowed: none"),
        ("model: {buffer_bytes: 1}", "unknown model None"),
        ("model: packet\nmodel: flow", "key 'model' is given twice"),
    ],
)
def test_bad_model_keys_are_refused_in_one_line(tmp_path, model, message) -> None:
    path = scenario(tmp_path, SMALL.format(model=model))
    with pytest.raises(ValueError, match=message) as caught:
        load(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_both_models_run_the_same_requests_on_a_topology() -> None:
    # one Requests, two models: equal flows through one server agree within 2 %
    topology = build({"name": "fattree", "radix": 4, "leaves": 4, "server_leaves": [3]})
    routes = [topology.router.io_route(i, 0) for i in range(4)]
    requests = Requests(np.arange(4), np.full(4, 4e6), np.zeros(4), Paths.from_lists(routes))
    ends = [
        topology.with_contention(models.parse(name)).simulate(requests).end.max()
        for name in ("flow", "packet")
    ]
    assert ends[1] == pytest.approx(ends[0], rel=0.02)
