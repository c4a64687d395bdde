"""``burstlake flows`` (docs/design.md, "Replay", "Contention models" and "Command line"):
hand-solved completion times under the flow and the packet model, every bad input, and the same
flows through SimGrid when the system python3 has its bindings."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from bench.engine_vs_simgrid import generate, run_simgrid, simgrid_available
from burstlake.cli import main
from burstlake.replay import models
from burstlake.replay.events import simulate
from burstlake.replay.flows import finish_times, parse
from burstlake.replay.packet import PacketSettings
from burstlake.replay.requests import Requests


def flows_cli(tmp_path, document, capsys) -> tuple[int, dict | None, str]:
    path = tmp_path / "flows.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    code = main(["flows", str(path)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def flow(route, size, start=0.0) -> dict:
    return {"route": route, "size": size, "start": start}


def close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=0)


def test_bottleneck(tmp_path, capsys) -> None:
    # three flows of 10, 20, 30 B on one 10 B/s link from t=0: 10/3 B/s each until the first
    # ends at 3; the other two (10 and 20 B left) at 5 B/s: the second ends at 3 + 2 = 5;
    # the last (10 B left at 5) alone at 10 B/s: 5 + 1 = 6
    document = {"links": {"l": 10}, "flows": [flow(["l"], s) for s in (10, 20, 30)]}
    code, out, _ = flows_cli(tmp_path, document, capsys)
    assert code == 0
    close(out["finish"], [3.0, 5.0, 6.0])
    assert out["wall_s"] >= 0
    assert out["model"] == {"name": "flow"}  # no "model" key: the flow model


def test_parking_lot(tmp_path, capsys) -> None:
    # links a, b (4 B/s): long flow over a and b (12 B), short flow on each link (4 B).
    # 0-2: 2 B/s each, the short ones end at 2; the long one has 8 B left at 4 B/s: ends at 4
    document = {
        "links": {"a": 4, "b": 4},
        "flows": [flow(["a", "b"], 12), flow(["a"], 4), flow(["b"], 4)],
    }
    code, out, _ = flows_cli(tmp_path, document, capsys)
    assert code == 0
    close(out["finish"], [4.0, 2.0, 2.0])


def test_starts_and_rate_limited_at_different_links(tmp_path, capsys) -> None:
    # a (10 B/s) carries f0 (30 B, from 0) and f1; b (4 B/s) carries f1 (10 B, from 1).
    # 0-1: f0 alone 10 B; from 1 f1 is capped by b at 4, f0 takes 6: f1 ends at 1 + 10/4 = 3.5,
    # f0 has 20 - 6 * 2.5 = 5 B left at 10 B/s: ends at 4
    document = {
        "links": {"a": 10, "b": 4},
        "flows": [flow(["a"], 30), flow(["a", "b"], 10, start=1.0)],
    }
    code, out, _ = flows_cli(tmp_path, document, capsys)
    assert code == 0
    close(out["finish"], [4.0, 3.5])


def test_empty_flow_ends_at_its_start_and_out_file(tmp_path, capsys) -> None:
    document = {"links": {"a": 1}, "flows": [flow(["a"], 0, start=2.5), flow(["a"], 3)]}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))
    target = tmp_path / "out.json"
    assert main(["flows", str(path), "--out", str(target)]) == 0
    assert capsys.readouterr().out == ""
    close(json.loads(target.read_text())["finish"], [2.5, 3.0])


def test_same_instant_events_are_one(tmp_path) -> None:
    # four flows start together on one 1 B/s link: 0.25 B/s each, the 1 B pair ends at 4;
    # the 2 B pair has 1 B left each at 0.5 B/s: ends at 6. Three events: 0, 4 and 6
    flows = parse({"links": {"l": 1}, "flows": [flow(["l"], s) for s in (1, 1, 2, 2)]})
    timeline = simulate(Requests(np.arange(4), flows.size, flows.start, flows.paths), [1.0])
    close(timeline.end, [4.0, 4.0, 6.0, 6.0])
    assert timeline.events == 3


# The packet model (paper 000 §2.5; burstlake/replay/packet.py's docstring): one 8 KiB flow,
# from 1 ms, over link a (4,096 MB/s: 1 µs per 4 KiB packet) then b (2,048 MB/s: 2 µs).
# The message reaches its NIC after nic_delay (0.5 µs); its two packets leave on a back to
# back; store and forward: each crosses b once it has crossed a and b is free; a is only ever
# a route's first link (a NIC's), so no delay after it; b follows a, so router_delay (0.1 µs)
# after it.  Packet 1: a 0-1 µs, b 1-3 µs; packet 2: a 1-2 µs, b waits to 3, 3-5 µs; its last
# byte arrives at 1 ms + 0.5 + 5 + 0.1 µs. A 10,000 B flow cuts a short third packet
# (1,808 B: 0.44140625 µs on a, 0.8828125 µs on b): a 2-2.44 µs, b 5-5.8828125 µs.
PACKET = {"name": "packet", "packet_bytes": 4096, "buffer_bytes": 65536, "router_delay": 1e-7,
          "nic_delay": 5e-7, "tie_seed": 3, "arbitration": "fcfs"}  # fmt: skip


@pytest.mark.parametrize(("size", "crossing"), [(8192, 5e-6), (10_000, 5e-6 + 1808 / 2048e6)])
def test_packet_model_hand_derived(tmp_path, capsys, size, crossing) -> None:
    document = {
        "links": {"a": 4096e6, "b": 2048e6},
        "flows": [flow(["a", "b"], size, start=1e-3)],
        "model": PACKET,
    }
    code, out, _ = flows_cli(tmp_path, document, capsys)
    assert code == 0
    close(out["finish"], [1e-3 + 5e-7 + crossing + 1e-7])
    assert out["model"] == PACKET and out["unfinished"] == {}


def test_packet_model_by_name_takes_the_defaults(tmp_path, capsys) -> None:
    # "packet" alone: CODES' configuration (4 KiB packets, 64 KiB buffers, 60 ns, 1 µs). One
    # 4 KiB packet over one 4,096 MB/s link, a NIC's (no router delay): 1 µs + 1 µs
    document = {"links": {"a": 4096e6}, "flows": [flow(["a"], 4096)], "model": "packet"}
    code, out, _ = flows_cli(tmp_path, document, capsys)
    assert code == 0
    close(out["finish"], [2e-6])
    defaults = PacketSettings()
    assert out["model"] == {"name": "packet"} | {
        key.name: getattr(defaults, key.name) for key in fields(PacketSettings)
    }
    assert parse(document).model.spec() == out["model"]  # the output's model reads back


def test_help_names_the_packet_models_defaults(capsys) -> None:
    # the help spells out PacketSettings' defaults: it must say what the model uses
    with pytest.raises(SystemExit):
        main(["flows", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = PacketSettings()
    for key in fields(PacketSettings):
        value = getattr(defaults, key.name)
        shown = json.dumps(value) if isinstance(value, str) else f"{value:g}"
        assert f'"{key.name}": {shown}' in text


@pytest.mark.parametrize("n", [2, 4, 16])
def test_packet_model_agrees_with_max_min_on_one_bottleneck(tmp_path, capsys, n) -> None:
    # n equal 4 MiB flows, each from its own NIC link into one shared 12.5 GB/s link: max-min
    # gives each 1/n, all end at n x 4 MiB / 12.5 GB/s (1.342 ms for four); the packet model
    # interleaves their packets on the shared link and agrees within 2 % flow by flow
    size, bandwidth = 4 << 20, 12.5e9
    links = {f"nic{i}": bandwidth for i in range(n)} | {"server": bandwidth}
    flows = [flow([f"nic{i}", "server"], size) for i in range(n)]
    finish = {}
    for model in ("flow", "packet"):
        code, out, _ = flows_cli(tmp_path, {"links": links, "flows": flows, "model": model}, capsys)
        assert code == 0 and out["model"]["name"] == model
        finish[model] = np.asarray(out["finish"])
    close(finish["flow"], [n * size / bandwidth] * n)
    np.testing.assert_allclose(finish["packet"], finish["flow"], rtol=0.02)
    assert finish["packet"].max() >= n * size / bandwidth  # the link rate, never above


def test_packet_model_through_the_installed_command(tmp_path) -> None:
    # the real entry point, as a user runs it: one 8 KiB flow (hand-derived above) to --out
    source, target = tmp_path / "in.json", tmp_path / "out.json"
    document = {"links": {"a": 4096e6, "b": 2048e6}, "flows": [flow(["a", "b"], 8192)]}
    source.write_text(json.dumps(document | {"model": PACKET}))
    command = Path(sys.executable).parent / "burstlake"
    done = subprocess.run(
        [command, "flows", source, "--out", target], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(target.read_text())
    assert result["model"] == PACKET
    close(result["finish"], [5e-7 + 5e-6 + 1e-7])
    source.write_text(json.dumps(document | {"model": {"name": "packet", "buffer": 1}}))
    done = subprocess.run([command, "flows", source], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"burstlake flows: {source}: model packet: unknown settings 'buffer'; allowed: "
        "arbitration, buffer_bytes, nic_delay, packet_bytes, router_delay, tie_seed\n"
    )


LINK = {"links": {"a": 1e9}, "flows": [{"route": ["a"], "size": 1, "start": 0}]}


def test_packet_model_refuses_a_cycle_of_full_buffers(tmp_path, capsys) -> None:
    # three flows around links x, y, z (each starts where the previous one's route turns):
    # with one packet per buffer each holds the buffer the next one waits for, and without a
    # router there is no virtual channel to break the cycle: refused, the file named
    routes = [["x", "y", "z"], ["y", "z", "x"], ["z", "x", "y"]]
    document = {
        "links": dict.fromkeys("xyz", 1e9),
        "flows": [flow(route, 1e6) for route in routes],
        "model": {"name": "packet", "buffer_bytes": 4096},
    }
    code, _, err = flows_cli(tmp_path, document, capsys)
    assert code == 2
    assert err.startswith(f"burstlake flows: {tmp_path / 'flows.json'}: packet model: deadlock")
    assert err.count("\n") == 1
    document["model"] = "flow"  # the fluid model has no buffers: all three end together
    code, out, _ = flows_cli(tmp_path, document, capsys)
    assert code == 0
    close(out["finish"], [3e-3] * 3)


def test_model_null_is_the_flow_model() -> None:
    # as a scenario's empty ``model:``
    assert parse(LINK | {"model": None}).model is models.DEFAULT
    assert parse(LINK | {"model": "flow"}).model.spec() == {"name": "flow"}


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ('"fluid"', "model: unknown model 'fluid'; allowed: flow, packet"),
        ('""', "model: unknown model ''"),
        ("3", "model: a model name (flow, packet) or a mapping, got 3"),
        ('["packet"]', "model: a model name (flow, packet) or a mapping"),
        ("true", "model: a model name (flow, packet) or a mapping, got True"),
        ('{"buffer_bytes": 65536}', "model: unknown model None"),
        ('{"name": "packet", "buffer": 1}', "model packet: unknown settings 'buffer'"),
        ('{"name": "flow", "buffer_bytes": 1}', "model flow: unknown settings 'buffer_bytes'"),
        ('{"name": "packet", "router_delay": "x"}', "model packet: router_delay must be a number"),
        ('{"name": "packet", "nic_delay": null}', "model packet: nic_delay must be a number"),
        ('{"name": "packet", "nic_delay": [1]}', "model packet: nic_delay must be a number"),
        ('{"name": "packet", "nic_delay": NaN}', "model packet: nic_delay must be a number"),
        ('{"name": "packet", "router_delay": Infinity}', "router_delay must be a number"),
        ('{"name": "packet", "buffer_bytes": true}', "model packet: buffer_bytes must be a number"),
        ('{"name": "packet", "packet_bytes": 0}', "model packet: packet_bytes must be positive"),
        ('{"name": "packet", "packet_bytes": -4096}', "packet_bytes must be positive"),
        ('{"name": "packet", "buffer_bytes": -1}', "model packet: buffer_bytes must be positive"),
        (
            '{"name": "packet", "nic_delay": -1e-6}',
            "model packet: nic_delay must be 0..86400 seconds",
        ),
        (
            '{"name": "packet", "router_delay": -1}',
            "model packet: router_delay must be 0..86400 seconds",
        ),
        (
            '{"name": "packet", "packet_bytes": 8192, "buffer_bytes": 4096}',
            "model packet: packet_bytes (8192) is larger than buffer_bytes (4096)",
        ),
        ('"packet", "model": "flow"', "'model' given twice"),
        ('{"name": "packet", "name": "flow"}', "'name' given twice"),
        ('{"name": "packet", "nic_delay": 1, "nic_delay": 2}', "'nic_delay' given twice"),
    ],
)
def test_bad_model_one_line_naming_the_file_and_key(tmp_path, capsys, model, message) -> None:
    # the scenario key's own check (burstlake.replay.models.parse), with the file named
    text = json.dumps(LINK)[:-1] + f', "model": {model}}}'
    code, _, err = flows_cli(tmp_path, text, capsys)
    assert code == 2
    assert message in err and "model" in err
    assert err.startswith(f"burstlake flows: {tmp_path / 'flows.json'}: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "not JSON"),
        ("", "not JSON"),
        ('{"links": {"a": 1}, "flows": [{"route": ["a"], "size": 1, "start": 0}]', "not JSON"),
        ({"flows": []}, "missing key 'links'"),
        ({"links": {"a": 1}}, "missing key 'flows'"),
        ({"links": [], "flows": []}, "'links' must be a JSON object"),
        (
            {"links": {"a": 1}, "flows": [{"route": ["a"], "size": 1}]},
            "flow 0: missing key 'start'",
        ),
        ({"links": {"a": 1}, "flows": [{"size": 1, "start": 0}]}, "flow 0: missing key 'route'"),
        (
            {"links": {"a": 1}, "flows": [{"route": ["a"], "start": 0}]},
            "flow 0: missing key 'size'",
        ),
        (
            {"links": {"a": 1}, "flows": [flow(["a"], 1), flow(["b"], 1)]},
            "flow 1: unknown link 'b'",
        ),
        ({"links": {"a": 1}, "flows": [flow(["a"], -1)]}, "flow 0: size must be a non-negative"),
        ({"links": {"a": 1}, "flows": [flow(["a"], 1, -0.5)]}, "flow 0: start must be a non-neg"),
        ({"links": {"a": 1}, "flows": [flow(["a"], "1")]}, "flow 0: size must be a non-negative"),
        ({"links": {"a": 1}, "flows": [flow([], 1)]}, "flow 0: route must be a non-empty list"),
        ({"links": {"a": 1}, "flows": ["a"]}, "flow 0: expected an object"),
        ({"links": {"a": 0}, "flows": []}, "link 'a': capacity must be a positive number"),
        ({"links": {"a": -3}, "flows": []}, "link 'a': capacity must be a positive number"),
        ({"links": {"a": None}, "flows": []}, "link 'a': capacity must be a positive number"),
        ('{"links": {"a": 1, "a": 2}, "flows": []}', "'a' given twice"),
        ([1, 2], "expected an object with 'links' and 'flows'"),
        (LINK | {"modle": "packet"}, "unknown key 'modle'; a flow file has links, flows, model"),
    ],
)
def test_bad_input_one_line_naming_the_flow_or_link(tmp_path, capsys, document, message) -> None:
    code, _, err = flows_cli(tmp_path, document, capsys)
    assert code != 0
    assert message in err
    assert err.count("\n") == 1 and "flows.json" in err


def test_missing_file(tmp_path, capsys) -> None:
    assert main(["flows", str(tmp_path / "absent.json")]) != 0
    assert "absent.json" in capsys.readouterr().err


@pytest.mark.skipif(not simgrid_available(), reason="SimGrid's bindings not importable by python3")
def test_same_completion_times_as_simgrid(tmp_path) -> None:
    # 150 random flows on the bench's fat-tree (40 links), SimGrid 3.x CM02 with TCP-gamma 0
    document = generate(150, 16, 4, 4, seed=3)
    path = tmp_path / "flows.json"
    path.write_text(json.dumps(document))
    ours, _ = finish_times(parse(document))
    for driver in ("fast", "per-flow"):  # one actor with wait_any; one actor per flow
        theirs = np.asarray(run_simgrid(path, driver)["finish"])
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=0, err_msg=driver)
