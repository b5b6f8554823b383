"""``pdeagent prompt``: print the prompt a model receives for one case on one track."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from pdeagent.cli.cases_cmd import load
from pdeagent.cli.common import CASES_FILE_OPT, CLIError, cli_errors, host


def build_case_prompt(track_name: str, case_id: str, cases_file: Path | None, mode: str) -> str:
    from pdeagent.cases.agent_view import agent_view
    from pdeagent.cases.io import find_case
    from pdeagent.prompts.builder import build_prompt

    h = host()
    track = h.get_track(track_name)
    case = find_case(load(cases_file), case_id)
    if track.name not in case.supported_libraries:
        raise CLIError(
            f"case {case.id} is not offered on track {track.name!r} "
            f"(supported: {', '.join(case.supported_libraries)}); "
            f"`pdeagent cases add-track -t {track.name}` offers a track the cases it can solve"
        )
    pieces = h.hook.pdeagent_prompt_pieces(
        track=track, case_view=agent_view(case, track.name), mode=mode
    )
    if pieces is None:
        raise CLIError(f"no installed plugin provides prompt pieces for track {track.name!r}")
    if mode == "template" and pieces.scaffold is None:
        raise CLIError(f"track {track.name!r} has no scaffold for the template mode")
    return build_prompt(case, track, pieces, mode=mode)


def prompt(
    track: str = typer.Option(
        ..., "--track", "-t", help="Track name (see `pdeagent tracks list`)."
    ),
    case: str = typer.Option(..., "--case", "-c", help="Case id."),
    mode: str = typer.Option("single", help="single | template (feedback prompts need a run)."),
    cases_file: Path | None = CASES_FILE_OPT,
) -> None:
    """Print the prompt for one case and track (deterministic: same inputs, same bytes).
    Cases come from the benchmark dataset unless --cases-file names another.

    Example: pdeagent prompt --track dolfinx --case poisson_star_smooth_mms_008
    """
    with cli_errors():
        if mode not in ("single", "template"):
            raise CLIError(f"--mode must be single or template, got {mode!r}")
        sys.stdout.write(build_case_prompt(track, case, cases_file, mode))
