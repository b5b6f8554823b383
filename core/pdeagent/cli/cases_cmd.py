"""``pdeagent cases list|show|validate``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from pdeagent.cli.common import (
    CLIError,
    cli_errors,
    console,
    default_cases_file,
    known_tracks,
    print_json,
)

cases_app = typer.Typer(help="Inspect and validate benchmark cases.", no_args_is_help=True)

CASES_FILE_OPT = typer.Option(
    None,
    "--cases-file",
    help="Dataset (JSON Lines). Default: $PDEAGENT_CASES or cases/examples.jsonl.",
)
JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON.")


def load(cases_file: Path | None):
    from pdeagent.cases.io import load_cases

    path = cases_file or default_cases_file()
    if not path.is_file():
        raise CLIError(f"cases file not found: {path}")
    return load_cases(path, known_libraries=known_tracks())


@cases_app.command("list")
def cases_list(
    cases_file: Path | None = CASES_FILE_OPT,
    family: str | None = typer.Option(None, help="Only this equation family."),
    track: str | None = typer.Option(None, help="Only cases supported on this track."),
    json_out: bool = JSON_OPT,
) -> None:
    """List cases (id, family, geometry, method, libraries).

    Example: pdeagent cases list --family poisson
    """
    with cli_errors():
        rows = []
        for c in load(cases_file):
            if family and c.family != family:
                continue
            if track and track not in c.supported_libraries:
                continue
            rows.append(
                {
                    "id": c.id,
                    "family": c.family,
                    "geometry": c.case_spec.domain.type,
                    "transient": c.case_spec.pde.time is not None,
                    "method": c.evaluation_metadata.construction_method,
                    "libraries": list(c.supported_libraries),
                }
            )
        if json_out:
            print_json(rows)
            return
        table = Table(title=f"{len(rows)} cases")
        for col in ("id", "family", "geometry", "transient", "method", "libraries"):
            table.add_column(col)
        for r in rows:
            table.add_row(
                r["id"],
                r["family"],
                r["geometry"],
                "yes" if r["transient"] else "no",
                r["method"],
                ",".join(r["libraries"]),
            )
        console.print(table)


@cases_app.command("show")
def cases_show(
    case_id: str = typer.Argument(..., help="Case id."),
    cases_file: Path | None = CASES_FILE_OPT,
    agent_view: bool = typer.Option(
        False, "--agent-view", help="Show only what an agent sees ({case_spec, target_library})."
    ),
    track: str | None = typer.Option(None, help="Target library for --agent-view."),
) -> None:
    """Print one case record as JSON (evaluator view unless --agent-view).

    Example: pdeagent cases show poisson_unit_square_mms_001 --agent-view --track dolfinx
    """
    from pdeagent.cases.agent_view import agent_view as make_view
    from pdeagent.cases.io import find_case
    from pdeagent.cases.model import case_to_dict

    with cli_errors():
        case = find_case(load(cases_file), case_id)
        if agent_view:
            target = track or case.supported_libraries[0]
            print_json(make_view(case, target))
        else:
            print_json(case_to_dict(case))


@cases_app.command("validate")
def cases_validate(
    file: Path = typer.Argument(..., help="A JSON Lines file of case records."),
    json_out: bool = JSON_OPT,
) -> None:
    """Check a dataset against the JSON Schema and the semantic rules; exit 1 on problems.

    Example: pdeagent cases validate cases/examples.jsonl
    """
    from pdeagent.cases.validate import validate_file

    with cli_errors():
        if not file.exists():
            raise CLIError(f"no such file: {file}")
        if not file.is_file():
            raise CLIError(f"not a file: {file}")
        problems = validate_file(file, known_libraries=known_tracks())
        if json_out:
            print_json(
                [
                    {"case_id": p.case_id, "line": p.line, "field": p.field, "message": p.message}
                    for p in problems
                ]
            )
        else:
            for p in problems:
                console.print(str(p), highlight=False, soft_wrap=True)
            if problems:
                console.print(f"[red]{len(problems)} problem(s)[/] in {file}")
            else:
                console.print(f"[green]OK[/]: {file} is valid")
        if problems:
            raise typer.Exit(1)
