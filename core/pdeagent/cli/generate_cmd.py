"""``pdeagent generate``: ask a provider for one case's solver (no grading).

The building block of ``pdeagent run``, usable on its own to try a provider or a
model: the full call discipline (readiness check, cache, retries, temperature
fallback, call record) and the code extraction, with the attempt's files written
under ``--out`` in the run directory layout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from pdeagent.cli.cases_cmd import load
from pdeagent.cli.common import (
    CASES_FILE_OPT,
    CLIError,
    cli_errors,
    err_console,
    host,
    parse_options,
    print_json,
)
from pdeagent.cli.plugins_cmd import BASE_URL_OPT, PROVIDER_OPTION_OPT


def default_response_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pdeagent" / "responses"


def make_caller(
    provider_name: str,
    *,
    base_url: str | None,
    provider_option: list[str] | None,
    timeout: float,
    cache_dir: Path | None,
    no_cache: bool,
    prices: Path | None,
    max_retries: int,
):
    """A :class:`ProviderCaller` from CLI options; raises before any work when the
    provider cannot be used (SDK missing, key missing, ...)."""
    from pdeagent.calls import CallPolicy, PriceTable, ProviderCaller, ResponseCache
    from pdeagent.providers import ProviderSettings, ProviderUnavailable

    if timeout <= 0:
        raise CLIError(f"--timeout must be positive, got {timeout}")
    if max_retries < 0:
        raise CLIError(f"--max-retries must be >= 0, got {max_retries}")
    provider = host().get_provider(provider_name)
    settings = ProviderSettings(
        base_url=base_url, timeout_sec=timeout, options=parse_options(provider_option)
    )
    cache = None if no_cache else ResponseCache(cache_dir or default_response_cache())
    table = None
    if prices is not None:
        try:
            table = PriceTable.from_json(prices)
        except ValueError as exc:  # from_json's own: unreadable or malformed price table
            raise CLIError(str(exc)) from None
    try:
        return ProviderCaller(
            provider,
            settings,
            policy=CallPolicy(max_retries=max_retries),
            cache=cache,
            prices=table,
        )
    except ProviderUnavailable as exc:
        raise CLIError(str(exc)) from None


TIMEOUT_OPT = typer.Option(600.0, "--timeout", help="Per-request timeout in seconds.")
CACHE_DIR_OPT = typer.Option(
    None, "--cache-dir", help="Response cache (default: $XDG_CACHE_HOME/pdeagent/responses)."
)
NO_CACHE_OPT = typer.Option(False, "--no-cache", help="Neither read nor write the response cache.")
PRICES_OPT = typer.Option(
    None,
    "--prices",
    help='Price table JSON: {"MODEL": {"input_per_mtok": USD, "output_per_mtok": USD}}.',
)
MAX_RETRIES_OPT = typer.Option(6, "--max-retries", help="Retries on rate limits, 5xx, timeouts.")
MAX_TOKENS_OPT = typer.Option(16000, "--max-tokens", help="Output token limit of the reply.")
TEMPERATURE_OPT = typer.Option(
    0.0, "--temperature", help="Requested temperature (a model that refuses it is recorded)."
)


def generate(
    track: str = typer.Option(..., "--track", "-t", help="Track name."),
    case: str = typer.Option(..., "--case", "-c", help="Case id."),
    provider: str = typer.Option(..., "--provider", "-p", help="Provider name."),
    model: str = typer.Option(..., "--model", "-m", help="Model id as the provider knows it."),
    mode: str = typer.Option("single", help="single | template."),
    attempt: int = typer.Option(0, "--attempt", help="Sample / attempt index."),
    out: Path | None = typer.Option(
        None, "--out", help="Run directory to write the attempt's files into."
    ),
    cases_file: Path | None = CASES_FILE_OPT,
    base_url: str | None = BASE_URL_OPT,
    provider_option: list[str] | None = PROVIDER_OPTION_OPT,
    timeout: float = TIMEOUT_OPT,
    max_tokens: int = MAX_TOKENS_OPT,
    temperature: float = TEMPERATURE_OPT,
    max_retries: int = MAX_RETRIES_OPT,
    cache_dir: Path | None = CACHE_DIR_OPT,
    no_cache: bool = NO_CACHE_OPT,
    prices: Path | None = PRICES_OPT,
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print a JSON summary on stdout instead of the program: files written, "
        "provider, model, tokens, cost, and the program itself when there is no --out.",
    ),
) -> None:
    """Ask a provider for one case's solver; print the extracted program (or write the
    attempt under --out). Exit 1 when no program came back. Cases come from the benchmark
    dataset unless --cases-file names another.

    Example: pdeagent generate -t dolfinx -c poisson_star_smooth_mms_008 -p baseline -m baseline
    """
    from pdeagent.cases.agent_view import agent_view
    from pdeagent.cli.prompt_cmd import build_case_prompt
    from pdeagent.runs.layout import attempt_dir
    from pdeagent.runs.submission import request_submission

    with cli_errors():
        if mode not in ("single", "template"):
            raise CLIError(f"--mode must be single or template, got {mode!r}")
        if max_tokens <= 0:
            raise CLIError(f"--max-tokens must be positive, got {max_tokens}")
        if attempt < 0:
            raise CLIError(f"--attempt must be >= 0, got {attempt}")
        if not model.strip():
            raise CLIError("--model must not be empty")
        caller = make_caller(
            provider,
            base_url=base_url,
            provider_option=provider_option,
            timeout=timeout,
            cache_dir=cache_dir,
            no_cache=no_cache,
            prices=prices,
            max_retries=max_retries,
        )
        h = host()
        tr = h.get_track(track)
        prompt = build_case_prompt(track, case, cases_file, mode)
        from pdeagent.cases.io import find_case

        the_case = find_case(load(cases_file), case)
        directory = attempt_dir(out, tr.name, model, the_case.id, attempt) if out else None
        result = request_submission(
            caller,
            prompt=prompt,
            model=model,
            track_name=tr.name,
            language=tr,
            source_filename=tr.source_filename,
            case_id=the_case.id,
            case_view=agent_view(the_case, tr.name),
            calibration_config=the_case.evaluation_metadata.calibration_config,
            attempt=attempt,
            max_tokens=max_tokens,
            temperature=temperature,
            directory=directory,
        )
        rec = result.call
        if json_out:
            print_json(_summary_dict(result, provider, model, tr.name, the_case.id, directory))
            if result.source is None:
                raise typer.Exit(1)
            return
        summary = (
            f"{provider}/{model}: {rec.input_tokens} in / {rec.output_tokens} out tokens, "
            f"{rec.latency_sec:.2f} s, {rec.retries} retries"
            + (", cached" if rec.cached else "")
            + (f", ${rec.cost_usd:.4f}" if rec.cost_usd else "")
        )
        err_console.print(summary, highlight=False)
        if rec.temperature_note:
            err_console.print(f"[yellow]note:[/] {rec.temperature_note}", highlight=False)
        if directory is not None:
            err_console.print(f"attempt written to {directory}", highlight=False)
        if result.source is None:
            label = "provider error" if result.infrastructure else f"F-Gen {result.failure}"
            err_console.print(f"[red]{label}:[/] {result.message}", highlight=False)
            raise typer.Exit(1)
        if directory is None:
            sys.stdout.write(result.source)


def _summary_dict(result, provider: str, model: str, track: str, case_id: str, directory):
    """What ``generate --json`` prints."""
    rec = result.call
    files = (
        sorted(str(p) for p in directory.rglob("*") if p.is_file()) if directory is not None else []
    )
    return {
        "provider": provider,
        "model": model,
        "track": track,
        "case": case_id,
        "ok": result.source is not None,
        "failure": result.failure,
        "infrastructure": result.infrastructure,
        "message": result.message,
        "directory": str(directory) if directory is not None else None,
        "files": files,
        "source": result.source if directory is None else None,
        "input_tokens": rec.input_tokens,
        "output_tokens": rec.output_tokens,
        "cost_usd": rec.cost_usd,
        "cached": rec.cached,
        "latency_sec": rec.latency_sec,
        "retries": rec.retries,
        "temperature_note": rec.temperature_note,
    }
