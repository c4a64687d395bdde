"""Several machines in one lake: where ``cluster`` comes from, and node names that collide
across machines (docs/design.md, "Several machines in one lake")."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from burstlake import lake as lakes
from burstlake.cli import main
from burstlake.jobs.ingest import source_module
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.topology import unknown_nodes
from burstlake.lake import read_table
from burstlake.schemas import spec
from tests.builders.paths import FIXTURES

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


# ---------------------------------------------------------------- metrics per machine


def _sorted_frame(table: pa.Table, name: str):
    keys = list(spec(name).key)
    return table.to_pandas().sort_values(keys, na_position="first").reset_index(drop=True)


@pytest.mark.slow  # three metrics runs in Spark
def test_two_machines_get_each_the_figures_they_get_alone(tiny_metrics_lake, spark, tmp_path):
    """The Done-when test of the several-machines bullet: machine tiny alone (the shared
    fixture), then a second machine from the same preset (another seed, named tiny-b, the same
    node names) synthesized into a copy of that lake and the metrics run once on both. Every
    metrics table gives tiny exactly its rows from alone; tiny-b has its own, other figures;
    and tiny-b's headline figures from the independent DuckDB path equal Spark's."""
    import shutil

    from pandas.testing import assert_frame_equal

    from burstlake.jobs.metrics.headline_sql import headline
    from burstlake.jobs.metrics.run import TABLES, run
    from burstlake.jobs.synth.run import synthesize
    from burstlake.lake import clusters

    lake = tmp_path / "lake"
    shutil.copytree(tiny_metrics_lake, lake)
    alone = {name: read_table(lake, name) for name in TABLES}
    synthesize("tiny", lake=lake, seed=2, days=0.25, cluster="tiny-b")
    assert [machine.name for machine in clusters(lake)] == ["tiny", "tiny-b"]
    run(lake, spark=spark)
    for name in TABLES:
        both = read_table(lake, name)
        named = both.column("cluster")
        a = both.filter(pa.compute.equal(named, "tiny"))
        b = both.filter(pa.compute.equal(named, "tiny-b"))
        assert a.num_rows + b.num_rows == both.num_rows, name  # every row names its machine
        assert_frame_equal(
            _sorted_frame(a, name), _sorted_frame(alone[name], name), check_exact=False, rtol=1e-12
        )
        # (the synthesizer writes no Darshan logs; a quarter day repeats no application often
        # enough for app_metrics)
        if name not in ("darshan_job_metrics", "dxt_job_series", "app_metrics"):
            assert b.num_rows > 0, name
    summary = read_table(lake, "platform_summary").to_pylist()
    figures = {(r["cluster"], r["figure"]): r["value"] for r in summary}
    differ = [f for c, f in figures if c == "tiny" and figures[c, f] != figures["tiny-b", f]]
    assert len(differ) > 10  # another workload: other figures, not a copy of tiny's
    b_headline = headline(lake, cluster="tiny-b")
    for figure, value in b_headline.items():
        assert figures["tiny-b", figure] == pytest.approx(value, abs=1e-9), figure
    with pytest.raises(ValueError, match=r"holds several clusters \(tiny, tiny-b\)"):
        headline(lake)


def test_a_darshan_log_without_a_machine_joins_the_one_job_of_its_raw_id(spark):
    """The rule of jobs/metrics/darshan_job.py: a log keeps the cluster it was ingested with;
    a null-cluster log takes the machine of its job when exactly one machine has a job whose
    raw id (job_id_raw, else job_id) it carries, and stays unnamed otherwise."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from burstlake.jobs.metrics.darshan_job import with_clusters

    def frame(table: str, rows: list[dict]):
        schema = spec(table).schema
        # from Arrow, not pandas: a missing integer is null there, NaN in a pandas frame
        return spark.createDataFrame(pa.Table.from_pylist(rows, schema), from_arrow_schema(schema))

    jobs = frame(
        "jobs",
        [
            {"job_id": "7_1", "job_id_raw": "8", "cluster": "east"},  # array task: raw id 8
            {"job_id": "9", "job_id_raw": "9", "cluster": "east"},
            {"job_id": "9", "job_id_raw": "9", "cluster": "west"},  # 9 on two machines
            {"job_id": "11", "job_id_raw": None, "cluster": "east"},  # no raw id: job_id
        ],
    )
    logs = {"a": ("8", None), "b": ("9", None), "c": ("10", None), "d": ("11", "west")}
    darshan_jobs = frame(
        "darshan_jobs",
        [{"log_id": k, "job_id": j, "cluster": c, "partial": False} for k, (j, c) in logs.items()],
    )
    rank_io = frame(
        "darshan_rank_io",
        [{"log_id": k, "job_id": j, "module": "POSIX", "rank": 0} for k, (j, _) in logs.items()],
    )
    resolved, ranks = with_clusters(darshan_jobs, rank_io, jobs)
    expected = {"a": "east", "b": None, "c": None, "d": "west"}
    assert {r.log_id: r.cluster for r in resolved.collect()} == expected
    assert {r.log_id: r.cluster for r in ranks.collect()} == expected
