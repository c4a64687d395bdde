"""What the Delta Lake transactions cost (docs/design.md, 'The lake', issue 17).

In one process, on a temporary lake:

1. ``node_io`` contributions of ``BURSTLAKE_BENCH_ROWS`` rows (default 1,000,000, one day):
   first write, then a re-write of the same ``source_id`` (predicate overwrite), then a
   contribution from another source that supersedes half the keys (the day is rewritten in
   the same commit): rows/s of each commit.
2. 50 one-row commits in a row: the fixed cost of one commit.
3. A catalog rebuild (every view, from the committed versions) and a read of the lake's
   consistent versions while a landing is in progress (the cross-table cut).

Results: ``bench/results/lake_delta.json``. The Zabbix ingest, metrics month and replay month
benchmarks (``zabbix_ingest``, ``metrics_full``, ``replay_full``) measure the same lake end to
end.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench import write_result


def _rows(n: int, offset: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = datetime(2024, 3, 1, tzinfo=UTC).timestamp()
    index = np.arange(offset, offset + n)
    nodes = 1000
    return pa.table(
        {
            "node": pa.array([f"cn{i % nodes:05d}" for i in index]),
            "ts": pa.array(
                ((start + (index // nodes) * 10) * 1e6).astype("int64"),
                pa.timestamp("us", tz="UTC"),
            ),
            "interval_s": pa.array(np.full(n, 10, dtype="int32")),
            "read_bytes": pa.array(rng.integers(0, 1 << 30, n)),
            "write_bytes": pa.array(rng.integers(0, 1 << 30, n)),
        }
    )


def _timed(step) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def main() -> Path:
    from burstlake import catalog, lake

    rows = int(os.environ.get("BURSTLAKE_BENCH_ROWS", "1000000"))
    result: dict = {"rows": rows}
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-") as tmp:
        root = Path(tmp) / "lake"
        table = _rows(rows, 0, 1)
        first = _timed(lambda: lake.write_table(root, "node_io", table, "a"))
        again = _timed(lambda: lake.write_table(root, "node_io", table, "a"))
        half = _rows(rows // 2, rows // 2, 2)  # the second half of a's keys, new values
        writer = lake.ContributionWriter(root, "node_io", "b")
        writer.write(half)
        supersede = _timed(writer.commit)
        assert writer.superseded == rows // 2
        assert lake.read_table(root, "node_io").num_rows == rows
        result |= {
            "first_write_s": round(first, 2),
            "first_write_rows_per_s": round(rows / first),
            "rewrite_same_source_s": round(again, 2),
            "supersede_half_s": round(supersede, 2),
            "supersede_rows_per_s": round(rows / supersede),
        }
        one = pa.Table.from_pylist([{"job_id": "1"}])
        small = _timed(lambda: [lake.write_table(root, "jobs", one, f"s{i}") for i in range(50)])
        result["one_row_commit_ms"] = round(small / 50 * 1000, 1)
        result["catalog_rebuild_s"] = round(_timed(lambda: catalog.refresh(root)), 3)
        plain = _timed(lambda: lake.read_versions(root))
        with lake.landing(root, "in-progress", {"file": "bench"}):
            lake.write_table(root, "jobs", one, "in-progress")
            cut = _timed(lambda: lake.read_versions(root))
        result["read_versions_ms"] = round(plain * 1000, 1)
        result["read_versions_during_landing_ms"] = round(cut * 1000, 1)
    return write_result("lake_delta", result)


if __name__ == "__main__":
    main()
