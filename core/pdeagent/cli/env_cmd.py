"""``pdeagent env setup TRACK|--sandbox NAME`` and ``pdeagent tracks doctor TRACK``."""

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


def _setup_sandbox(name: str, json_out: bool) -> None:
    from pdeagent.sandbox.select import BACKENDS, backend_status

    if name not in BACKENDS:
        raise CLIError(f"--sandbox must be one of {', '.join(BACKENDS)}, got {name!r}")
    checks = []
    if name == "docker":
        from pdeagent.sandbox.docker import build_image

        with console.status("building the sandbox image ..."):
            tag = build_image()
        checks.append(DoctorCheck("docker image", True, f"{tag} (built locally, no registry)"))
    why = backend_status()[name]
    fixes = {
        "bwrap": "as root: apt-get install -y bubblewrap",
        "docker": "as root: apt-get install -y docker.io; dockerd --iptables=false "
        "--bridge=none & ; then pdeagent env setup --sandbox docker",
        "local": "install util-linux (unshare); run as root or allow user namespaces",
    }
    fix = None if why is None else fixes[name]
    checks.append(DoctorCheck(f"{name} backend", why is None, why or "available", fix))
    _show(checks, json_out)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


@env_app.command("setup")
def env_setup(
    track: str | None = typer.Argument(None, help="Track name, e.g. dolfinx."),
    sandbox: str | None = typer.Option(
        None, "--sandbox", help="Set up a sandbox backend instead (docker: build its image)."
    ),
    force: bool = typer.Option(False, "--force", help="Rebuild from scratch."),
    json_out: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Create or update the runtime environment of TRACK, then check it; or, with
    --sandbox, set up a sandbox backend (docker: build the sandbox image locally).

    Examples:
      pdeagent env setup dolfinx
      pdeagent env setup --sandbox docker
    """
    with cli_errors():
        if (track is None) == (sandbox is None):
            raise CLIError("give a TRACK or --sandbox NAME (one of them)")
        if sandbox is not None:
            _setup_sandbox(sandbox, json_out)
            return
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
