"""``pdeagent env setup TRACK`` and ``pdeagent tracks doctor TRACK``."""

from __future__ import annotations

import typer
from rich.table import Table

from pdeagent.cli.common import CLIError, cli_errors, console, err_console, host, print_json
from pdeagent.stages import DoctorCheck

env_app = typer.Typer(help="Provision track runtime environments.", no_args_is_help=True)


def _show(checks: list[DoctorCheck], json_out: bool) -> None:
    if json_out:
        print_json([{"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix} for c in checks])
        return
    table = Table(title="Runtime checks")
    for col in ("check", "ok", "detail", "fix"):
        table.add_column(col)
    for c in checks:
        table.add_row(c.name, "[green]yes[/]" if c.ok else "[red]NO[/]", c.detail, c.fix or "")
    console.print(table)


@env_app.command("setup")
def env_setup(
    track: str = typer.Argument(..., help="Track name, e.g. dolfinx."),
    force: bool = typer.Option(False, "--force", help="Rebuild from scratch."),
    json_out: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Create or update the runtime environment of TRACK, then check it.

    Example: pdeagent env setup dolfinx
    """
    with cli_errors():
        h = host()
        trk = h.get_track(track)
        with console.status(f"setting up the {trk.library} runtime ..."):
            checks = h.hook.pdeagent_setup_environment(
                track=trk, force=force, log=lambda msg: err_console.print(f"[dim]{msg}[/]")
            )
        if checks is None:
            raise CLIError(f"track {trk.name!r} has no environment setup")
        _show(checks, json_out)
        if not all(c.ok for c in checks):
            raise typer.Exit(1)


def tracks_doctor(
    track: str = typer.Argument(..., help="Track name."),
    json_out: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Check TRACK's runtime: what is present, and how to fix what is not.

    Example: pdeagent tracks doctor dolfinx
    """
    with cli_errors():
        h = host()
        trk = h.get_track(track)
        checks = h.hook.pdeagent_doctor(track=trk)
        if checks is None:
            raise CLIError(f"track {trk.name!r} has no doctor checks")
        _show(checks, json_out)
        if not all(c.ok for c in checks):
            raise typer.Exit(1)
