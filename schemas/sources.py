"""The raw sources' own names for what the lake stores (docs/design.md, "Sources").

``sacct -P`` text output: :data:`SACCT_FIELDS` maps each field burstlake reads to the ``jobs``
column it fills. The Slurm parser looks header names up case-insensitively
(:data:`SACCT_TEXT_FIELDS`; JobID wins over JobIDRaw when both are there), and the
synthesizer's raw writer prints :data:`SYNTH_SACCT_FIELDS` from :data:`SYNTH_SACCT_COLUMNS`.
"""

from __future__ import annotations

SACCT_FIELDS: dict[str, str] = {
    "JobID": "job_id",
    "JobIDRaw": "job_id_raw",
    "JobName": "job_name",
    "User": "user",
    "UID": "uid",
    "Account": "account",
    "Partition": "partition",
    "Submit": "submit",
    "Eligible": "eligible",
    "Start": "start",
    "End": "end",
    "ReqCPUS": "req_cpus",
    "AllocCPUS": "alloc_cpus",
    "NNodes": "nnodes",
    "NodeList": "nodelist",
    "State": "state",
    "ExitCode": "exit_code",
    "Cluster": "cluster",
}

SACCT_TEXT_FIELDS: dict[str, str] = {name.lower(): column for name, column in SACCT_FIELDS.items()}
"""sacct header name, lower case -> column (``job_id_raw`` becomes the job id without JobID)."""

SYNTH_SACCT_FIELDS: tuple[str, ...] = tuple(n for n in SACCT_FIELDS if n != "JobID")
"""The header of the synthesizer's sacct file: raw job ids, as ``sacct -P -o JobIDRaw,...``."""

SYNTH_SACCT_COLUMNS: tuple[str, ...] = tuple(
    "job_id" if name == "JobIDRaw" else SACCT_FIELDS[name] for name in SYNTH_SACCT_FIELDS
)
"""The ``jobs`` column each field of :data:`SYNTH_SACCT_FIELDS` is printed from."""
