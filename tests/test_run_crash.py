"""Fault tolerance of ``pdeagent run`` (issue #9): the harness SIGKILLed at any of its
file writes resumes to the uninterrupted result, losing and duplicating nothing; a
corrupted ``report.json`` is detected and redone, never trusted.

Crashes are deterministic: ``PDEAGENT_CRASH_AT_WRITE=N`` makes the harness kill
itself at its N-th atomic write (odd N before the rename, even N after it), and
``PDEAGENT_COUNT_WRITES=FILE`` lists the writes of a run (see
:mod:`pdeagent.fileio`). The runs use the sample track (tests/sample_track) and the
offline ``baseline`` provider.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pdeagent import fileio
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.fileio import COUNT_WRITES_ENV, CRASH_AT_WRITE_ENV, atomic_write_bytes
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import AttemptReport, attempt_to_dict, read_attempt, write_attempt
from pdeagent.runs.report import load_run

from .test_run import _verdicts, make_cases, reports

pytestmark = pytest.mark.sandbox

MODELS = ("a", "b")
N_CASES = 2
CASE_IDS = [f"sample_poisson_copy_{i:03d}" for i in range(N_CASES)]
N_ATTEMPTS = len(MODELS) * N_CASES
FILES_PER_ATTEMPT = 8
"""prompt.md, response.md, solver.py, call.json, execution.log, artifacts/solution.npz,
artifacts/meta.json, report.json: one write each in an uninterrupted run."""
ALL_KILL_POINTS_ENV = "PDEAGENT_TEST_ALL_KILL_POINTS"
MAX_KILL_POINTS = 14
SUMMARY_KEYS = ("pass_rates", "stages")


# --------------------------------------------------------------------------- helpers


def _environ(extra: dict[str, str] | None) -> dict[str, str]:
    """This environment without the crash hooks, plus ``extra``."""
    hooks = (CRASH_AT_WRITE_ENV, COUNT_WRITES_ENV)
    return {k: v for k, v in os.environ.items() if k not in hooks} | (extra or {})


def _pdeagent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m pdeagent.cli.main ARGS`` with the crash hooks of this environment
    removed and ``env`` added; whatever the run left running is killed with it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pdeagent.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=_environ(env),
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        try:  # a harness killed mid-evaluation leaves its sandboxed program running
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode())


def _run_args(cases: Path) -> list[str]:
    args = ["run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
            "--no-cache", "--gen-concurrency", "1"]  # fmt: skip
    for model in MODELS:
        args += ["-m", model]
    return args


def _writes(log: Path) -> dict[int, Path]:
    """The writes listed by PDEAGENT_COUNT_WRITES: number -> target."""
    if not log.exists():
        return {}
    numbered = [line.split("\t", 1) for line in log.read_text().splitlines()]
    return {int(n): Path(p) for n, p in numbered}


def _summary(run: Path) -> dict:
    """``pdeagent report RUN --json``: its pass rates and stage counts."""
    result = CliRunner().invoke(app, ["report", str(run), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return {key: data[key] for key in SUMMARY_KEYS}


def _snapshot(run: Path, name: str) -> dict[Path, tuple[bytes, int]]:
    paths = [p for p in run.glob(f"*/*/*/attempt-*/{name}") if p.is_file()]
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in paths}


def kill_points(writes: int) -> list[int]:
    """Every write 1..W when W <= MAX_KILL_POINTS or ALL_KILL_POINTS_ENV is set;
    otherwise MAX_KILL_POINTS of them: the first two and the last two (before and
    after a rename each), the rest evenly spread, as many odd (before a rename) as
    even (after one)."""
    if writes <= MAX_KILL_POINTS or os.environ.get(ALL_KILL_POINTS_ENV):
        return list(range(1, writes + 1))
    chosen = {1, 2, writes - 1, writes}
    step = (writes - 4) / (MAX_KILL_POINTS - 4)
    k = 0
    while len(chosen) < MAX_KILL_POINTS:
        n = 3 + round(k * step)
        if n % 2 != k % 2:  # alternate: before a rename, after a rename, ...
            n += 1 if n + 1 < writes - 1 else -1
        chosen.add(n)
        k += 1
    return sorted(chosen)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run, its writes and its summary."""
    root = tmp_path_factory.mktemp("whole")
    cases = make_cases(root, n=N_CASES)
    run, log = root / "run", root / "writes.log"
    result = _pdeagent(*_run_args(cases), "--out", str(run), env={COUNT_WRITES_ENV: str(log)})
    assert result.returncode == 0, result.stderr
    writes = _writes(log)
    files = {p for p in run.rglob("*") if p.is_file()}
    assert sorted(writes) == list(range(1, len(writes) + 1))
    assert set(writes.values()) == files  # every file written once, nothing else
    assert len(writes) == 1 + N_ATTEMPTS * FILES_PER_ATTEMPT
    verdicts = _verdicts(run)
    assert len(verdicts) == N_ATTEMPTS and {v[0] for v in verdicts.values()} == {"PASS"}
    return {"cases": cases, "run": run, "writes": len(writes), "verdicts": verdicts,
            "summary": _summary(run)}  # fmt: skip


# ------------------------------------------------------------------- the write hooks


def _write_four(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    code = (
        "import sys\nfrom pathlib import Path\nfrom pdeagent.fileio import atomic_write_bytes\n"
        "for i in range(1, 5):\n"
        "    atomic_write_bytes(Path(sys.argv[1]) / f'f{i}', b'new')\n"
    )
    return subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=_environ(env),
                          capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_crash_hook_kills_before_or_after_the_rename(tmp_path, n):
    for i in range(1, 5):
        (tmp_path / f"f{i}").write_bytes(b"old")
    log = tmp_path / "writes.log"
    result = _write_four(tmp_path, {CRASH_AT_WRITE_ENV: str(n), COUNT_WRITES_ENV: str(log)})
    assert result.returncode == -signal.SIGKILL, result.stderr
    contents = [(tmp_path / f"f{i}").read_bytes() for i in range(1, 5)]
    renamed = n if n % 2 == 0 else n - 1  # odd: the n-th file keeps its old content
    assert contents == [b"new"] * renamed + [b"old"] * (4 - renamed)
    assert len(list(tmp_path.glob(".tmp-*"))) == n % 2  # the fsynced temp file stays
    assert list(_writes(log)) == list(range(1, renamed + 1))


def test_count_hook_lists_every_write_and_no_hook_means_no_count(tmp_path):
    log = tmp_path / "writes.log"
    result = _write_four(tmp_path, {COUNT_WRITES_ENV: str(log)})
    assert result.returncode == 0, result.stderr
    assert _writes(log) == {i: tmp_path / f"f{i}" for i in range(1, 5)}
    assert _write_four(tmp_path, {}).returncode == 0
    assert len(_writes(log)) == 4


@pytest.mark.parametrize("value", ["0", "-3", "two", "1.5", ""])
def test_a_malformed_crash_point_is_refused(tmp_path, monkeypatch, value):
    monkeypatch.setattr(fileio, "_hooks", None)
    monkeypatch.setattr(fileio, "_writes", 0)
    monkeypatch.setenv(CRASH_AT_WRITE_ENV, value)
    with pytest.raises(ValueError, match=f"{CRASH_AT_WRITE_ENV} must be an integer >= 1"):
        atomic_write_bytes(tmp_path / "f", b"x")
    assert not (tmp_path / "f").exists()


def test_kill_points_cover_both_sides_of_renames():
    assert kill_points(9) == list(range(1, 10))
    points = kill_points(33)
    assert len(points) == MAX_KILL_POINTS == len(set(points))
    assert points[:2] == [1, 2] and points[-2:] == [32, 33]
    assert sum(n % 2 for n in points) == MAX_KILL_POINTS // 2
    assert all(1 <= n <= 33 for n in points)


# ------------------------------------------------------------ SIGKILL, then resume


@pytest.mark.slow
def test_sigkill_at_any_write_then_resume_gives_the_uninterrupted_result(whole, tmp_path):
    """For each kill point N (all of 1..W if W <= MAX_KILL_POINTS or
    PDEAGENT_TEST_ALL_KILL_POINTS=1 is set, else the spread of :func:`kill_points`;
    W = 33 here: run.json, then 8 files for each of 4 attempts), the harness dies of
    SIGKILL at its N-th write and ``run --resume`` finishes the run: the same verdicts,
    reasons and errors as the uninterrupted run; one report per attempt, none lost,
    none duplicated; every report and call record that existed before the resume
    kept byte for byte (finished work not redone, no provider call repeated); no
    stray temp file read as a report; the same pass rates and stage counts.

    N = 1 dies before run.json exists: nothing is started, ``--resume`` refuses (no
    configuration to resume) and a fresh ``run`` into the same directory finishes."""
    args = _run_args(whole["cases"])
    points = kill_points(whole["writes"])
    for n in points:
        run, log = tmp_path / f"kill-{n}", tmp_path / f"writes-{n}.log"
        hooks = {CRASH_AT_WRITE_ENV: str(n), COUNT_WRITES_ENV: str(log)}
        crashed = _pdeagent(*args, "--out", str(run), env=hooks)
        assert crashed.returncode == -signal.SIGKILL, (n, crashed.stderr)
        written = _writes(log)
        if n % 2:  # killed before its rename: write n never landed, its temp file stays
            assert n not in written and list(run.rglob(".tmp-*")), n
        else:
            assert n in written and written[n].is_file(), n

        reports_before = _snapshot(run, "report.json")
        calls_before = _snapshot(run, "call.json")
        for path in reports_before:  # atomic: a report is whole or absent, never half
            assert read_attempt(path) is not None, (n, path)

        if not (run / "run.json").exists():
            assert n == 1 and not reports_before and not calls_before
            refused = _pdeagent("run", "--resume", "--out", str(run))
            assert refused.returncode == 2 and "holds no run" in refused.stderr, refused.stderr
            finished = _pdeagent(*args, "--out", str(run))
            resumes = 0
        else:
            finished = _pdeagent("run", "--resume", "--out", str(run))
            resumes = 1
        assert finished.returncode == 0, (n, finished.stderr)

        assert _verdicts(run) == whole["verdicts"], n
        report_files = sorted(run.glob("*/*/*/attempt-*/report.json"))
        attempt_dirs = sorted(p for p in run.glob("*/*/*/attempt-*") if p.is_dir())
        assert len(report_files) == len(attempt_dirs) == N_ATTEMPTS, (n, attempt_dirs)
        assert {p.parent for p in report_files} == set(attempt_dirs)
        for path, (data, mtime) in reports_before.items():
            assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime, (n, path)
        for path, (data, _) in calls_before.items():
            assert path.read_bytes() == data, (n, path)  # the provider was not called again
        graded = load_run(run)
        assert graded.unreadable == () and len(graded.reports) == N_ATTEMPTS, n
        assert len(json.loads((run / "run.json").read_text())["resumes"]) == resumes
        assert _summary(run) == whole["summary"], n


# ----------------------------------------------------------------- corrupted reports


def _edit(change):
    def corrupt(path: Path) -> None:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))  # allow_nan: NaN is written as NaN

    return corrupt


def _replace_with_dir(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "report.json").write_text("{}")


def _other_attempts_report(path: Path) -> None:
    other = attempt_dir(path.parents[4], "numpy_fd", MODELS[1], CASE_IDS[1], 0) / "report.json"
    shutil.copyfile(other, path)


def _symlink_to_a_copy(path: Path) -> None:
    copy = path.parents[4] / "elsewhere.json"
    shutil.copyfile(path, copy)
    path.unlink()
    path.symlink_to(copy)


CORRUPTIONS = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "empty": lambda p: p.write_bytes(b""),
    "invalid_json": lambda p: p.write_bytes(p.read_bytes().replace(b'"PASS"', b"PASS", 1)),
    "not_utf8": lambda p: p.write_bytes(b"\xff\xfe" + p.read_bytes()),
    "a_list": lambda p: p.write_text(json.dumps([json.loads(p.read_text())])),
    "no_verdict": _edit(lambda d: d.pop("verdict")),
    "unknown_verdict": _edit(lambda d: d.update(verdict="PASSED")),
    "nan_error": _edit(lambda d: d.update(error=math.nan)),
    "string_for_a_bool": _edit(lambda d: d.update(infrastructure="false")),
    "foreign_schema": _edit(lambda d: d.update(schema_version=99)),
    "directory": _replace_with_dir,
    "another_attempts_report": _other_attempts_report,
    "symlink": _symlink_to_a_copy,
}


def _target(run: Path) -> Path:
    return attempt_dir(run, "numpy_fd", MODELS[0], CASE_IDS[0], 0) / "report.json"


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_read_attempt_never_trusts_a_corrupted_report(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"schema_version": 1}))
    for model in MODELS:
        for case_id in CASE_IDS:
            report = AttemptReport(track="numpy_fd", provider="baseline", model=model,
                                   case_id=case_id, attempt=0, mode="single", verdict="PASS",
                                   error=1e-3, runtime_sec=0.3, runtime_samples=[0.3])  # fmt: skip
            write_attempt(attempt_dir(run, "numpy_fd", model, case_id, 0) / "report.json", report)
    path = _target(run)
    assert read_attempt(path) is not None and len(load_run(run).reports) == N_ATTEMPTS
    CORRUPTIONS[kind](path)
    assert read_attempt(path) is None
    graded = load_run(run)
    assert graded.unreadable == (path.relative_to(run).as_posix(),)
    assert len(graded.reports) == N_ATTEMPTS - 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_a_corrupted_report_is_redone_and_nothing_else(whole, tmp_path, kind):
    """Resume redoes exactly the spoiled attempt (same verdict, reason and error,
    measured anew) and keeps the other reports byte for byte."""
    run = tmp_path / "run"
    shutil.copytree(whole["run"], run, symlinks=True)  # copy2: mtimes kept
    path = _target(run)
    original = read_attempt(path)
    CORRUPTIONS[kind](path)
    others = {p: s for p, s in _snapshot(run, "report.json").items() if p != path}
    assert len(others) == N_ATTEMPTS - 1

    common.reset_host()
    try:
        result = CliRunner().invoke(app, ["run", "--resume", "--out", str(run)])
    finally:
        common.reset_host()
    assert result.exit_code == 0, result.output

    assert path.is_file() and not path.is_symlink()
    redone = read_attempt(path)
    assert redone is not None and redone.evaluation_wall_sec > 0  # graded again
    assert (redone.model, redone.case_id, redone.attempt) == (MODELS[0], CASE_IDS[0], 0)
    assert (redone.verdict, redone.reason, redone.error) == (
        original.verdict,
        original.reason,
        original.error,
    )
    assert redone.runtime_samples != original.runtime_samples  # measured anew
    for other, (data, mtime) in others.items():
        assert other.read_bytes() == data and other.stat().st_mtime_ns == mtime, other
    assert _verdicts(run) == whole["verdicts"]
    assert len(reports(run)) == N_ATTEMPTS
    assert load_run(run).unreadable == ()


def test_a_non_finite_error_is_trusted_only_as_its_own_verdict(tmp_path):
    path = attempt_dir(tmp_path, "numpy_fd", "m", "c", 0) / "report.json"
    report = AttemptReport(track="numpy_fd", provider="p", model="m", case_id="c", attempt=0,
                           mode="single", verdict="F-Acc", reason="error_not_finite",
                           error=math.inf)  # fmt: skip
    write_attempt(path, report)
    assert read_attempt(path) == report  # an overflowing error is graded, not corrupt
    for verdict, reason in (("PASS", None), ("F-Acc", "error_above_tau")):
        data = attempt_to_dict(report) | {"verdict": verdict, "reason": reason}
        path.write_text(json.dumps(data))
        assert read_attempt(path) is None, verdict
    path.write_text(json.dumps(attempt_to_dict(report) | {"error": -math.inf}))
    assert read_attempt(path) is None
