"""``duckdb lake/catalog.duckdb`` answers from any folder (the views name absolute paths)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from burstlake import catalog
from burstlake.lake import write_table


def _rows(node: str, n: int) -> pa.Table:
    return pa.table(
        {
            "node": [node] * n,
            "ts": pa.array([1700000000 * 10**6 + i * 10**7 for i in range(n)], pa.int64()).cast(
                pa.timestamp("us", tz="UTC")
            ),
            "interval_s": pa.array([10] * n, pa.int32()),
            "read_bytes": pa.array([100] * n, pa.int64()),
        }
    )


def _duckdb(cwd: Path, database: str) -> str:
    cli = Path(sys.executable).with_name("duckdb")
    done = subprocess.run(
        [str(cli), "-csv", "-noheader", database, "SELECT count(*) FROM node_io"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip()


def test_the_readme_line_works_from_the_project_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    lake = project / "lake"
    write_table(lake, "node_io", _rows("cn1", 3), "a")
    catalog.refresh(lake)
    assert _duckdb(project, "lake/catalog.duckdb") == "3"
    assert _duckdb(tmp_path, "project/lake/catalog.duckdb") == "3"
    assert _duckdb(lake, "catalog.duckdb") == "3"


def test_a_copied_lake_reads_its_own_files_after_any_command(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    write_table(lake, "node_io", _rows("cn1", 2), "a")
    catalog.refresh(lake)
    copy = tmp_path / "copy"
    shutil.copytree(lake, copy)
    write_table(copy, "node_io", _rows("cn9", 5), "z")
    shutil.rmtree(lake)
    assert catalog.sql(copy, "SELECT count(*) FROM node_io").column(0).to_pylist() == [7]
    assert _duckdb(tmp_path, "copy/catalog.duckdb") == "7"


def test_connect_takes_a_machine_by_its_name(tmp_path: Path) -> None:
    """``catalog.connect(lake, cluster="edison")``, as the design shows it: only that machine's
    rows; an unknown name is refused in one line listing the machines."""
    lake = tmp_path / "lake"
    for name, n in (("edison", 2), ("tiny", 5)):
        rows = _rows(f"{name}-cn1", n)
        write_table(lake, "node_io", rows.append_column("cluster", pa.array([name] * n)), name)
    con = catalog.connect(lake, cluster="edison")
    assert con.execute("SELECT count(*), min(cluster) FROM node_io").fetchone() == (2, "edison")
    try:
        catalog.connect(lake, cluster="mira")
    except ValueError as err:
        assert "mira" in str(err) and "edison" in str(err) and "\n" not in str(err)
    else:
        raise AssertionError("an unknown machine name was accepted")
