"""`pdeagent run` and a track that cannot grade here (issue #21): a failed doctor check
stops the run before any work with one line naming `pdeagent env setup`, and a run in
which nothing could be graded (every outcome an infrastructure failure) exits 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pdeagent import hookimpl
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.plugins import load_plugins
from pdeagent.runs import executors
from pdeagent.stages import DoctorCheck, TrackUnavailable

from .conftest import SAMPLE_CASES


class Broken:
    """Extra hooks for the sample track (numpy_fd): a doctor, and optionally a runtime
    that is gone at compile time (the stage hook raises TrackUnavailable)."""

    def __init__(self, *, doctor_ok: bool = False, runtime_gone: bool = False) -> None:
        self.doctor_ok = doctor_ok
        self.runtime_gone = runtime_gone
        self.doctor_calls = 0

    @hookimpl
    def pdeagent_doctor(self, track):
        if track.name != "numpy_fd":
            return None
        self.doctor_calls += 1
        return [
            DoctorCheck("runtime interpreter", self.doctor_ok, "/nowhere/bin/python",
                        None if self.doctor_ok else "run `pdeagent env setup numpy_fd`"),
        ]  # fmt: skip

    @hookimpl(tryfirst=True)
    def pdeagent_prepare(self, track, source, build_dir, sandbox, hide):
        if track.name != "numpy_fd" or not self.runtime_gone:
            return None
        raise TrackUnavailable("the NumPy runtime is gone: run `pdeagent env setup numpy_fd`")


@pytest.fixture
def with_plugin(monkeypatch):
    def install(plugin: Broken) -> Broken:
        host = load_plugins(extra_plugins=[plugin], strict=True)
        monkeypatch.setattr(common, "_host", host)
        monkeypatch.setattr(executors, "_host", lambda: host)  # the grading side too
        return plugin

    yield install
    common.reset_host()


def _cases(tmp_path, n: int = 2):
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    lines = []
    for i in range(n):
        record["id"] = f"sample_copy_{i}"
        lines.append(json.dumps(record))
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tmp_path, *extra):
    args = ["run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(_cases(tmp_path)),
            "--out", str(tmp_path / "run"), "--no-cache", *extra]  # fmt: skip
    return CliRunner().invoke(app, args)


def test_a_track_failing_its_doctor_stops_the_run_before_any_work(with_plugin, tmp_path):
    plugin = with_plugin(Broken(doctor_ok=False))
    result = _run(tmp_path)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and "\n" not in err, err
    assert "track 'numpy_fd' is not ready" in err and "runtime interpreter" in err
    assert "run `pdeagent env setup numpy_fd`" in err
    assert plugin.doctor_calls == 1
    assert not (tmp_path / "run" / "run.json").exists()  # nothing started


def test_a_doctor_raising_track_unavailable_is_one_line(with_plugin, tmp_path):
    class Unavailable(Broken):
        @hookimpl
        def pdeagent_doctor(self, track):
            if track.name != "numpy_fd":
                return None
            raise TrackUnavailable("no NumPy runtime here")

    with_plugin(Unavailable())
    result = _run(tmp_path)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert "\n" not in err and "no NumPy runtime here" in err
    assert "pdeagent env setup numpy_fd" in err


@pytest.mark.sandbox
def test_a_run_in_which_nothing_could_be_graded_exits_2(with_plugin, tmp_path):
    """The doctor passes, but the runtime is gone when the cases are compiled: every case
    is an infrastructure ERROR. The summary is still printed (and saved), then the one-line
    error and exit code 2; the resume hint names --rerun-errors."""
    with_plugin(Broken(doctor_ok=True, runtime_gone=True))
    result = _run(tmp_path, "--json")
    assert result.exit_code == 2, result.output
    summary = json.loads(result.stdout)
    assert summary["counts"]["infrastructure"] == 2 and summary["pass_rate"] is None
    err = result.stderr.strip().splitlines()[-1]
    assert err.startswith("error: no case could be graded: 2 of 2 outcomes"), err
    assert "the NumPy runtime is gone" in err
    assert f"pdeagent run --resume --rerun-errors --out {tmp_path / 'run'}" in err

    # the runtime is back: the resumed run grades every case and exits 0
    common.reset_host()
    with_plugin(Broken(doctor_ok=True, runtime_gone=False))
    again = CliRunner().invoke(
        app, ["run", "--resume", "--rerun-errors", "--out", str(tmp_path / "run"), "--json"]
    )
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["counts"]["PASS"] == 2


@pytest.mark.sandbox
def test_a_ready_track_runs_as_before(with_plugin, tmp_path):
    plugin = with_plugin(Broken(doctor_ok=True))
    result = _run(tmp_path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"]["PASS"] == 2 and plugin.doctor_calls == 1
