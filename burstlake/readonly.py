"""Read-only SQL on the lake (docs/design.md, "The lake"; issue 25): which statements a query on
the lake may be, and a DuckDB connection that can read the lake's data files and nothing else.

Two locks:

- the statement, classified by DuckDB's own parser (:func:`duckdb.extract_statements`): exactly
  one ``SELECT`` (which covers ``WITH ... SELECT``, ``FROM``-first, ``VALUES``, ``PIVOT``,
  ``UNPIVOT``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE`` and ``PRAGMA show_*``; a ``PIVOT`` without
  an ``IN`` list is parsed as enum types of its values, made in the temporary catalog, then the
  SELECT: one statement as written, counted by DuckDB's tokenizer), or ``EXPLAIN``
  / ``EXPLAIN ANALYZE`` of such a statement (the explained statement is classified the same
  way: ``EXPLAIN ANALYZE`` runs it), calling only table functions that read (found in DuckDB's
  parse tree, ``json_serialize_sql``, or for such a ``PIVOT`` in its tokens). ``COPY``,
  ``EXPORT``, ``ATTACH``, ``INSTALL``, ``LOAD``, ``CREATE``, ``SET``, ``CALL``,
  ``enable_logging()``, ``checkpoint()`` ... are refused, bare
  or wrapped;
- the connection: the catalog opened read-only, external access off, the only files it may
  open are the Parquet files its views read (``allowed_paths``, files and not folders, so no
  new file can be made, in the lake or anywhere), extensions neither installed nor loaded,
  no spilling to disk, its configuration locked; a memory limit and a thread count.

The second lock alone stops every write the hostile sweep made (a ``COPY`` writes a scratch
file first, and ``_delta_log`` files are not allowed). DuckDB has no read-only mode for the
files it may open, though: a ``COPY ... (USE_TMP_FILE false)`` onto a data file would
overwrite it if it ever passed the first lock.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb

from burstlake.lake.sql import sql_literal

log = logging.getLogger(__name__)

READ = duckdb.StatementType.SELECT
EXPLAIN = duckdb.StatementType.EXPLAIN
ALLOWED = (
    "one SELECT (or WITH ... SELECT, PIVOT, EXPLAIN [ANALYZE] SELECT, DESCRIBE, SHOW, SUMMARIZE)"
)
DEFAULT_MEMORY = "25%"  # of the machine's RAM; docs/design.md, "Command line"
# Table functions a query may call: they read data or describe the database. Any other (e.g.
# ``enable_logging``, ``checkpoint``, ``copy_database``, ``import_database``, ``query`` whose SQL
# is a string the check cannot see) is refused; tests/test_sql_readonly.py lists DuckDB's table
# functions, so a new one is classified when DuckDB is upgraded.
READ_FUNCTION_PREFIXES = ("read_", "duckdb_", "parquet_", "pragma_", "show")
READ_FUNCTIONS = frozenset(
    {
        "arrow_scan",
        "arrow_scan_dumb",
        "collations",
        "database_list",
        "database_size",
        "extension_versions",
        "functions",
        "generate_series",
        "glob",
        "histogram",
        "histogram_values",
        "icu_calendar_names",
        "json_each",
        "json_tree",
        "metadata_info",
        "pandas_scan",
        "pg_timezone_names",
        "platform",
        "python_map_function",
        "query_table",
        "range",
        "repeat",
        "repeat_row",
        "seq_scan",
        "sniff_csv",
        "storage_info",
        "summary",
        "table_info",
        "test_all_types",
        "test_vector_types",
        "unnest",
        "user_agent",
        "version",
        "which_secret",
    }
)
_MEMORY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(%|[KMGT]i?B|B)\s*", re.IGNORECASE)


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split("\n")[0].split())


def check(query: str) -> None:
    """ValueError (one line) unless ``query`` is one read-only statement (module docstring)."""
    if not query.strip():
        raise ValueError('empty query: give one SQL statement, e.g. "SELECT count(*) FROM jobs"')
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as err:
        raise ValueError(_one_line(err)) from err
    written = _statements_written(query)
    pivot_types = [s for s in statements if _is_pivot_type(s)]
    if pivot_types and written == 1:
        _check_pivot(query, statements)
        return
    kinds = [s.type.name for s in statements]
    if len(statements) != 1:
        if all(s.type == READ for s in statements) or (pivot_types and _all_reads(statements)):
            raise ValueError(f"one query at a time, got {written} statements")
        raise ValueError(
            f"the lake is read-only here: the query runs {len(statements)} statements "
            f"({', '.join(kinds)}), refused; allowed: {ALLOWED}"
        )
    statement = statements[0]
    if statement.type == EXPLAIN:
        try:
            check(_explained(statement.query))
        except ValueError as err:
            raise ValueError(f"EXPLAIN of a statement that is refused: {err}") from None
    elif statement.type != READ:
        raise ValueError(
            f"the lake is read-only here: {statement.type.name} statements are refused "
            f"(write through burstlake ingest, metrics or replay); allowed: {ALLOWED}"
        )
    else:
        for name in _table_functions(statement.query):
            _check_function(name)


def _check_function(name: str) -> None:
    if name not in READ_FUNCTIONS and not name.startswith(READ_FUNCTION_PREFIXES):
        raise ValueError(
            f"the lake is read-only here: table function {name}() is refused (it "
            "changes the database's state or runs SQL given as text)"
        )


def _statements_written(query: str) -> int:
    """How many statements the text holds, by DuckDB's tokenizer: pieces between ``;``
    operators that hold a token (comments and strings with ``;`` in them are single tokens)."""
    count, open_piece = 0, False
    for at, kind in duckdb.tokenize(query):
        if kind == duckdb.token_type.operator and query[at] == ";":
            count, open_piece = count + open_piece, False
        else:
            open_piece = True
    return count + open_piece


def _is_pivot_type(statement: duckdb.Statement) -> bool:
    """A ``CREATE TYPE`` DuckDB's parser adds before a ``PIVOT`` without an ``IN`` list (an
    enum of the pivot's values, in the temporary catalog): a CREATE with no text of its own."""
    return statement.type == duckdb.StatementType.CREATE and not statement.query.strip()


def _all_reads(statements: list[duckdb.Statement]) -> bool:
    return all(s.type == READ or _is_pivot_type(s) for s in statements)


def _check_pivot(query: str, statements: list[duckdb.Statement]) -> None:
    """One statement the user wrote that holds a ``PIVOT`` without an ``IN`` list: DuckDB's
    parser turns it into enum types and the statement (wrapped in a transaction unless it is a
    SELECT). It is read-only when what remains is one SELECT calling only reading table
    functions; DuckDB serializes no such statement, so the calls are found in its tokens (any
    name followed by ``(`` that is a table function of DuckDB's)."""
    rest = [s for s in statements if s.type != duckdb.StatementType.TRANSACTION]
    main = rest[-1]
    if not all(_is_pivot_type(s) for s in rest[:-1]):
        raise ValueError(f"not a statement that can be checked: {query.strip()[:60]!r}")
    if main.type == EXPLAIN:
        raise ValueError(
            "EXPLAIN of a PIVOT without an IN list is not supported here: give the "
            "pivot's values, e.g. PIVOT t ON c IN ('a', 'b') USING sum(x)"
        )
    if main.type != READ:
        raise ValueError(
            f"the lake is read-only here: {main.type.name} statements are refused "
            f"(write through burstlake ingest, metrics or replay); allowed: {ALLOWED}"
        )
    for name in _called_table_functions(query):
        _check_function(name)


def _called_table_functions(query: str) -> Iterator[str]:
    """Every name in ``query``'s tokens followed by ``(`` that names a DuckDB table function."""
    with duckdb.connect() as con:
        table_functions = {
            name
            for (name,) in con.execute(
                "SELECT DISTINCT lower(function_name) FROM duckdb_functions() "
                "WHERE function_type IN ('table', 'table_macro')"
            ).fetchall()
        }
    tokens = duckdb.tokenize(query)
    for (at, kind), (after, _) in itertools.pairwise(tokens):
        if kind in (duckdb.token_type.identifier, duckdb.token_type.keyword) and (
            query[after] == "("
        ):
            name = query[at:after].strip().strip('"').replace('""', '"').lower()
            if name in table_functions:
                yield name


def _table_functions(select: str) -> Iterator[str]:
    """The table functions a SELECT calls, anywhere in DuckDB's parse tree of it."""
    with duckdb.connect() as con:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [select]).fetchone()[0])
    if tree.get("error"):
        raise ValueError(f"not a query that can be checked: {tree.get('error_message')}")
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "TABLE_FUNCTION":
                yield str(node["function"]["function_name"]).lower()
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _explained(text: str) -> str:
    """The statement an ``EXPLAIN [ANALYZE | (options)]`` statement explains, found with
    DuckDB's tokenizer (comments and spacing anywhere)."""
    tokens = duckdb.tokenize(text)
    keyword = duckdb.token_type.keyword
    words = [(at, kind, _word(text, at)) for at, kind in tokens]
    k = 1 if words and words[0][2] == "EXPLAIN" else 0
    if k < len(words) and words[k][1] == keyword and words[k][2] in ("ANALYZE", "ANALYSE"):
        k += 1
    elif k < len(words) and words[k][2] == "(":
        depth = 0
        while k < len(words):
            depth += {"(": 1, ")": -1}.get(words[k][2], 0)
            k += 1
            if depth == 0:
                break
    return text[words[k][0] :] if 0 < k < len(words) else ""


def _word(text: str, at: int) -> str:
    match = re.match(r"[A-Za-z_]+|.", text[at:])
    return match.group(0).upper() if match else ""


MIN_MEMORY = 16 << 20  # bytes: DuckDB cannot run a query within less
MAX_MEMORY = 1 << 50  # bytes (1 PiB): a larger figure is a typo
MAX_THREADS = 256  # DuckDB threads; far more crash it (one stack each)
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def check_threads(threads: object, what: str = "threads") -> int:
    """The one bound on a thread count: a whole number 1..:data:`MAX_THREADS`."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise ValueError(f"{what} must be a whole number, not {threads!r}")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"{what} must be 1..{MAX_THREADS}, not {threads}")
    return threads


def memory_limit(setting: str | None = None, what: str = "memory limit") -> str:
    """The memory limit of a query, as DuckDB takes it: ``setting`` (``4GB``, ``512MiB`` or a
    share of the machine's RAM, ``25%``), else ``$BURSTLAKE_SQL_MEMORY``, else
    :data:`DEFAULT_MEMORY`; between :data:`MIN_MEMORY` and :data:`MAX_MEMORY`. A ValueError
    names what is wrong (``what``: where it was given)."""
    text = setting or os.environ.get("BURSTLAKE_SQL_MEMORY") or DEFAULT_MEMORY
    match = _MEMORY.fullmatch(str(text))
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{what} {text!r}: give a size such as 4GB, 512MiB or 25%")
    amount, unit = float(match.group(1)), match.group(2)
    if unit != "%":
        size = amount * _UNITS[unit.upper()]
        if not MIN_MEMORY <= size <= MAX_MEMORY:
            raise ValueError(f"{what} {text!r}: must be 16MiB..1PiB")
        return f"{match.group(1)}{unit.upper().replace('IB', 'iB')}"
    if amount > 100:
        raise ValueError(f"memory limit {text!r}: a share of the RAM is at most 100%")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{max(int(ram * amount / 100) >> 20, 64)}MiB"


def lock(
    con: duckdb.DuckDBPyConnection,
    files: Iterable[str],
    memory: str | None = None,
    threads: int | None = None,
) -> None:
    """Restrict ``con`` to reading ``files`` (module docstring), within ``memory`` (see
    :func:`memory_limit`) and ``threads`` (default: one per core)."""
    if threads is not None:
        check_threads(threads, "--threads")
    quoted = ", ".join(sql_literal(f) for f in files)
    for setting in (
        f"SET memory_limit = '{memory_limit(memory)}'",
        f"SET threads = {int(threads or os.cpu_count() or 1)}",
        "SET temp_directory = ''",  # no spilling: the limit is the limit
        "SET enable_progress_bar = false",  # the library never draws progress
        "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false",
        f"SET allowed_paths = [{quoted}]",
        "SET allowed_directories = []",
        "SET enable_external_access = false",
        "SET lock_configuration = true",
    ):
        con.execute(setting)


def describe_error(err: duckdb.Error, memory: str | None = None) -> str:
    """A DuckDB error as one line; running out of memory says which limit and how to raise it."""
    if isinstance(err, duckdb.OutOfMemoryException):
        return (
            f"the query needs more than the memory limit of {memory_limit(memory)} "
            "(raise it with --memory-limit or $BURSTLAKE_SQL_MEMORY, or aggregate more): "
            f"{_one_line(err)}"
        )
    return _one_line(err)


def lake_files(root: Path, files: Iterable[Path]) -> list[str]:
    """Each data file as the views name it (relative to the lake) and absolute."""
    out = []
    for f in files:
        out += [str(f.relative_to(root)), str(f)]
    return out
