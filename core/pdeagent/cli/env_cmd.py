"""``pdeagent env setup TRACK|--sandbox NAME``, ``pdeagent env packages -t TRACK`` and
``pdeagent tracks doctor TRACK``."""

from __future__ import annotations

import typer
from rich.table import Table

from pdeagent.cli.common import CLIError, cli_errors, console, err_console, host, print_json
from pdeagent.plugins import PluginHost
from pdeagent.stages import DoctorCheck, Track

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
    update_pins: bool = typer.Option(
        False,
        "--update-pins",
        help="Build afresh from the newest versions the track's requirements allow, then "
        "rewrite its committed manifest (packages and pins) from that runtime.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Create or update the runtime environment of TRACK, then check it; or, with
    --sandbox, set up a sandbox backend (docker: build the sandbox image locally).

    A runtime installed with pip installs the exact versions pinned in the track's
    committed runtime_packages.json, so every machine builds the same runtime;
    --update-pins moves the pins to today's newest versions (review and commit the
    manifest it writes).

    Examples:
      pdeagent env setup dolfinx
      pdeagent env setup dolfinx --update-pins
      pdeagent env setup --sandbox docker
    """
    with cli_errors():
        if (track is None) == (sandbox is None):
            raise CLIError("give a TRACK or --sandbox NAME (one of them)")
        if sandbox is not None:
            if update_pins:
                raise CLIError("--update-pins is for a TRACK's runtime, not a sandbox")
            _setup_sandbox(sandbox, json_out)
            return
        h = host()
        trk = h.get_track(track)
        if update_pins and trk.runtime_manifest is None:
            raise CLIError(f"track {trk.name!r} declares no runtime manifest to hold pins")
        with console.status(f"setting up the {trk.library} runtime ..."):
            checks = h.hook.pdeagent_setup_environment(
                track=trk,
                force=force,
                log=lambda msg: err_console.print(f"[dim]{msg}[/]"),
                update_pins=update_pins,
            )
        if checks is None:
            raise CLIError(f"track {trk.name!r} has no environment setup")
        if update_pins:
            _write_new_pins(h, trk)
        _show(checks, json_out)
        if not all(c.ok for c in checks):
            raise typer.Exit(1)


def _write_new_pins(h: PluginHost, trk: Track) -> None:
    """After an --update-pins build: the runtime's manifest replaces the committed one;
    say which pins moved."""
    from pdeagent.runtime_packages import ManifestError, load_manifest, write_manifest

    try:
        try:
            old = set(load_manifest(trk).get("pins", ()))
        except ManifestError:
            old = set()
        live = h.hook.pdeagent_runtime_packages(track=trk)
        if live is None or "pins" not in live:
            raise CLIError(f"track {trk.name!r} reports no pins for its runtime")
        path = write_manifest(trk, live)
    except ManifestError as exc:
        raise CLIError(str(exc)) from None
    new = set(live["pins"])
    for pin in sorted(old - new):
        err_console.print(f"  - {pin}", highlight=False)
    for pin in sorted(new - old):
        err_console.print(f"  + {pin}", highlight=False)
    err_console.print(
        f"wrote {path} ({len(new)} pins, {len(new - old)} changed or new): review and commit it",
        highlight=False,
    )


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


@env_app.command("packages")
def env_packages(
    track: str = typer.Option(..., "-t", "--track", help="Track name, e.g. dolfinx."),
    write: bool = typer.Option(
        False, "--write", help="Write the runtime's list to the track's committed manifest."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """List what TRACK's installed runtime offers submissions (asked from the runtime
    itself) and compare it with the track's committed manifest, which the prompt lists;
    --write replaces the committed manifest. Exit code 1 when they differ (without --write).

    Examples:
      pdeagent env packages -t dolfinx
      pdeagent env packages -t dolfinx --write
    """
    from pdeagent.runtime_packages import (
        ManifestError,
        load_manifest,
        manifest_json,
        packages_line,
        write_manifest,
    )

    with cli_errors():
        h = host()
        trk = h.get_track(track)
        if trk.runtime_manifest is None:
            raise CLIError(f"track {trk.name!r} declares no runtime manifest")
        try:
            with console.status(f"asking the {trk.library} runtime ..."):
                live = h.hook.pdeagent_runtime_packages(track=trk)
            if live is None:
                raise CLIError(f"track {trk.name!r} cannot list its runtime packages")
            if write:
                path = write_manifest(trk, live)
                err_console.print(f"wrote {path}", highlight=False)
                committed = live
            else:
                committed = load_manifest(trk)
        except ManifestError as exc:
            raise CLIError(str(exc)) from None
        if json_out:
            print_json(live)
        else:
            console.print(packages_line(live), highlight=False, soft_wrap=True)
        if manifest_json(committed) != manifest_json(live):
            err_console.print(
                f"[red]the runtime differs from {trk.runtime_manifest}[/]: run "
                f"`pdeagent env packages -t {trk.name} --write` and commit it",
                highlight=False,
            )
            raise typer.Exit(1)
