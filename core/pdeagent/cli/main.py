"""The ``pdeagent`` application: subcommands are registered from their own modules."""

from __future__ import annotations

import typer

from pdeagent import __version__
from pdeagent.cli.build_cmd import cases_add_track, cases_build, cases_diff
from pdeagent.cli.calibrate_cmd import calibrate
from pdeagent.cli.cases_cmd import cases_app
from pdeagent.cli.env_cmd import env_app, tracks_doctor
from pdeagent.cli.evaluate_cmd import evaluate
from pdeagent.cli.frontier_cmd import cases_frontier
from pdeagent.cli.generate_cmd import generate
from pdeagent.cli.plugins_cmd import plugins, providers_app, tracks_app
from pdeagent.cli.prompt_cmd import prompt
from pdeagent.cli.reconstruct_cmd import cases_reconstruct
from pdeagent.cli.reference_study_cmd import cases_reference_study
from pdeagent.cli.report_cmd import report
from pdeagent.cli.run_cmd import run
from pdeagent.cli.sandbox_cmd import sandbox_app

app = typer.Typer(
    name="pdeagent",
    help="Benchmark harness: can LLMs write correct and fast finite-element solvers?",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pdeagent {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """pdeagent: grade LLM-written FEM solvers in stages (runs, accuracy, time)."""


app.command("plugins", rich_help_panel="Plugins")(plugins)
tracks_app.command("doctor")(tracks_doctor)
app.add_typer(tracks_app, name="tracks", rich_help_panel="Plugins")
app.add_typer(env_app, name="env", rich_help_panel="Plugins")
app.add_typer(providers_app, name="providers", rich_help_panel="Plugins")
app.add_typer(sandbox_app, name="sandbox", rich_help_panel="Grading")
cases_app.command("build")(cases_build)
cases_app.command("diff")(cases_diff)
cases_app.command("add-track")(cases_add_track)
cases_app.command("frontier")(cases_frontier)
cases_app.command("reference-study")(cases_reference_study)
cases_app.command("reconstruct")(cases_reconstruct)
app.add_typer(cases_app, name="cases", rich_help_panel="Dataset")
app.command("run", rich_help_panel="Benchmark")(run)
app.command("report", rich_help_panel="Benchmark")(report)
app.command("prompt", rich_help_panel="Grading")(prompt)
app.command("evaluate", rich_help_panel="Grading")(evaluate)
app.command("generate", rich_help_panel="Grading")(generate)
app.command("calibrate", rich_help_panel="Grading")(calibrate)


def main() -> None:
    """The ``pdeagent`` command: SIGTERM and SIGHUP unwind the work (scratch folders
    removed, sandboxed programs killed) before the process exits."""
    from pdeagent.scratch import exit_on_termination

    exit_on_termination()
    app()


if __name__ == "__main__":
    main()
