"""Shared pieces of the CLI: plugin host, dataset location, one-line errors."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from pdeagent.plugins import PluginHost, load_plugins

console = Console()
err_console = Console(stderr=True)

ENV_CASES = "PDEAGENT_CASES"
REPO_ROOT = Path(__file__).resolve().parents[3]


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


_host: PluginHost | None = None


def host() -> PluginHost:
    """The plugin host of this CLI invocation (loaded once)."""
    global _host
    if _host is None:
        _host = load_plugins()
        for failure in _host.failures:
            err_console.print(
                f"[yellow]warning:[/] plugin {failure.name!r} failed to load: {failure.error}",
                highlight=False,
            )
    return _host


def reset_host() -> None:
    global _host
    _host = None


def datasets_dir() -> Path:
    """The shipped datasets: the checkout's ``cases/`` directory, or the copy packaged
    into an installed wheel as ``pdeagent/datasets``."""
    checkout = REPO_ROOT / "cases"
    if (REPO_ROOT / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    return Path(__file__).resolve().parents[1] / "datasets"


def default_cases_file() -> Path:
    """The dataset used when ``--cases-file`` is not given: $PDEAGENT_CASES, else the
    shipped example cases (``cases/examples.jsonl``)."""
    env = os.environ.get(ENV_CASES)
    if env:
        return Path(env)
    return datasets_dir() / "examples.jsonl"


DATASET_FILE = "pdeagent-v1.jsonl"


def default_dataset() -> Path:
    """The benchmark dataset used by ``run`` and ``cases add-track`` when none is given:
    $PDEAGENT_CASES, else the shipped ``cases/pdeagent-v1.jsonl``."""
    env = os.environ.get(ENV_CASES)
    return Path(env) if env else datasets_dir() / DATASET_FILE


def known_tracks() -> set[str]:
    return set(host().tracks) | {"dolfinx", "firedrake", "dealii"}


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn expected failures (bad input, unknown names, harness setup) into one line."""
    from pdeagent.cases.io import CaseFileError
    from pdeagent.evaluation.pipeline import EvaluationSetupError
    from pdeagent.plugins import PluginLoadError, UnknownNameError
    from pdeagent.sandbox.base import SandboxError
    from pdeagent.stages import TrackUnavailable

    try:
        yield
    except typer.Exit:
        raise
    except (
        CLIError,
        CaseFileError,
        UnknownNameError,
        EvaluationSetupError,
        SandboxError,
        TrackUnavailable,
        PluginLoadError,
        FileNotFoundError,
        IsADirectoryError,
        PermissionError,
        UnicodeDecodeError,
        json.JSONDecodeError,
        KeyError,
        ValueError,
    ) as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.strerror or type(exc).__name__}: {exc.filename}"
        err_console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


SANDBOX_OPT = typer.Option(
    None,
    "--sandbox",
    help="Sandbox backend: local | bwrap | docker (default: $PDEAGENT_SANDBOX, else the "
    "strongest available; `pdeagent sandbox status` lists them).",
)


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--provider-option``) as a dict; bad input is a CLIError."""
    options: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CLIError(f"--provider-option expects KEY=VALUE, got {pair!r}")
        options[key.strip()] = value
    return options


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
