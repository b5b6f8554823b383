"""``pdeagent cases list|show|validate|import-upstream``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

if TYPE_CHECKING:
    from pdeagent.cases.model import Case

from pdeagent.cli.common import (
    CASES_FILE_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    known_tracks,
    print_json,
    user_file,
)

cases_app = typer.Typer(help="Inspect and validate benchmark cases.", no_args_is_help=True)

JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON.")


def load(cases_file: Path | None):
    """The cases of ``cases_file`` (default: the benchmark dataset, see CASES_FILE_OPT)."""
    from pdeagent.cases.io import load_cases

    path = cases_file or default_dataset()
    if not path.is_file():
        raise CLIError(f"cases file not found: {path}")
    with user_file(path, "cases file"):
        return load_cases(path, known_libraries=known_tracks())


@cases_app.command("list")
def cases_list(
    cases_file: Path | None = CASES_FILE_OPT,
    family: str | None = typer.Option(None, help="Only this equation family."),
    track: str | None = typer.Option(None, help="Only cases supported on this track."),
    json_out: bool = JSON_OPT,
) -> None:
    """List the cases of the dataset (id, family, geometry, method, libraries): by default
    the benchmark, cases/pdeagent-v1.jsonl.

    Examples: pdeagent cases list --family poisson --track dolfinx
              pdeagent cases list --cases-file cases/examples.jsonl
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
    grading: bool = typer.Option(
        False,
        "--grading",
        help="Show instead how each track grades the case: the protocol, the rule that chose "
        "the baseline, its configuration and the thresholds.",
    ),
) -> None:
    """Print one case record as JSON (evaluator view unless --agent-view), or with
    --grading a table of how each track grades it.

    Example: pdeagent cases show poisson_star_smooth_mms_008 --agent-view --track dolfinx
    Example: pdeagent cases show poisson_star_smooth_mms_008 --grading
    """
    from pdeagent.cases.agent_view import agent_view as make_view
    from pdeagent.cases.io import find_case
    from pdeagent.cases.model import case_to_dict

    with cli_errors():
        case = find_case(load(cases_file), case_id)
        if grading:
            _print_grading(case)
            return
        if agent_view:
            target = track or case.supported_libraries[0]
            print_json(make_view(case, target))
        else:
            print_json(case_to_dict(case))


def _print_grading(case: Case) -> None:
    """``cases show --grading``: how each track the case is offered on grades it."""
    meta = case.evaluation_metadata
    console.print(f"[bold]{case.id}[/bold] (dataset {case.dataset_version or 'unversioned'})")
    for name in case.supported_libraries:
        th = meta.thresholds.get(name)
        if th is None:
            console.print(f"{name}: not calibrated (no thresholds: calibrate it to grade it)")
            continue
        config = (meta.calibration_config or {}).get(name)
        shown = "default" if config is None else json.dumps(config, sort_keys=True)
        t_null = "-" if th.t_null is None else f"{th.t_null:.3f} s"
        console.print(
            f"{name}: protocol {th.protocol}, baseline by {th.rule} (configuration {shown}), "
            f"measured {th.calibrated_on.get('date', 'on an unrecorded date')}\n"
            f"  e_base {th.e_base:.3g}  tau_acc {th.tau_acc:.3g}  t_base {th.t_base:.3f} s  "
            f"t_null {t_null}  tau_time {th.tau_time:.3f} s",
            highlight=False,
        )


@cases_app.command("validate")
def cases_validate(
    file: Path = typer.Argument(..., help="A JSON Lines file of case records."),
    references: bool = typer.Option(
        True,
        "--references/--no-references",
        help="Also check that each no-exact case's reference arrays (reference_path) are "
        "beside the file, as grading needs them.",
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Check a dataset against the JSON Schema and the semantic rules, and that its
    reference arrays are there; exit 1 on problems.

    Example: pdeagent cases validate cases/pdeagent-v1.jsonl
    """
    from pdeagent.cases.validate import validate_file

    with cli_errors():
        if not file.exists():
            raise CLIError(f"no such file: {file}")
        if not file.is_file():
            raise CLIError(f"not a file: {file}")
        with user_file(file):
            problems = validate_file(
                file, known_libraries=known_tracks(), check_references=references
            )
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


@cases_app.command("import-upstream")
def cases_import_upstream(
    file: Path = typer.Argument(..., help="Upstream PDEAgent-Bench file (benchmark_v2.jsonl)."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the records that pass validation here (JSON Lines)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite --output if it exists."),
    json_out: bool = JSON_OPT,
) -> None:
    """Convert upstream records into case records and report which ones leak their solution.

    Writes nothing without --output; leaking cases (SPEC §4) are reported, never written.

    Example: pdeagent cases import-upstream benchmark_v2.jsonl --output cases/upstream.jsonl
    """
    import json
    import os
    import tempfile

    from pdeagent.cases.model import case_to_dict
    from pdeagent.cases.upstream import LEAK_TOLERANCE, import_upstream, summary_dict

    with cli_errors():
        if not file.exists():
            raise CLIError(f"no such file: {file}")
        if not file.is_file():
            raise CLIError(f"not a file: {file}")
        if output is not None:
            if output.exists() and output.resolve() == file.resolve():
                raise CLIError(f"--output {output} is the input file")
            if output.exists() and not force:
                raise CLIError(f"refusing to overwrite {output} (use --force)")
            if output.exists() and not output.is_file():
                raise CLIError(f"--output {output} is not a file")
            if not output.parent.is_dir():
                raise CLIError(f"directory of --output does not exist: {output.parent}")
        with user_file(file):
            result = import_upstream(file)
        writable = result.writable_cases()
        if output is not None:
            lines = [json.dumps(case_to_dict(c), allow_nan=False) + "\n" for c in writable]
            fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.writelines(lines)
                os.replace(tmp, output)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        if json_out:
            data = summary_dict(result)
            data["file"] = str(file)
            data["output"] = str(output) if output is not None else None
            data["written"] = len(writable) if output is not None else 0
            print_json(data)
            return
        _print_import_report(result, LEAK_TOLERANCE)
        for case_id, stated in result.import_notes.items():
            for note in stated:
                console.print(
                    f"{case_id}: stated {note.field} = {json.dumps(note.value)}: {note.why}",
                    highlight=False,
                    soft_wrap=True,
                )
        for why, count in result.skipped_by_reason().items():
            console.print(f"refused {count}x: {why}", highlight=False, soft_wrap=True)
        if output is not None:
            console.print(f"wrote {len(writable)} case(s) to {output}", highlight=False)
        else:
            console.print("nothing written (give --output to write the records)")


def _print_import_report(result, tolerance: float) -> None:
    counts = Table(title="upstream import")
    counts.add_column("")
    counts.add_column("cases", justify="right")
    counts.add_row("imported", str(len(result.cases)))
    counts.add_row("  manufactured solution", str(result.manufactured))
    counts.add_row("  leaking (SPEC §4)", str(len(result.leaks)))
    counts.add_row("  rejected by validate (not written)", str(len(result.rejected_by_validator)))
    counts.add_row("  forcing differs from upstream", str(len(result.forcing_differences)))
    counts.add_row("skipped", str(len(result.skipped)))
    console.print(counts)
    if result.skipped:
        table = Table(title="skipped records")
        table.add_column("upstream record")
        table.add_column("reason")
        for who, why in result.skipped:
            table.add_row(who, why)
        console.print(table)
    if result.leaks:
        table = Table(title=f"leaking cases (cheat error < {tolerance:g})")
        table.add_column("case")
        table.add_column("leaks through")
        table.add_column("cheat rel. L2 error", justify="right")
        for leak in result.leaks:
            table.add_row(leak.case_id, ", ".join(leak.expressions), f"{leak.error:.2e}")
        console.print(table)
    if result.forcing_differences:
        table = Table(title="upstream source_term differs from the recomputed forcing")
        table.add_column("case")
        table.add_column("relative difference", justify="right")
        for diff in result.forcing_differences:
            table.add_row(diff.case_id, f"{diff.relative_difference:.3g}")
        console.print(table)
    console.print(result.leak_summary(), highlight=False)
