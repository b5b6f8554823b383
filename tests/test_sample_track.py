"""End to end through the sandbox with the installed third-party sample track.

The sample track (tests/sample_track, found only through its entry point) grades
a correct finite-difference solver PASS and a boundary-sampling cheat F-Acc, and
hostile or broken solvers get the right F-Exec reason while the harness goes on.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cli.main import app
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.sandbox import default_sandbox
from pdeagent.sandbox.base import ExecutionResult, Limits

from .conftest import SAMPLE_TRACK_DIR

pytestmark = pytest.mark.sandbox

CASES = SAMPLE_TRACK_DIR / "cases.jsonl"
CASE_ID = "sample_poisson_unit_square_001"
SOLVERS = SAMPLE_TRACK_DIR / "solvers"
BASELINE = SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py"
KNOWN = {"numpy_fd", "dolfinx", "firedrake", "dealii"}


@pytest.fixture
def workroot():
    with tempfile.TemporaryDirectory(prefix="pdeagent-test-", dir="/var/tmp") as d:
        yield Path(d) / "eval"


def grade(host, track, case, source, workroot, **policy_kw):
    policy = GradingPolicy(**policy_kw)
    return evaluate_source(
        host,
        track,
        case,
        source,
        sandbox=default_sandbox(),
        workroot=workroot,
        thresholds=resolve_thresholds(case, track.name, policy),
        policy=policy,
        limits=Limits(wall_time_sec=policy.timeout_sec or 60.0, address_space_bytes=4 * 1024**3),
    )


def test_correct_solver_passes_and_its_error_is_second_order(host, track, case, workroot):
    report = grade(host, track, case, (BASELINE).read_text(), workroot)
    assert report.verdict == "PASS", report
    # 5-point FD on h = 1/40 for sin(pi x) sin(pi y): error ~ pi^2 h^2 / 12 relative, ~ 5e-4.
    assert 1e-5 < report.error < 2e-3
    assert len(report.runtime_samples) == case.evaluation_config.timed_repeats
    assert report.runtime_sec == pytest.approx(float(np.median(report.runtime_samples)))
    assert report.thresholds["source"] == "dataset"


def test_boundary_cheat_fails_accuracy(host, track, case, workroot):
    report = grade(host, track, case, (SOLVERS / "boundary_cheat.py").read_text(), workroot)
    assert report.verdict == "F-Acc"
    assert report.error > 0.1
    assert report.runtime_samples == []  # no timed repeats after a failed accuracy gate


def test_tiny_time_threshold_gives_f_time(host, track, case, workroot):
    report = grade(
        host,
        track,
        case,
        (BASELINE).read_text(),
        workroot,
        tau_acc=1e-2,
        tau_time=1e-4,
    )
    assert report.verdict == "F-Time"
    assert report.runtime_sec > 1e-4


def test_pdeagent_prepare_rejects_a_syntax_error_before_running(host, track, case, workroot):
    report = grade(host, track, case, "def solve(case_spec):\n    return (\n", workroot)
    assert (report.verdict, report.reason) == ("F-Exec", "import_error")
    assert "SyntaxError" in report.message
    assert not (workroot / "exec-0").exists()


def test_pdeagent_prepare_requires_a_solve_function(host, track, workroot):
    result = host.hook.pdeagent_prepare(
        track=track, source="x = 1\n", build_dir=workroot, sandbox=default_sandbox(), hide=[]
    )
    assert not result.ok and result.reason == "import_error"
    assert "solve" in result.message


def test_pdeagent_invocation_of_the_sample_track(host, track, case, tmp_path):
    inv = host.hook.pdeagent_invocation(
        track=track, workdir=tmp_path, case_view=agent_view(case, "numpy_fd")
    )
    assert inv.argv[1:] == ["pdeagent_runner.py", "solver.py"]
    assert "pdeagent_runner.py" in inv.files
    assert inv.exit_code_reasons[3] == "import_error"
    assert any(Path(p).exists() for p in inv.expose)
    other = host.hook.pdeagent_invocation(
        track=type(track)("other", "X", "python", "s.py"), workdir=tmp_path, case_view={}
    )
    assert other is None


def test_import_failure_at_runtime_is_import_error(host, track, case, workroot):
    src = "import no_such_module_for_pdeagent\n\ndef solve(case_spec):\n    pass\n"
    report = grade(host, track, case, src, workroot)
    assert (report.verdict, report.reason) == ("F-Exec", "import_error")
    assert "no_such_module_for_pdeagent" in report.stderr_excerpt


def test_exception_in_solve_is_runtime_error(host, track, case, workroot):
    src = "def solve(case_spec):\n    raise RuntimeError('diverged at step 3')\n"
    report = grade(host, track, case, src, workroot)
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert "diverged at step 3" in report.stderr_excerpt


def test_pdeagent_adapt_output_reports_a_missing_artifact(host, track, case, workroot):
    report = grade(host, track, case, "def solve(case_spec):\n    pass\n", workroot)
    assert (report.verdict, report.reason) == ("F-Exec", "missing_artifact")


def test_pdeagent_adapt_output_refuses_a_symlinked_solution(host, track, case, tmp_path):
    (tmp_path / "elsewhere.npz").write_bytes(b"x")
    (tmp_path / "solution.npz").symlink_to(tmp_path / "elsewhere.npz")
    out = host.hook.pdeagent_adapt_output(
        track=track, workdir=tmp_path, case_view=agent_view(case, "numpy_fd")
    )
    assert out.npz_path is None and out.reason == "bad_artifact"


def _writer(body: str) -> str:
    return textwrap.dedent(
        """
        import numpy as np

        def solve(case_spec):
            g = case_spec["eval_grid"]
            x = np.linspace(0, 1, g["nx"]); y = np.linspace(0, 1, g["ny"])
            X, Y = np.meshgrid(x, y)
            u = np.sin(np.pi * X) * np.sin(np.pi * Y) + X * Y
        """
    ) + textwrap.indent(textwrap.dedent(body), "    ")


def test_wrong_shape_is_bad_shape(host, track, case, workroot):
    report = grade(
        host, track, case, _writer("np.savez('solution.npz', x=x, y=y, u=u.T[:5])"), workroot
    )
    assert (report.verdict, report.reason) == ("F-Exec", "bad_shape")
    assert "(41, 41)" in report.message


def test_nan_inside_the_domain_is_non_finite(host, track, case, workroot):
    body = "u[20, 20] = np.nan\nnp.savez('solution.npz', x=x, y=y, u=u)"
    report = grade(host, track, case, _writer(body), workroot)
    assert (report.verdict, report.reason) == ("F-Exec", "non_finite")


def test_pdeagent_diagnostics_reads_meta_json_without_trusting_it(host, track, case, workroot):
    body = """
    np.savez('solution.npz', x=x, y=y, u=u)
    import json
    json.dump({"wall_time_sec": 0.001, "status": "ok",
               "solver_info": {"dofs": 1681, "ksp_type": "preonly", "nested": {"a": 1}}},
              open('meta.json', 'w'))
    """
    report = grade(host, track, case, _writer(body), workroot)
    assert report.verdict == "PASS"
    assert report.diagnostics["reported_wall_time_sec"] == 0.001
    assert report.diagnostics["solver_info"] == {"dofs": 1681, "ksp_type": "preonly"}
    wall = report.accuracy_run_wall_sec
    assert report.diagnostics["work_rate_dof_steps_per_sec"] == pytest.approx(1681 / wall)
    assert min(report.runtime_samples) > 0.001 or report.runtime_sec > 0.001


def test_pdeagent_diagnostics_hook_direct(host, track, case, tmp_path):
    (tmp_path / "meta.json").write_text("[1, 2, 3]")
    result = ExecutionResult(0, None, False, False, 0.1, "", "")
    merged = host.hook.pdeagent_diagnostics(
        track=track, workdir=tmp_path, case_view=agent_view(case, "numpy_fd"), execution=result
    )
    assert {"meta_error": "meta.json is not a JSON object"} in merged


# --- hostile solvers: stopped, graded F-Exec or F-Acc, harness keeps going -------------


def test_reading_the_case_file_fails(host, track, case, workroot):
    target = CASES.resolve()
    src = textwrap.dedent(
        f"""
        def solve(case_spec):
            data = open({str(target)!r}).read()
            raise SystemExit("LEAKED " + data[:50])
        """
    )
    report = grade(host, track, case, src, workroot)
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert "LEAKED" not in report.stderr_excerpt
    assert "sin(pi*x)*sin(pi*y) + x*y" not in report.stderr_excerpt + report.stdout_excerpt


def test_reading_a_dataset_and_reference_outside_the_repo_fails(host, track, case, workroot):
    with tempfile.TemporaryDirectory(prefix="pdeagent-data-", dir="/var/tmp") as data:
        data_dir = Path(data)
        data_dir.chmod(0o755)  # readable by anyone on the host: only the sandbox hides it
        (data_dir / "cases.jsonl").write_text(CASES.read_text())
        np.savez(data_dir / "reference.npz", u=np.full((3, 3), 42.0))
        (data_dir / "reference.npz").chmod(0o644)
        src = textwrap.dedent(
            f"""
            import os

            def solve(case_spec):
                found = []
                for name in ("cases.jsonl", "reference.npz"):
                    try:
                        found.append(open(os.path.join({data!r}, name), "rb").read(20))
                    except OSError as exc:
                        print("blocked", name, type(exc).__name__)
                if found:
                    print("LEAKED", found)
                raise SystemExit(1)
            """
        )
        policy = GradingPolicy()
        report = evaluate_source(
            host,
            track,
            case,
            src,
            sandbox=default_sandbox(),
            workroot=workroot,
            thresholds=resolve_thresholds(case, track.name, policy),
            dataset_dir=data_dir,
        )
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert "LEAKED" not in report.stdout_excerpt
    assert report.stdout_excerpt.count("blocked") == 2


def test_opening_a_socket_fails(host, track, case, workroot):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    src = textwrap.dedent(
        f"""
        import socket

        def solve(case_spec):
            socket.create_connection(("127.0.0.1", {port}), timeout=3)
        """
    )
    try:
        report = grade(host, track, case, src, workroot)
    finally:
        server.close()
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert "Error" in report.stderr_excerpt  # ConnectionRefused / Network unreachable


def test_setsid_child_outliving_the_timeout_is_killed(host, track, case, workroot):
    token = f"pdeagent-orphan-{os.getpid()}-{time.monotonic_ns()}"
    src = textwrap.dedent(
        f"""
        import os, time

        def solve(case_spec):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv("/bin/sleep", ["/bin/sleep", "1000", {token!r}])
                os._exit(0)
            time.sleep(1000)
        """
    )
    t0 = time.monotonic()
    report = grade(host, track, case, src, workroot, timeout_sec=3.0)
    assert time.monotonic() - t0 < 20
    assert (report.verdict, report.reason) == ("F-Exec", "timeout")
    time.sleep(0.2)
    alive = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if token in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    alive.append(pid)
            except OSError:
                pass
    assert alive == []


# --- CLI -----------------------------------------------------------------------------


@pytest.fixture
def cli(cli, monkeypatch):
    monkeypatch.setenv("PDEAGENT_CASES", str(CASES))
    return cli


def test_cli_evaluate_pass_and_f_acc(cli, tmp_path):
    ok = cli.invoke(
        app,
        [
            "evaluate",
            "--track",
            "numpy_fd",
            "--case",
            CASE_ID,
            str(BASELINE),
            "--json",
            "--workdir",
            str(Path(tempfile.mkdtemp(dir="/var/tmp")) / "w"),
        ],
    )
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert data["verdict"] == "PASS" and data["schema_version"] == 1
    bad = cli.invoke(
        app, ["evaluate", "-t", "numpy_fd", "-c", CASE_ID, str(SOLVERS / "boundary_cheat.py")]
    )
    assert bad.exit_code == 1
    assert "F-Acc" in bad.stdout


def test_pdeagent_prompt_pieces_reach_the_prompt(cli, host, track, case):
    pieces = host.hook.pdeagent_prompt_pieces(
        track=track, case_view=agent_view(case, "numpy_fd"), mode="template"
    )
    assert "def solve(case_spec: dict) -> None" in pieces.contract
    assert "raise NotImplementedError" in pieces.scaffold
    result = cli.invoke(app, ["prompt", "--track", "numpy_fd", "--case", CASE_ID])
    assert result.exit_code == 0, result.output
    assert "def solve(case_spec: dict) -> None" in result.stdout
    assert "sin(pi*x)*sin(pi*y) + x*y" not in result.stdout  # the manufactured solution
    again = cli.invoke(app, ["prompt", "--track", "numpy_fd", "--case", CASE_ID])
    assert again.stdout == result.stdout


def test_cache_dir_is_shared_by_the_executions_of_one_submission(host, track, case, workroot):
    body = """
    np.savez('solution.npz', x=x, y=y, u=u)
    import os
    path = os.path.join(os.environ["XDG_CACHE_HOME"], "runs")
    count = int(open(path).read()) if os.path.exists(path) else 0
    open(path, "w").write(str(count + 1))
    """
    report = grade(host, track, case, _writer(body), workroot)
    assert report.verdict == "PASS", report
    runs = int((workroot / "cache" / "runs").read_text())
    assert runs == 1 + case.evaluation_config.timed_repeats


def test_stale_artifacts_can_never_be_graded(host, track, case, workroot):
    # a correct run leaves solution.npz behind in its own directory ...
    good = grade(host, track, case, (BASELINE).read_text(), workroot)
    assert good.verdict == "PASS"
    assert (workroot / "exec-0" / "solution.npz").exists()
    # ... a work root that is not empty is refused outright ...
    from pdeagent.evaluation.pipeline import EvaluationSetupError

    with pytest.raises(EvaluationSetupError, match="not empty"):
        grade(host, track, case, "def solve(case_spec):\n    pass\n", workroot)
    # ... and a crashing submission in a fresh root finds nothing to be graded on.
    crashed = grade(
        host,
        track,
        case,
        "def solve(case_spec):\n    raise SystemExit(3)\n",
        workroot.parent / "again",
    )
    assert (crashed.verdict, crashed.reason) == ("F-Exec", "runtime_error")
    lazy = grade(host, track, case, "def solve(case_spec):\n    pass\n", workroot.parent / "third")
    assert (lazy.verdict, lazy.reason) == ("F-Exec", "missing_artifact")
