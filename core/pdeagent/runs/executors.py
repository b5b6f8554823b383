"""Where evaluations run: in this machine's worker threads, or on a Dask cluster.

An :class:`ExecutionJob` is plain data (strings, numbers, dicts), so it can cross a
process or network boundary; :func:`execute_job` grades it in whatever process
receives it (loading the plugins and the dataset there) and returns plain data too.
The untrusted program never runs in the process that calls :func:`execute_job`: the
sandbox runs it, as for ``pdeagent evaluate``.

CPU policy (so ``--workers N`` does not corrupt the time gate): the local executor
gives each worker a disjoint set of CPUs (its sandboxed programs inherit that
affinity), and timed repeats are serialized across workers by a lock: accuracy runs
of different submissions overlap, timed runs never do. With more workers than
CPUs, pinning is impossible and the run refuses to start.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from attrs import define, evolve, field

from pdeagent.scratch import make_scratch, remove_tree, scratch_root

ARTIFACTS_KEPT = {"solution.npz": 64 * 1024 * 1024, "meta.json": 1024 * 1024}
"""Files of the accuracy run copied back into the attempt directory (size caps)."""


@define(frozen=True)
class ExecutionJob:
    track: str
    case_id: str
    cases_file: str
    """Absolute path of the dataset on the executing machine (references beside it)."""
    source: str
    thresholds: dict[str, Any]
    """``ResolvedThresholds`` fields, resolved by the run (local calibration or dataset)."""
    policy: dict[str, Any] = field(factory=dict)
    """``GradingPolicy`` fields (timed repeats, timeout, ...)."""
    scratch_dir: str | None = None
    """Parent of the temporary work root (default /var/tmp)."""
    sandbox: str | None = None
    """Sandbox backend, resolved (and checked available) when the run started; None:
    ``$PDEAGENT_SANDBOX`` or the strongest available here."""


@define
class ExecutionOutcome:
    report: dict[str, Any] | None
    """``Report.to_dict()``; None on an infrastructure failure."""
    infrastructure_error: str | None = None
    artifacts: dict[str, bytes] = field(factory=dict)
    evaluation_wall_sec: float = 0.0
    worker: str = ""


@functools.cache
def _host() -> Any:
    from pdeagent.plugins import load_plugins

    return load_plugins()


_cases_lock = threading.Lock()


@functools.lru_cache(maxsize=4)
def _load_cases(path: str, mtime_ns: int) -> dict[str, Any]:
    from pdeagent.cases.io import load_cases

    known = _host().library_names()
    return {c.id: c for c in load_cases(path, known_libraries=known)}


def _cases(path: str, mtime_ns: int) -> dict[str, Any]:
    with _cases_lock:  # workers starting together load the dataset once
        return _load_cases(path, mtime_ns)


def _collect_artifacts(workroot: Path) -> dict[str, bytes]:
    exec_dir = workroot / "exec-0"  # the accuracy run (the timed repeats are exec-1, ...)
    kept: dict[str, bytes] = {}
    for name, cap in ARTIFACTS_KEPT.items():
        path = exec_dir / name
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= cap:
                kept[name] = path.read_bytes()
        except OSError:
            continue
    return kept


def execute_job(
    job: ExecutionJob, timing_gate: contextlib.AbstractContextManager[Any] | None = None
) -> ExecutionOutcome:
    """Grade one job here. Harness problems (sandbox unavailable, track runtime
    missing, unknown case) come back as ``infrastructure_error``, never as verdicts."""
    from pdeagent.evaluation.pipeline import (
        EvaluationSetupError,
        GradingPolicy,
        ResolvedThresholds,
        evaluate_source,
    )
    from pdeagent.sandbox.base import SandboxError
    from pdeagent.sandbox.select import make_sandbox
    from pdeagent.stages import TrackUnavailable

    start = time.monotonic()
    worker = socket.gethostname()
    scratch = Path(job.scratch_dir) if job.scratch_dir else scratch_root()
    try:
        host = _host()
        track = host.get_track(job.track)
        path = Path(job.cases_file)
        case = _cases(str(path), path.stat().st_mtime_ns).get(job.case_id)
        if case is None:
            raise EvaluationSetupError(f"case {job.case_id} is not in {path}")
        scratch.mkdir(parents=True, exist_ok=True)
        workroot = make_scratch("pdeagent-run-", scratch)
        try:
            report = evaluate_source(
                host,
                track,
                case,
                job.source,
                sandbox=make_sandbox(job.sandbox),
                workroot=workroot / "eval",
                thresholds=ResolvedThresholds(**job.thresholds),
                policy=GradingPolicy(**job.policy),
                dataset_dir=path.parent,
                timing_gate=timing_gate,
            )
            artifacts = _collect_artifacts(workroot / "eval")
        finally:
            remove_tree(workroot)
    except (EvaluationSetupError, SandboxError, TrackUnavailable, KeyError, OSError) as exc:
        return ExecutionOutcome(
            None,
            infrastructure_error=f"{type(exc).__name__}: {exc}",
            evaluation_wall_sec=time.monotonic() - start,
            worker=worker,
        )
    return ExecutionOutcome(
        report.to_dict(),
        artifacts=artifacts,
        evaluation_wall_sec=time.monotonic() - start,
        worker=worker,
    )


class Executor(Protocol):
    name: str

    def submit(self, job: ExecutionJob) -> concurrent.futures.Future[ExecutionOutcome]: ...

    def describe(self) -> dict[str, Any]:
        """What the run manifest records about the executor."""
        ...

    def shutdown(self, cancel: bool = False) -> None: ...


def cpu_slots(workers: int, cpus: list[int] | None = None) -> list[frozenset[int]]:
    """Split the CPUs this process may use into ``workers`` disjoint sets."""
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers > len(cpus):
        raise ValueError(
            f"{workers} workers but only {len(cpus)} CPUs: timed runs would share CPUs "
            f"(use --workers {len(cpus)} or fewer)"
        )
    size = len(cpus) // workers
    return [frozenset(cpus[i * size : (i + 1) * size]) for i in range(workers)]


class LocalExecutor:
    """``workers`` threads on this machine, each pinned to its own CPUs; timed repeats
    serialized by one lock."""

    name = "local"

    def __init__(self, workers: int = 1, *, scratch_dir: str | None = None) -> None:
        self.workers = workers
        self.slots = cpu_slots(workers)
        self._free: queue.Queue[frozenset[int]] = queue.Queue()
        for slot in self.slots:
            self._free.put(slot)
        self.timing_lock = threading.Lock()
        self.scratch_dir = scratch_dir
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="pdeagent-exec"
        )

    def _run(self, job: ExecutionJob) -> ExecutionOutcome:
        with self.command_slot():
            if self.scratch_dir and not job.scratch_dir:
                job = evolve(job, scratch_dir=self.scratch_dir)
            return execute_job(job, timing_gate=self.timing_lock)

    def submit(self, job: ExecutionJob) -> concurrent.futures.Future[ExecutionOutcome]:
        return self._pool.submit(self._run, job)

    @contextlib.contextmanager
    def command_slot(self) -> Iterator[None]:
        """Hold a free worker's CPU slot with this thread pinned to it (the sandbox's
        children inherit the pinning): every evaluation runs so, and so does an agent's
        command, never on the CPUs of another worker's timed runs."""
        slot = self._free.get()
        before = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, slot)
            yield
        finally:
            os.sched_setaffinity(0, before)
            self._free.put(slot)

    def describe(self) -> dict[str, Any]:
        return {
            "executor": self.name,
            "workers": self.workers,
            "cpu_slots": [sorted(s) for s in self.slots],
            "timed_repeats": "serialized across workers",
        }

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)
