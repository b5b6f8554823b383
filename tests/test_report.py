"""``pdeagent report``: summaries of synthetic run directories, numbers checked by hand.

Run "single" (track dolfinx, alpha_acc 10, alpha_time 3, tau_min 1e-6), two models:

model-a (8 cases; 6 graded, 2 infrastructure)
  a_p1 poisson  PASS    err 1e-3 (e_base 1e-3), runtime 1.0 (t_base 1.0)
  a_p2 poisson  F-Acc   err 0.03, never timed
  a_p3 poisson  F-Gen   provider error (infrastructure)
  a_p4 poisson  F-Gen   no_code (a model failure, graded)
  a_h1 heat     F-Time  err 1e-3, runtime 4.0
  a_h2 heat     F-Exec  runtime_error
  a_w1 wave     PASS    err 3e-3, runtime 2.0
  a_w2 wave     ERROR   sandbox unavailable (infrastructure)
org/model-b (6 cases, all graded)
  b_p1 poisson  PASS    err 5e-7 (e_base 1e-9: tau_acc = tau_min = 1e-6), runtime 0.5 (t_base 0.5)
  b_p2 poisson  F-Exec  timeout
  b_h1 heat     PASS    err 1e-4 (e_base 1e-4), runtime 2.0 (t_base 1.0)
  b_h2 heat     PASS    explicit thresholds (no e_base/t_base)
  b_w1 wave     F-Exec  timeout
  b_w2 wave     F-Acc   error not finite (None)

Run "feedback" (model-a, 3 attempts): fa_p1 F-Acc -> PASS; fa_p2 F-Exec, F-Exec,
F-Time; fa_h1 PASS at once; fa_h2 F-Acc, then a truncated (unreadable) attempt 1.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
import typer
from typer.testing import CliRunner

from pdeagent.cli.report_cmd import report as report_command
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import AttemptReport, Tokens, write_attempt
from pdeagent.runs.report import Rate, Total, load_runs, summarize
from pdeagent.runs.report_render import build_tables, render_html, table_csv
from pdeagent.testing import runtime_missing

from .conftest import dom_with_probe

TRACK = "dolfinx"
ALPHAS = {"alpha_acc": 10.0, "alpha_time": 3.0, "tau_min": 1e-6}
MATH = {"poisson": ["elliptic"], "heat": ["parabolic"], "wave": ["hyperbolic"]}


def base(e_base: float, t_base: float, tau_acc: float, tau_time: float) -> dict[str, Any]:
    return {
        "e_base": e_base,
        "t_base": t_base,
        "tau_acc": tau_acc,
        "tau_time": tau_time,
        "source": "dataset",
    }


STD = base(1e-3, 1.0, 1e-2, 3.0)

SINGLE: list[dict[str, Any]] = [
    # model-a
    dict(model="model-a", case="a_p1", family="poisson", verdict="PASS", error=1e-3,
         runtime=1.0, metrics={"rmse": 0.1, "r_squared": 0.99},
         diagnostics={"solver_info": {"dofs": 100, "mesh_resolution": 32}}),
    dict(model="model-a", case="a_p2", family="poisson", verdict="F-Acc", error=0.03,
         reason="error_above_tau", diagnostics={"num_dofs": 300, "element_degree": 2}),
    dict(model="model-a", case="a_p3", family="poisson", verdict="F-Gen",
         reason="provider_error", infrastructure=True, tokens=Tokens(None, None), cost=None),
    dict(model="model-a", case="a_p4", family="poisson", verdict="F-Gen", reason="no_code"),
    dict(model="model-a", case="a_h1", family="heat", verdict="F-Time", error=1e-3,
         runtime=4.0, reason="runtime_above_tau",
         diagnostics={"dofs": 1000, "time_steps": 10}),
    dict(model="model-a", case="a_h2", family="heat", verdict="F-Exec", reason="runtime_error"),
    dict(model="model-a", case="a_w1", family="wave", verdict="PASS", error=3e-3, runtime=2.0,
         metrics={"rmse": 0.3}, diagnostics={"work_rate_dof_steps_per_sec": 7.0, "cfl": 0.5}),
    dict(model="model-a", case="a_w2", family="wave", verdict="ERROR", infrastructure=True,
         diagnostics={"dofs": 10**9}),
    # org/model-b: no cost reported
    dict(model="org/model-b", case="b_p1", family="poisson", verdict="PASS", error=5e-7,
         runtime=0.5, thresholds=base(1e-9, 0.5, 1e-6, 1.5)),
    dict(model="org/model-b", case="b_p2", family="poisson", verdict="F-Exec", reason="timeout"),
    dict(model="org/model-b", case="b_h1", family="heat", verdict="PASS", error=1e-4,
         runtime=2.0, thresholds=base(1e-4, 1.0, 1e-3, 3.0),
         math_type=["parabolic", "mixed_type"], diagnostics={"peclet": 4.0}),
    dict(model="org/model-b", case="b_h2", family="heat", verdict="PASS", error=0.1, runtime=1.0,
         thresholds={"tau_acc": 1.0, "tau_time": 10.0, "e_base": None, "t_base": None,
                     "source": "explicit"}),
    dict(model="org/model-b", case="b_w1", family="wave", verdict="F-Exec", reason="timeout"),
    dict(model="org/model-b", case="b_w2", family="wave", verdict="F-Acc",
         reason="error_not_finite"),
]  # fmt: skip

FEEDBACK: list[dict[str, Any]] = [
    dict(case="fa_p1", family="poisson", attempt=0, verdict="F-Acc", error=0.5),
    dict(case="fa_p1", family="poisson", attempt=1, verdict="PASS", error=1e-3, runtime=1.0),
    dict(case="fa_p2", family="poisson", attempt=0, verdict="F-Exec", reason="import_error"),
    dict(case="fa_p2", family="poisson", attempt=1, verdict="F-Exec", reason="runtime_error"),
    dict(case="fa_p2", family="poisson", attempt=2, verdict="F-Time", error=1e-3, runtime=9.0),
    dict(case="fa_h1", family="heat", attempt=0, verdict="PASS", error=1e-3, runtime=1.0),
    dict(case="fa_h2", family="heat", attempt=0, verdict="F-Acc", error=0.5),
    dict(case="fa_h2", family="heat", attempt=1, verdict="PASS", error=1e-3, runtime=1.0),
]
TRUNCATED = ("fa_h2", 1)
"""This report is cut in half after writing: unreadable, so fa_h2 ends at F-Acc."""


def make_report(spec: dict[str, Any], mode: str) -> AttemptReport:
    model = spec.get("model", "model-a")
    default_tokens = Tokens(1000, 200) if model == "org/model-b" else Tokens(100, 50)
    default_cost = None if model == "org/model-b" else 0.01
    return AttemptReport(
        track=TRACK,
        provider="fake",
        model=model,
        case_id=spec["case"],
        attempt=spec.get("attempt", 0),
        mode=mode,
        verdict=spec["verdict"],
        reason=spec.get("reason"),
        infrastructure=spec.get("infrastructure", False),
        family=spec["family"],
        math_type=spec.get("math_type", MATH[spec["family"]]),
        error=spec.get("error"),
        runtime_sec=spec.get("runtime"),
        thresholds=spec.get("thresholds", STD),
        alphas=dict(ALPHAS),
        metrics=spec.get("metrics", {}),
        diagnostics=spec.get("diagnostics", {}),
        tokens=spec.get("tokens", default_tokens),
        cost_usd=spec.get("cost", default_cost),
    )


def make_run(root: Path, run_id: str, mode: str, specs: list[dict[str, Any]]) -> Path:
    models = sorted({s.get("model", "model-a") for s in specs})
    manifest = {
        "schema_version": 1,
        "run_id": run_id,
        "config": {"track": TRACK, "provider": "fake", "models": models, "mode": mode,
                   "attempts": 3 if mode == "feedback" else 1, **ALPHAS},
        "machine": {},
        "versions": {},
        "created": "2024-06-01T00:00:00Z",
    }  # fmt: skip
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    for spec in specs:
        rep = make_report(spec, mode)
        path = attempt_dir(root, TRACK, rep.model, rep.case_id, rep.attempt) / "report.json"
        write_attempt(path, rep)
        if (rep.case_id, rep.attempt) == TRUNCATED:
            text = path.read_text(encoding="utf-8")
            path.write_text(text[: len(text) // 2], encoding="utf-8")
    return root


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return (
        make_run(tmp_path / "single", "run-single", "single", SINGLE),
        make_run(tmp_path / "feedback", "run-feedback", "feedback", FEEDBACK),
    )


@pytest.fixture
def single(runs):
    return summarize(load_runs([runs[0]]))


@pytest.fixture
def both(runs):
    return summarize(load_runs(list(runs)))


def rates(summary, series: str) -> dict[str, tuple[int, int]]:
    return {
        r.family: (r.rate.count, r.rate.total) for r in summary.pass_rates if r.series == series
    }


def row(rows, series: str):
    (found,) = [r for r in rows if r.series == series]
    return found


# -------------------------------------------------------------------- summaries


def test_model_name_comes_from_the_report_not_the_directory(runs, single):
    assert not (runs[0] / TRACK / "org/model-b").exists()
    assert [s.label for s in single.series] == ["model-a", "org/model-b"]
    assert [s.model for s in single.series] == ["model-a", "org/model-b"]


def test_pass_rates_by_family(single):
    assert rates(single, "model-a") == {
        "poisson": (1, 3),
        "heat": (0, 2),
        "wave": (1, 1),
        "all": (2, 6),
    }
    assert rates(single, "org/model-b") == {
        "poisson": (1, 2),
        "heat": (2, 2),
        "wave": (0, 2),
        "all": (3, 6),
    }
    assert [r.family for r in single.pass_rates[:4]] == ["poisson", "heat", "wave", "all"]


def test_stage_breakdown(single):
    a = row(single.stages, "model-a")
    assert a.graded == 6 and a.infrastructure == 2
    assert a.counts == {"PASS": 2, "F-Exec": 1, "F-Acc": 1, "F-Time": 1, "F-Gen": 1}
    assert a.shares["PASS"] == pytest.approx(2 / 6)
    assert a.fexec_reasons == {"runtime_error": 1}
    assert (a.executability, a.accuracy, a.time) == (Rate(4, 6), Rate(3, 4), Rate(2, 3))
    b = row(single.stages, "org/model-b")
    assert b.graded == 6 and b.infrastructure == 0
    assert b.counts == {"PASS": 3, "F-Exec": 2, "F-Acc": 1, "F-Time": 0, "F-Gen": 0}
    assert b.fexec_reasons == {"timeout": 2}
    assert (b.executability, b.accuracy, b.time) == (Rate(4, 6), Rate(3, 4), Rate(3, 3))


def test_auxiliary_metrics_over_passed_cases(single):
    a = row(single.auxiliary, "model-a")
    assert a.passed == 2
    assert a.medians["error"] == pytest.approx(2e-3)  # of 1e-3, 3e-3
    assert a.medians["runtime_sec"] == pytest.approx(1.5)  # of 1.0, 2.0
    assert a.medians["error_over_tau_acc"] == pytest.approx(0.2)  # of 0.1, 0.3
    assert a.medians["runtime_over_tau_time"] == pytest.approx(0.5)  # of 1/3, 2/3
    assert a.medians["rmse"] == pytest.approx(0.2)
    assert a.medians["r_squared"] == pytest.approx(0.99)
    assert a.medians["mae"] is None


def test_diagnostics_by_math_type(single):
    diag = {(d.series, d.math_type): (d.cases, d.medians) for d in single.diagnostics}
    assert diag[("model-a", "elliptic")] == (
        2,
        {"dofs": 200.0, "mesh_resolution": 32.0, "element_degree": 2.0},
    )
    # work rate from DOFs * time steps / runtime = 1000 * 10 / 4
    assert diag[("model-a", "parabolic")] == (1, {"dofs": 1000.0, "work_rate": 2500.0})
    # the infrastructure failure's diagnostics (dofs 1e9) are not counted
    assert diag[("model-a", "hyperbolic")] == (1, {"work_rate": 7.0, "cfl": 0.5})
    assert diag[("org/model-b", "parabolic")] == (1, {"peclet": 4.0})
    assert diag[("org/model-b", "mixed_type")] == (1, {"peclet": 4.0})
    assert len(diag) == 5


def sensitivity(summary, series: str, parameter: str) -> dict[float, tuple[int, int, int, int]]:
    return {
        r.alpha: (r.rate.count, r.rate.total, r.unknown, r.no_baseline)
        for r in summary.sensitivity
        if r.series == series and r.parameter == parameter
    }


def test_sensitivity_alpha_acc(single):
    # model-a: a_p1 passes at every alpha (tau_acc >= 2e-3); a_w1 (err 3e-3) from 5 on;
    # a_p2 (err 0.03) is accurate enough from 50 on but was never timed: unknown.
    assert sensitivity(single, "model-a", "alpha_acc") == {
        2.0: (1, 6, 0, 0),
        5.0: (2, 6, 0, 0),
        10.0: (2, 6, 0, 0),
        50.0: (2, 6, 1, 0),
        100.0: (2, 6, 1, 0),
    }
    # model-b: tau_min keeps b_p1's tau_acc at 1e-6; b_h2 has no baseline.
    assert sensitivity(single, "org/model-b", "alpha_acc") == {
        a: (2, 6, 0, 1) for a in (2.0, 5.0, 10.0, 50.0, 100.0)
    }


def test_sensitivity_alpha_time(single):
    # model-a: a_p1 (1.0 s, t_base 1) always; a_w1 (2.0 s) from 2 on; a_h1 (4.0 s) at 5.
    assert sensitivity(single, "model-a", "alpha_time") == {
        1.0: (1, 6, 0, 0),
        2.0: (2, 6, 0, 0),
        3.0: (2, 6, 0, 0),
        5.0: (3, 6, 0, 0),
    }
    # model-b: b_p1 (0.5 s, t_base 0.5) always; b_h1 (2.0 s, t_base 1) from 2 on.
    assert sensitivity(single, "org/model-b", "alpha_time") == {
        1.0: (1, 6, 0, 1),
        2.0: (2, 6, 0, 1),
        3.0: (2, 6, 0, 1),
        5.0: (2, 6, 0, 1),
    }


def test_tokens_and_cost(single):
    a = row(single.usage, "model-a")
    assert a.attempts == 8
    assert a.input_tokens == Total(700, 1) and a.output_tokens == Total(350, 1)
    assert a.cost_usd.value == pytest.approx(0.07) and a.cost_usd.unknown == 1
    b = row(single.usage, "org/model-b")
    assert b.input_tokens == Total(6000, 0) and b.output_tokens == Total(1200, 0)
    assert b.cost_usd == Total(None, 6)


def test_single_run_has_no_feedback_table(single):
    assert single.feedback == []
    assert [t.name for t in build_tables(single)][-1] == "usage"


def test_unreadable_report_is_counted_not_trusted(both):
    run = both.runs[1]
    assert run.reports == 7
    assert run.unreadable == [f"{TRACK}/model-a/fa_h2/attempt-1/report.json"]
    # fa_h2 ends at its last readable attempt (F-Acc), not at the unreadable PASS
    assert rates(both, "model-a [feedback]") == {"poisson": (1, 2), "heat": (1, 2), "all": (2, 4)}


def test_feedback_comparison_and_labels(both):
    labels = [s.label for s in both.series]
    assert labels == ["model-a [single]", "org/model-b", "model-a [feedback]"]
    got = {f.series: (f.mode, f.max_attempts, f.pass_at_first, f.final) for f in both.feedback}
    assert got == {
        "model-a [single]": ("single", 1, Rate(2, 6), Rate(2, 6)),
        "org/model-b": ("single", 1, Rate(3, 6), Rate(3, 6)),
        "model-a [feedback]": ("feedback", 3, Rate(1, 4), Rate(2, 4)),
    }
    stage = row(both.stages, "model-a [feedback]")
    assert stage.counts == {"PASS": 2, "F-Exec": 0, "F-Acc": 1, "F-Time": 1, "F-Gen": 0}


def test_json_document_is_strict_json(both):
    data = json.loads(json.dumps(both.to_dict(), allow_nan=False))
    assert next(iter(data)) == "schema_version"
    all_a = [r for r in data["pass_rates"] if r["series"] == "model-a [single]"][-1]
    assert all_a["rate"] == {"count": 2, "total": 6, "rate": pytest.approx(1 / 3)}
    assert data["usage"][1]["cost_usd"] == {"value": None, "unknown": 6}
    for key in ("stages", "auxiliary", "diagnostics", "sensitivity", "feedback", "runs"):
        assert data[key]


def test_csv_keeps_counts_and_defuses_formulas(single):
    table = next(t for t in build_tables(single) if t.name == "stages")
    lines = table_csv(table).splitlines()
    assert lines[0].startswith("track,model,graded,PASS,PASS count,PASS total,F-Exec,")
    assert lines[1].startswith("dolfinx,model-a,6,0.333")
    assert ",2,6," in lines[1]
    from pdeagent.runs.report_render import Table

    evil = Table("x", "x", ["name"], [["=HYPERLINK(1)"], ["-1"]])
    assert table_csv(evil).splitlines()[1:] == ["'=HYPERLINK(1)", "'-1"]


def test_html_escapes_run_strings(tmp_path):
    hostile = "<script>alert(1)</script>"
    spec = dict(model=hostile, case="c1", family="poisson", verdict="PASS", error=1e-3,
                runtime=1.0, cost=0.5)  # fmt: skip
    summary = summarize(load_runs([make_run(tmp_path / "r", "<b>run</b>", "single", [spec])]))
    html = render_html(summary, build_tables(summary), [])
    assert hostile not in html and "<b>run</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html


# -------------------------------------------------------------------------- CLI


@pytest.fixture
def cli_app() -> typer.Typer:
    app = typer.Typer()
    app.command("report")(report_command)

    @app.command("other")
    def _other() -> None:  # two commands keep "report" a named subcommand
        pass

    return app


def test_cli_tables_on_console(cli_app, runs):
    result = CliRunner().invoke(cli_app, ["report", str(runs[0])])
    assert result.exit_code == 0, result.output
    assert "Pass rate by family: dolfinx" in result.output
    assert "33.3% (2/6)" in result.output and "50.0% (3/6)" in result.output


def test_cli_json_and_out_dir(cli_app, runs, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli_app, ["report", *map(str, runs), "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["runs"][1]["unreadable"] == [f"{TRACK}/model-a/fa_h2/attempt-1/report.json"]
    assert json.loads((out / "report.json").read_text()) == data
    names = {p.name for p in out.iterdir()}
    assert {"report.html", "stages.csv", "pass_rates_dolfinx.csv", "feedback.csv"} <= names
    pngs = sorted(p.name for p in (out / "figures").iterdir())
    assert pngs == [
        "pass_rate_by_attempt.png", "pass_rates_dolfinx.png", "sensitivity.png", "stages.png"
    ]  # fmt: skip
    for png in (out / "figures").iterdir():
        assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    html = (out / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 4


def test_cli_no_figures(cli_app, runs, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli_app, ["report", str(runs[0]), "--out", str(out), "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    assert not (out / "figures").exists()
    assert "<img" not in (out / "report.html").read_text()


@pytest.mark.parametrize("what", ["missing", "no_manifest", "bad_manifest"])
def test_cli_bad_run_dir_is_one_line_error(cli_app, tmp_path, what):
    run = tmp_path / "run"
    if what != "missing":
        run.mkdir()
    if what == "bad_manifest":
        (run / "run.json").write_text('{"schema_version": 1, "run_id"', encoding="utf-8")
    result = CliRunner().invoke(cli_app, ["report", str(run)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert result.stderr.startswith("error:") and result.stderr.count("\n") == 1
    assert str(run) in result.stderr


# ---------------------------------------------------------------- real browser


@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(cli_app, runs, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        runtime_missing("chromium not installed")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli_app, ["report", str(runs[0]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text(encoding="utf-8")
    # A checking copy: the report itself has no scripts (its CSP forbids them); the copy
    # allows one inline script that records, after load, which images decoded.
    probe = (
        "<script>window.addEventListener('load', () => {"
        "const imgs = [...document.images];"
        "document.body.dataset.decoded = imgs.filter(i => i.complete && i.naturalWidth > 0)"
        ".length + '/' + imgs.length; });</script>"
    )
    dom = dom_with_probe(chromium, html, probe, out / "checked.html", tmp_path / "profile")
    assert 'data-decoded="3/3"' in dom, dom[:2000]
    assert re.search(r"<td>poisson</td>\s*<td class=\"num\">33\.3% \(1/3\)</td>", dom)
    assert "Failure stages" in dom and "50.0% (3/6)" in dom
    sources = re.findall(r'<img src="data:image/png;base64,([^"]+)"', dom)
    assert len(sources) == 3
    for data in sources:
        png = base64.b64decode(data)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000


def test_sensitivity_recomputes_tau_time_with_the_noise_floor():
    """A solve at noise level (t_base below t_null) keeps alpha_time * t_noise at every
    alpha, as grading does (issue #33 item 2)."""
    from pdeagent.runs.report import sensitivity_outcome

    graded = AttemptReport(
        track="dolfinx", provider="p", model="m", case_id="c", attempt=0, mode="single",
        verdict="PASS", error=1e-8, runtime_sec=0.55, protocol=2,
        thresholds={"e_base": 1e-8, "t_base": 0.31, "t_null": 0.34, "t_noise": 0.1,
                    "time_rule": "solve", "tau_acc": 1e-6, "tau_time": 0.64},
    )  # fmt: skip
    outcome = {
        a: sensitivity_outcome(graded, alpha_acc=10.0, alpha_time=a, tau_min=1e-6)
        for a in (1.0, 2.0, 3.0)
    }
    # tau_time = 0.34 + alpha * 0.1: 0.44, 0.54, 0.64 against a runtime of 0.55
    assert outcome == {1.0: "fail", 2.0: "fail", 3.0: "pass"}
    unfloored = attrs.evolve(graded, thresholds={**graded.thresholds, "t_noise": None})
    assert sensitivity_outcome(unfloored, alpha_acc=10.0, alpha_time=3.0, tau_min=1e-6) == "fail"
