"""Every model failure is counted (SPEC §1, issue #20 item 6), end to end: the official
openai SDK talks HTTP to a scripted server on 127.0.0.1, a real run on the sample
track grades what comes back, and the report counts it.

- a 400 ``context_length_exceeded``, a content-filtered reply and a reply without code
  are F-Gen and count in the pass-rate denominator;
- 429 then 503 until the retries run out is an infrastructure failure: left out of the
  denominator and redone by a plain ``--resume`` (model failures are not);
- in feedback mode an infrastructure failure of attempt 1 does not replace attempt
  0's verdict; ``--resume`` continues the case from it;
- a run graded with thresholds calibrated on another machine is warned about, on the
  console and in report.json, with the calibration's sandbox backend.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from pdeagent.calls import CallPolicy, ProviderCaller
from pdeagent.cases.io import load_cases
from pdeagent.machine import fingerprint
from pdeagent.providers import ProviderSettings
from pdeagent.runs.executors import LocalExecutor
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import read_attempt
from pdeagent.runs.report import load_runs, summarize
from pdeagent.runs.report_render import print_report, write_outputs
from pdeagent.runs.runner import Run, RunConfig, write_manifest
from pdeagent.sandbox.select import resolve_backend

from .conftest import REPO_ROOT, SAMPLE_CASES, SAMPLE_TRACK_DIR

sys.path.insert(0, str(REPO_ROOT / "plugins" / "providers" / "tests"))
from wire_server import Reply, WireServer, openai_completion, openai_error

from pdeagent_provider_openai import OpenAIProvider

pytestmark = pytest.mark.sandbox

BASELINE = (SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py").read_text()
RAISES = "def solve(case_spec):\n    raise RuntimeError('the model forgot the mesh')\n"
MODEL = "model-x"
KNOWN = {"numpy_fd", "dolfinx", "firedrake", "dealii"}


def fenced(code: str) -> str:
    return f"Here is my solver.\n\n```python\n{code}```\n"


def ok(code: str) -> Reply:
    return Reply(200, openai_completion(fenced(code)))


def busy(status: int) -> Reply:
    return Reply(status, openai_error("server_error", "overloaded, try later"))


CONTEXT_LENGTH = Reply(
    400,
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your "
            "messages resulted in 9100 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
)
FILTERED = Reply(200, openai_completion("```python\nimport num", stop="content_filter"))
NO_CODE = Reply(200, openai_completion("I would use finite differences; no code, sorry."))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # no local calibration
    s = WireServer().start()
    yield s
    s.stop()


def make_cases(tmp_path: Path, n: int, calibrated_on: dict[str, Any] | None = None) -> Path:
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    if calibrated_on is not None:
        record["evaluation_metadata"]["thresholds"]["numpy_fd"]["calibrated_on"] = calibrated_on
    lines = []
    for i in range(n):
        record["id"] = f"c{i}"
        lines.append(json.dumps(record))
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def make_run(
    host, server: WireServer, cases_file: Path, out: Path, *, mode: str = "single",
    attempts: int = 1, resume: bool = False,
) -> Run:  # fmt: skip
    cases = load_cases(cases_file, known_libraries=KNOWN)
    config = RunConfig(
        track="numpy_fd", provider="openai", models=[MODEL], cases_file=str(cases_file),
        case_ids=[c.id for c in cases], mode=mode, attempts=attempts,
        base_url=server.url + "/v1", request_timeout_sec=5.0, max_retries=2,
        response_cache=False, sandbox=resolve_backend(None),
    )  # fmt: skip
    caller = ProviderCaller(
        OpenAIProvider(),
        ProviderSettings(base_url=config.base_url, timeout_sec=config.request_timeout_sec),
        policy=CallPolicy(max_retries=2, backoff_base_sec=0.01, backoff_cap_sec=0.02),
    )
    executor = LocalExecutor(1)
    if not resume:
        out.mkdir(parents=True, exist_ok=True)
        write_manifest(out, config, host, executor, config.sandbox)
    return Run(host, config, cases, out, caller=caller, executor=executor)


def run_in_order(run: Run) -> None:
    """Each case in order (the scripted replies are taken in request order)."""
    try:
        for case in run.cases:
            run.run_task(MODEL, case)
    finally:
        run.executor.shutdown()


def report(out: Path, case_id: str, attempt: int = 0):
    r = read_attempt(attempt_dir(out, "numpy_fd", MODEL, case_id, attempt) / "report.json")
    assert r is not None
    return r


def stage_row(out: Path):
    [row] = summarize(load_runs([out])).stages
    return row


def test_model_failures_count_transient_failures_do_not_and_resume_redoes_them(
    host, server, tmp_path
):
    cases = make_cases(tmp_path, 5)
    out = tmp_path / "run"
    server.script(
        ok(BASELINE),  # c0: PASS
        CONTEXT_LENGTH,  # c1: F-Gen context_length
        FILTERED,  # c2: F-Gen content_filter
        NO_CODE,  # c3: F-Gen no_code
        Reply(429, openai_error("rate_limit_error", "slow down")),  # c4: transient,
        busy(503),  # twice more (max_retries=2): infrastructure
        busy(503),
    )
    run_in_order(make_run(host, server, cases, out))
    assert len(server.seen) == 7
    got = {cid: report(out, cid) for cid in ("c0", "c1", "c2", "c3", "c4")}
    assert {cid: (r.verdict, r.reason, r.infrastructure) for cid, r in got.items()} == {
        "c0": ("PASS", None, False),
        "c1": ("F-Gen", "context_length", False),
        "c2": ("F-Gen", "content_filter", False),
        "c3": ("F-Gen", "no_code", False),
        "c4": ("F-Gen", "provider_transient", True),
    }
    assert "maximum context length" in got["c1"].message
    call = json.loads((attempt_dir(out, "numpy_fd", MODEL, "c2", 0) / "call.json").read_text())
    assert call["error_kind"] == "generation_failure" and call["failure_reason"] == "content_filter"
    assert call["output_tokens"] == 80  # the filtered reply was billed: its tokens are kept
    row = stage_row(out)
    assert (row.graded, row.infrastructure) == (4, 1)
    assert (row.pass_rate.count, row.pass_rate.total) == (1, 4)
    assert row.pass_rate.value == pytest.approx(0.25)
    assert row.counts["F-Gen"] == 3
    assert row.fgen_reasons == {"content_filter": 1, "context_length": 1, "no_code": 1}

    # --resume (no --rerun-errors) redoes the transient failure only.
    server.script(ok(BASELINE))
    run_in_order(make_run(host, server, cases, out, resume=True))
    assert len(server.seen) == 8  # one new request: the model failures were not redone
    assert report(out, "c4").verdict == "PASS"
    row = stage_row(out)
    assert (row.graded, row.infrastructure) == (5, 0)
    assert row.pass_rate.value == pytest.approx(2 / 5)


def test_feedback_infrastructure_failure_keeps_the_earlier_verdict(host, server, tmp_path):
    cases = make_cases(tmp_path, 1)
    out = tmp_path / "run"
    server.script(ok(RAISES), busy(503), busy(529), busy(503))
    run_in_order(make_run(host, server, cases, out, mode="feedback", attempts=3))
    first, second = report(out, "c0", 0), report(out, "c0", 1)
    assert (first.verdict, first.reason) == ("F-Exec", "runtime_error")
    assert second.infrastructure and second.reason == "provider_transient"
    assert not attempt_dir(out, "numpy_fd", MODEL, "c0", 2).exists()  # stopped there
    row = stage_row(out)
    assert (row.graded, row.infrastructure, row.interrupted) == (1, 0, 1)
    assert row.counts["F-Exec"] == 1 and row.pass_rate.value == 0.0

    server.script(ok(BASELINE))
    run_in_order(make_run(host, server, cases, out, mode="feedback", attempts=3, resume=True))
    assert report(out, "c0", 1).verdict == "PASS"
    prompt = (attempt_dir(out, "numpy_fd", MODEL, "c0", 1) / "prompt.md").read_text()
    assert "forgot the mesh" in prompt  # attempt 1 got attempt 0's feedback
    row = stage_row(out)
    assert (row.graded, row.infrastructure, row.interrupted) == (1, 0, 0)
    assert row.pass_rate.value == 1.0


def _report_outputs(out: Path, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    summary = summarize(load_runs([out]))
    buffer = io.StringIO()
    print_report(summary, Console(file=buffer, width=400, color_system=None))
    write_outputs(summary, tmp_path / "report", figures=False)
    return buffer.getvalue(), json.loads((tmp_path / "report" / "report.json").read_text())


def test_report_warns_when_thresholds_come_from_another_machine(host, server, tmp_path):
    other = {"cpu": "Other CPU 9000", "cores": 128, "memory_gib": 512.0, "machine": "x86_64",
             "note": "no backend recorded (an older record)"}  # fmt: skip
    cases = make_cases(tmp_path, 1, calibrated_on=other)
    out = tmp_path / "run"
    server.script(ok(BASELINE))
    run_in_order(make_run(host, server, cases, out))
    assert report(out, "c0").calibrated_on == other
    text, data = _report_outputs(out, tmp_path)
    [info] = data["runs"]
    assert len(info["warnings"]) == 1 and "another machine" in info["warnings"][0]
    assert "backend unknown" in info["warnings"][0] and "Other CPU 9000" in info["warnings"][0]
    [calibration] = info["calibrations"]
    assert calibration["backend"] == "backend unknown" and calibration["same_machine"] is False
    assert calibration["differences"]["cpu"][0] == "Other CPU 9000"
    assert "warning:" in text and "another machine" in text
    assert "backend unknown, OTHER machine (1 attempts)" in text
    # Calibrations are never silently trusted: the pass rate is still reported.
    assert data["stages"][0]["pass_rate"] == {"count": 1, "total": 1, "rate": 1.0}


def test_report_is_quiet_for_thresholds_calibrated_here(host, server, tmp_path):
    here = {**fingerprint(), "backend": "bwrap", "track": "numpy_fd"}
    cases = make_cases(tmp_path, 1, calibrated_on=here)
    out = tmp_path / "run"
    server.script(ok(BASELINE))
    run_in_order(make_run(host, server, cases, out))
    text, data = _report_outputs(out, tmp_path)
    [info] = data["runs"]
    assert info["warnings"] == []
    [calibration] = info["calibrations"]
    assert (calibration["backend"], calibration["same_machine"]) == ("bwrap", True)
    assert "warning" not in text and "bwrap backend, this machine (1 attempts)" in text


def test_report_names_a_speed_sample_that_moved_the_thresholds(host, server, tmp_path, monkeypatch):
    """A run on a machine with a speed sample (``pdeagent calibrate --speed-sample N``) is
    graded with the shipped thresholds moved here, and its report says so."""
    from pdeagent.evaluation.calibration import LocalCalibration, store_path
    from pdeagent.evaluation.speed_sample import SampledCase, SpeedSample

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    cases = make_cases(tmp_path, 1, calibrated_on={"cpu": "the reference machine"})
    record = json.loads(cases.read_text())
    record["evaluation_metadata"]["thresholds"]["numpy_fd"].update(
        e_base=1e-3, t_base=10.0, tau_acc=1e-2, protocol=3, t_null=0.5, t_noise=0.1,
        tau_time=0.5 + 3 * 9.5,
    )  # fmt: skip
    cases.write_text(json.dumps(record) + "\n")
    sampled = [SampledCase(f"s{i}", 2.0, 0.5, 2.3, 1e-7, 1e-7, 1.2) for i in range(3)]
    sample = SpeedSample(ratio=1.2, t_null=0.4, null_spread=0.05, cases=sampled,
                         calibrated_on={**fingerprint(), "backend": "bwrap"})  # fmt: skip
    LocalCalibration(store_path(cases.resolve(), "numpy_fd")).put_speed_sample(sample)
    out = tmp_path / "run"
    server.script(ok(BASELINE))
    run_in_order(make_run(host, server, cases, out))
    graded = report(out, "c0")
    assert graded.verdict == "PASS"
    assert graded.thresholds["source"] == "local calibration: speed sample (3 cases, ratio 1.2)"
    assert graded.thresholds["tau_time"] == pytest.approx(0.4 + 3 * 1.2 * 9.5)
    assert graded.thresholds["rule"] == "default-baseline"  # no frontier selection recorded
    text, data = _report_outputs(out, tmp_path)
    [calibration] = data["runs"][0]["calibrations"]
    assert calibration["calibration"] == "speed sample (3 cases, ratio 1.2)"
    assert calibration["same_machine"] is True and data["runs"][0]["warnings"] == []
    assert data["runs"][0]["grading"] == ["protocol 3, solve rule, baseline by default-baseline"]
    assert "bwrap backend, this machine, speed sample (3 cases, ratio 1.2) (1 attempts)" in text
