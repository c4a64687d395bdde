"""Small files staged as Spark tasks: ``burstlake ingest darshan --spark-master URL``.

See docs/design.md, 'Many small files'.

The step ``--workers`` forks processes for (:mod:`.grouped`), run by Spark executors for a
backlog bigger than one machine: the files are cut into the same chunks of up to
:data:`.grouped.GROUP_FILES`, one Spark task each (``parallelize(chunks, len(chunks))``); a
task parses, validates and stages its chunk as groups into the staging folder the ingest
process holds inside the lake, and returns what that process needs to commit them. The ingest
process (the Spark driver) then commits the staged groups in file order, exactly as with
``--workers``: the same Delta tables, quarantine and ``ingest_log`` accounting as one process.

Executors write the staged files by the lake's own path, so every executor must see the lake
at the same path as the driver: one machine (the loopback cluster of
``infra/spark-standalone.sh``) or a shared filesystem. Nothing of Delta runs in a task.

A task reads logs in a reader process of its own, as the ingest process does, so a log that
crashes darshan-util is quarantined as in one process. An error a task raises reaches the
ingest process as the worker's would; a Spark job that fails as a whole (an executor lost past
Spark's retries) is a dead worker: the ingest process lands the files itself.
"""

from __future__ import annotations

import functools
import logging
import pickle
from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from burstlake.jobs.ingest import grouped

log = logging.getLogger(__name__)

Call = tuple[Callable[..., Any], tuple, dict]


class _OnDemand(Future):
    """A task's future: asking for its result runs every task submitted so far, as one job."""

    def __init__(self, tasks: SparkTasks) -> None:
        super().__init__()
        self._tasks = tasks

    def result(self, timeout: float | None = None):
        if not self.done():
            self._tasks.run_pending()
        return super().result(timeout)

    def exception(self, timeout: float | None = None):
        if not self.done():
            self._tasks.run_pending()
        return super().exception(timeout)


def _run_call(setup: Callable[[], None], call: Call) -> tuple[bool, Any]:
    """One Spark task: ``setup``, then the call; its result, or the error it raised (sent back
    as a value, so that it reaches the caller as a worker process's would)."""
    fn, args, kwargs = call
    try:
        setup()
        return True, fn(*args, **kwargs)
    except Exception as err:  # the caller's future raises it, as a worker process's would
        try:
            pickle.dumps(err)
        except Exception:  # an error that cannot cross processes crosses as its message
            err = RuntimeError(f"{type(err).__name__}: {err}")
        return False, err


class SparkTasks(Executor):
    """An executor whose submitted calls run as the tasks of one Spark job, started when the
    first result is asked for (every call submitted by then, one task each), each after
    ``setup`` in its Python worker."""

    def __init__(self, spark, setup: Callable[[], None] = lambda: None) -> None:
        self._context = spark.sparkContext
        self._setup = setup
        self._pending: list[tuple[Call, Future]] = []

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future = _OnDemand(self)
        self._pending.append(((fn, args, kwargs), future))
        return future

    def run_pending(self) -> None:
        """Run the submitted calls as one Spark job and settle their futures in order."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        calls = [call for call, _ in pending]
        task = functools.partial(_run_call, self._setup)
        try:
            done = self._context.parallelize(calls, len(calls)).map(task).collect()
        except Exception as err:  # py4j's error for a failed job: a dead worker
            log.warning("the Spark job staging the files failed: %s", str(err).splitlines()[0])
            lost = BrokenProcessPool(f"the Spark job failed: {str(err).splitlines()[0]}")
            for _, future in pending:
                future.set_exception(lost)
            return
        for (_, future), (ok, value) in zip(pending, done, strict=True):
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Calls not run yet never run (the session stays: its owner stops it)."""
        for _, future in self._pending:
            future.cancel()
        self._pending = []


class SparkStaging:
    """What stages the chunks of :func:`.grouped.land` on a Spark master: the pool factory
    ``grouped.land(..., pool=...)`` takes, and the parallelism to cut the files by."""

    def __init__(self, spark) -> None:
        self.spark = spark

    @property
    def workers(self) -> int:
        """The cluster's cores (Spark's default parallelism): the chunks to cut at least."""
        return max(2, self.spark.sparkContext.defaultParallelism)

    def __call__(self, workers: int, source: str, nodes: list[str] | None) -> SparkTasks:
        return SparkTasks(self.spark, functools.partial(grouped.start_task, nodes))


def spark_staging(master: str, lake: Path) -> SparkStaging:
    """Staging on ``master`` through the session the metrics use (:func:`burstlake.spark.session`),
    its JVM's output in the lake's Spark log."""
    from burstlake.spark import log_file, session

    return SparkStaging(session(master, app_name="burstlake-ingest", log=log_file(lake)))
