"""``pdeagent report``: single-shot vs feedback pass rates per attempt (Figure 5 shape).

Run folders are written the way ``pdeagent run`` writes them: ``run.json`` by
:func:`pdeagent.runs.runner.write_manifest`, each attempt's ``report.json`` by
:func:`pdeagent.runs.records.write_attempt` at :func:`pdeagent.runs.layout.attempt_dir`.

Feedback run (3 attempts), model-x, 8 cases (attempt numbers 1-based, as shown):

  c1  PASS                              passed after attempt 1
  c2  F-Exec, PASS                      passed after attempt 2
  c3  F-Acc, F-Time, PASS               passed after attempt 3
  c4  F-Exec, F-Acc, F-Time             never
  c5  ERROR (sandbox)                   infrastructure: left out
  c6  F-Gen provider_error (infra)      infrastructure: left out
  c7  F-Acc, then ERROR (infra)         graded (interrupted), never passed
  c8  F-Gen no_code, PASS               passed after attempt 2 (no_code is graded)

  graded 6: after attempt 1 = 1/6, after 2 = 3/6, after 3 = 4/6 (= the final pass rate)

Feedback run, model-z, 2 cases: z1 F-Acc, PASS; z2 PASS: 1/2, 2/2, 2/2; no single run.
Single run: model-x s1 PASS, s2 PASS, s3 F-Acc, s4 F-Exec, s5 ERROR (infra): 2/4;
model-y s1 PASS: 1/1 (no feedback run of model-y: no row).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from pdeagent.cli.report_cmd import report as report_command
from pdeagent.runs.layout import REPORT_FILE, attempt_dir
from pdeagent.runs.records import AttemptReport, write_attempt
from pdeagent.runs.report import Rate, load_runs, summarize
from pdeagent.runs.report_attempts import SingleShot, attempt_caption, attempt_figure
from pdeagent.runs.report_render import (
    _series_names,
    build_tables,
    cell_text,
    print_report,
    write_outputs,
)
from pdeagent.runs.runner import RunConfig, write_manifest

TRACK = "sample"
THRESHOLDS = {"e_base": 1e-3, "t_base": 1.0, "tau_acc": 1e-2, "tau_time": 3.0, "source": "dataset"}

GRADED_AS = {
    "PASS": dict(error=1e-3, runtime_sec=1.0),
    "F-Acc": dict(error=0.5, reason="error_above_tau"),
    "F-Time": dict(error=1e-3, runtime_sec=9.0, reason="runtime_above_tau"),
    "F-Exec": dict(reason="runtime_error"),
    "ERROR": dict(reason="sandbox_unavailable", infrastructure=True),
    "F-Gen": dict(reason="no_code"),
    "F-Gen/infra": dict(reason="provider_error", infrastructure=True),
}

FEEDBACK = {
    "model-x": {
        "c1": ["PASS"],
        "c2": ["F-Exec", "PASS"],
        "c3": ["F-Acc", "F-Time", "PASS"],
        "c4": ["F-Exec", "F-Acc", "F-Time"],
        "c5": ["ERROR"],
        "c6": ["F-Gen/infra"],
        "c7": ["F-Acc", "ERROR"],
        "c8": ["F-Gen", "PASS"],
    },
    "model-z": {"z1": ["F-Acc", "PASS"], "z2": ["PASS"]},
}
SINGLE = {
    "model-x": {"s1": ["PASS"], "s2": ["PASS"], "s3": ["F-Acc"], "s4": ["F-Exec"], "s5": ["ERROR"]},
    "model-y": {"s1": ["PASS"]},
}


def attempt_report(model: str, case: str, attempt: int, verdict: str, mode: str) -> AttemptReport:
    extra: dict[str, Any] = dict(GRADED_AS[verdict])
    graded = not extra.get("infrastructure", False)
    return AttemptReport(
        track=TRACK,
        provider="fake",
        model=model,
        case_id=case,
        attempt=attempt,
        mode=mode,
        verdict=verdict.split("/")[0],
        family="poisson",
        thresholds=THRESHOLDS if graded else None,
        **extra,
    )


def make_run(root: Path, mode: str, cases: dict[str, dict[str, list[str]]], attempts: int) -> str:
    """A run directory as ``pdeagent run`` leaves it; returns its run id."""
    root.mkdir(parents=True)
    config = RunConfig(
        track=TRACK,
        provider="fake",
        models=sorted(cases),
        cases_file="cases.jsonl",
        case_ids=sorted({c for by_case in cases.values() for c in by_case}),
        mode=mode,
        attempts=attempts,
    )
    config.check()
    host = SimpleNamespace(
        plugins=[], get_track=lambda name: SimpleNamespace(library="lib", library_version="1")
    )
    executor = SimpleNamespace(describe=lambda: {"kind": "local"})
    manifest = write_manifest(root, config, host, executor, "local")  # type: ignore[arg-type]
    for model, by_case in cases.items():
        for case, verdicts in by_case.items():
            for attempt, verdict in enumerate(verdicts):
                report = attempt_report(model, case, attempt, verdict, mode)
                path = attempt_dir(root, TRACK, model, case, attempt) / REPORT_FILE
                write_attempt(path, report)
    return manifest["run_id"]


@pytest.fixture
def run_dirs(tmp_path: Path) -> dict[str, Any]:
    single_id = make_run(tmp_path / "single", "single", SINGLE, 1)
    feedback_id = make_run(tmp_path / "feedback", "feedback", FEEDBACK, 3)
    return {
        "single": tmp_path / "single",
        "feedback": tmp_path / "feedback",
        "single_id": single_id,
        "feedback_id": feedback_id,
    }


@pytest.fixture
def both(run_dirs):
    return summarize(load_runs([run_dirs["single"], run_dirs["feedback"]]))


def by_series(summary) -> dict[str, Any]:
    return {row.series: row for row in summary.pass_rate_by_attempt}


# ------------------------------------------------------------------- numbers


def test_feedback_run_cumulative_pass_rate_per_attempt(run_dirs):
    summary = summarize(load_runs([run_dirs["feedback"]]))
    rows = by_series(summary)
    assert sorted(rows) == ["model-x", "model-z"]
    x = rows["model-x"]
    assert (x.max_attempts, x.graded, x.infrastructure) == (3, 6, 2)
    assert x.cumulative == [Rate(1, 6), Rate(3, 6), Rate(4, 6)]
    assert [r.value for r in x.cumulative] == pytest.approx([1 / 6, 1 / 2, 2 / 3])
    assert x.single_shot is None
    assert rows["model-z"].cumulative == [Rate(1, 2), Rate(2, 2), Rate(2, 2)]
    # the same rules as the rest of the report: attempt 1 is pass@attempt-0, the last
    # attempt is the series' pass rate
    (stage,) = [s for s in summary.stages if s.series == "model-x"]
    (feedback,) = [f for f in summary.feedback if f.series == "model-x"]
    assert stage.pass_rate == Rate(4, 6) == x.cumulative[-1]
    assert stage.infrastructure == 2 and stage.interrupted == 1
    assert feedback.pass_at_first == Rate(1, 6) == x.cumulative[0]


def test_single_and_feedback_side_by_side(run_dirs, both):
    labels = [s.label for s in both.series]
    assert labels == ["model-x [single]", "model-y", "model-x [feedback]", "model-z"]
    rows = by_series(both)
    assert sorted(rows) == ["model-x [feedback]", "model-z"]  # single-mode series: no row
    x = rows["model-x [feedback]"]
    assert x.run_id == run_dirs["feedback_id"]
    assert x.cumulative == [Rate(1, 6), Rate(3, 6), Rate(4, 6)]
    assert x.single_shot == SingleShot("model-x [single]", run_dirs["single_id"], Rate(2, 4))
    assert rows["model-z"].single_shot is None

    (table,) = [t for t in build_tables(both) if t.name == "pass_rate_by_attempt"]
    assert table.columns == [
        "track", "model", "run", "graded", "infrastructure", "after attempt 1",
        "after attempt 2", "after attempt 3", "single-shot", "single-shot run",
    ]  # fmt: skip
    shown = {row[1]: [cell_text(v) for v in row] for row in table.rows}
    assert shown["model-x [feedback]"] == [
        TRACK, "model-x [feedback]", run_dirs["feedback_id"], "6", "2",
        "16.7% (1/6)", "50.0% (3/6)", "66.7% (4/6)", "50.0% (2/4)", run_dirs["single_id"],
    ]  # fmt: skip
    assert shown["model-z"][5:] == ["50.0% (1/2)", "100.0% (2/2)", "100.0% (2/2)", "-", "-"]


def test_json_key_is_stable_and_strict(run_dirs, both):
    data = json.loads(json.dumps(both.to_dict(), allow_nan=False))
    (x,) = [r for r in data["pass_rate_by_attempt"] if r["series"] == "model-x [feedback]"]
    assert x == {
        "track": TRACK,
        "series": "model-x [feedback]",
        "model": "model-x",
        "run_id": run_dirs["feedback_id"],
        "max_attempts": 3,
        "graded": 6,
        "infrastructure": 2,
        "cumulative": [
            {"count": 1, "total": 6, "rate": pytest.approx(1 / 6)},
            {"count": 3, "total": 6, "rate": 0.5},
            {"count": 4, "total": 6, "rate": pytest.approx(2 / 3)},
        ],
        "single_shot": {
            "series": "model-x [single]",
            "run_id": run_dirs["single_id"],
            "rate": {"count": 2, "total": 4, "rate": 0.5},
        },
    }
    single_only = summarize(load_runs([run_dirs["single"]]))
    assert single_only.to_dict()["pass_rate_by_attempt"] == []
    assert "pass_rate_by_attempt" not in [t.name for t in build_tables(single_only)]


def test_columns_follow_the_longest_run_and_configured_attempts(tmp_path):
    # attempts 4, every case done by attempt 2: the rate stays flat to attempt 4
    make_run(tmp_path / "long", "feedback", {"m": {"a": ["F-Exec", "PASS"]}}, 4)
    make_run(tmp_path / "short", "feedback", {"m": {"a": ["PASS"], "b": ["F-Acc"]}}, 2)
    summary = summarize(load_runs([tmp_path / "long", tmp_path / "short"]))
    got = {r.max_attempts: r.cumulative for r in summary.pass_rate_by_attempt}
    assert got == {4: [Rate(0, 1), Rate(1, 1), Rate(1, 1), Rate(1, 1)], 2: [Rate(1, 2)] * 2}
    (table,) = [t for t in build_tables(summary) if t.name == "pass_rate_by_attempt"]
    assert table.columns[5:9] == [f"after attempt {k}" for k in range(1, 5)]
    short = next(row for row in table.rows if row[3] == 2)
    assert [cell_text(v) for v in short[5:]] == ["50.0% (1/2)", "50.0% (1/2)", "-", "-", "-", "-"]


# ------------------------------------------------------------ figure and HTML


def test_figure_draws_feedback_lines_and_single_shot_level(both):
    pytest.importorskip("matplotlib")
    fig = attempt_figure(both, _series_names(both))
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert sorted(lines) == ["model-x [feedback]", "model-x [single] (single-shot)", "model-z"]
    feedback = lines["model-x [feedback]"]
    assert list(feedback.get_xdata()) == [1, 2, 3]
    assert list(feedback.get_ydata()) == pytest.approx([100 / 6, 50.0, 200 / 3])
    level = lines["model-x [single] (single-shot)"]
    assert list(level.get_ydata()) == [50.0, 50.0]
    assert level.get_linestyle() == "--" and level.get_color() == feedback.get_color()
    assert list(lines["model-z"].get_ydata()) == [50.0, 100.0, 100.0]


def test_caption_is_one_line_with_the_numbers(both):
    caption = attempt_caption(both)
    assert "\n" not in caption
    assert (
        f"model-x [feedback] ({TRACK}): 16.7% (1/6) after attempt 1, 66.7% (4/6) after "
        "attempt 3; single-shot 50.0% (2/4)"
    ) in caption
    assert f"model-z ({TRACK}): 50.0% (1/2) after attempt 1, 100.0% (2/2) after attempt 3" in (
        caption
    )


def test_outputs_without_matplotlib_keep_table_and_html(both, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    notes: list[str] = []
    write_outputs(both, tmp_path / "out", note=notes.append)
    assert notes == ["figures not drawn: drawing the report's PNG figures needs the matplotlib "
                     "package: pip install 'pdeagent[report]'"]  # fmt: skip
    csv = (tmp_path / "out" / "pass_rate_by_attempt.csv").read_text().splitlines()
    assert csv[0].startswith("track,model,run,graded,infrastructure,after attempt 1,")
    assert not (tmp_path / "out" / "figures").exists()
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="table-pass_rate_by_attempt"' in html and "66.7% (4/6)" in html


def test_console_table(run_dirs, both):
    console = Console(file=io.StringIO(), width=200)
    print_report(both, console)
    lines = console.file.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "Pass rate by attempt" in line)
    header = next(line for line in lines[start:] if "after attempt 1" in line)
    assert "after attempt 3" in header and "single-shot" in header
    (x,) = [line for line in lines[start:] if "model-x [feedback]" in line]
    cells = [c.strip() for c in x.split("│") if c.strip()]
    assert cells == [
        TRACK, "model-x [feedback]", run_dirs["feedback_id"], "6", "2",
        "16.7% (1/6)", "50.0% (3/6)", "66.7% (4/6)", "50.0% (2/4)", run_dirs["single_id"],
    ]  # fmt: skip


# ------------------------------------------------------------------------- CLI


@pytest.fixture
def cli_app() -> typer.Typer:
    app = typer.Typer()
    app.command("report")(report_command)

    @app.command("other")
    def _other() -> None:  # two commands keep "report" a named subcommand
        pass

    return app


def test_cli_text_json_figure_and_html(cli_app, run_dirs, tmp_path):
    runs = [str(run_dirs["single"]), str(run_dirs["feedback"])]
    text = CliRunner().invoke(cli_app, ["report", *runs])
    assert text.exit_code == 0, text.output
    assert "Pass rate by attempt: feedback runs" in " ".join(text.output.split())

    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli_app, ["report", *runs, "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rates = {
        r["series"]: [c["count"] for c in r["cumulative"]] for r in data["pass_rate_by_attempt"]
    }
    assert rates == {"model-x [feedback]": [1, 3, 4], "model-z": [1, 2, 2]}
    png = out / "figures" / "pass_rate_by_attempt.png"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    html = (out / "report.html").read_text()
    assert 'id="figure-pass_rate_by_attempt"' in html
    line = "16.7% (1/6) after attempt 1, 66.7% (4/6) after attempt 3; single-shot 50.0% (2/4)"
    assert line in html
