"""``pdeagent cases frontier``: measure a track's thresholds by the frontier rule (resumable,
across sessions) and, with ``--apply``, write them into the dataset (dataset 2.0)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from pdeagent.cli.common import (
    CASES_FILE_OPT,
    SANDBOX_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    host,
    known_tracks,
    print_json,
    split_ids,
)
from pdeagent.sandbox.select import get_sandbox


def cases_frontier(
    track: str = typer.Option(..., "--track", "-t", help="The track to calibrate."),
    cases_file: Path = CASES_FILE_OPT,
    store: Path = typer.Option(
        Path("cases/frontier"), "--store", help="Where each case's result is kept (resumable)."
    ),
    case: list[str] = typer.Option(
        None, "--case", "-c", help="Only these cases (repeatable, or comma-separated)."
    ),
    family: list[str] = typer.Option(None, "--family", help="Only these families (repeatable)."),
    limit: int = typer.Option(None, "--limit", min=1, help="At most this many new measurements."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Measure failed cases again."),
    apply: bool = typer.Option(
        False, "--apply", help="Write the stored results into the dataset instead of measuring."
    ),
    version: str = typer.Option(None, "--version", help="With --apply: the new dataset_version."),
    output: Path = typer.Option(None, "--output", "-o", help="With --apply: output file."),
    carry_from: Path = typer.Option(
        None,
        "--carry-from",
        help="With --apply: the released dataset whose other tracks' thresholds are carried "
        "where they still grade the same problem (else the track is withheld from the case).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    sandbox_name: str | None = SANDBOX_OPT,
    rule: str = typer.Option(
        None,
        "--rule",
        help="frontier-2 (each ladder chain screened in one warm run; the default for a "
        "track with a screening program) or frontier-1 (every rung a pristine run; the "
        "default otherwise).",
    ),
) -> None:
    """Frontier calibration (SPEC 7.1): for each case TRACK supports, walk the track's ladder
    of baseline configurations through the sandbox (one case at a time; frontier-1: each
    rung a pristine run, frontier-2: each chain in one warm run), choose by the frontier
    rule, measure the choice with the full protocol, and keep the result and its trial
    table in --store. Rerun to resume. --apply writes every supported
    case's thresholds and chosen configuration into the dataset (all must be measured).

    Examples: pdeagent cases frontier -t dolfinx --family poisson --limit 20
              pdeagent cases frontier -t dolfinx --apply --version 2.0.0 \
                  --carry-from cases/pdeagent-v1.jsonl -o cases/pdeagent-v2.jsonl
    """
    from pdeagent.cases.frontier_thresholds import (
        FrontierThresholdsError,
        apply_frontier,
        measure_frontier,
        read_stored,
    )
    from pdeagent.cases.versioning import VersionError

    with cli_errors():
        h = host()
        trk = h.get_track(track)
        dataset = (cases_file or default_dataset()).resolve()
        if not dataset.is_file():
            raise CLIError(f"no such file: {dataset}")
        if apply:
            if not version:
                raise CLIError("--apply needs --version")
            target = (output or dataset).resolve()
            if carry_from is not None and not carry_from.is_file():
                raise CLIError(f"no such file: {carry_from}")
            try:
                applied = apply_frontier(
                    h, trk, dataset, output=target, version=version, store=store,
                    known_libraries=tuple(known_tracks()), carry_from=carry_from,
                )  # fmt: skip
            except (FrontierThresholdsError, VersionError) as exc:
                raise CLIError(str(exc)) from None
            if json_out:
                print_json(
                    {
                        "output": str(target),
                        "version": version,
                        "changed": applied.changed,
                        "carried": applied.carried,
                        "withheld": {t: [list(x) for x in v] for t, v in applied.withheld.items()},
                    }
                )
                return
            console.print(
                f"{trk.name} frontier thresholds for {applied.changed} cases -> {target} "
                f"({version})"
            )
            for name in sorted(set(applied.carried) | set(applied.withheld)):
                withheld = applied.withheld.get(name, [])
                reasons: dict[str, int] = {}
                for _, why in withheld:
                    reasons[why] = reasons.get(why, 0) + 1
                console.print(
                    f"{name}: {len(applied.carried.get(name, []))} cases keep their released "
                    f"thresholds, {len(withheld)} withheld until measured"
                    + "".join(f"\n  {n} x {why}" for why, n in sorted(reasons.items()))
                )
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, disable=json_out) as bar:
            task: list[TaskID] = []

            def progress(stage: str, done: int, total: int) -> None:
                if not task:
                    task.append(bar.add_task(stage, total=total))
                bar.update(task[0], completed=done, description=stage)

            try:
                result = measure_frontier(
                    h, trk, dataset, sandbox=get_sandbox(sandbox_name), store=store,
                    case_ids=split_ids(case) or None, families=family or None, limit=limit,
                    retry_failed=retry_failed, known_libraries=tuple(known_tracks()),
                    progress=progress, rule=rule,
                )  # fmt: skip
            except FrontierThresholdsError as exc:
                raise CLIError(str(exc)) from None
        rows = []
        for cid in result.measured + result.reused:
            th = (read_stored(store, trk, cid, None) or {}).get("thresholds") or {}
            sel = th.get("selection") or {}
            rows.append(
                {
                    "case": cid,
                    "e_base": th.get("e_base"),
                    "t_base": th.get("t_base"),
                    "t_null": th.get("t_null"),
                    "tau_acc": th.get("tau_acc"),
                    "tau_time": th.get("tau_time"),
                    "trials": len(sel.get("trials") or []),
                    "why": sel.get("why"),
                    "config": sel.get("config"),
                }
            )
        if json_out:
            print_json(
                {
                    "measured": result.measured,
                    "reused": result.reused,
                    "failed": dict(result.failed),
                    "skipped": dict(result.skipped),
                    "t_null": result.t_null,
                    "seconds": result.seconds,
                    "cases": rows,
                }
            )
            return
        table = Table(title=f"{trk.name} frontier thresholds ({store})")
        for col in ("case", "e_base", "t_base [s]", "tau_acc", "tau_time [s]", "trials", "why"):
            table.add_column(col)
        for r in rows:
            table.add_row(
                r["case"], f"{r['e_base']:.2e}", f"{r['t_base']:.2f}", f"{r['tau_acc']:.2e}",
                f"{r['tau_time']:.2f}", str(r["trials"]), str(r["why"]),
            )  # fmt: skip
        console.print(table)
        console.print(
            f"{len(result.measured)} measured, {len(result.reused)} reused, "
            f"{len(result.failed)} failed, {len(result.skipped)} skipped in {result.seconds:.0f} s"
        )
        for cid, why in result.failed:
            console.print(f"[red]failed[/] {cid}: {why.splitlines()[0][:200]}")
        for cid, why in result.skipped:
            console.print(f"[yellow]skipped[/] {cid}: {why.splitlines()[0][:200]}")
