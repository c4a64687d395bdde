"""``sacct -P`` text (pipe-separated, header first), as Slurm's accounting prints it."""

from __future__ import annotations

from pathlib import Path

# the columns `burstlake ingest slurm` documents asking for (docs/design.md, "Sources")
FULL_HEADER = (
    "JobIDRaw|JobName|User|UID|Account|Partition|Submit|Eligible|Start|End|ReqCPUS|AllocCPUS"
    "|NNodes|NodeList|State|ExitCode|Cluster"
)


def sacct_text(header: str, lines: list[str]) -> str:
    """A dump: the header line, then ``lines``, each ended by a newline."""
    return "\n".join([header, *lines]) + "\n"


def write_sacct(path: Path, jobs: range) -> Path:
    """A dump of one-node jobs numbered ``jobs`` on ``cn001``, all completed, machine ``th``."""
    lines = [
        f"{j}|a|u|1|x|w|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T00:10:00|"
        f"2024-03-01T01:00:00|8|8|1|cn001|COMPLETED|0:0|th"
        for j in jobs
    ]
    path.write_text(sacct_text(FULL_HEADER, lines))
    return path


def write_sacct_with_steps(
    path: Path, jobs: range, state: str = "COMPLETED", digits: int = 3
) -> Path:
    """A small dump: one job line and one batch step line per job, 2 nodes each (``cn001``..,
    or with ``digits`` 5 the hand lake's ``cn00001``..), machine ``th``."""
    lines = []
    for job in jobs:
        a, b = job % 4 + 1, (job + 1) % 4 + 1
        nodes = f"cn{min(a, b):0{digits}d},cn{max(a, b):0{digits}d}"
        times = f"2024-03-01T00:{job % 60:02d}:00|2024-03-01T01:00:00"
        lines.append(
            f"{job}|app{job}|u{job % 3}|{5000 + job}|acct|work|2024-03-01T00:00:00|"
            f"2024-03-01T00:00:00|{times}|8|8|2|{nodes}|{state}|0:0|th"
        )
        lines.append(f"{job}.batch|batch|||||||{times}||4|1|cn{a:0{digits}d}|{state}|0:0|th")
    path.write_text(sacct_text(FULL_HEADER, lines))
    return path


def sacct_hours(*jobs: tuple, header: str = "JobID|JobName|State|Start|End|NNodes|NodeList") -> str:
    """A dump of completed jobs, one line per (job id, start hour, end hour) of 2020-01-01 on
    node ``cn<id>``."""
    lines = [
        f"{job}|j{job}|COMPLETED|2020-01-01T{start:02}:00:00|2020-01-01T{end:02}:00:00|1|cn{job}"
        for job, start, end in jobs
    ]
    return sacct_text(header, lines)
