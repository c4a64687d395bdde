"""Scenario files are untrusted input: an alias bomb, a synthetic workload too large to
simulate and a misspelled capacity each get a one-line refusal before any work starts."""

from __future__ import annotations

import time

import pytest

from burstlake.cli import main
from burstlake.replay.scenario import ScenarioLimits, load

GOOD = "name: s\nworkload: {source: lake}\ntopology: {name: tiny}\npolicies: [block, cyclic]\n"
BOMB = (
    'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    + "".join(
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "name: s\nworkload: {source: lake}\ntopology: {name: tiny}\npolicies: [block]\n"
)
IOR = (
    "name: s\nworkload: {{source: ior, nodes: {nodes}, bytes_per_node: {size}, "
    "request_bytes: {request}}}\ntopology: {{name: tiny}}\npolicies: [block]\n"
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (BOMB, "aliases (*name) are not allowed"),
        (IOR.format(nodes=64, size=30 * 2**30, request=1), "requests; the limit is"),
        (IOR.format(nodes=64, size=4e6, request=0), "must be positive"),
        (IOR.format(nodes=-1, size=4e6, request=1e6), "nodes[0] must be an integer >= 1, got -1"),
        (
            GOOD.replace("{name: tiny}", "{name: tiny, capacities: {ionn: 1e9}}"),
            "unknown capacities 'ionn'; allowed: ion, node_link, storage",
        ),
        (
            GOOD.replace("{name: tiny}", "{name: tiny, capacities: {ion: -5}}"),
            "capacity must be positive",
        ),
        (
            GOOD.replace("{name: tiny}", "{name: cab1296, capacities: {ion: 1e9}}"),
            "allowed: link, server",
        ),
        (GOOD.replace("{name: tiny}", "{name: tiny, radix: 4}"), "unknown settings 'radix'"),
    ],
)
def test_hostile_scenarios_are_refused_at_once(tmp_path, text, reason):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    started = time.perf_counter()
    with pytest.raises(ValueError) as err:
        load(path)
    assert time.perf_counter() - started < 1.0
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_limits_are_settings(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(IOR.format(nodes=4, size=4e6, request=1e6))  # 16 requests
    assert load(path).workload["nodes"] == 4
    with pytest.raises(ValueError, match="16 requests; the limit is 10"):
        load(path, ScenarioLimits(requests=10))
    with pytest.raises(ValueError, match="a scenario file is at most 10"):
        load(path, ScenarioLimits(file_bytes=10))


def test_cli_refuses_in_one_line(tmp_path, lake, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(BOMB)
    assert main(["replay", "--lake", str(lake), "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "aliases (*name) are not allowed" in err[0]
