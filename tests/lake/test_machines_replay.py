"""Several machines in one lake (docs/design.md, "Several machines in one lake"): which machines
a lake holds, and the replay reading one machine at a time, each scored as if alone."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from burstlake.lake import Cluster, cluster_of, clusters, read_table, write_table
from burstlake.replay.scenario import load, run
from tests.builders.paths import FIXTURES, SCENARIOS
from tests.builders.traces import bursty_lake

TABLES = ("topology", "node_io", "jobs", "job_nodes")


@pytest.fixture(scope="module")
def one(tmp_path_factory) -> Path:
    """A one-machine lake, read only: jobs name cluster 'th'; topology and node_io name none."""
    lake = tmp_path_factory.mktemp("one") / "lake"
    bursty_lake(lake)
    return lake


def relabel(source: Path, lake: Path, cluster: str | None, scale: int = 1) -> None:
    """Copy a one-machine lake's tables into ``lake`` as machine ``cluster`` (traffic × scale)."""
    for table in TABLES:
        rows = read_table(source, table)
        rows = rows.set_column(
            rows.schema.get_field_index("cluster"),
            "cluster",
            pa.array([cluster] * rows.num_rows, pa.string()),
        )
        if table == "node_io":
            at = rows.schema.get_field_index("write_bytes")
            rows = rows.set_column(at, "write_bytes", pc.multiply(rows["write_bytes"], scale))
        write_table(lake, table, rows, source_id=f"{table}-{cluster}")


def named(lake: Path) -> list[tuple[str | None, bool]]:
    return [(c.name, c.unnamed) for c in clusters(lake)]


def test_which_machines_a_lake_holds(one, tmp_path) -> None:
    lake = tmp_path / "lake"
    assert clusters(lake) == []
    assert named(one) == [("th", True)]  # rows naming none belong to the only named machine
    relabel(one, lake, "b")
    relabel(one, lake, "a")
    assert named(lake) == [("a", False), ("b", False)]
    write_table(lake, "topology", read_table(one, "topology").slice(0, 3), "stray")
    assert named(lake) == [("a", False), ("b", False), (None, False)]
    assert cluster_of(lake, "b") == Cluster(lake, "b")
    with pytest.raises(ValueError, match=r"holds several clusters \(a, b, \(unnamed\)\)"):
        cluster_of(lake)
    with pytest.raises(ValueError, match=r"no cluster 'c' in lake .* \(it holds: a, b"):
        cluster_of(lake, "c")


def test_the_replay_scores_each_machine_as_if_alone(one, tmp_path) -> None:
    """Two machines with the same node names (two Crays both have nid00001): the scenario
    replays each in turn, and each gets exactly the scores of a lake holding it alone."""
    alone, both = tmp_path / "alone", tmp_path / "both"
    relabel(one, alone, "a")
    relabel(one, both, "a")
    relabel(one, both, "b", scale=3)
    scenario = load(SCENARIOS / "ion_remap.yaml")

    def scores(table: pa.Table, cluster: str) -> dict:
        rows = table.filter(pc.equal(table["cluster"], cluster)).to_pylist()
        return {(r["policy"], r["metric"]): r["value"] for r in rows}

    reference = scores(run(scenario, alone), "a")
    table = run(scenario, both)
    assert set(table["cluster"].to_pylist()) == {"a", "b"}
    assert scores(table, "a") == reference
    b = scores(table, "b")
    assert b["block", "bytes_served"] == pytest.approx(3 * reference["block", "bytes_served"])
    assert b["block", "backlog_seconds"] > reference["block", "backlog_seconds"]
    # both machines' rows are in the lake; a re-run of one machine replaces only its rows
    kept = read_table(both, "replay_scores")
    assert sorted(set(kept["cluster"].to_pylist())) == ["a", "b"]
    only_b = tmp_path / "b.yaml"
    only_b.write_text((SCENARIOS / "ion_remap.yaml").read_text() + "cluster: b\n")
    assert set(run(load(only_b), both)["cluster"].to_pylist()) == {"b"}
    assert read_table(both, "replay_scores").num_rows == kept.num_rows


def test_a_scenario_naming_a_machine_the_lake_lacks(one, tmp_path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text((SCENARIOS / "ion_remap.yaml").read_text() + "cluster: edison\n")
    with pytest.raises(ValueError, match=r"no cluster 'edison' in lake .* \(it holds: th\)"):
        run(load(path), one)
    for bad in ("''", "[a]", "3"):
        path.write_text((SCENARIOS / "ion_remap.yaml").read_text() + f"cluster: {bad}\n")
        with pytest.raises(ValueError, match="cluster names one machine of the lake"):
            load(path)


def test_the_command_line_names_the_machine(one, capsys) -> None:
    from burstlake.cli import main

    args = ["replay", "--lake", str(one), "--scenario", str(SCENARIOS / "ion_remap.yaml")]
    assert main([*args, "--cluster", "edison"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no cluster 'edison'" in err[0] and "(it holds: th)" in err[0]


def test_rows_naming_no_machine_meet_the_only_named_one_at_ingest(tmp_path) -> None:
    """The commonest real lake: sacct names its machine (Cluster field), the topology dump and
    the Zabbix export name none. They are one machine: the jobs' nodes resolve against the
    unnamed topology in either order of ingest, and nothing is reported unknown; once th1a
    has a topology of its own, its rows meet that one."""
    from burstlake.cli import main
    from burstlake.jobs.ingest.topology import unknown_nodes

    sacct = FIXTURES / "slurm" / "synth_shape.sacct"  # its Cluster field says th1a
    first, second = tmp_path / "topology-first", tmp_path / "sacct-first"
    probe = tmp_path / "probe"
    assert main(["ingest", "slurm", str(sacct), "--tz", "Asia/Shanghai", "--lake", str(probe)]) == 0
    nodes = sorted(set(read_table(probe, "job_nodes").column("node").to_pylist()))
    csv = tmp_path / "topology.csv"
    csv.write_text("node,cabinet\n" + "".join(f"{n},c{k % 4}\n" for k, n in enumerate(nodes)))
    for lake, order in ((first, ("topology", "slurm")), (second, ("slurm", "topology"))):
        for source in order:
            path, extra = (csv, []) if source == "topology" else (sacct, ["--tz", "Asia/Shanghai"])
            assert main(["ingest", source, str(path), *extra, "--lake", str(lake)]) == 0
        assert read_table(lake, "quarantine").num_rows == 0, order
        assert read_table(lake, "job_nodes").num_rows == read_table(probe, "job_nodes").num_rows
        assert unknown_nodes(lake) == {}, order
        assert named(lake) == [("th1a", True)]
    # a second named topology: the unnamed one no longer belongs to th1a alone
    other = tmp_path / "other.csv"
    other.write_text("node,cabinet\nx1,c0\n")
    assert main(["ingest", "topology", str(other), "--cluster", "west", "--lake", str(first)]) == 0
    assert main(["ingest", "topology", str(csv), "--cluster", "th1a", "--lake", str(first)]) == 0
    assert unknown_nodes(first) == {}  # th1a's rows now meet th1a's own topology


def test_two_synthetic_machines_from_the_command_line(tmp_path, capsys) -> None:
    """`burstlake synth --cluster` names a second machine of one preset beside the first; a
    bad name is refused in one line."""
    from burstlake.cli import main

    lake = tmp_path / "lake"
    base = ["synth", "--preset", "tiny", "--days", "0.05", "--lake", str(lake)]
    assert main(base) == 0
    assert main([*base, "--seed", "1", "--cluster", "tiny-b"]) == 0
    assert named(lake) == [("tiny", False), ("tiny-b", False)]
    capsys.readouterr()
    assert main([*base, "--cluster", "a/b"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a/b" in err[0], err


def test_replaying_one_machine_keeps_the_unnamed_machines_scores(one, tmp_path) -> None:
    """The unnamed machine's scores have the scenario's plain source id, as scores written
    before machines had names do; replaying a named machine must not take them for those."""
    lake = tmp_path / "lake"
    for cluster in ("a", "b", None):
        relabel(one, lake, cluster)
    assert named(lake) == [("a", False), ("b", False), (None, False)]
    run(load(SCENARIOS / "ion_remap.yaml"), lake)
    every = read_table(lake, "replay_scores")
    assert set(every["cluster"].to_pylist()) == {"a", "b", None}
    only_b = tmp_path / "b.yaml"
    only_b.write_text((SCENARIOS / "ion_remap.yaml").read_text() + "cluster: b\n")
    run(load(only_b), lake)
    kept = read_table(lake, "replay_scores")
    assert kept.num_rows == every.num_rows
    assert set(kept["cluster"].to_pylist()) == {"a", "b", None}
