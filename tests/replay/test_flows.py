"""``burstlake flows`` (docs/design.md, "Replay" and "Command line"): hand-solved completion
times, every bad input, and the same flows through SimGrid when the system python3 has its
bindings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.engine_vs_simgrid import generate, run_simgrid, simgrid_available
from burstlake.cli import main
from burstlake.replay.events import Requests, simulate
from burstlake.replay.flows import finish_times, parse


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
