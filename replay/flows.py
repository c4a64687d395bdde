"""A standalone flow-level max-min simulator (docs/design.md, "Replay"; the flow model of paper 000
§3, SimGrid's max-min network model with zero latency): named links of given bandwidth, flows of
given size and start time over link routes, each flow's completion time.

Input, as read by :func:`load`::

    {"links": {"name": bytes_per_s, ...},
     "flows": [{"route": ["name", ...], "size": bytes, "start": seconds}, ...]}
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from burstlake.paths import input_file
from burstlake.replay.events import Requests, simulate
from burstlake.replay.solver import Paths

log = logging.getLogger(__name__)
MAX_FILE_BYTES = 1 << 30  # read whole: a flow file of 10 M flows is about 0.7 GB


@dataclass(frozen=True)
class FlowSet:
    """Links (names, bytes/s) and flows (routes over link indices, bytes, start seconds)."""

    names: tuple[str, ...]
    capacity: np.ndarray
    paths: Paths
    size: np.ndarray
    start: np.ndarray


def load(path: str | Path) -> FlowSet:
    """Read and check a flow file; a ValueError names the file and the flow or link at fault."""
    path = input_file(path, "flow file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes; a flow file is at most {MAX_FILE_BYTES}")
    try:
        document = json.loads(path.read_text(), object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except RecursionError:
        raise ValueError(
            f"{path}: JSON nested too deeply to read (a flow file is two levels deep)"
        ) from None
    except ValueError as err:  # a key given twice
        raise ValueError(f"{path}: {err}") from None
    try:
        return parse(document)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object, refusing a key given twice (two links of one name)."""
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"{key!r} given twice in one object")
        seen[key] = value
    return seen


def parse(document: object) -> FlowSet:
    """Check a decoded flow document (see the module docstring) and index its routes."""
    if not isinstance(document, dict):
        raise ValueError("expected an object with 'links' and 'flows'")
    for key, kind in (("links", dict), ("flows", list)):
        if key not in document:
            raise ValueError(f"missing key {key!r}")
        if not isinstance(document[key], kind):
            raise ValueError(f"{key!r} must be a JSON {'object' if kind is dict else 'array'}")
    names, capacities = [], []
    for name, bandwidth in document["links"].items():
        if not _number(bandwidth) or not bandwidth > 0 or not math.isfinite(bandwidth):
            raise ValueError(
                f"link {name!r}: capacity must be a positive number, got {bandwidth!r}"
            )
        names.append(name)
        capacities.append(float(bandwidth))
    index = {name: i for i, name in enumerate(names)}
    routes, sizes, starts = [], [], []
    for k, flow in enumerate(document["flows"]):
        if not isinstance(flow, dict):
            raise ValueError(f"flow {k}: expected an object with route, size and start")
        for key in ("route", "size", "start"):
            if key not in flow:
                raise ValueError(f"flow {k}: missing key {key!r}")
        route = flow["route"]
        if not isinstance(route, list) or not route:
            raise ValueError(f"flow {k}: route must be a non-empty list of link names")
        for name in route:
            if name not in index:
                raise ValueError(f"flow {k}: unknown link {name!r}")
        for key in ("size", "start"):
            value = flow[key]
            if not _number(value) or not math.isfinite(value) or value < 0:
                raise ValueError(f"flow {k}: {key} must be a non-negative number, got {value!r}")
        routes.append([index[name] for name in route])
        sizes.append(float(flow["size"]))
        starts.append(float(flow["start"]))
    return FlowSet(
        tuple(names),
        np.asarray(capacities, dtype=np.float64),
        Paths.from_lists(routes),
        np.asarray(sizes, dtype=np.float64),
        np.asarray(starts, dtype=np.float64),
    )


def result(finish: np.ndarray, wall: float) -> dict:
    """The JSON document of a run: ``finish`` per flow, ``null`` for a flow that never
    finishes in a double's range, with its reason in ``unfinished`` (JSON has no Infinity)."""
    done = np.isfinite(finish)
    return {
        "finish": [float(f) if ok else None for f, ok in zip(finish, done, strict=True)],
        "unfinished": {
            str(k): "its finish time is beyond 1.8e308 s (size / bandwidth overflows)"
            for k in np.flatnonzero(~done)
        },
        "wall_s": wall,
    }


def finish_times(flows: FlowSet) -> tuple[np.ndarray, float]:
    """Each flow's completion time (seconds, input order) and the solver's wall time."""
    n = len(flows.size)
    requests = Requests(np.arange(n), flows.size, flows.start, flows.paths)
    none = np.zeros(0)
    simulate(Requests(none, none, none, Paths.from_lists([])), flows.capacity)  # load untimed
    started = time.perf_counter()
    timeline = simulate(requests, flows.capacity)
    wall = time.perf_counter() - started
    log.info(
        "%d flows over %d links: %d events in %.3f s", n, len(flows.names), timeline.events, wall
    )
    return timeline.end, wall


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
