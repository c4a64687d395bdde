"""Several machines in one lake: where ``cluster`` comes from, and node names that collide
across machines (docs/design.md, "Several machines in one lake")."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from burstlake import lake as lakes
from burstlake.cli import main
from burstlake.jobs.ingest import source_module
from burstlake.jobs.ingest.base import ingest
from burstlake.jobs.ingest.topology import unknown_nodes
from burstlake.lake import read_table
from burstlake.schemas import spec

FIXTURES = Path(__file__).parent / "fixtures"
EXPORT = FIXTURES / "zabbix" / "history-tags.ndjson"  # 25 usable samples of host cn00001
SYNTH_SACCT = FIXTURES / "slurm" / "synth_shape.sacct"  # its Cluster field says th1a
LOG = "mpi-io-test-x86_64-3.4.7.darshan"


def _cli(lake: Path, source: str, path: Path, *options: str) -> int:
    return main(["ingest", source, str(path), "--lake", str(lake), *options])


def _clusters(lake: Path, table: str) -> set[str | None]:
    return set(read_table(lake, table, columns=["cluster"]).column(0).to_pylist())


def _topology(tmp_path: Path, name: str, *nodes: str) -> Path:
    """A topology CSV of ``nodes`` in cabinet ``cab-<name>`` (each name: other content)."""
    path = tmp_path / name
    path.write_text("node,cabinet\n" + "".join(f"{n},cab-{name}\n" for n in nodes))
    return path


def _second_export(tmp_path: Path) -> Path:
    """The fixture export without its truncated last line: other content (another
    contribution), the same usable samples of the same host and items."""
    lines = EXPORT.read_text().splitlines()
    path = tmp_path / "history-b.ndjson"
    path.write_text("\n".join(lines[:-1]) + "\n")
    return path


def test_every_source_takes_cluster_from_the_command_line(lake, shared_data):
    """``--cluster`` is one option of every ``burstlake ingest`` source; the rows of each table
    a source writes name the machine."""
    assert _cli(lake, "slurm", SYNTH_SACCT, "--cluster", "m1") == 0
    assert _cli(lake, "zabbix", EXPORT, "--cluster", "m1") == 0
    assert _cli(lake, "darshan", shared_data / "darshan" / LOG, "--cluster", "m1") == 0
    assert _cli(lake, "topology", FIXTURES / "topology" / "small.csv", "--cluster", "m1") == 0
    for table in ("topology", "jobs", "job_steps", "job_nodes", "node_io", "zabbix_samples"):
        assert _clusters(lake, table) == {"m1"}, table
    for table in ("darshan_jobs", "darshan_rank_io"):
        assert _clusters(lake, table) == {"m1"}, table


def test_explicit_cluster_beats_the_inputs_own_field_which_beats_null(lake, shared_data):
    """One rule: ``--cluster`` > the input's own field (sacct Cluster, a topology CSV's cluster
    column) > null (the unnamed machine)."""
    slurm = source_module("slurm").SOURCE
    ingest(slurm, [SYNTH_SACCT], lake, {"tz": "Asia/Shanghai"})
    assert _clusters(lake, "jobs") == {"th1a"}  # the file's own field
    ingest(slurm, [SYNTH_SACCT], lake, {"tz": "Asia/Shanghai", "cluster": "other"})
    assert _clusters(lake, "jobs") == {"other"}  # re-ingesting replaced the file's rows
    ingest(slurm, [shared_data / "slurm" / "edison_job4478544.sacct"], lake, {})
    jobs = read_table(lake, "jobs", columns=["job_id", "cluster"]).to_pylist()
    assert {"job_id": "4478544", "cluster": None} in jobs  # no field, no option: unnamed

    topology = source_module("topology").SOURCE
    csv = lake.parent / "named.csv"
    csv.write_text("node,cabinet,cluster\ncn1,cab0,east\ncn1,cab0,west\ncn2,cab1,\n")
    [report] = ingest(topology, [csv], lake, {})
    assert (report.landed, report.quarantined) == (3, 0)  # cn1 twice, on two machines
    rows = read_table(lake, "topology", columns=["cluster", "node"]).to_pylist()
    assert sorted(rows, key=str) == sorted(
        [
            {"cluster": "east", "node": "cn1"},
            {"cluster": "west", "node": "cn1"},
            {"cluster": None, "node": "cn2"},
        ],
        key=str,
    )
    ingest(topology, [csv], lake, {"cluster": "north"})
    assert _clusters(lake, "topology") == {"north"}
    # the CSV's two cn1 rows are one node of one machine now: the second is a duplicate
    assert read_table(lake, "quarantine", columns=["reason"]).column(0).to_pylist() == [
        "duplicate of line 2"
    ]


def test_colliding_node_names_of_two_machines_land_and_stay_apart(lake, tmp_path):
    """Two machines both have cn00001: both topologies land, each export's series continue
    only their own machine's samples, and the node_io rows stay apart."""
    for name in ("a", "b"):
        path = _topology(tmp_path, f"topo-{name}.csv", "cn00001", "cn00002")
        assert _cli(lake, "topology", path, "--cluster", name) == 0
    assert read_table(lake, "topology").num_rows == 4
    assert _cli(lake, "zabbix", EXPORT, "--cluster", "a") == 0
    alone = read_table(lake, "node_io").drop_columns(["cluster"]).to_pylist()
    assert _cli(lake, "zabbix", _second_export(tmp_path), "--cluster", "b") == 0
    node_io = read_table(lake, "node_io")
    by = {
        name: node_io.filter(pa.compute.equal(node_io.column("cluster"), name))
        .drop_columns(["cluster"])
        .to_pylist()
        for name in ("a", "b")
    }
    assert by["a"] == alone and len(alone) > 0  # machine b changed nothing of machine a
    assert by["b"] == alone  # the same samples, on another machine: not duplicates of a's
    reasons = read_table(lake, "quarantine", columns=["reason"]).column(0).to_pylist()
    # each file's own bad lines only: no b sample is a duplicate of the a file's
    assert len(reasons) == 6 + 5 and not any(EXPORT.name in r for r in reasons)
    assert unknown_nodes(lake) == {}


def test_rows_whose_machine_lacks_the_node_are_reported_as_before(lake, tmp_path):
    """A node_io row of machine b whose node only machine a's topology has is not in
    topology: quarantined when b's topology is loaded, reported by the late check when
    the rows landed first."""
    assert _cli(lake, "zabbix", EXPORT, "--cluster", "b") == 0  # no topology yet: lands
    path = _topology(tmp_path, "topo-a.csv", "cn00001")
    assert _cli(lake, "topology", path, "--cluster", "a") == 0
    assert unknown_nodes(lake) == {"node_io": ["b/cn00001"]}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert _cli(fresh, "topology", path, "--cluster", "a") == 0
    [report] = ingest(source_module("zabbix").SOURCE, [EXPORT], fresh, {"cluster": "b"})
    assert (report.landed, report.quarantined) == (0, 31)  # 6 lines were bad anyway
    reasons = read_table(fresh, "quarantine", columns=["reason"]).column(0).to_pylist()
    in_set = "node_io: failed expect_column_values_to_be_in_set(column=node)"
    assert reasons.count(in_set) == 1  # the node's one record stands for its 25 samples


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "cannot be empty or blank"),
        ("   ", "cannot be empty or blank"),
        (" edison", "no leading or trailing whitespace"),
        ("a/b", "'/' is not allowed in a machine name"),
        ("ed\x07ison", "'\\x07' is not allowed in a machine name"),
        ("ed\nison", "'\\n' is not allowed in a machine name"),
    ],
)
def test_a_bad_cluster_name_is_refused_in_one_line(lake, capsys, name, reason):
    for source, path in (("slurm", SYNTH_SACCT), ("zabbix", EXPORT)):
        assert _cli(lake, source, path, "--cluster", name) != 0
        err = capsys.readouterr().err.strip()
        assert reason in err and "\n" not in err and "Traceback" not in err, err
    with pytest.raises(ValueError, match="--cluster"):
        from burstlake.jobs.synth.run import synthesize

        synthesize("tiny", lake=lake, days=0.2, cluster=name)
    assert not any(lake.iterdir())  # refused before anything was read or written


def test_a_lake_of_the_older_layout_reads_cluster_as_null(lake):
    """topology written before ``cluster`` existed: its rows are the unnamed machine's; node
    checks still find them, and a new topology of the same node supersedes the old row."""
    from deltalake import write_deltalake

    schema = spec("topology").schema
    old = schema.remove(schema.get_field_index("cluster")).append(
        pa.field(lakes.SOURCE, pa.string())
    )
    rows = [{"node": "cn00001", "cabinet": "old", lakes.SOURCE: "old"}]
    write_deltalake(str(lakes.table_dir(lake, "topology")), pa.Table.from_pylist(rows, old))
    assert read_table(lake, "topology", ["node", "cluster"]).to_pylist() == [
        {"node": "cn00001", "cluster": None}
    ]
    [report] = ingest(source_module("zabbix").SOURCE, [EXPORT], lake, {})
    assert (report.landed, report.quarantined) == (25, 6)  # (null, cn00001) is in topology
    [report] = ingest(
        source_module("topology").SOURCE, [_topology(lake.parent, "t.csv", "cn00001")], lake, {}
    )
    assert report.superseded == 1
    assert read_table(lake, "topology", ["node", "cabinet"]).to_pylist() == [
        {"node": "cn00001", "cabinet": "cab-t.csv"}
    ]
