"""``--executor dask`` on a real local dask.distributed cluster (one worker process).

The same jobs graded by the local executor and by a dask worker get the same verdicts;
workers without the track runtime and unreachable schedulers are refused up front.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import re
import socket
import time
from collections.abc import Iterator

import attrs
import pytest

from pdeagent.evaluation.pipeline import GradingPolicy, resolve_thresholds
from pdeagent.runs.dask_executor import DaskExecutor, ExecutorUnavailable, timing_lock_name
from pdeagent.runs.executors import ExecutionJob, ExecutionOutcome, LocalExecutor

from .conftest import SAMPLE_CASE_ID, SAMPLE_CASES, SAMPLE_TRACK_DIR

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

RESULT_TIMEOUT = 120
SOURCES = {
    "correct": (SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py").read_text(),
    "raises": "def solve(case_spec):\n    raise RuntimeError('diverged at step 3')\n",
    "cheat": (SAMPLE_TRACK_DIR / "solvers" / "boundary_cheat.py").read_text(),
}
EXPECTED = {
    "correct": ("PASS", None),
    "raises": ("F-Exec", "runtime_error"),
    "cheat": ("F-Acc", "error_above_tau"),
}


@contextlib.contextmanager
def local_cluster(n_workers: int = 1, **worker_kwargs: object) -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        # no dashboard; its health endpoint on a free port, not 8787
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        death_timeout=60,  # a worker that cannot start within a minute fails the test
        **worker_kwargs,
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    with local_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def executor(cluster) -> Iterator[DaskExecutor]:
    ex = DaskExecutor(cluster.scheduler_address, track="numpy_fd")
    yield ex
    ex.shutdown(cancel=True)


def make_job(case, source: str, case_id: str = SAMPLE_CASE_ID) -> ExecutionJob:
    thresholds = resolve_thresholds(case, "numpy_fd", GradingPolicy())
    return ExecutionJob(
        track="numpy_fd",
        case_id=case_id,
        cases_file=str(SAMPLE_CASES.resolve()),
        source=source,
        thresholds=thresholds.as_dict(),
    )


def run_all(ex, jobs: dict[str, ExecutionJob]) -> dict[str, ExecutionOutcome]:
    futures = {name: ex.submit(job) for name, job in jobs.items()}
    return {name: fut.result(timeout=RESULT_TIMEOUT) for name, fut in futures.items()}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_and_dask_executors_give_the_same_verdicts(case, cluster, executor):
    jobs = {name: make_job(case, src) for name, src in SOURCES.items()}
    local = LocalExecutor(workers=1)
    try:
        on_local = run_all(local, jobs)
    finally:
        local.shutdown()
    on_dask = run_all(executor, jobs)
    for name, (verdict, reason) in EXPECTED.items():
        a, b = on_local[name], on_dask[name]
        assert a.infrastructure_error is None and b.infrastructure_error is None, (a, b)
        assert (a.report["verdict"], a.report["reason"]) == (verdict, reason), name
        assert (b.report["verdict"], b.report["reason"]) == (verdict, reason), name
        assert b.report["thresholds"] == a.report["thresholds"]
        assert b.worker == socket.gethostname()
    ok_local, ok_dask = on_local["correct"].report, on_dask["correct"].report
    assert ok_dask["error"] == pytest.approx(ok_local["error"], rel=0, abs=1e-12)
    assert len(ok_dask["runtime_samples"]) == case.evaluation_config.timed_repeats
    assert set(on_dask["correct"].artifacts) == set(on_local["correct"].artifacts)
    assert "diverged at step 3" in on_dask["raises"].report["stderr_excerpt"]
    # the timed repeats on the worker went through this host's scheduler lock
    locks = executor.client.run_on_scheduler(
        lambda dask_scheduler: sorted(dask_scheduler.extensions["semaphores"].max_leases)
    )
    assert timing_lock_name() in locks


def test_timed_repeats_wait_for_the_hosts_timing_lock(case, executor):
    from distributed import Lock

    name = timing_lock_name()
    client = executor.client

    def waiting() -> int:
        return client.run_on_scheduler(
            lambda dask_scheduler: dask_scheduler.extensions["semaphores"].metrics["pending"][name]
        )

    held = Lock(name, scheduler_rpc=client.scheduler, loop=client.loop)
    assert held.acquire(timeout=10)  # as if another worker on this host were timing
    try:
        future = executor.submit(make_job(case, SOURCES["correct"]))
        deadline = time.monotonic() + RESULT_TIMEOUT
        while not waiting():  # the worker finished the accuracy run, now waits to time
            assert not future.done() and time.monotonic() < deadline
            time.sleep(0.05)
        assert not future.done()
    finally:
        held.release()
    outcome = future.result(timeout=RESULT_TIMEOUT)
    assert outcome.report["verdict"] == "PASS"
    assert len(outcome.report["runtime_samples"]) == case.evaluation_config.timed_repeats


def test_describe_lists_the_workers(cluster, executor):
    workers = sorted(cluster.scheduler_info["workers"])
    assert executor.describe() == {
        "executor": "dask",
        "scheduler": cluster.scheduler_address,
        "workers": workers,
        "nthreads": dict.fromkeys(workers, 1),
        "hosts": dict.fromkeys(workers, socket.gethostname()),
        "timed_repeats": "serialized per host",
    }


def test_harness_problem_on_the_worker_is_an_infrastructure_error(case, executor):
    job = make_job(case, SOURCES["correct"], case_id="no_such_case_001")
    outcome = executor.submit(job).result(timeout=RESULT_TIMEOUT)
    assert outcome.report is None
    assert outcome.infrastructure_error.startswith("EvaluationSetupError")
    assert "no_such_case_001" in outcome.infrastructure_error


def test_other_exceptions_on_the_worker_fail_the_future(case, executor):
    job = attrs.evolve(make_job(case, SOURCES["correct"]), thresholds={"tau_acc": 0.1})
    with pytest.raises(TypeError, match="tau_time"):  # ResolvedThresholds(**job.thresholds)
        executor.submit(job).result(timeout=RESULT_TIMEOUT)


def test_a_worker_without_the_track_is_refused(cluster):
    worker = next(iter(cluster.scheduler_info["workers"]))
    with pytest.raises(ExecutorUnavailable) as info:
        DaskExecutor(cluster.scheduler_address, track="no_such_track")
    message = str(info.value)
    assert worker in message
    assert "track 'no_such_track' is not registered" in message
    assert "pdeagent env setup no_such_track" in message


@pytest.mark.skipif(
    importlib.util.find_spec("pdeagent_dolfinx") is None, reason="DOLFINx plugin not installed"
)
def test_a_worker_failing_the_track_doctor_is_refused():
    env = {"PDEAGENT_DOLFINX_PYTHON": "/nonexistent/pdeagent-test/bin/python"}
    with local_cluster(env=env) as broken:
        worker = next(iter(broken.scheduler_info["workers"]))
        with pytest.raises(ExecutorUnavailable) as info:
            DaskExecutor(broken.scheduler_address, track="dolfinx")
    message = str(info.value)
    assert re.search(
        rf"{re.escape(worker)} \(.*\): doctor check failed: runtime interpreter", message
    )
    assert "pdeagent env setup dolfinx" in message


def test_a_scheduler_without_workers_is_refused():
    with local_cluster(n_workers=0) as empty:
        with pytest.raises(ExecutorUnavailable, match="has no workers"):
            DaskExecutor(empty.scheduler_address, track="numpy_fd", timeout_sec=1)


def test_an_unreachable_scheduler_is_refused_within_the_timeout():
    address = f"tcp://127.0.0.1:{closed_port()}"
    start = time.monotonic()
    with pytest.raises(ExecutorUnavailable, match="cannot reach the dask scheduler"):
        DaskExecutor(address, track="numpy_fd", timeout_sec=2)
    assert time.monotonic() - start < 10


def test_shutdown_with_cancel_settles_every_future(case, cluster):
    ex = DaskExecutor(cluster.scheduler_address, track="numpy_fd")
    futures = [ex.submit(make_job(case, SOURCES["raises"])) for _ in range(3)]
    ex.shutdown(cancel=True)
    done, not_done = concurrent.futures.wait(futures, timeout=30)
    assert not not_done
    for fut in done:
        if not fut.cancelled():
            assert fut.result().report["reason"] == "runtime_error"
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(make_job(case, SOURCES["raises"]))


def test_shutdown_without_cancel_waits_for_pending_jobs(case, cluster):
    ex = DaskExecutor(cluster.scheduler_address, track="numpy_fd")
    future = ex.submit(make_job(case, SOURCES["raises"]))
    ex.shutdown()
    assert future.done()
    assert future.result(timeout=0).report["reason"] == "runtime_error"
    assert ex.describe()["workers"] == sorted(cluster.scheduler_info["workers"])
