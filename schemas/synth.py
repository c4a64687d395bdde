"""Arrow schema of synth_truth: the labels the trace synthesizer intended (issue 4).

One row per synthesized job: the characteristics its I/O was generated with (paper 004 §3.2,
§6.2), its application (§6.1), the exact bytes it put into ``node_io``, and the run's preset,
seed and calibration parameters (JSON), so metrics computed from the lake can be checked
against what the synthesizer meant.
"""

from __future__ import annotations

import pyarrow as pa

from .tables import TableSpec, _schema

SYNTH_TRUTH = TableSpec(
    name="synth_truth",
    doc="Per synthesized job: intended labels (null where undefined: single-node jobs), "
    "application, exact Lustre and communication bytes, and the run's parameters.",
    schema=_schema(
        ("job_id", pa.string(), False),
        ("cluster", pa.string(), True),
        ("app_id", pa.int64(), False),  # same user, job name and node count (004 §6.1)
        ("user", pa.string(), True),
        ("job_name", pa.string(), True),
        ("nnodes", pa.int64(), False),
        ("rank0", pa.bool_(), True),  # max node share > rank0_share (004 §3.2.1); null: 1 node
        ("uneven", pa.bool_(), True),  # io_nud > uneven_nud (004 §3.2.2); null: 1 node
        ("data_intensive", pa.bool_(), False),  # io_bytes above the threshold (004 §6.2)
        ("low_comm", pa.bool_(), False),  # io_bytes > comm_bytes (004 §6.2)
        ("optimizable", pa.bool_(), False),  # data-intensive ∧ all-rank ∧ low-comm
        ("app_divergent", pa.bool_(), False),  # heavy nodes move job to job (004 Def. 4)
        ("io_bytes", pa.int64(), False),  # read + write bytes the job put into node_io
        ("comm_bytes", pa.int64(), False),  # net − Lustre bytes the job put into node_io
        ("io_nud", pa.float64(), True),  # NUD of the intended per-node shares
        ("max_node_share", pa.float64(), True),
        ("preset", pa.string(), False),
        ("seed", pa.int64(), False),
        ("params", pa.string(), False),  # the run's calibration, JSON
    ),
    key=("job_id", "cluster"),
    nonnegative=("nnodes", "io_bytes", "comm_bytes"),
)

TABLES: tuple[TableSpec, ...] = (SYNTH_TRUTH,)
