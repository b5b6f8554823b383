"""``pdeagent sandbox status``: which sandbox backends can run programs here;
``pdeagent sandbox check``: the adversarial catalogue against them."""

from __future__ import annotations

from pathlib import Path

import attrs
import typer
from rich.table import Table

from pdeagent.cli.cases_cmd import load
from pdeagent.cli.common import (
    CASES_FILE_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    host,
    print_json,
)

sandbox_app = typer.Typer(help="Sandbox backends (local, bwrap, docker).", no_args_is_help=True)


@sandbox_app.command("status")
def sandbox_status(
    json_out: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """List the sandbox backends, strongest first: available here or why not, and which
    one runs programs by default.

    Example: pdeagent sandbox status
    """
    from pdeagent.sandbox.select import ENV_VAR, backend_status, resolve_backend

    with cli_errors():
        status = backend_status()
        default = resolve_backend(status=status)
        if json_out:
            print_json(
                {"default": default, "backends": [
                    {"name": k, "available": v is None, "reason": v} for k, v in status.items()
                ]}
            )  # fmt: skip
            return
        table = Table(
            title=f"Sandbox backends (default: {default}; override: --sandbox, ${ENV_VAR})"
        )
        for col in ("backend", "available", "detail"):
            table.add_column(col)
        for name, why in status.items():
            mark = "[green]yes[/]" if why is None else "[red]no[/]"
            table.add_row(name + (" (default)" if name == default else ""), mark, why or "")
        console.print(table)


@sandbox_app.command("check")
def sandbox_check(
    track: str = typer.Option(..., "--track", "-t", help="Track to attack (Python or C++)."),
    case: str | None = typer.Option(
        None, "--case", "-c", help="Case id (default: the first manufactured case of the track)."
    ),
    backend: list[str] | None = typer.Option(
        None, "--backend", "-b", help="Backend (repeatable; default: every available one)."
    ),
    attack: list[str] | None = typer.Option(
        None, "--attack", "-a", help="Attack name (repeatable; default: the whole catalogue)."
    ),
    cases_file: Path | None = CASES_FILE_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print every outcome as JSON."),
) -> None:
    """Grade the hostile submissions of the adversarial catalogue on TRACK through every
    backend, and print the attack x backend table: verdict, and whether every check
    after the run held (no secret read, no process left, nothing outside the work dir
    changed, no connection, the harness alive). Exit code 1 when any check failed.

    Example: pdeagent sandbox check --track dolfinx --backend bwrap --attack fork_bomb
    """
    import tempfile

    from pdeagent.adversarial import attacks_for, get_attack, run_attack
    from pdeagent.sandbox.select import available_backends, resolve_backend

    with cli_errors():
        h = host()
        trk = h.get_track(track)
        backends = list(backend) if backend else available_backends()
        for name in backends:
            resolve_backend(name)  # unknown or unavailable: one line, exit 2
        chosen = attacks_for(trk.language)
        if attack:
            try:
                chosen = [get_attack(a, trk.language) for a in attack]
            except KeyError as exc:  # an --attack name not in the catalogue
                raise CLIError(str(exc.args[0])) from None
        path = (cases_file or default_dataset()).resolve()
        candidates = [
            c for c in load(path)
            if trk.name in c.supported_libraries and (case is None or c.id == case)
            and c.evaluation_metadata.construction_method == "manufactured_solution"
        ]  # fmt: skip
        if not candidates:
            raise CLIError(f"no manufactured case {case or ''} for track {trk.name!r} in {path}")
        the_case = candidates[0]
        outcomes = []
        with console.status("attacking ...") as status:
            for a in chosen:
                for name in backends:
                    status.update(f"{a.name} on {name} ...")
                    with tempfile.TemporaryDirectory(prefix="pdeagent-check-") as tmp:
                        outcomes.append(run_attack(
                            a, host=h, track_name=trk.name, case=the_case, backend=name,
                            workroot=Path(tmp) / "attack",
                        ))  # fmt: skip
        failed = [o for o in outcomes if not o.ok]
        if json_out:
            print_json([attrs.asdict(o) for o in outcomes])
        else:
            table = Table(title=f"{trk.name}: {the_case.id} (expected verdict; checks)")
            table.add_column("attack")
            table.add_column("expected")
            for name in backends:
                table.add_column(name)
            by = {(o.attack, o.backend): o for o in outcomes}
            for a in chosen:
                cells = []
                for name in backends:
                    o = by[(a.name, name)]
                    verdict = f"{o.verdict} {o.reason or ''}".strip()
                    cells.append(("[green]" if o.ok else "[red]") + verdict + "[/]")
                table.add_row(a.name, " ".join(x for x in a.expected if x), *cells)
            console.print(table)
            for o in failed:
                console.print(f"[red]{o.attack} on {o.backend}:[/] {o.explain()}", soft_wrap=True)
        if failed:
            raise typer.Exit(1)
