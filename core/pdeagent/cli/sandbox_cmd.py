"""``pdeagent sandbox status``: which sandbox backends can run programs here."""

from __future__ import annotations

import typer
from rich.table import Table

from pdeagent.cli.common import cli_errors, console, print_json

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
        default = resolve_backend()
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
