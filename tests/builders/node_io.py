"""``node_io`` rows for tests that replace a table's files under a reader (the vacuum tests)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa


def node_io_rows(value: int, n: int = 200) -> pa.Table:
    """``n`` rows over five nodes and 24 hours of 2024-03-01, each reading ``value`` bytes."""
    return pa.Table.from_pylist(
        [
            {
                "node": f"cn{i % 5}",
                "ts": datetime(2024, 3, 1, i % 24, tzinfo=UTC),
                "interval_s": 10,
                "read_bytes": value,
            }
            for i in range(n)
        ]
    )
