"""``pdeagent plugins``, ``pdeagent tracks list``, ``pdeagent providers list``."""

from __future__ import annotations

import typer
from rich.table import Table

from pdeagent.cli.common import cli_errors, console, host, print_json

tracks_app = typer.Typer(help="Library tracks installed as plugins.", no_args_is_help=True)
providers_app = typer.Typer(help="LLM providers installed as plugins.", no_args_is_help=True)

JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON.")


def plugins(json_out: bool = JSON_OPT) -> None:
    """List loaded plugins: distribution, version, hooks implemented, load failures.

    Example: pdeagent plugins --json
    """
    with cli_errors():
        h = host()
        if json_out:
            print_json(
                {
                    "plugins": [
                        {
                            "name": p.name,
                            "distribution": p.distribution,
                            "version": p.version,
                            "module": p.module,
                            "hooks": list(p.hooks),
                        }
                        for p in h.plugins
                    ],
                    "failures": [
                        {"name": f.name, "distribution": f.distribution, "error": f.error}
                        for f in h.failures
                    ],
                }
            )
            return
        table = Table(title="Loaded plugins")
        for col in ("name", "distribution", "version", "hooks"):
            table.add_column(col)
        for p in h.plugins:
            table.add_row(p.name, p.distribution or "-", p.version or "-", "\n".join(p.hooks))
        console.print(table)
        if h.failures:
            failed = Table(title="Plugins that failed to load", style="red")
            for col in ("name", "distribution", "error"):
                failed.add_column(col)
            for f in h.failures:
                failed.add_row(f.name, f.distribution or "-", f.error)
            console.print(failed)


@tracks_app.command("list")
def tracks_list(json_out: bool = JSON_OPT) -> None:
    """List the registered library tracks."""
    with cli_errors():
        h = host()
        rows = [
            {
                "name": t.name,
                "library": t.library,
                "language": t.language,
                "library_version": t.library_version,
                "plugin": h.track_owner.get(t.name),
                "description": t.description,
            }
            for t in sorted(h.tracks.values(), key=lambda t: t.name)
        ]
        if json_out:
            print_json(rows)
            return
        table = Table(title="Tracks")
        for col in ("name", "library", "language", "version", "plugin"):
            table.add_column(col)
        for r in rows:
            table.add_row(
                r["name"],
                r["library"],
                r["language"],
                r["library_version"] or "-",
                r["plugin"] or "-",
            )
        console.print(table)


BASE_URL_OPT = typer.Option(
    None, "--base-url", help="Endpoint override for providers that accept one (e.g. openai)."
)
PROVIDER_OPTION_OPT = typer.Option(
    None,
    "--provider-option",
    "-O",
    help="Provider-specific KEY=VALUE (repeatable), e.g. dir=RUN_DIR for replay.",
)


@providers_app.command("list")
def providers_list(
    json_out: bool = JSON_OPT,
    base_url: str | None = BASE_URL_OPT,
    provider_option: list[str] | None = PROVIDER_OPTION_OPT,
) -> None:
    """List the registered LLM providers and whether each can be used here
    (SDK importable, key present, endpoint).

    Example: pdeagent providers list --base-url http://127.0.0.1:8000/v1
    """
    from pdeagent.cli.common import parse_options
    from pdeagent.providers import ProviderSettings, provider_status

    with cli_errors():
        h = host()
        settings = ProviderSettings(base_url=base_url, options=parse_options(provider_option))
        rows = []
        for name, p in sorted(h.providers.items()):
            status = provider_status(p, settings)
            rows.append(
                {
                    "name": name,
                    "description": p.description,
                    "plugin": h.provider_owner.get(name),
                    "ready": status.ready,
                    "package": status.package,
                    "key": status.key,
                    "endpoint": status.endpoint,
                    "problem": status.problem,
                }
            )
        if json_out:
            print_json(rows)
            return
        table = Table(title="Providers")
        for col in ("name", "ready", "package", "key", "endpoint", "plugin"):
            table.add_column(col)
        for r in rows:
            ready = "[green]yes[/]" if r["ready"] else "[red]no[/]"
            table.add_row(
                r["name"], ready, r["package"], r["key"], r["endpoint"] or "-", r["plugin"] or "-"
            )
        console.print(table)
        for r in rows:
            if not r["ready"]:
                console.print(f"[red]{r['name']}[/]: {r['problem']}", highlight=False)
