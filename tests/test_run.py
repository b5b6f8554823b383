"""``pdeagent run`` end to end on the installed sample track (no FEM library needed):
the baseline passes, a deliberately broken replay run shows every failure stage,
feedback mode feeds a failure back, kill -9 then --resume finishes the same run
without redoing finished work, corrupted reports are redone, infrastructure
failures are redone only with --rerun-errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.runs.executors import LocalExecutor
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import read_attempt
from pdeagent.runs.report import load_runs, summarize
from pdeagent.runs.runner import Run, write_manifest

from .conftest import SAMPLE_CASES, SAMPLE_TRACK_DIR

pytestmark = pytest.mark.sandbox

BASELINE = (SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py").read_text()
CHEAT = (SAMPLE_TRACK_DIR / "solvers" / "boundary_cheat.py").read_text()
RAISES = "def solve(case_spec):\n    raise RuntimeError('the model forgot the mesh')\n"
SLOW = BASELINE + "\nimport time as _t\n_t.sleep(2.5)\n"


def make_cases(tmp_path: Path, n: int = 1, t_base: float = 10.0) -> Path:
    """The sample case ``n`` times under distinct ids, with the given t_base."""
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    th = record["evaluation_metadata"]["thresholds"]["numpy_fd"]
    th.update(t_base=t_base, tau_time=3 * t_base)
    lines = []
    for i in range(n):
        record["id"] = f"sample_poisson_copy_{i:03d}"
        lines.append(json.dumps(record))
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_one_task(
    host, config, cases, out: Path, caller, model: str, *, resume: bool = False
) -> Path:
    """Run the first case of ``cases`` for ``model`` through a real :class:`Run` on one
    local worker (a fresh run folder with its manifest unless ``resume``); ``out``."""
    executor = LocalExecutor(1)
    if not resume:
        out.mkdir(parents=True, exist_ok=True)
        write_manifest(out, config, host, executor, config.sandbox)
    run = Run(host, config, cases, out, caller=caller, executor=executor)
    try:
        run.run_task(model, run.cases[0])
    finally:
        executor.shutdown()
    return out


def fenced(code: str) -> str:
    return f"Here is my solver.\n\n```python\n{code}```\n"


def invoke(cli, *args: str):
    return cli.invoke(app, ["run", *args], catch_exceptions=False)


def reports(run: Path) -> dict[tuple[str, str, int], object]:
    out = {}
    for path in run.glob("*/*/*/attempt-*/report.json"):
        r = read_attempt(path)
        assert r is not None, path
        out[(r.model, r.case_id, r.attempt)] = r
    return out


def test_baseline_run_passes_and_records_everything(cli, tmp_path):
    cases = make_cases(tmp_path, n=2)
    run = tmp_path / "run"
    result = invoke(cli, "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
                    "--out", str(run), "--no-cache")  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["config"]["case_ids"] == ["sample_poisson_copy_000", "sample_poisson_copy_001"]
    assert manifest["config"]["models"] == ["baseline"]
    assert manifest["executor"]["executor"] == "local" and manifest["machine"]["cores"]
    assert manifest["sandbox"] and manifest["pdeagent_version"]
    assert manifest["limits"]["address_space_bytes"] > 0 and manifest["limits"]["wall_time_sec"]
    assert {p["name"] for p in manifest["plugins"]} >= {"provider-baseline", "sample_fd"}
    got = reports(run)
    assert len(got) == 2 and all(r.verdict == "PASS" for r in got.values())
    r = got[("baseline", "sample_poisson_copy_000", 0)]
    assert 0 < r.error < 0.01 and r.runtime_sec > 0 and len(r.runtime_samples) == 2
    assert r.family == "poisson" and r.geometry == "unit_square" and r.thresholds["e_base"]
    folder = attempt_dir(run, "numpy_fd", "baseline", "sample_poisson_copy_000", 0)
    names = {p.name for p in folder.iterdir()}
    assert names >= {"prompt.md", "response.md", "call.json", "solver.py", "report.json",
                     "execution.log", "artifacts"}  # fmt: skip
    assert (folder / "artifacts" / "solution.npz").stat().st_size > 0
    assert "PASS" in result.output


def _replay_dir(tmp_path: Path, answers: dict[tuple[str, str, int], str]) -> Path:
    saved = tmp_path / "saved"
    for (model, case_id, attempt), text in answers.items():
        folder = attempt_dir(saved, "numpy_fd", model, case_id, attempt)
        folder.mkdir(parents=True)
        (folder / "response.md").write_text(text)
    saved.mkdir(exist_ok=True)
    return saved


def test_a_broken_replay_run_shows_every_failure_stage(cli, tmp_path):
    cases = make_cases(tmp_path, n=1, t_base=0.5)  # tau_time 1.5 s: the sleeper fails time
    cid = "sample_poisson_copy_000"
    saved = _replay_dir(
        tmp_path,
        {
            ("m-pass", cid, 0): fenced(BASELINE),
            ("m-exec", cid, 0): fenced(RAISES),
            ("m-acc", cid, 0): fenced(CHEAT),
            ("m-time", cid, 0): fenced(SLOW),
            ("m-gen", cid, 0): "I would use a finite-difference scheme, but no code here.",
            # m-none has no saved response: a provider failure (infrastructure)
        },
    )
    run = tmp_path / "run"
    models = ["m-pass", "m-exec", "m-acc", "m-time", "m-gen", "m-none"]
    args = ["-t", "numpy_fd", "-p", "replay", "-O", f"dir={saved}", "--cases-file", str(cases),
            "--out", str(run)]  # fmt: skip
    for m in models:
        args += ["-m", m]
    result = invoke(cli, *args)
    assert result.exit_code == 0, result.output
    got = {k[0]: r for k, r in reports(run).items()}
    assert {m: (got[m].verdict, got[m].reason) for m in models} == {
        "m-pass": ("PASS", None),
        "m-exec": ("F-Exec", "runtime_error"),
        "m-acc": ("F-Acc", "error_above_tau"),
        "m-time": ("F-Time", "runtime_above_tau"),
        "m-gen": ("F-Gen", "no_code"),
        "m-none": ("F-Gen", "provider_error"),
    }
    assert got["m-none"].infrastructure and not got["m-gen"].infrastructure
    assert got["m-acc"].error > got["m-acc"].thresholds["tau_acc"]
    assert got["m-time"].runtime_sec > got["m-time"].thresholds["tau_time"]
    assert "forgot the mesh" in got["m-exec"].stderr_excerpt
    # the accuracy run's artifacts are kept, also when no timed repeat followed it
    for m in ("m-pass", "m-acc"):
        kept = run / "numpy_fd" / m / cid / "attempt-0" / "artifacts" / "solution.npz"
        assert kept.stat().st_size > 0, m
    stages = {row.series: row for row in summarize(load_runs([run])).stages}
    assert {m: {k: v for k, v in stages[m].counts.items() if v} for m in models[:5]} == {
        "m-pass": {"PASS": 1}, "m-exec": {"F-Exec": 1}, "m-acc": {"F-Acc": 1},
        "m-time": {"F-Time": 1}, "m-gen": {"F-Gen": 1},
    }  # fmt: skip
    assert stages["m-none"].infrastructure == 1 and stages["m-none"].graded == 0

    # The missing response appears; --rerun-errors redoes only the infrastructure failure.
    folder = attempt_dir(saved, "numpy_fd", "m-none", cid, 0)
    folder.mkdir(parents=True)
    (folder / "response.md").write_text(fenced(BASELINE))
    before = {m: (run / "numpy_fd" / m / cid / "attempt-0" / "report.json").stat().st_mtime_ns
              for m in models}  # fmt: skip
    common.reset_host()
    assert invoke(cli, "--resume", "--out", str(run)).exit_code == 0
    assert reports(run)[("m-none", cid, 0)].verdict == "F-Gen"  # plain resume keeps it
    common.reset_host()
    result = invoke(cli, "--resume", "--rerun-errors", "--out", str(run))
    assert result.exit_code == 0, result.output
    again = {k[0]: r for k, r in reports(run).items()}
    assert again["m-none"].verdict == "PASS"
    after = {m: (run / "numpy_fd" / m / cid / "attempt-0" / "report.json").stat().st_mtime_ns
             for m in models}  # fmt: skip
    assert all(before[m] == after[m] for m in models if m != "m-none")


def test_feedback_mode_feeds_the_failure_back_and_stops_at_a_pass(cli, tmp_path):
    cases = make_cases(tmp_path, n=1)
    cid = "sample_poisson_copy_000"
    saved = _replay_dir(
        tmp_path,
        {
            ("m", cid, 0): fenced(RAISES),
            ("m", cid, 1): fenced(BASELINE),
            ("m", cid, 2): fenced(CHEAT),
        },
    )
    run = tmp_path / "run"
    result = invoke(cli, "-t", "numpy_fd", "-p", "replay", "-O", f"dir={saved}", "-m", "m",
                    "--mode", "feedback", "--attempts", "3", "--cases-file", str(cases),
                    "--out", str(run))  # fmt: skip
    assert result.exit_code == 0, result.output
    got = reports(run)
    assert sorted(k[2] for k in got) == [0, 1]  # stopped at the first PASS
    assert got[("m", cid, 0)].verdict == "F-Exec" and got[("m", cid, 1)].verdict == "PASS"
    second = (attempt_dir(run, "numpy_fd", "m", cid, 1) / "prompt.md").read_text()
    first = (attempt_dir(run, "numpy_fd", "m", cid, 0) / "prompt.md").read_text()
    assert "forgot the mesh" in second and first not in second  # feedback only
    # One conversation: the original prompt, the reply verbatim (the program), feedback.
    call = json.loads((attempt_dir(run, "numpy_fd", "m", cid, 1) / "call.json").read_text())
    assert [(m["role"], m["content"]) for m in call["messages"]] == [
        ("user", first), ("assistant", fenced(RAISES)), ("user", second),
    ]  # fmt: skip
    for secret in ("0.001", "e_base", "t_base", "tau_acc", "tau_time"):
        assert secret not in second


def test_corrupted_report_is_redone(cli, tmp_path):
    cases = make_cases(tmp_path, n=2)
    run = tmp_path / "run"
    args = ("-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases), "--out", str(run))
    assert invoke(cli, *args).exit_code == 0
    path = attempt_dir(run, "numpy_fd", "baseline", "sample_poisson_copy_001", 0) / "report.json"
    path.write_text(path.read_text()[:50])  # truncated
    other = attempt_dir(run, "numpy_fd", "baseline", "sample_poisson_copy_000", 0) / "report.json"
    untouched = other.stat().st_mtime_ns
    common.reset_host()
    assert invoke(cli, "--resume", "--out", str(run)).exit_code == 0
    assert read_attempt(path).verdict == "PASS"
    assert other.stat().st_mtime_ns == untouched


def test_run_refuses_bad_input_in_one_line(cli, tmp_path):
    cases = make_cases(tmp_path)
    run = tmp_path / "run"
    bad = [
        (["-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases), "--family", "wave"],
         "no cases of family wave"),
        (["-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases), "--cases", "nope"],
         "unknown case id"),
        (["-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases), "--mode", "solo"],
         "--mode must be one of"),
        (["-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases), "--workers", "64"],
         "CPUs"),
        (["--resume", "--out", str(tmp_path / "nothing")], "holds no run"),
        (["-t", "numpy_fd", "-p", "replay", "--cases-file", str(cases)], "dir=PATH"),
    ]  # fmt: skip
    for args, message in bad:
        common.reset_host()
        result = (
            invoke(cli, *args, "--out", str(run)) if "--out" not in args else invoke(cli, *args)
        )
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
    assert not (run / "run.json").exists()


def _run_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pdeagent.cli.main", "run", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _verdicts(run: Path) -> dict:
    return {k: (r.verdict, r.reason, r.error) for k, r in reports(run).items()}


@pytest.mark.slow
def test_kill_9_then_resume_gives_the_uninterrupted_result(tmp_path):
    cases = make_cases(tmp_path, n=6)
    common_args = ["-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases), "--no-cache",
                   "-m", "a", "-m", "b"]  # fmt: skip
    whole = tmp_path / "whole"
    proc = _run_cli(*common_args, "--out", str(whole))
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()

    cut = tmp_path / "cut"
    proc = _run_cli(*common_args, "--out", str(cut))
    deadline = time.monotonic() + 120
    while len(list(cut.glob("*/*/*/attempt-*/report.json"))) < 3:
        assert time.monotonic() < deadline and proc.poll() is None, "run ended too early"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    finished = {p: p.stat().st_mtime_ns for p in cut.glob("*/*/*/attempt-*/report.json")}
    assert 3 <= len(finished) < 12

    proc = _run_cli("--resume", "--out", str(cut))
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    assert all(p.stat().st_mtime_ns == t for p, t in finished.items())  # not redone
    assert _verdicts(cut) == _verdicts(whole) and len(_verdicts(cut)) == 12

    def final_report(run: Path) -> dict:
        data = summarize(load_runs([run])).to_dict()
        return {k: data[k] for k in ("pass_rates", "stages", "usage")}

    assert final_report(cut) == final_report(whole)
    assert len(json.loads((cut / "run.json").read_text())["resumes"]) == 1


@pytest.mark.slow
def test_a_run_on_a_dask_cluster_gives_the_local_verdicts(cli, tmp_path):
    from .test_dask_executor import local_cluster

    cases = make_cases(tmp_path, n=1)
    cid = "sample_poisson_copy_000"
    answers = {("m-pass", cid, 0): fenced(BASELINE), ("m-exec", cid, 0): fenced(RAISES),
               ("m-acc", cid, 0): fenced(CHEAT)}  # fmt: skip
    saved = _replay_dir(tmp_path, answers)
    args = ["-t", "numpy_fd", "-p", "replay", "-O", f"dir={saved}", "--cases-file", str(cases),
            "-m", "m-pass", "-m", "m-exec", "-m", "m-acc"]  # fmt: skip
    assert invoke(cli, *args, "--out", str(tmp_path / "local")).exit_code == 0
    with local_cluster() as cluster:
        common.reset_host()
        result = invoke(cli, *args, "--out", str(tmp_path / "dask"), "--executor", "dask",
                        "--scheduler", cluster.scheduler_address)  # fmt: skip
        assert result.exit_code == 0, result.output
    local, dask = _verdicts(tmp_path / "local"), _verdicts(tmp_path / "dask")
    assert {k: v[:2] for k, v in local.items()} == {k: v[:2] for k, v in dask.items()}
    assert dask[("m-pass", cid, 0)][0] == "PASS"
    assert dask[("m-pass", cid, 0)][2] == pytest.approx(local[("m-pass", cid, 0)][2], rel=1e-12)
    manifest = json.loads((tmp_path / "dask" / "run.json").read_text())
    assert manifest["executor"]["executor"] == "dask"


@pytest.mark.slow
def test_dask_executor_without_a_reachable_scheduler_is_one_line(cli, tmp_path):
    cases = make_cases(tmp_path, n=1)
    result = invoke(cli, "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
                    "--out", str(tmp_path / "run"), "--executor", "dask",
                    "--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "2")  # fmt: skip
    assert result.exit_code == 2 and "127.0.0.1:9" in result.output
    assert "within 2 s" in result.output
    assert not (tmp_path / "run" / "run.json").exists()


def test_cases_without_thresholds_are_refused_before_any_call(cli, tmp_path):
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    record["evaluation_metadata"]["thresholds"] = {}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(record) + "\n")
    run = tmp_path / "run"
    result = invoke(cli, "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
                    "--out", str(run))  # fmt: skip
    assert result.exit_code == 2 and "no calibrated thresholds" in result.output
    assert not run.exists()
    result = invoke(cli, "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
                    "--out", str(run), "--tau-acc", "0.01", "--tau-time", "30")  # fmt: skip
    assert result.exit_code == 0, result.output
    [report] = reports(run).values()
    assert report.verdict == "PASS" and report.thresholds["source"] == "explicit"
