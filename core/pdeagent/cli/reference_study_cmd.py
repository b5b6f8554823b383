"""``pdeagent cases reference-study``: refinement studies of the no-exact references
(resumable, one case at a time; see :mod:`pdeagent.cases.reference_study`)."""

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


def _num(value: object, fmt: str = ".2e") -> str:
    return "-" if value is None else format(value, fmt)


def cases_reference_study(
    track: str = typer.Option("dolfinx", "--track", "-t", help="Track whose reference solver."),
    cases_file: Path = CASES_FILE_OPT,
    store: Path = typer.Option(
        Path("cases/reference_studies"), "--store", help="Where each study is kept (resumable)."
    ),
    case: list[str] = typer.Option(
        None, "--case", "-c", help="Only these cases (repeatable, or comma-separated)."
    ),
    family: list[str] = typer.Option(None, "--family", help="Only these families (repeatable)."),
    limit: int = typer.Option(None, "--limit", min=1, help="At most this many new studies."),
    target: float = typer.Option(
        1e-9, "--target", help="Stop once the estimated error of the finest level is <= this."
    ),
    max_seconds: float = typer.Option(
        120.0, "--max-seconds", help="Cost cap: wall seconds of one solve (predicted and hard)."
    ),
    max_dofs: int = typer.Option(
        None, "--max-dofs", help="Cost cap: unknowns of one solve (default 6e6 2-D, 1e6 3-D)."
    ),
    factor: float = typer.Option(
        2.0, "--factor", help="Mesh refinement factor per level (time step divided by it)."
    ),
    degree: int = typer.Option(
        None, "--degree", help="Element degree of every level (default: the case's)."
    ),
    refine_time: bool = typer.Option(
        True,
        "--refine-time/--fixed-time-step",
        help="Transient cases: divide the time step by FACTOR per level too (default), or "
        "keep the case's (the estimate then leaves the time error out).",
    ),
    max_levels: int = typer.Option(6, "--max-levels", min=3, help="At most this many levels."),
    start_level: int = typer.Option(
        -2,
        "--start-level",
        max=0,
        help="First level (<= 0): -2 starts two refinements coarser than the reference "
        "config, so the first estimate is the reference config's own.",
    ),
    memory_gib: float = typer.Option(16.0, "--memory-gib", help="Memory limit of one solve."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Study failed cases again."),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    sandbox_name: str | None = SANDBOX_OPT,
) -> None:
    """Refinement study of each no-exact case's reference (issue #19): solve with the
    track's reference solver on a sequence of levels around the case's reference_config
    (mesh resolution x FACTOR per level, time step / FACTOR; from --start-level), measure
    the gaps between successive levels, and estimate the finest level's error by the geometric tail
    (rule geometric-tail-1). Stops at --target or a cost cap. Each case's record and the
    finest arrays go to --store as soon as it is done; rerun to resume.

    Example: pdeagent cases reference-study --family poisson --limit 3
    """
    from pdeagent.cases.reference_study import (
        ReferenceStudyError,
        StudyOptions,
        read_study,
        run_studies,
    )

    with cli_errors():
        h = host()
        trk = h.get_track(track)
        dataset = (cases_file or default_dataset()).resolve()
        if not dataset.is_file():
            raise CLIError(f"no such file: {dataset}")
        try:
            options = StudyOptions(
                target=target, factor=factor, degree=degree, refine_time=refine_time,
                max_seconds=max_seconds,
                max_dofs=max_dofs, max_levels=max_levels, memory_gib=memory_gib,
                start_level=start_level,
            )  # fmt: skip
        except ValueError as exc:
            raise CLIError(str(exc)) from None
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
                result = run_studies(
                    h, trk, dataset, sandbox=get_sandbox(sandbox_name), store=store,
                    options=options, case_ids=split_ids(case) or None, families=family or None,
                    limit=limit, retry_failed=retry_failed,
                    known_libraries=tuple(known_tracks()), progress=progress,
                )  # fmt: skip
            except ReferenceStudyError as exc:
                raise CLIError(str(exc)) from None
        rows = []
        for cid in result.measured + result.reused:
            study = read_study(store, cid) or {}
            levels = study.get("levels") or []
            gaps = study.get("gaps") or []
            rows.append(
                {
                    "case": cid,
                    "levels": len(levels),
                    "finest_resolution": (levels[-1]["config"].get("mesh_resolution")
                                          if levels else None),
                    "last_gap": gaps[-1] if gaps else None,
                    "rho": study.get("rho"),
                    "e_est": study.get("e_est"),
                    "reached": study.get("reached"),
                    "stopped": study.get("stopped"),
                    "why": study.get("why") or study.get("stop_detail"),
                    "seconds": study.get("seconds"),
                    "stored_reference_error": study.get("stored_reference_error"),
                }
            )  # fmt: skip
        if json_out:
            print_json(
                {
                    "measured": result.measured,
                    "reused": result.reused,
                    "failed": dict(result.failed),
                    "seconds": result.seconds,
                    "cases": rows,
                }
            )
            return
        table = Table(title=f"{trk.name} reference studies ({store})")
        width = max((len(r["case"]) for r in rows), default=4)
        table.add_column("case", overflow="fold", min_width=min(width, 24))
        for col in ("levels", "finest res", "last gap", "rho", "e_est", "reached", "s"):
            table.add_column(col)
        for r in rows:
            reached = "[green]yes[/]" if r["reached"] else f"[red]no[/] ({r['stopped']})"
            table.add_row(
                r["case"], str(r["levels"]), str(r["finest_resolution"]), _num(r["last_gap"]),
                _num(r["rho"], ".3f"), _num(r["e_est"]), reached, _num(r["seconds"], ".0f"),
            )  # fmt: skip
        console.print(table)
        console.print(
            f"{len(result.measured)} studied, {len(result.reused)} reused, "
            f"{len(result.failed)} failed in {result.seconds:.0f} s"
        )
        for cid, why in result.failed:
            console.print(f"[red]failed[/] {cid}: {why.splitlines()[0][:200]}")
