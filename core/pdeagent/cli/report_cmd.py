"""``pdeagent report``: summarise finished runs from their saved records (no re-runs)."""

from __future__ import annotations

from pathlib import Path

import typer

from pdeagent.cli.common import CLIError, cli_errors, console, print_json, user_file


def report(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run directories written by `pdeagent run` (each with a run.json)."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print every table and the leaderboard as one JSON document."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Also write report.json, one CSV per table, figures/*.png and report.html here.",
    ),
    no_figures: bool = typer.Option(False, "--no-figures", help="Do not draw PNG figures."),
    no_pictures: bool = typer.Option(
        False,
        "--no-pictures",
        help="With --out: walkthrough pages without field pictures (a quick report).",
    ),
    jobs: int = typer.Option(
        0,
        "--jobs",
        min=0,
        help="With --out: worker processes drawing the pictures, one case at a time each "
        "(0: one per CPU when there are more than 20 pages, else none).",
    ),
) -> None:
    """Summarise runs: pass rates per family and model, failure stages, stage pass rates,
    metrics of passed cases, solver diagnostics, threshold sensitivity, tokens and cost,
    single-shot vs feedback (and, for feedback runs, the pass rate after each attempt
    next to the single-shot rate of the same model).

    With --out it also writes leaderboard.html (models x tracks with 95% Wilson
    intervals, a per-family heatmap, stage breakdown, cost per passed case, a case x model
    matrix) and a walkthrough page per attempt under cases/ (case, verdict, error and
    runtime against the thresholds, the code, diagnostics, stderr, and pictures of the
    submission, the reference and the error on the evaluation grid): static files, one
    folder, viewable from file://.

    Reads only run.json and each attempt's folder (report.json, the code, the saved
    solution.npz) and the dataset named in run.json: nothing is re-run. Cases that
    failed for infrastructure reasons (ERROR, provider errors) are counted apart and
    left out of pass rates; unreadable reports are listed and not counted.

    Examples:

      pdeagent report runs/2024-06-01-gpt4o

      pdeagent report runs/single runs/feedback --out report/ --json
    """
    from pdeagent.runs.leaderboard import leaderboard, leaderboard_dict, write_leaderboard
    from pdeagent.runs.report import load_manifest, load_runs, summarize
    from pdeagent.runs.report_render import print_report, write_outputs
    from pdeagent.runs.walkthrough import auto_jobs, write_walkthroughs

    with cli_errors():
        if out is not None and out.exists() and not out.is_dir():
            raise CLIError(f"--out must be a directory: {out}")
        for run_dir in run_dirs:
            try:
                with user_file(run_dir, "run directory"):
                    load_manifest(run_dir)  # the user's run directories: one line if not one
            except ValueError as exc:
                raise CLIError(str(exc)) from None
        data = load_runs(run_dirs)
        summary = summarize(data)
        board = leaderboard_dict(leaderboard(summary, data))
        if out is not None:
            write_outputs(
                summary, out, figures=not no_figures, extra={"leaderboard": board}, pages=True
            )
            write_walkthroughs(data, out, pictures=not no_pictures, jobs=jobs or auto_jobs(data))
            write_leaderboard(summary, data, out)
        if json_out:
            print_json({**summary.to_dict(), "leaderboard": board})
        else:
            print_report(summary, console)
            if out is not None:
                console.print(f"report written to {out / 'report.html'}", highlight=False)
                console.print(f"leaderboard: {out / 'leaderboard.html'}", highlight=False)
