"""The deal.II compile stage and a real program through the whole pipeline: compile
in the sandbox with the PCH, adapt the binary grid, grade; Q2 converges at order 3;
compiler errors are summarised; evaluator data cannot be #included."""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from dealii_harness import PROGRAMS, toolchain

from pdeagent.cases.io import find_case, load_cases
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox, resolve_backend
from pdeagent_dealii import TRACK, summarize_compiler_errors

pytestmark = [pytest.mark.dealii, pytest.mark.slow]

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
POISSON = (PROGRAMS / "poisson_unit_box.cc").read_text()


@pytest.fixture(scope="module")
def setup():
    toolchain()
    host = load_plugins(strict=True)
    cases = load_cases(DATASET)
    return host, host.get_track("dealii"), cases


def grade(setup, case_id: str, source: str, dataset_dir: Path = DATASET.parent):
    host, track, cases = setup
    case = find_case(cases, case_id)
    policy = GradingPolicy(tau_acc=1e-2, tau_time=60.0, timed_repeats=1)
    with tempfile.TemporaryDirectory(prefix="pdeagent-dealii-", dir="/var/tmp") as tmp:
        return evaluate_source(
            host, track, case, source,
            sandbox=default_sandbox(), workroot=Path(tmp) / "eval",
            thresholds=resolve_thresholds(case, track.name, policy), policy=policy,
            dataset_dir=dataset_dir,
        )  # fmt: skip


def with_refinement(level: int) -> str:
    return POISSON.replace("std::stoi(argv[3]) : 4", f"std::stoi(argv[3]) : {level}")


def test_poisson_program_compiles_runs_and_passes_in_2d(setup):
    report = grade(setup, "poisson_unit_square_smooth_mms_000", POISSON)
    assert report.verdict == "PASS", report
    assert report.error < 1e-4
    assert 0 < report.compile_time_sec < 120
    assert report.diagnostics["solver_info"]["element_degree"] == 2


def test_q2_converges_at_order_three(setup):
    coarse = grade(setup, "poisson_unit_square_smooth_mms_000", with_refinement(2))
    fine = grade(setup, "poisson_unit_square_smooth_mms_000", with_refinement(3))
    assert coarse.error is not None and fine.error is not None
    order = math.log2(coarse.error / fine.error)
    assert 2.5 < order < 3.6, (coarse.error, fine.error, order)


def test_poisson_program_in_3d(setup):
    _, _, cases = setup
    case = next(
        c for c in cases
        if "dealii" in c.supported_libraries and c.family == "poisson"
        and c.case_spec.domain.type == "unit_cube" and not c.case_spec.bc.neumann
        and not c.case_spec.bc.robin and not c.case_spec.bc.periodic
    )  # fmt: skip
    report = grade(setup, case.id, with_refinement(3))
    assert report.verdict == "PASS", report
    assert report.error < 1e-3


def test_compile_error_is_summarised_with_file_and_line(setup):
    broken = POISSON.replace("FE_Q<dim> fe(2);", "FE_Q<dim> fe(2)\n  int oops = ;")
    report = grade(setup, "poisson_unit_square_smooth_mms_000", broken)
    assert report.verdict == "F-Exec" and report.reason == "compile_error"
    assert re.search(r"solver\.cc:\d+:\d+: error:", report.message), report.message
    assert len(report.message) <= 2000


def probe(path: Path) -> str:
    """A program that fails to compile exactly when the compiler can see ``path``."""
    return f'#if __has_include("{path}")\n#error "visible to the compiler"\n#endif\n' + (
        "int main() { return 0; }\n"
    )


def test_evaluator_data_cannot_be_included(setup):
    case_id = "poisson_unit_square_smooth_mms_000"
    visible = grade(setup, case_id, probe(Path("/usr/include/stdio.h")))
    assert visible.reason == "compile_error" and "visible to the compiler" in visible.message
    reference = sorted((DATASET.parent / "references").glob("*.npz"))[0]
    for secret in (DATASET.resolve(), reference.resolve()):
        hidden = grade(setup, case_id, probe(secret))
        assert hidden.reason == "missing_artifact", hidden.message  # compiled, wrote nothing
    # A dataset outside the checkout is hidden from the compiler too (the prepare hook
    # receives the evaluation's hidden paths).
    with tempfile.TemporaryDirectory(prefix="pdeagent-secret-", dir="/var/tmp") as tmp:
        secret = Path(tmp) / "reference.npz"
        secret.write_bytes(b"secret")
        secret.chmod(0o644)
        Path(tmp).chmod(0o755)
        assert grade(setup, case_id, probe(secret), dataset_dir=Path(tmp)).reason == (
            "missing_artifact"
        )
        control = grade(setup, case_id, probe(secret), dataset_dir=DATASET.parent).reason
        # docker and bwrap show a whitelist of top-level trees (bwrap: SHOWN_TOP_LEVEL),
        # so /var/tmp is not shown at all; only the local backend shows it
        if resolve_backend() in ("docker", "bwrap"):
            assert control == "missing_artifact"
        else:  # the control: the same file, not hidden, is visible
            assert control == "compile_error"


def test_summary_of_a_long_error_log_is_bounded():
    log = "\n".join(f"solver.cc:{i}:1: error: boom {i}" for i in range(100))
    text = summarize_compiler_errors(log)
    assert text.count("error: boom") == 8 and "92 more errors" in text
    assert TRACK.language == "cpp"


def test_an_identical_source_is_compiled_once(setup):
    host, track, _ = setup
    scratch = Path(tempfile.mkdtemp(prefix="pdeagent-dealii-cache-", dir="/var/tmp"))
    source = POISSON + f"\n// unique {scratch.name}\n"
    first, second = scratch / "a", scratch / "b"
    first.mkdir()
    second.mkdir()
    a = host.hook.pdeagent_prepare(
        track=track, source=source, build_dir=first, sandbox=default_sandbox(), hide=[]
    )
    b = host.hook.pdeagent_prepare(
        track=track, source=source, build_dir=second, sandbox=default_sandbox(), hide=[]
    )
    assert a.ok and b.ok and "reused" not in a.log and "reused" in b.log
    assert (first / "solver").read_bytes() == (second / "solver").read_bytes()
    assert b.compile_time_sec == a.compile_time_sec
    broken = source.replace("int main", "int main(")
    for _ in range(2):  # failures are never cached
        d = Path(tempfile.mkdtemp(dir=scratch))
        r = host.hook.pdeagent_prepare(
            track=track, source=broken, build_dir=d, sandbox=default_sandbox(), hide=[]
        )
        assert not r.ok and r.reason == "compile_error" and "reused" not in r.log
    shutil.rmtree(scratch, ignore_errors=True)
