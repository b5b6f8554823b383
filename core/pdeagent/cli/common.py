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
from rich.markup import escape

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


DATASET_FILE = "pdeagent-v1.jsonl"
EXAMPLES_FILE = "examples.jsonl"


def default_dataset() -> Path:
    """The dataset every command uses when ``--cases-file`` is not given: $PDEAGENT_CASES,
    else the shipped benchmark ``cases/pdeagent-v1.jsonl``."""
    env = os.environ.get(ENV_CASES)
    return Path(env) if env else datasets_dir() / DATASET_FILE


CASES_FILE_HELP = (
    f"Dataset (JSON Lines). Default: ${ENV_CASES}, else the benchmark cases/{DATASET_FILE}; "
    f"the hand-written examples: --cases-file cases/{EXAMPLES_FILE}."
)
CASES_FILE_OPT = typer.Option(None, "--cases-file", help=CASES_FILE_HELP)


def split_ids(values: list[str] | None) -> list[str]:
    """Case ids from a repeatable option that also takes comma-separated lists
    (``--cases a,b --cases c``): in order, without blanks or repetitions."""
    ids: list[str] = []
    for value in values or []:
        for part in value.split(","):
            part = part.strip()
            if part and part not in ids:
                ids.append(part)
    return ids


def known_tracks() -> set[str]:
    """Library names a dataset may list here (the plugin host's, see
    :meth:`PluginHost.library_names`)."""
    return set(host().library_names())


def _project_errors() -> tuple[type[BaseException], ...]:
    """The project's own error types a command may end with: each says what is wrong with
    the input or the setup. Anything else (a ValueError or KeyError from inside the code
    included) is a bug and keeps its traceback."""
    from pdeagent.cases.build import BuildError
    from pdeagent.cases.design import DesignError
    from pdeagent.cases.io import CaseFileError, CaseNotFoundError
    from pdeagent.cases.versioning import VersionError
    from pdeagent.evaluation.calibration import CalibrationError
    from pdeagent.evaluation.null import NullProgramError
    from pdeagent.evaluation.pipeline import EvaluationSetupError
    from pdeagent.evaluation.reference import ReferenceUnavailable
    from pdeagent.extras import MissingExtra
    from pdeagent.plugins import PluginLoadError, UnknownNameError
    from pdeagent.providers import ProviderUnavailable
    from pdeagent.sandbox.base import SandboxError
    from pdeagent.stages import TrackUnavailable

    return (
        CLIError,
        CaseFileError,
        CaseNotFoundError,
        UnknownNameError,
        EvaluationSetupError,
        SandboxError,
        TrackUnavailable,
        PluginLoadError,
        ProviderUnavailable,
        CalibrationError,
        NullProgramError,
        ReferenceUnavailable,
        VersionError,
        DesignError,
        BuildError,
        MissingExtra,
    )


def one_line(exc: BaseException) -> str:
    """The message of a project error as the CLI prints it."""
    if isinstance(exc, KeyError) and exc.args:  # KeyError's str() is the repr of its key
        return str(exc.args[0])
    return str(exc)


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn the project's own errors (bad input, unknown names, harness setup, a failed
    calibration) into one line, exit code 2; every other exception propagates."""
    try:
        yield
    except typer.Exit:
        raise
    except _project_errors() as exc:
        message = escape(one_line(exc))  # "pdeagent[docker]" is text, not markup
        err_console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


@contextlib.contextmanager
def user_file(path: Path | str, what: str = "file") -> Iterator[None]:
    """Reading or writing a file the user named: an OS error (missing, a directory, no
    permission) or text that is not UTF-8 becomes a one-line CLIError."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise CLIError(f"{what} {path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        name = exc.filename if exc.filename is not None else path
        raise CLIError(f"{what} {name}: {exc.strerror or type(exc).__name__}") from None


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
