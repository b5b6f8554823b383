"""``pdeagent run``: the main job: models write solvers for a set of cases, graded."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from pdeagent.cli.cases_cmd import load
from pdeagent.cli.common import (
    CASES_FILE_OPT,
    SANDBOX_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    err_console,
    host,
    parse_options,
    print_json,
    split_ids,
)
from pdeagent.cli.generate_cmd import (
    CACHE_DIR_OPT,
    MAX_RETRIES_OPT,
    MAX_TOKENS_OPT,
    NO_CACHE_OPT,
    PRICES_OPT,
    TEMPERATURE_OPT,
    TIMEOUT_OPT,
    make_caller,
)
from pdeagent.cli.plugins_cmd import BASE_URL_OPT, PROVIDER_OPTION_OPT


def run(
    track: str | None = typer.Option(None, "--track", "-t", help="Track name."),
    provider: str | None = typer.Option(None, "--provider", "-p", help="Provider name."),
    model: list[str] | None = typer.Option(
        None, "--model", "-m", help="Model id (repeatable; default: the provider's name)."
    ),
    mode: str = typer.Option(
        "single",
        help="single | feedback | template | agent (a tool loop: write, run, submit; the "
        "provider must support tool use).",
    ),
    attempts: int = typer.Option(3, help="Attempts per case in feedback mode."),
    cases: list[str] | None = typer.Option(
        None, "--cases", help="Case ids: repeatable, or comma-separated (--cases a,b --cases c)."
    ),
    family: list[str] | None = typer.Option(None, "--family", help="Family (repeatable)."),
    geometry: list[str] | None = typer.Option(None, "--geometry", help="Geometry (repeatable)."),
    limit: int | None = typer.Option(None, help="At most this many cases (after sampling)."),
    sample: int | None = typer.Option(
        None, help="A stratified sample of N cases (families first, then geometries)."
    ),
    seed: int = typer.Option(0, help="Seed of the stratified sample."),
    cases_file: Path | None = CASES_FILE_OPT,
    alpha_acc: float | None = typer.Option(None, help="Override alpha_acc (default 10)."),
    alpha_time: float | None = typer.Option(None, help="Override alpha_time (default 3)."),
    tau_min: float | None = typer.Option(None, help="Override tau_min (default 1e-6)."),
    tau_acc: float | None = typer.Option(
        None, help="Explicit accuracy threshold for every case (instead of alpha_acc*e_base)."
    ),
    tau_time: float | None = typer.Option(
        None, help="Explicit time threshold [s] for every case (instead of alpha_time*t_base)."
    ),
    time_rule: str | None = typer.Option(
        None,
        "--time-rule",
        help="solve: tau_time = t_null + alpha_time*(t_base - t_null); paper: alpha_time*t_base "
        "(the published rule). Default: solve where the thresholds carry t_null.",
    ),
    explain_crashes: bool | None = typer.Option(
        None,
        "--explain-crashes/--no-explain-crashes",
        help="After a crash, let the track explain it (deal.II: a debug rebuild and rerun); "
        "default: on in feedback mode, where the explanation reaches the next attempt.",
    ),
    agent_turns: int = typer.Option(40, help="Agent mode: model turns per episode."),
    agent_tool_time: float = typer.Option(
        900.0, help="Agent mode: seconds of command wall time per episode (all run calls)."
    ),
    agent_tokens: int = typer.Option(
        2_000_000, help="Agent mode: input plus output tokens per episode."
    ),
    agent_cost: float | None = typer.Option(
        None, help="Agent mode: USD per episode (needs --prices; default: no limit)."
    ),
    agent_command_sec: float = typer.Option(
        120.0, help="Agent mode: wall-time limit of one run command [s]."
    ),
    workers: int = typer.Option(1, help="Evaluations at once (each on its own CPUs)."),
    gen_concurrency: int = typer.Option(4, help="Provider calls in flight at once."),
    executor: str = typer.Option("local", help="local | dask."),
    scheduler: str | None = typer.Option(
        None, help="Dask scheduler address (tcp://HOST:PORT) for --executor dask."
    ),
    scheduler_timeout: float = typer.Option(
        30.0, help="Seconds to wait for the dask scheduler to answer before giving up."
    ),
    out: Path = typer.Option(Path("runs/latest"), "--out", help="Run directory."),
    resume: bool = typer.Option(False, "--resume", help="Finish the run in --out."),
    rerun_errors: bool = typer.Option(
        False,
        "--rerun-errors",
        help="With --resume: also redo configuration provider failures (bad key, unknown "
        "model) and harness/sandbox ERRORs; transient provider failures (rate limits, "
        "5xx, timeouts) are redone by every --resume.",
    ),
    base_url: str | None = BASE_URL_OPT,
    provider_option: list[str] | None = PROVIDER_OPTION_OPT,
    timeout: float = TIMEOUT_OPT,
    max_tokens: int = MAX_TOKENS_OPT,
    temperature: float = TEMPERATURE_OPT,
    max_retries: int = MAX_RETRIES_OPT,
    cache_dir: Path | None = CACHE_DIR_OPT,
    no_cache: bool = NO_CACHE_OPT,
    prices: Path | None = PRICES_OPT,
    sandbox_name: str | None = SANDBOX_OPT,
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print the summary as JSON on stdout (run dir, counts per verdict, pass rate); "
        "the progress bar stays on stderr.",
    ),
) -> None:
    """Ask models for solvers of the selected cases and grade every one. Cases come from
    the benchmark dataset (cases/pdeagent-v1.jsonl) unless --cases-file names another.

    Exit code 0 when the run finished (whatever the verdicts), 2 on bad input, on a
    track whose runtime is not ready here (its `pdeagent tracks doctor` checks, run
    before any work) or when no case could be graded (every outcome an infrastructure
    failure), 130 when interrupted (finish it with --resume).

    Examples:
      pdeagent run --track dolfinx --provider baseline --sample 12 --out runs/demo
      pdeagent run -t dolfinx -p baseline --cases ID1,ID2 --cases ID3 --out runs/three
      pdeagent run -t dolfinx -p openai -m gpt-5 --base-url http://127.0.0.1:8000/v1
      pdeagent run --resume --out runs/demo
    """
    from pdeagent.cases.selection import SelectionError, select_cases
    from pdeagent.runs.executors import LocalExecutor
    from pdeagent.runs.runner import (
        MANIFEST_FILE,
        Run,
        RunConfig,
        RunError,
        note_resume,
        read_manifest,
        track_not_ready,
        write_manifest,
    )
    from pdeagent.sandbox.select import resolve_backend

    with cli_errors():
        from pdeagent.scoring.verdict import TIME_RULES

        if time_rule is not None and time_rule not in TIME_RULES:
            raise CLIError(f"--time-rule must be one of {', '.join(TIME_RULES)}")
        try:
            h = host()
            if resume:
                manifest, config = read_manifest(out)
                for flag, given, stored in (
                    ("--track", track, config.track),
                    ("--provider", provider, config.provider),
                ):
                    if given is not None and given != stored:
                        raise CLIError(f"{flag} {given!r} differs from the run's {stored!r}")
                if model and list(model) != config.models:
                    raise CLIError(f"--model differs from the run's {config.models}")
                if sandbox_name is not None and config.sandbox not in (None, sandbox_name):
                    raise CLIError(
                        f"--sandbox {sandbox_name!r} differs from the run's {config.sandbox!r}"
                    )
                if config.sandbox is None:  # a run started before backends were recorded
                    config.sandbox = resolve_backend(sandbox_name)
                else:
                    resolve_backend(config.sandbox)  # still available here
                the_cases = load(Path(config.cases_file))
            else:
                if rerun_errors:
                    raise CLIError("--rerun-errors needs --resume")
                if (out / MANIFEST_FILE).exists():
                    raise CLIError(f"{out} already holds a run: add --resume or use a new --out")
                if track is None or provider is None:
                    raise CLIError("--track and --provider are required (unless --resume)")
                trk = h.get_track(track)
                path = (cases_file or default_dataset()).resolve()
                the_cases = load(path)
                ids = split_ids(cases)
                selected = select_cases(
                    the_cases, trk.name, ids=ids, families=family, geometries=geometry,
                    limit=limit, sample=sample, seed=seed,
                )  # fmt: skip
                config = RunConfig(
                    track=trk.name,
                    provider=provider,
                    models=list(model) if model else [provider],
                    cases_file=str(path),
                    case_ids=[c.id for c in selected],
                    mode=mode,
                    attempts=attempts if mode == "feedback" else 1,
                    alpha_acc=alpha_acc,
                    alpha_time=alpha_time,
                    tau_min=tau_min,
                    tau_acc=tau_acc,
                    tau_time=tau_time,
                    time_rule=time_rule,
                    explain_crashes=explain_crashes,
                    selection=dict(
                        cases=ids or None,
                        family=family,
                        geometry=geometry,
                        limit=limit,
                        sample=sample,
                        seed=seed,
                    ),
                    base_url=base_url,
                    provider_options=parse_options(provider_option),
                    request_timeout_sec=timeout,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    max_retries=max_retries,
                    response_cache=not no_cache,
                    prices=str(prices.resolve()) if prices else None,
                    sandbox=resolve_backend(sandbox_name),
                    agent_turns=agent_turns,
                    agent_tool_time_sec=agent_tool_time,
                    agent_tokens=agent_tokens,
                    agent_cost_usd=agent_cost,
                    agent_command_sec=agent_command_sec,
                )
                config.check()
            caller = make_caller(
                config.provider,
                base_url=config.base_url,
                provider_option=[f"{k}={v}" for k, v in config.provider_options.items()],
                timeout=config.request_timeout_sec,
                cache_dir=cache_dir,
                no_cache=not config.response_cache,
                prices=Path(config.prices) if config.prices else None,
                max_retries=config.max_retries,
            )
            if executor == "local":
                if scheduler is not None:
                    raise CLIError("--scheduler needs --executor dask")
                try:
                    ex = LocalExecutor(workers)
                except ValueError as exc:  # --workers below 1 or above the CPUs
                    raise CLIError(f"--workers: {exc}") from None
            elif executor == "dask":
                if scheduler is None:
                    raise CLIError("--executor dask needs --scheduler tcp://HOST:PORT")
                if not scheduler_timeout > 0:
                    raise CLIError(f"--scheduler-timeout must be > 0, got {scheduler_timeout}")
                from pdeagent.runs.dask_executor import DaskExecutor, ExecutorUnavailable

                try:
                    ex = DaskExecutor(scheduler, track=config.track, timeout_sec=scheduler_timeout)
                except ExecutorUnavailable as exc:
                    raise CLIError(str(exc)) from None
            else:
                raise CLIError(f"--executor must be local or dask, got {executor!r}")
            if executor == "local":  # dask workers check their own runtime
                problem = track_not_ready(h, h.get_track(config.track))
                if problem is not None:
                    raise CLIError(problem)
            the_run = Run(
                h, config, the_cases, out, caller=caller, executor=ex,
                rerun_errors=rerun_errors, gen_concurrency=gen_concurrency,
            )  # fmt: skip
            if resume:
                note_resume(out, manifest, ex)
            else:
                out.mkdir(parents=True, exist_ok=True)
                write_manifest(out, config, h, ex, config.sandbox)
            _execute(the_run, config, out, ex, json_out=json_out)
        except (RunError, SelectionError) as exc:
            raise CLIError(str(exc)) from None


def _execute(the_run, config, out: Path, ex, *, json_out: bool = False) -> None:
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pass {task.fields[passed]}"),
        TextColumn("infra {task.fields[infra]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=False) as bar:
        total = the_run.progress.total
        task = bar.add_task(f"{config.track}/{config.provider}", total=total, passed=0, infra=0)

        def show(p) -> None:
            bar.update(
                task, completed=p.done, total=p.total, passed=p.passed, infra=p.infrastructure
            )

        the_run.on_progress = show
        try:
            reports = the_run.execute()
        except KeyboardInterrupt:
            err_console.print(
                f"[yellow]interrupted[/]: finished attempts are kept; "
                f"finish with: pdeagent run --resume --out {out}"
            )
            raise typer.Exit(130) from None
    ex.shutdown()
    if json_out:
        print_json(summary_dict(reports, config, out))
    else:
        _summary(reports, out)
    from pdeagent.runs.runner import nothing_graded

    problem = nothing_graded(reports, config.track, out)
    if problem is not None:
        raise CLIError(problem)


VERDICT_COLUMNS = ["PASS", "F-Exec", "F-Acc", "F-Time", "F-Gen", "infrastructure"]


def _pass_rate(counts: dict[str, int]) -> float | None:
    """PASS over every graded case; infrastructure failures are left out (README, Runs)."""
    graded = sum(counts.values()) - counts.get("infrastructure", 0)
    return counts.get("PASS", 0) / graded if graded else None


def summary_dict(reports, config, out: Path) -> dict:
    """What ``run --json`` prints: the run dir, counts per verdict (last attempt per case)
    and pass rate, overall and per model."""
    from collections import Counter

    by_model: dict[str, Counter] = {m: Counter() for m in config.models}
    for r in reports:
        key = "infrastructure" if r.infrastructure else r.verdict
        by_model.setdefault(r.model, Counter())[key] += 1
    total: Counter = Counter()
    for counts in by_model.values():
        total.update(counts)

    def block(counts: Counter) -> dict:
        return {
            "counts": {**dict.fromkeys(VERDICT_COLUMNS, 0), **counts},
            "pass_rate": _pass_rate(counts),
        }

    return {
        "run_dir": str(out),
        "track": config.track,
        "provider": config.provider,
        "models": list(config.models),
        "cases": len(config.case_ids),
        **block(total),
        "by_model": {m: block(c) for m, c in sorted(by_model.items())},
    }


def _summary(reports, out: Path) -> None:
    from collections import Counter

    by_model: dict[str, Counter] = {}
    for r in reports:
        key = "infrastructure" if r.infrastructure else r.verdict
        by_model.setdefault(r.model, Counter())[key] += 1
    table = Table(title="Run summary (last attempt per case)")
    cols = VERDICT_COLUMNS
    table.add_column("model")
    for col in cols:
        table.add_column(col, justify="right")
    for m, counts in sorted(by_model.items()):
        table.add_row(m, *(str(counts.get(c, 0)) for c in cols))
    console.print(table)
    console.print(f"run directory: {out}   (details: pdeagent report {out})", highlight=False)
