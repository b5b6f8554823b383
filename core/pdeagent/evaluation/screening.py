"""Screening: measure a ladder chain's rungs in one warm run of the trusted baseline.

Frontier-1 measures every rung as a pristine run of its own, so a rung costs the track's
start-up (interpreter, library import, kernel compilation) however small its solve: on
DOLFINx about 1.3 s for a 0.03 s solve. A track that answers
``pdeagent_screening_source`` gets its chains screened instead (rule frontier-2): one
execution per chain, through the same import stage, runner, sandbox and pristine (empty)
cache as any program. It solves the chain's first configuration once to warm up, then
solves each configuration the search asks for, one at a time, timing each solve with the
kernels warm (the driver and its file protocol:
:mod:`pdeagent.contracts.python_screening`). Here every rung's artifact is adapted,
checked and scored exactly as a graded run's, so each rung is a
:class:`~pdeagent.evaluation.frontier.Trial` with its true error and the time
``t_null + warm solve seconds``, and the search decides after each rung whether the walk
goes on, as it does for pristine rungs. The rung the search chooses is then measured
with the full pristine protocol (e_base, t_base), as under frontier-1.

The screening program is the track's own baseline, but what its run writes is read as
untrusted files all the same: bounded size, strict types; a malformed record is a
:class:`ScreeningError`, never a guess.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case
from pdeagent.evaluation.frontier import Trial
from pdeagent.evaluation.pipeline import (
    EvaluationSetupError,
    Executor,
    check_output,
    classify_execution,
)
from pdeagent.evaluation.reference import reference_fields
from pdeagent.fileio import atomic_write_bytes
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox
from pdeagent.scoring.metrics import case_error
from pdeagent.stages import Track

JOB_FILE = "screening_job.json"
WARM_UP_RECORD = "warm-up.json"
RECORD_MAX_BYTES = 100_000
POLL_SEC = 0.002
WALL_PER_RUNG_FACTOR = 4.0
"""A chain's run may last ``t_null + WALL_SLACK + WALL_PER_RUNG_FACTOR * budget * (rungs +
1)`` seconds before it is killed (the search stops a chain at its first rung over the
budget, so only a rung far over it meets the limit); the rung it was in then failed."""
WALL_SLACK = 60.0
WAIT_SEC = 600.0
"""How long the driver waits for the harness's next request before it ends the run."""
FAILURE_CHARS = 300


class ScreeningError(RuntimeError):
    """The screening run cannot be read (a harness or driver problem, not a trial)."""


def _read_record(path: Path) -> dict[str, Any]:
    if path.is_symlink() or not path.is_file():
        raise ScreeningError(f"{path.name} is not a regular file")
    with path.open("rb") as fh:
        raw = fh.read(RECORD_MAX_BYTES + 1)
    if len(raw) > RECORD_MAX_BYTES:
        raise ScreeningError(f"{path.name} is larger than {RECORD_MAX_BYTES} bytes")
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ScreeningError(f"{path.name} is not JSON: {exc}") from None
    if not isinstance(record, dict) or not isinstance(record.get("ok"), bool):
        raise ScreeningError(f"{path.name} must be an object with a boolean 'ok'")
    failure = record.get("failure")
    if record["ok"] == (failure is not None) or (
        failure is not None and not isinstance(failure, str)
    ):
        raise ScreeningError(f"{path.name}: a failure text exactly when not ok")
    seconds = record.get("seconds")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise ScreeningError(f"{path.name}: seconds must be a finite number >= 0")
    return record


class _Run:
    """One screening execution, running in a thread while the harness talks to it."""

    def __init__(self, executor: Executor, warm_up: dict[str, Any], wall: float):
        self.workdir = executor.workroot / f"exec-{executor.count}"
        self.executor = executor
        self.result: ExecutionResult | None = None
        self.crash: BaseException | None = None
        self.next_index = 0
        self.dead = False
        executor.limits = Limits(wall_time_sec=wall)
        job = json.dumps({"warm_up": warm_up, "wait_sec": WAIT_SEC}).encode("utf-8")

        def run() -> None:
            try:
                _, self.result = executor.run({JOB_FILE: job})
            except BaseException as exc:  # re-raised in the harness's thread
                self.crash = exc

        self.thread = threading.Thread(target=run, name="pdeagent-screening", daemon=True)
        self.thread.start()

    def request(self, payload: dict[str, Any]) -> int:
        # the executor makes the work dir (a copy of the build) and writes the job into
        # it before it starts the program: a request waits for that
        while not (self.workdir / JOB_FILE).exists() and self.thread.is_alive():
            time.sleep(POLL_SEC)
        index = self.next_index
        self.next_index += 1
        atomic_write_bytes(
            self.workdir / f"request-{index}.json", json.dumps(payload).encode("utf-8")
        )
        return index

    def wait_for(self, name: str) -> dict[str, Any] | None:
        """The record ``name`` once written, or None when the run ended without it."""
        path = self.workdir / name
        while True:
            if path.exists():
                return _read_record(path)
            if not self.thread.is_alive():
                self.thread.join()
                if self.crash is not None:
                    raise self.crash
                return _read_record(path) if path.exists() else None
            time.sleep(POLL_SEC)

    def finish(self, timeout: float) -> ExecutionResult | None:
        if self.thread.is_alive() and not self.dead:
            self.request({"stop": True})
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise ScreeningError("the screening run did not end when asked")
        if self.crash is not None:
            raise self.crash
        return self.result


class Screener:
    """Screens one case on one track. The screening program is prepared once
    (``workroot/build``); :meth:`start_chain` ends the current run, and the next
    :meth:`measure` starts a new one (``workroot/exec-N``, a fresh empty cache) that warms
    up on the chain's first configuration. Use as a context manager, or call
    :meth:`close`."""

    def __init__(
        self,
        host: PluginHost,
        track: Track,
        case: Case,
        source: str,
        *,
        sandbox: Sandbox,
        workroot: Path,
        t_null: float,
        dataset_dir: Path | None = None,
        reference: dict[str, Any] | None = None,
    ):
        self.host, self.track, self.case, self.t_null = host, track, case, t_null
        self.case_view = agent_view(case, track.name)
        workroot.mkdir(parents=True, exist_ok=True)
        build_dir = workroot / "build"
        build_dir.mkdir()
        hidden = [dataset_dir] if dataset_dir is not None else []
        prepared = host.call_track_hook(
            track, "pdeagent_prepare", source=source, build_dir=build_dir, sandbox=sandbox,
            hide=hidden,
        )  # fmt: skip
        if prepared is None:
            raise EvaluationSetupError(f"track {track.name!r} cannot prepare a program")
        if not prepared.ok:
            raise ScreeningError(
                f"the screening program of {case.id} on {track.name} does not prepare: "
                f"{prepared.reason}: {prepared.message}\n{prepared.log[-2000:]}"
            )
        self._executor = Executor(
            host, track, sandbox, workroot, prepared.build_dir, self.case_view,
            Limits(wall_time_sec=WALL_SLACK), hidden, None,
        )  # fmt: skip
        spec = case.case_spec
        self._scored = evaluation_mask(
            spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
        ).scored
        if reference is None:
            reference = reference_fields(case, dataset_dir)
        self._reference = reference
        self._run: _Run | None = None
        self._chain: list[dict[str, Any]] = []
        self._wall = WALL_SLACK
        self.runs = 0
        """Screening executions started (one per chain walked)."""

    def __enter__(self) -> Screener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_chain(self, chain: list[dict[str, Any]], budget: float) -> None:
        """The next rungs to measure belong to ``chain`` (walked with ``budget``)."""
        self.close()
        self._chain = [dict(c) for c in chain]
        self._wall = self.t_null + WALL_SLACK + WALL_PER_RUNG_FACTOR * budget * (len(chain) + 1)

    def close(self) -> None:
        """End the current run (asks the driver to stop, waits for it)."""
        run, self._run = self._run, None
        if run is None:
            return
        result = run.finish(self._wall)
        if result is not None and not result.ok and not run.dead:
            raise ScreeningError(
                f"the screening run of {self.case.id} failed after its last rung "
                f"(exit {result.exit_code}):\n{result.stderr[-2000:]}"
            )

    def measure(self, config: dict[str, Any]) -> Trial:
        """One rung, measured in the current chain's run (started on first use)."""
        trial = Trial(config=dict(config), error=None, time=None, t_null=self.t_null)
        if self._run is None:
            warm_up = self._chain[0] if self._chain else dict(config)
            self._run = _Run(self._executor, warm_up, self._wall)
            self.runs += 1
        run = self._run
        if run.dead:
            return self._failed(trial, "runtime_error: the chain's screening run already ended")
        index = run.request({"config": dict(config)})
        record = run.wait_for(f"rung-{index}.json")
        if record is None:
            run.dead = True
            return self._failed(trial, *self._why_ended(run))
        if not record["ok"]:
            return self._failed(trial, "runtime_error:", record["failure"])
        rung_dir = run.workdir / f"rung-{index}"
        if rung_dir.is_symlink() or not rung_dir.is_dir():
            raise ScreeningError(f"rung-{index} is not a directory")
        checked = check_output(self.host, self.track, self.case, rung_dir, self.case_view)
        if checked.fields is None:
            return self._failed(trial, f"{checked.reason}: {checked.message}")
        spec = self.case.case_spec
        error = float(case_error(checked.fields, self._reference, self._scored, spec.output))
        return Trial(
            config=dict(config), error=error, time=self.t_null + float(record["seconds"]),
            t_null=self.t_null,
        )  # fmt: skip

    def _why_ended(self, run: _Run) -> tuple[str, str]:
        """Why the run ended before the rung's record: a reason and its details."""
        warm = run.workdir / WARM_UP_RECORD
        if warm.exists():
            record = _read_record(warm)
            if not record["ok"]:
                return "runtime_error in the warm-up solve:", record["failure"]
        result = run.result
        if result is None:
            return "runtime_error: the screening run ended without a result", ""
        assert self._executor.last_invocation is not None
        failed = classify_execution(result, self._executor.last_invocation)
        if failed is None:
            return "runtime_error: the screening run ended before the rung was solved", ""
        return f"{failed[0]}:", failed[1]

    @staticmethod
    def _failed(trial: Trial, why: str, detail: str = "") -> Trial:
        """A failed trial: ``why`` in full, then as much of ``detail``'s end (a traceback's
        last lines say most) as fits in FAILURE_CHARS."""
        head, tail = f"F-Exec (screening) {why} ", detail.strip()
        if len(head) + len(tail) > FAILURE_CHARS:
            tail = "..." + tail[-max(0, FAILURE_CHARS - len(head) - 3) :]
        return Trial(
            config=trial.config, error=None, time=None, t_null=trial.t_null, failure=head + tail
        )


__all__ = ["JOB_FILE", "Screener", "ScreeningError"]
