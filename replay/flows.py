"""A standalone link-level simulator (docs/design.md, "Replay" and "Contention models"): named
links of given bandwidth, flows of given size and start time over link routes, each flow's
completion time, under a contention model of :mod:`burstlake.replay.models`.

Input, as read by :func:`load`::

    {"links": {"name": bytes_per_s, ...},
     "flows": [{"route": ["name", ...], "size": bytes, "start": seconds}, ...],
     "model": "flow" | "packet" | {"name": "packet", "packet_bytes": ..., ...}}

``model`` is optional and takes the values of a scenario's ``model:`` key. The ``flow`` model
(the default) is paper 000 §3's, SimGrid's max-min network model with zero latency. Under the
``packet`` model (CODES' lossless packets, 000 §2.5; :mod:`burstlake.replay.packet`) every flow
is one message sent at its start time, finished when its last byte arrives; it pays the NIC
delay once, and the router delay after every link that some route enters from another link
(a switch's), as that module times them. A flow file names links, not a topology, so there is
no router to give virtual channels: every hop is on virtual channel 0 (a cyclic set of routes
may deadlock, and is refused as such).
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
from burstlake.replay import models
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths

log = logging.getLogger(__name__)
MAX_FILE_BYTES = 1 << 30  # read whole: a flow file of 10 M flows is about 0.7 GB
KEYS = ("links", "flows", "model")  # a flow file's top-level keys


@dataclass(frozen=True)
class FlowSet:
    """Links (names, bytes/s), flows (routes over link indices, bytes, start seconds) and the
    contention model they share the links under."""

    names: tuple[str, ...]
    capacity: np.ndarray
    paths: Paths
    size: np.ndarray
    start: np.ndarray
    model: models.Contention = models.DEFAULT


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
    unknown = sorted(set(document) - set(KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; a flow file has {', '.join(KEYS)}")
    model = models.parse(document.get("model"), "model")
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
        model,
    )


def result(finish: np.ndarray, wall: float, model: models.Contention = models.DEFAULT) -> dict:
    """The JSON document of a run: ``finish`` per flow, ``null`` for a flow that never
    finishes in a double's range, with its reason in ``unfinished`` (JSON has no Infinity),
    and the ``model`` that ran, as a mapping the ``model`` key reads back (its settings)."""
    done = np.isfinite(finish)
    return {
        "model": model.spec(),
        "finish": [float(f) if ok else None for f, ok in zip(finish, done, strict=True)],
        "unfinished": {
            str(k): "its finish time is beyond 1.8e308 s (size / bandwidth overflows)"
            for k in np.flatnonzero(~done)
        },
        "wall_s": wall,
    }


def finish_times(flows: FlowSet, progress=None) -> tuple[np.ndarray, float]:
    """Each flow's completion time (seconds, input order) and the model's wall time. Every
    flow is a stream of one request, issued at its start; ``progress(events)`` is called as
    the model advances."""
    n = len(flows.size)
    requests = Requests(np.arange(n), flows.size, flows.start, flows.paths)
    none = np.zeros(0)
    idle = Requests(none.astype(np.int64), none, none, Paths.from_lists([]))
    flows.model.simulate_links(idle, flows.capacity)  # compile or load the model, untimed
    started = time.perf_counter()
    timeline = flows.model.simulate_links(requests, flows.capacity, progress)
    wall = time.perf_counter() - started
    log.info(
        "%d flows over %d links, %s model: %d events in %.3f s",
        n,
        len(flows.names),
        flows.model.name,
        timeline.events,
        wall,
    )
    return timeline.end, wall


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
