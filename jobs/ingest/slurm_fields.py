"""Slurm's field notations (docs/design.md, "Sources"): job states as ``sacct`` prints them,
and the fields of ``sacct --json``'s job objects (data_parser numbers, epoch times, TRES,
exit codes), decoded into the values the text dialect gives."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

_STATE = re.compile(r"(?P<state>[A-Z][A-Z_]*)(?:\s+by\s+(?P<uid>\d+))?\+?")


def parse_state(text: str | None) -> tuple[str | None, int | None]:
    """``CANCELLED by 1234`` → ('CANCELLED', 1234); ``COMPLETED`` → ('COMPLETED', None)."""
    if text is None or not text.strip():
        return None, None
    match = _STATE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a job state (e.g. COMPLETED, CANCELLED by 1234)")
    uid = match.group("uid")
    return match.group("state"), int(uid) if uid else None


def _number(value: Any) -> Any:
    """Unwrap data_parser numbers: ``{"set": true, "number": 5}`` → 5, unset → None."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{str(value)[:40]!r} is not a number")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise ValueError(f"{str(value)[:40]} is beyond the 64-bit range")
    return value


def _epoch(value: Any) -> datetime | None:
    seconds = _number(value)
    if seconds in (None, 0):
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"time {str(seconds)[:40]} is not epoch seconds") from None


def _json_state(value: Any) -> tuple[str | None, int | None]:
    if isinstance(value, dict):
        value = value.get("current")
    if isinstance(value, list):
        value = value[0] if value else None
    return parse_state(value)


def _json_exit_code(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None if value is None else str(value)
    code = _number(value.get("return_code"))
    signal = value.get("signal") or {}
    number = _number(signal.get("id")) if isinstance(signal, dict) else None
    return None if code is None else f"{code}:{number or 0}"


def _tres_cpus(tres: Any) -> int | None:
    allocated = tres.get("allocated") if isinstance(tres, dict) else None
    for item in allocated or []:
        if isinstance(item, dict) and item.get("type") == "cpu":
            return _number(item.get("count"))
    return None


def _json_canceller(job: dict, state: str | None) -> int | None:
    """sacct --json names who cancelled in ``kill_request_user``: a uid when it is numeric."""
    user = job.get("kill_request_user")
    numeric = isinstance(user, str) and user.isdigit()
    return int(user) if state == "CANCELLED" and numeric else None


def _json_job_id(job: dict) -> str:
    """The allocation's name in sacct's words: ``123_7`` for an array task, ``123+1`` het."""
    array, het = job.get("array") or {}, job.get("het") or {}
    array_job, task = _number(array.get("job_id")), _number(array.get("task_id"))
    het_job, offset = _number(het.get("job_id")), _number(het.get("job_offset"))
    if array_job and task is not None:
        return f"{array_job}_{task}"
    if het_job and offset is not None:
        return f"{het_job}+{offset}"
    if job.get("job_id") is None:
        raise ValueError("job without job_id")
    return str(job["job_id"])


def _json_step_id(step: dict) -> str:
    ident = (step.get("step") or {}).get("id")
    if ident is None:
        raise ValueError("step without step.id")
    ident = str(ident)
    return ident.split(".", 1)[1] if "." in ident else ident


def json_entries(job: dict) -> list[dict[str, Any]]:
    """The allocation entry and step entries of one element of ``jobs``."""
    if not isinstance(job, dict):
        raise ValueError(f"a job is a JSON object, not {type(job).__name__}")
    job_id = _json_job_id(job)
    times, required = job.get("time") or {}, job.get("required") or {}
    state, _ = _json_state(job.get("state"))
    raw = _number(job.get("job_id"))
    allocation = {
        "id": job_id,
        "job_id_raw": None if raw is None else str(raw),
        "cluster": job.get("cluster") or None,
        "job_name": job.get("name"),
        "user": job.get("user") if isinstance(job.get("user"), str) else None,
        "account": job.get("account") or None,
        "partition": job.get("partition") or None,
        "submit": _epoch(times.get("submission")),
        "eligible": _epoch(times.get("eligible")),
        "start": _epoch(times.get("start")),
        "end": _epoch(times.get("end")),
        "req_cpus": _number(required.get("CPUs")),
        "alloc_cpus": _tres_cpus(job.get("tres")),
        "nnodes": _number(job.get("allocation_nodes")) or None,
        "nodelist": job.get("nodes") if isinstance(job.get("nodes"), str) else None,
        "state": state,
        "cancelled_by": _json_canceller(job, state),
        "exit_code": _json_exit_code(job.get("exit_code")),
    }
    entries = [allocation]
    for step in job.get("steps") or []:
        nodes = step.get("nodes") or {}
        step_state, _ = _json_state(step.get("state"))
        step_times = step.get("time") or {}
        entries.append(
            {
                "id": f"{job_id}.{_json_step_id(step)}",
                "cluster": allocation["cluster"],
                "job_name": (step.get("step") or {}).get("name"),
                "start": _epoch(step_times.get("start")),
                "end": _epoch(step_times.get("end")),
                "alloc_cpus": _tres_cpus(step.get("tres")),
                "nnodes": _number(nodes.get("count")) if isinstance(nodes, dict) else None,
                "nodelist": nodes.get("range") if isinstance(nodes, dict) else nodes,
                "state": step_state,
                "exit_code": _json_exit_code(step.get("exit_code")),
            }
        )
    return entries


# ---------------------------------------------------------------- rows
