"""The lake: one Delta Lake table per folder, and the one place that writes.

See docs/design.md, 'The lake: the only interface between stages'.

Layout: ``<lake>/<table>/`` is a Delta table (Parquet files plus ``_delta_log``); day-partitioned
tables are partitioned by a ``day`` column (``day=YYYY-MM-DD`` folders) derived from their
timestamp. Every table also carries a hidden ``_source_id`` column. A *contribution* is
everything one input (a file, a synthesizer run, a metrics job) wrote, named by its
``source_id``; writing a contribution replaces whatever the same ``source_id`` wrote before.

Every write is **one atomic Delta commit** made by delta-rs (``deltalake``): a predicate
overwrite ``_source_id = '<id>'`` and, for tables with a ``replace_key``, the rewrite of the
days whose rows the new contribution supersedes, in the same commit. A killed write leaves the
previous version whole: rows are staged under ``<lake>/_staging`` first, and uncommitted files
are invisible to every reader. Writers of one table take a per-table file lock and retry a
commit that conflicts, so concurrent ingests (as Airflow runs DAGs) neither lose nor duplicate
rows.

Readers see one snapshot: :func:`snapshot` returns a :class:`Snapshot`, one version of each
table, and a reader given it in place of the lake's path reads exactly those versions (as a
delta-rs ``DeltaTable`` opened at a version does). A job (metrics, replay) reads through a
:func:`run`, a snapshot that also stamps the commits of the writers given it with the run id
and the versions read, and *publishes* a multi-table result (the metrics) only when all of its
tables are committed: until then readers keep seeing the previous run's tables.

One module per concern, their public names all importable from here (the underscore names are
the package's own): :mod:`.layout` (folders, hidden columns, commit metadata), :mod:`.errors`
(the one-line lake error), :mod:`.sql` (the one SQL string literal), :mod:`.locks` (locks,
scratch folders and their cleanup), :mod:`.pause` (the fault tests' pause hook),
:mod:`.snapshot` (versions, landings in progress, runs), :mod:`.read` (Arrow and Spark
readers), :mod:`.clusters` (the machines of a lake by their ``cluster``, and the one check of
a name), :mod:`.write` (the writer; records win by their content) and :mod:`.maintenance`
(undoing a landing, vacuum, migration).
"""

from __future__ import annotations

from burstlake.lake.clusters import (
    CLUSTER_SEP,
    CLUSTER_TABLES,
    Cluster,
    check_cluster,
    checked_keys,
    cluster_filter,
    cluster_of,
    cluster_sql,
    clusters,
    node_keys,
    owner_of_unnamed,
)
from burstlake.lake.errors import LakeError, as_lake_error, check_writable
from burstlake.lake.layout import (
    DAY,
    DEFAULT_LAKE,
    LOCKS,
    MIGRATE,
    PREDICATE,
    ROWS_PER_FILE,
    RUNS,
    SOURCE,
    STAGING,
    TXN,
    delta_schema,
    is_delta,
    is_lake,
    lake_path,
    table_dir,
)
from burstlake.lake.locks import READERS, OwnedFolder, clean_leftovers, exclusive, shared
from burstlake.lake.maintenance import legacy_tables, migrate, undo_landing, vacuum
from burstlake.lake.pause import checkpoint
from burstlake.lake.read import (
    contribution_ids,
    contribution_keys,
    dataset,
    read_table,
    spark_frame,
    table_files,
    table_layout,
)
from burstlake.lake.snapshot import (
    Run,
    Snapshot,
    commit_metadata,
    intents,
    landing,
    latest_version,
    published_run,
    read_version,
    read_versions,
    run,
    snapshot,
)
from burstlake.lake.sql import sql_literal
from burstlake.lake.write import (
    COMMIT_RETRIES,
    ContributionWriter,
    delete_contribution,
    write_table,
)

__all__ = [
    "CLUSTER_SEP",
    "CLUSTER_TABLES",
    "COMMIT_RETRIES",
    "DAY",
    "DEFAULT_LAKE",
    "LOCKS",
    "MIGRATE",
    "PREDICATE",
    "READERS",
    "ROWS_PER_FILE",
    "RUNS",
    "SOURCE",
    "STAGING",
    "TXN",
    "Cluster",
    "ContributionWriter",
    "LakeError",
    "OwnedFolder",
    "Run",
    "Snapshot",
    "as_lake_error",
    "check_cluster",
    "check_writable",
    "checked_keys",
    "checkpoint",
    "clean_leftovers",
    "cluster_filter",
    "cluster_of",
    "cluster_sql",
    "clusters",
    "commit_metadata",
    "contribution_ids",
    "contribution_keys",
    "dataset",
    "delete_contribution",
    "delta_schema",
    "exclusive",
    "intents",
    "is_delta",
    "is_lake",
    "lake_path",
    "landing",
    "latest_version",
    "legacy_tables",
    "migrate",
    "node_keys",
    "owner_of_unnamed",
    "published_run",
    "read_table",
    "read_version",
    "read_versions",
    "run",
    "shared",
    "snapshot",
    "spark_frame",
    "sql_literal",
    "table_dir",
    "table_files",
    "table_layout",
    "undo_landing",
    "vacuum",
    "write_table",
]
