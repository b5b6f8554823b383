"""``pdeagent cases reconstruct``: the records of a new major dataset version, re-derived
from the design under the current construction rules (same ids, thresholds dropped)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from pdeagent.cli.common import (
    CASES_FILE_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    print_json,
    user_file,
)


def cases_reconstruct(
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the new records."),
    version: str = typer.Option(..., "--version", help="dataset_version of the new records."),
    cases_file: Path = CASES_FILE_OPT,
    design: Path = typer.Option(Path("cases/design"), "--design", help="Design directory."),
    family: list[str] = typer.Option(
        None, "--family", help="Construct only these families again (repeatable; default all)."
    ),
    reference_dir: str = typer.Option(
        None,
        "--reference-dir",
        help="No-exact cases take their reference from <DIR>/<id>.npz (relative to the "
        "output's directory; the reference studies' store, e.g. reference_studies).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print what changed as JSON."),
) -> None:
    """Re-derive every case of the dataset from its design instance (found by its id) under
    the current construction rules: the case_spec and the exact solution are constructed
    again, everything else is kept, thresholds are dropped (measure them with `cases
    frontier --cases-file OUTPUT`). Prints which parts changed, per family.

    Example: pdeagent cases reconstruct --version 2.0.0 --reference-dir reference_studies
             -o cases/pdeagent-v2-records.jsonl
    """
    from pdeagent.cases.reconstruct import ReconstructionError, reconstruct
    from pdeagent.fileio import atomic_write_text

    with cli_errors():
        source = cases_file or default_dataset()
        records = []
        with user_file(source, "cases file"):
            lines = source.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise CLIError(f"{source} line {number}: not valid JSON ({exc})") from None
        with Progress(
            TextColumn("constructing"), BarColumn(), MofNCompleteColumn(), console=console
        ) as bar:
            task = bar.add_task("records", total=len(records))
            try:
                done = reconstruct(
                    records,
                    design,
                    dataset_version=version,
                    families=family or None,
                    reference_dir=reference_dir,
                    progress=lambda n, _total: bar.update(task, completed=n),
                )
            except ReconstructionError as exc:
                raise CLIError(str(exc)) from exc
        text = "".join(json.dumps(r.record) + "\n" for r in done)
        atomic_write_text(output, text)
        by_family: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter
        )
        for r in done:
            fam = r.record["pde_classification"]["equation_family"]
            by_family[fam][", ".join(r.changed) or "unchanged"] += 1
        if json_out:
            print_json({f: dict(c) for f, c in sorted(by_family.items())})
            return
        table = Table(title=f"{len(done)} records -> {output}")
        table.add_column("family")
        table.add_column("cases", justify="right")
        table.add_column("changed parts")
        for fam, counts in sorted(by_family.items()):
            for what, n in sorted(counts.items()):
                table.add_row(fam, str(n), what)
        console.print(table)
