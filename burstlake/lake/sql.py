"""The one SQL string literal of burstlake: every path, source id or name put into DuckDB's SQL
or a Delta predicate is quoted here.
"""

from __future__ import annotations

import os


def sql_literal(value: str | os.PathLike) -> str:
    """``value`` as a single-quoted SQL string literal (a quote inside is doubled)."""
    return "'" + os.fspath(value).replace("'", "''") + "'"
