"""The synthesizer writes ``node_io`` as it makes it (issue 37, "a year on one machine"): one
commit per DAYS_PER_COMMIT days, the first replacing the machine's earlier run whole; the rows
are the trace's own (the same as one commit of the whole span: checked against main's writer
by hand on a 10-day tiny lake, and here against the trace's day stream), and progress goes to
a report, never to a bar drawn by the library."""

from __future__ import annotations

import pyarrow as pa
import pytest

from burstlake.jobs.synth.run import build_trace, synthesize
from burstlake.jobs.synth.trace import node_io_days
from burstlake.jobs.synth.writers import DAYS_PER_COMMIT, PART
from burstlake.lake import contribution_ids, read_table
from burstlake.progress import Step

DAYS = DAYS_PER_COMMIT + 3


def sorted_rows(table: pa.Table) -> pa.Table:
    return table.sort_by([("node", "ascending"), ("ts", "ascending")])


def expected_node_io(days: float, seed: int, cluster: str | None = None) -> pa.Table:
    trace = build_trace("tiny", days, seed, cluster=cluster)
    return sorted_rows(pa.concat_tables(list(node_io_days(trace))))


@pytest.mark.slow  # ~10 s: three tiny runs
def test_node_io_lands_week_by_week_and_a_rerun_replaces_it(tmp_path) -> None:
    lake = tmp_path / "lake"
    steps: list[Step] = []
    written = synthesize("tiny", lake=lake, days=DAYS, seed=3, report=steps.append)
    landed = sorted_rows(read_table(lake, "node_io"))
    assert landed.equals(expected_node_io(DAYS, 3))
    assert written["node_io"] == landed.num_rows
    parts = contribution_ids(lake, "node_io")
    assert len(parts) == 2 and "synth-tiny" in parts
    (later,) = parts - {"synth-tiny"}
    assert later.startswith(f"synth-tiny{PART}")
    day_steps = [s for s in steps if s.what == "synth node_io" and not s.done]
    assert len(day_steps) == DAYS and {s.total for s in day_steps} == {DAYS}
    assert Step("synth node_io", done=True) in steps

    # another machine beside it is left alone; a shorter rerun of tiny replaces both parts
    synthesize("tiny", lake=lake, days=2, seed=4, cluster="other")
    synthesize("tiny", lake=lake, days=2, seed=5)
    assert contribution_ids(lake, "node_io") == {"synth-tiny", "synth-other"}
    rows = read_table(lake, "node_io")
    mine = rows.filter(pa.compute.equal(rows["cluster"], "tiny"))
    other = rows.filter(pa.compute.equal(rows["cluster"], "other"))
    assert sorted_rows(mine).equals(expected_node_io(2, 5))
    assert sorted_rows(other).equals(expected_node_io(2, 4, cluster="other"))


def test_the_command_line_draws_the_bars(tmp_path, capsys) -> None:
    from burstlake.cli import main

    lake = tmp_path / "lake"
    assert (
        main(["synth", "--preset", "tiny", "--days", "1", "--lake", str(lake), "--progress"]) == 0
    )
    out = capsys.readouterr()
    assert "node_io:" in out.out and "synth node_io" in out.err


def test_jobs_and_job_nodes_in_batches_are_the_whole_tables() -> None:
    from burstlake.jobs.synth.trace import job_batches, job_nodes_table, jobs_table

    trace = build_trace("tiny", 2, 4)
    for table in (jobs_table, job_nodes_table):
        whole = table(trace)
        assert pa.concat_tables(list(job_batches(trace, table, 77))).equals(whole)
        assert whole.num_rows > 77
