"""``--executor dask``: grade submissions on the workers of a dask.distributed cluster.

Each :class:`~pdeagent.runs.executors.ExecutionJob` (plain data) is sent to a worker,
which grades it with :func:`~pdeagent.runs.executors.execute_job`: the worker loads
the plugins and reads the dataset itself (``job.cases_file`` is a path on the worker
machine), and the untrusted program runs in the worker's sandbox, never in the
worker process.

Workers need pdeagent and the track runtime (``pdeagent env setup TRACK`` on each
worker machine, in the workers' environment). :class:`DaskExecutor` checks this on
every worker when it is created (track registered, the track's ``pdeagent_doctor``
checks all ok; a track without doctor checks passes) and refuses to start otherwise.
Workers that join later are not checked: their setup problems come back as an
``infrastructure_error`` like any other.

Timing policy (so concurrent workers do not corrupt the time gate): the timed repeats
of an evaluation run while the worker holds ``distributed.Lock("pdeagent-timing-HOST")``,
HOST being the worker's ``socket.gethostname()``. Timed runs on one machine are
therefore serialized across all its workers (and all their threads), while accuracy
runs of other submissions may overlap them. Recommended layout: one thread per worker
(``dask worker SCHEDULER --nthreads 1``), as many workers per machine as it has CPUs
to spare, each pinned to its own CPUs (``taskset -c N dask worker ...``; the sandboxed
programs inherit the affinity). Workers in containers on one machine must report the
same hostname, or timed runs in different containers will overlap. The lock is a
scheduler lease refreshed by the worker's event loop; it is released when the timed
repeats end, or by the scheduler when the worker dies.

Results: what ``execute_job`` classifies as a harness problem (sandbox unavailable,
track runtime missing, unknown case, missing dataset) resolves the future to
``ExecutionOutcome(report=None, infrastructure_error=...)``. Anything else raised on
the worker (a bug, pdeagent not importable there, a worker killed repeatedly) fails the
future with the worker's exception. A job cancelled by ``shutdown(cancel=True)`` (or
by cancelling its future) ends cancelled; a job already running on a worker runs to
its end there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import threading
import uuid
from typing import Any

from pdeagent.extras import require
from pdeagent.runs.executors import ExecutionJob, ExecutionOutcome, execute_job

TIMING_LOCK_PREFIX = "pdeagent-timing-"


class ExecutorUnavailable(RuntimeError):
    """The executor cannot run jobs: scheduler unreachable, no workers, or workers
    without pdeagent or the track runtime."""


def timing_lock_name(hostname: str | None = None) -> str:
    """Name of the distributed lock serializing timed repeats on ``hostname``."""
    return f"{TIMING_LOCK_PREFIX}{hostname or socket.gethostname()}"


# --- worker side ------------------------------------------------------------------------

_timing_locks: dict[tuple[str, str], Any] = {}
_timing_locks_guard = threading.Lock()


def _timing_lock() -> Any:
    """This host's timing lock, one instance per worker (a ``distributed.Lock`` keeps a
    lease-refresh callback on the worker's loop, so it is created once, not per job)."""
    from distributed import Lock, get_worker

    key = (get_worker().address, timing_lock_name())
    with _timing_locks_guard:
        lock = _timing_locks.get(key)
        if lock is None:
            lock = _timing_locks[key] = Lock(key[1])
        return lock


def _execute_on_worker(job: ExecutionJob) -> ExecutionOutcome:
    """The task a worker runs for one job."""
    return execute_job(job, timing_gate=_timing_lock())


def _check_worker(track_name: str) -> dict[str, Any]:
    """Preflight of one worker: pdeagent importable, track registered, runtime present.
    ``failure`` is None when the worker can run ``track_name``."""
    from pdeagent.plugins import load_plugins

    info: dict[str, Any] = {"hostname": socket.gethostname(), "failure": None}
    host = load_plugins()
    track = host.tracks.get(track_name)
    if track is None:
        known = ", ".join(sorted(host.tracks)) or "none"
        info["failure"] = f"track {track_name!r} is not registered (installed: {known})"
        return info
    checks = host.hook.pdeagent_doctor(track=track) or []
    failed = [c for c in checks if not c.ok]
    if failed:
        first = failed[0]
        detail = f"{first.name}: {first.detail}" if first.detail else first.name
        info["failure"] = f"doctor check failed: {detail}" + (
            f" (fix: {first.fix})" if first.fix else ""
        )
    return info


async def _preflight(track_name: str, timeout: float) -> dict[str, Any]:
    """Run by ``Client.run``: the checks go to a thread so the worker's event loop
    (heartbeats) is not blocked by a slow doctor."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(_check_worker, track_name), timeout)
    except TimeoutError:
        return {
            "hostname": socket.gethostname(),
            "failure": f"the preflight did not finish within {timeout:g} s",
        }


# --- client side ------------------------------------------------------------------------


class DaskExecutor:
    """Jobs on the workers of the dask.distributed scheduler at ``scheduler``; timed
    repeats serialized per host (see the module docstring)."""

    name = "dask"

    def __init__(self, scheduler: str, *, track: str, timeout_sec: float = 30) -> None:
        Client = require("dask").Client  # MissingExtra: pip install 'pdeagent[dask]'

        self.track = track
        self.timeout_sec = timeout_sec
        self._guard = threading.Lock()
        self._pending: dict[str, tuple[Any, concurrent.futures.Future[ExecutionOutcome]]] = {}
        self._cancelling = False
        self._closed = False
        try:
            self.client = Client(scheduler, timeout=timeout_sec, set_as_default=False)
        except Exception as exc:
            raise ExecutorUnavailable(
                f"cannot reach the dask scheduler at {scheduler} within {timeout_sec:g} s "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        self.scheduler = self.client.scheduler.address
        try:
            self.hosts = self._preflight()
            self._nthreads = self.client.nthreads()
        except BaseException:
            self.client.close()
            raise

    def _preflight(self) -> dict[str, str]:
        """Check every worker; returns worker address -> hostname."""
        try:
            self.client.wait_for_workers(1, timeout=self.timeout_sec)
        except (TimeoutError, OSError) as exc:
            raise ExecutorUnavailable(
                f"the dask scheduler at {self.scheduler} has no workers "
                f"(waited {self.timeout_sec:g} s); start some with "
                f"`dask worker {self.scheduler} --nthreads 1` on machines where "
                f"`pdeagent env setup {self.track}` was run"
            ) from exc
        results = self.client.run(_preflight, self.track, self.timeout_sec, on_error="return")
        if not results:
            raise ExecutorUnavailable(f"the dask scheduler at {self.scheduler} has no workers")
        failures = []
        for address, info in sorted(results.items()):
            if isinstance(info, BaseException):
                hint = ""
                if isinstance(info, ImportError):
                    hint = " (is pdeagent installed in the worker's environment?)"
                failures.append(f"  {address}: {type(info).__name__}: {info}{hint}")
            elif info["failure"] is not None:
                failures.append(f"  {address} ({info['hostname']}): {info['failure']}")
        if failures:
            raise ExecutorUnavailable(
                f"{len(failures)} of {len(results)} dask workers cannot run track "
                f"{self.track!r}:\n" + "\n".join(failures) + "\n"
                f"Workers need pdeagent and the track runtime: run `pdeagent env setup "
                f"{self.track}` on each worker machine (in the workers' environment), "
                "then restart the workers."
            )
        return {address: info["hostname"] for address, info in results.items()}

    def submit(self, job: ExecutionJob) -> concurrent.futures.Future[ExecutionOutcome]:
        if self._closed:
            raise RuntimeError("cannot submit to a DaskExecutor after shutdown")
        result: concurrent.futures.Future[ExecutionOutcome] = concurrent.futures.Future()
        key = f"pdeagent-{job.track}-{job.case_id}-{uuid.uuid4().hex}"
        task = self.client.submit(
            _execute_on_worker, job, key=key, pure=False, resources=None, retries=None
        )
        with self._guard:
            self._pending[key] = (task, result)  # holding the dask future keeps the task

        def cancel_task(fut: concurrent.futures.Future[ExecutionOutcome]) -> None:
            if fut.cancelled():
                # a future that is never run must be marked so for wait()/as_completed()
                with contextlib.suppress(RuntimeError):
                    fut.set_running_or_notify_cancel()
                with contextlib.suppress(Exception):
                    task.cancel()

        result.add_done_callback(cancel_task)
        task.add_done_callback(self._settle)
        return result

    def _settle(self, task: Any) -> None:
        """Done callback of a dask future (runs in a dask callback thread)."""
        with self._guard:
            _, result = self._pending.pop(task.key, (None, None))
        if result is None or result.done():
            return
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            if task.status == "cancelled" and (self._cancelling or self._closed):
                result.cancel()
            elif task.status == "lost":  # result() would wait for a recomputation
                result.set_exception(
                    ExecutorUnavailable(f"dask task {task.key} was lost by the cluster")
                )
            else:
                try:
                    outcome = task.result()
                except BaseException as exc:  # the worker's exception, or the cancellation
                    result.set_exception(exc)
                else:
                    result.set_result(outcome)

    def describe(self) -> dict[str, Any]:
        if not self._closed:
            with contextlib.suppress(Exception):
                self._nthreads = self.client.nthreads()
        return {
            "executor": self.name,
            "scheduler": self.scheduler,
            "workers": sorted(self._nthreads),
            "nthreads": dict(sorted(self._nthreads.items())),
            "hosts": dict(sorted(self.hosts.items())),
            "timed_repeats": "serialized per host",
        }

    def shutdown(self, cancel: bool = False) -> None:
        if self._closed:
            return
        with self._guard:
            pending = list(self._pending.values())
        if cancel:
            self._cancelling = True
            if pending:
                with contextlib.suppress(Exception):
                    self.client.cancel([task for task, _ in pending])
        else:
            concurrent.futures.wait([result for _, result in pending])
        self._closed = True
        self.client.close()
        with self._guard:
            leftover = list(self._pending.values())
            self._pending.clear()
        for _, result in leftover:
            result.cancel()
