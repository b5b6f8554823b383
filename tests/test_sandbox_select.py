"""Choosing a sandbox backend: names, $PDEAGENT_SANDBOX, the strongest default, errors,
and what a run records and keeps on --resume."""

from __future__ import annotations

import json
import os
import signal

import pytest
from typer.testing import CliRunner

from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.evaluation.pipeline import classify_execution
from pdeagent.sandbox.base import ExecutionResult, SandboxError
from pdeagent.sandbox.cgroups import RunCgroup
from pdeagent.sandbox.cgroups import unavailable_reason as cgroup_unavailable
from pdeagent.sandbox.select import (
    BACKENDS,
    available_backends,
    backend_status,
    get_sandbox,
    resolve_backend,
)
from pdeagent.stages import Invocation

from .conftest import SAMPLE_CASES

pytestmark = pytest.mark.sandbox


def test_status_names_every_backend_and_the_default_is_the_strongest(monkeypatch):
    monkeypatch.delenv("PDEAGENT_SANDBOX", raising=False)
    status = backend_status()
    assert list(status) == list(BACKENDS) == ["docker", "bwrap", "local"]
    available = available_backends()
    assert available, status
    assert resolve_backend() == available[0]
    assert get_sandbox().name == available[0]
    for why in status.values():
        assert why is None or (isinstance(why, str) and why)


def test_env_var_and_names(monkeypatch):
    monkeypatch.setenv("PDEAGENT_SANDBOX", "local")
    assert resolve_backend() == "local" and get_sandbox().name == "local"
    with pytest.raises(SandboxError, match="unknown sandbox backend 'chroot'"):
        resolve_backend("chroot")
    monkeypatch.setenv("PDEAGENT_SANDBOX", "chroot")
    with pytest.raises(SandboxError, match="unknown"):
        resolve_backend()


def test_a_named_backend_that_is_missing_is_an_error_not_a_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no unshare on PATH
    with pytest.raises(SandboxError, match=r"'bwrap' is not available: .*not found"):
        resolve_backend("bwrap")
    with pytest.raises(SandboxError, match="'local' is not available"):
        resolve_backend("local")


def test_a_violation_is_f_exec_sandbox_violation():
    result = ExecutionResult(
        exit_code=None, signal=signal.SIGKILL, timed_out=False, memory_exceeded=False,
        wall_time_sec=1.0, stdout="", stderr="", violation="the work dir outgrew its limit",
    )  # fmt: skip
    assert not result.ok
    reason, message = classify_execution(result, Invocation(argv=["x"]))
    assert reason == "sandbox_violation" and "outgrew" in message


@pytest.mark.skipif(cgroup_unavailable() is not None, reason="no writable cgroup hierarchy")
def test_run_cgroup_limits_and_cleanup():
    from pdeagent.sandbox.base import Limits

    group = RunCgroup.create(Limits(memory_bytes=300 * 1024**2, processes=40))
    assert group is not None
    try:
        for path in group.groups:
            assert path.is_dir()
        if group.version == 1:
            mem, pids = group.groups
            assert int((mem / "memory.limit_in_bytes").read_text()) == 300 * 1024**2
            assert (pids / "pids.max").read_text().strip() == str(40 + 16)
        argv = group.join_command(["/bin/sh", "-c", "cat /proc/self/cgroup"])
        import subprocess

        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        assert group.groups[0].name in out
        assert group.oom_kills() == 0
    finally:
        group.close()
    assert not any(p.exists() for p in group.groups)


def _invoke(*args: str):
    common.reset_host()
    return CliRunner().invoke(app, list(args))


def test_run_records_the_backend_and_resume_keeps_it(tmp_path, monkeypatch):
    monkeypatch.delenv("PDEAGENT_SANDBOX", raising=False)
    out = tmp_path / "run"
    base = ("run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(SAMPLE_CASES),
            "--limit", "1", "--no-cache", "--out", str(out))  # fmt: skip
    result = _invoke(*base, "--sandbox", "local")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["sandbox"] == "local" and manifest["config"]["sandbox"] == "local"
    report = next(out.glob("*/*/*/attempt-0/report.json"))
    assert json.loads(report.read_text())["verdict"] == "PASS"
    result = _invoke("run", "--resume", "--out", str(out), "--sandbox", "bwrap")
    assert result.exit_code == 2 and "differs from the run's 'local'" in result.output
    result = _invoke("run", "--resume", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert json.loads((out / "run.json").read_text())["config"]["sandbox"] == "local"


def test_bad_sandbox_names_are_one_line_errors(tmp_path):
    result = _invoke("run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(SAMPLE_CASES),
                     "--out", str(tmp_path / "r"), "--sandbox", "chroot")  # fmt: skip
    assert result.exit_code == 2 and "unknown sandbox backend 'chroot'" in result.output
    assert not (tmp_path / "r" / "run.json").exists()
    result = _invoke("env", "setup", "--sandbox", "chroot")
    assert result.exit_code == 2 and "--sandbox must be one of" in result.output
    result = _invoke("env", "setup")
    assert result.exit_code == 2 and "give a TRACK or --sandbox" in result.output


def test_sandbox_status_json(monkeypatch):
    monkeypatch.delenv("PDEAGENT_SANDBOX", raising=False)
    result = _invoke("sandbox", "status", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [b["name"] for b in data["backends"]] == list(BACKENDS)
    assert data["default"] == next(b["name"] for b in data["backends"] if b["available"])
    assert os.environ.get("PDEAGENT_SANDBOX") is None


def test_sandbox_check_grades_attacks_and_reports_the_checks(tmp_path):
    result = _invoke("sandbox", "check", "--track", "numpy_fd", "--backend", "local",
                     "--attack", "read_case_file", "--attack", "nan_everywhere",
                     "--cases-file", str(SAMPLE_CASES), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    outcomes = {o["attack"]: o for o in json.loads(result.output)}
    assert set(outcomes) == {"read_case_file", "nan_everywhere"}
    assert (outcomes["nan_everywhere"]["verdict"], outcomes["nan_everywhere"]["reason"]) == (
        "F-Exec", "non_finite",
    )  # fmt: skip
    for outcome in outcomes.values():
        assert outcome["backend"] == "local" and outcome["secrets_found"] == []
        assert outcome["checks"] and all(outcome["checks"].values()), outcome["problems"]
    result = _invoke("sandbox", "check", "--track", "numpy_fd", "--attack", "no_such_attack",
                     "--cases-file", str(SAMPLE_CASES))  # fmt: skip
    assert result.exit_code == 2 and "no python attack named 'no_such_attack'" in result.output
