"""The baseline provider answers with the configuration the dataset records for the case
and track (issue #33 item 7), and no other provider is handed that evaluator-only data.

The case is frontier-calibrated the way ``cases frontier --apply`` writes a case: the
stored frontier result of ``poisson_annulus_smooth_mms_005`` on DOLFINx (degree 4,
resolution 48: e_base 4.9e-8, tau_acc 1e-6) put into its dataset 2.0 record."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pdeagent.calls import ProviderCaller
from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case, case_from_dict
from pdeagent.providers import Generation, Provider, ProviderSettings
from pdeagent.runs.submission import request_submission

ROOT = Path(__file__).resolve().parents[1]
CASE_ID = "poisson_annulus_smooth_mms_005"
RECORDS = ROOT / "cases" / "pdeagent-v2-records.jsonl"
FRONTIER = ROOT / "cases" / "frontier" / "dolfinx" / f"{CASE_ID}.json"


def frontier_calibrated_record() -> dict[str, Any]:
    """The case's 2.0 record with its stored DOLFINx frontier thresholds and chosen
    configuration, as ``cases frontier --apply`` writes them."""
    line = next(ln for ln in RECORDS.read_text().splitlines() if f'"id": "{CASE_ID}"' in ln)
    record = json.loads(line)
    stored = json.loads(FRONTIER.read_text())["thresholds"]
    meta = record["evaluation_metadata"]
    meta["thresholds"]["dolfinx"] = stored
    meta["calibration_config"] = {"dolfinx": stored["selection"]["config"]}
    return record


def _settings(source: str) -> dict[str, Any]:
    """The ``SETTINGS = {...}`` the bundle fixed in a calibration solver."""
    [line] = [ln for ln in source.splitlines() if ln.startswith("SETTINGS = ")]
    return ast.literal_eval(line.removeprefix("SETTINGS = "))


def _submit(host: Any, provider: Any, case: Case) -> Any:
    caller = ProviderCaller(provider, ProviderSettings())
    track = host.get_track("dolfinx")
    return request_submission(
        caller,
        prompt="the prompt",
        model="baseline",
        track_name="dolfinx",
        language=track,
        source_filename=track.source_filename,
        case_id=case.id,
        case_view=agent_view(case, "dolfinx"),
        calibration_config=case.evaluation_metadata.calibration_config,
    )


def test_the_baseline_answers_with_the_recorded_configuration(pdeagent_host):
    record = frontier_calibrated_record()
    chosen = record["evaluation_metadata"]["calibration_config"]["dolfinx"]
    assert chosen == {"degree": 4, "petsc_options": None, "resolution": 48}
    baseline = pdeagent_host.providers["baseline"]
    configured = _submit(pdeagent_host, baseline, case_from_dict(record))
    assert configured.source is not None, configured.message
    assert _settings(configured.source) == chosen
    assert configured.call.raw["configured"] is True
    assert "resolution" not in json.dumps(configured.call.messages)  # not in the record's turns
    record["evaluation_metadata"]["calibration_config"] = None  # a 1.x case: the defaults
    plain = _submit(pdeagent_host, baseline, case_from_dict(record))
    assert plain.source is not None and _settings(plain.source) == {}
    assert plain.call.raw["configured"] is False


class _Spy(Provider):
    """A model provider: records what its requests carried."""

    name = "spy"
    description = "records requests"
    cacheable = False

    def __init__(self, reads: Any = None) -> None:
        self.requests: list[Any] = []
        if reads is not None:
            self.reads_calibration = reads

    def generate(self, request):
        self.requests.append(request)
        return Generation(text="```python\ndef solve(case_spec):\n    pass\n```\n")


@pytest.mark.parametrize("reads", [None, False, "yes", 1])
def test_no_other_provider_is_handed_the_calibration_configuration(pdeagent_host, reads):
    spy = _Spy(reads)
    sub = _submit(pdeagent_host, spy, case_from_dict(frontier_calibrated_record()))
    assert sub.source is not None
    [request] = spy.requests
    assert request.calibration_config is None  # only exactly True opens it


@pytest.mark.dolfinx
@pytest.mark.timing
def test_a_baseline_run_passes_the_frontier_calibrated_case_where_the_defaults_fail(tmp_path):
    """Through the real pipeline (``pdeagent run -p baseline``): the configured answer
    passes the case's frontier thresholds; the solver's defaults (what the provider
    answered before) are not accurate enough for them."""
    import pdeagent_dolfinx
    from pdeagent.testing import require_runtime

    require_runtime(pdeagent_dolfinx.runtime_python)
    dataset = tmp_path / "frontier.jsonl"
    record = frontier_calibrated_record()
    dataset.write_text(json.dumps(record) + "\n")
    verdicts = {}
    for name, config in (("configured", record), ("defaults", None)):
        if config is None:
            record["evaluation_metadata"]["calibration_config"] = None
            dataset.write_text(json.dumps(record) + "\n")
        out = tmp_path / name
        run = subprocess.run(
            [sys.executable, "-m", "pdeagent.cli.main", "run", "-t", "dolfinx", "-p",
             "baseline", "--cases-file", str(dataset), "--cases", CASE_ID, "--no-cache",
             "--out", str(out)],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        [report] = out.rglob("report.json")
        verdicts[name] = json.loads(report.read_text())
    tau_acc = verdicts["configured"]["thresholds"]["tau_acc"]
    assert tau_acc == pytest.approx(1e-6)
    assert verdicts["configured"]["verdict"] == "PASS", verdicts["configured"]["message"]
    assert verdicts["configured"]["error"] <= tau_acc
    assert verdicts["defaults"]["verdict"] == "F-Acc"
    assert verdicts["defaults"]["error"] > tau_acc
