"""``pdeagent cases build``: run the dataset construction pipeline; ``cases diff`` checks
the version rule; ``cases add-track`` adds a track's thresholds."""

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

from pdeagent.cli.common import (
    CASES_FILE_OPT,
    DATASET_FILE,
    SANDBOX_OPT,
    CLIError,
    cli_errors,
    console,
    datasets_dir,
    default_dataset,
    err_console,
    host,
    known_tracks,
    print_json,
    split_ids,
)
from pdeagent.sandbox.select import get_sandbox


def cases_build(
    design: Path = typer.Option(None, "--design", help="Design directory (default cases/design)."),
    output: Path = typer.Option(
        None, "--output", "-o", help="Dataset file (default cases/pdeagent-v1.jsonl)."
    ),
    track: str = typer.Option("dolfinx", "--track", "-t", help="Track that calibrates."),
    build_dir: Path = typer.Option(
        Path(".pdeagent-build"), "--build-dir", help="Resumable state (trials, references)."
    ),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Parallel trials."),
    family: list[str] = typer.Option(None, "--family", help="Only these families (repeatable)."),
    scale: float = typer.Option(
        1.0, "--scale", min=0.0, help="Multiply stratum counts (small trial builds)."
    ),
    version: str = typer.Option("1.0.0", "--dataset-version", help="Dataset version."),
    card: bool = typer.Option(True, "--card/--no-card", help="Write the dataset card README."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    sandbox_name: str | None = SANDBOX_OPT,
) -> None:
    """Build the dataset from the design matrix: construct, validate, solve references,
    calibrate, run the cheat check, package. Resumable: rerun the same command after an
    interruption and finished trials are reused.

    Example: pdeagent cases build --track dolfinx --jobs 2
    """
    from pdeagent.cases.build import Builder, BuildOptions
    from pdeagent.cases.card import write_card

    with cli_errors():
        design = design or datasets_dir() / "design"
        output = output or datasets_dir() / DATASET_FILE
        if scale <= 0:
            raise CLIError("--scale must be positive")
        options = BuildOptions(
            design_dir=design,
            output=output,
            track=track,
            build_dir=build_dir,
            dataset_version=version,
            jobs=jobs,
            families=family or None,
            scale=scale,
        )
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, disable=json_out) as bar:
            tasks: dict[str, tuple[TaskID, int]] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks or tasks[stage][1] != total:
                    if stage in tasks:
                        bar.remove_task(tasks[stage][0])
                    tasks[stage] = (bar.add_task(stage, total=total), total)
                bar.update(tasks[stage][0], completed=done)

            builder = Builder(host(), get_sandbox(sandbox_name), options, progress=progress)
            summary = builder.run()
        if card:
            write_card(output, build_dir, wall_sec=summary.wall_sec, known_libraries=known_tracks())
        result = {
            "output": str(summary.output),
            "cases": summary.cases,
            "trials": summary.trials,
            "rejected": len(summary.rejected),
            "shortfall": summary.shortfall,
            "wall_sec": round(summary.wall_sec, 1),
        }
        if json_out:
            print_json({**result, "rejections": summary.rejected})
            if summary.shortfall:
                raise typer.Exit(1)
            return
        console.print(
            f"{summary.cases} cases -> {summary.output} ({summary.trials} trials, "
            f"{len(summary.rejected)} refused, {summary.wall_sec:.0f} s)"
        )
        for cid, why in summary.rejected[:20]:
            console.print(f"  refused {cid}: {why.splitlines()[0][:160]}")
        if summary.shortfall:
            raise CLIError(f"strata ran out of candidates: {summary.shortfall}")


def cases_diff(
    old: Path = typer.Argument(..., help="The released dataset file."),
    new: Path = typer.Argument(..., help="The new dataset file."),
    json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Compare two datasets and check the version rule: new cases (or a track's thresholds
    added where it had none) need a minor bump; a changed reference, grid, threshold or
    output contract (or a removed case) a major one. Then explain: the cases per changed
    part of what decides a score, and per track how its thresholds changed (kept,
    replaced with which protocol and baseline rule, added, withheld).
    Exit 1 when NEW's dataset_version is not bumped enough.

    Example: pdeagent cases diff cases/pdeagent-v1.jsonl new.jsonl
    """
    from pdeagent.cases.io import load_cases
    from pdeagent.cases.versioning import VersionError, check_bump, diff, explain

    with cli_errors():
        for path in (old, new):
            if not path.is_file():
                raise CLIError(f"no such file: {path}")
        before = load_cases(old, known_libraries=known_tracks())
        after = load_cases(new, known_libraries=known_tracks())
        changes = diff(before, after, old_dir=old.parent, new_dir=new.parent)
        result = {
            "added": changes.added,
            "removed": changes.removed,
            "scoring_changed": changes.major,
            "thresholds_added": changes.thresholds_added,
            "other_changes": changes.patch,
            "required_bump": changes.required,
            "explained": explain(before, after, old_dir=old.parent, new_dir=new.parent),
        }
        try:
            _, made = check_bump(before, after, old_dir=old.parent, new_dir=new.parent)
            result["bump"], problem = made, None
        except VersionError as exc:
            result["bump"], problem = None, str(exc)
        if json_out:
            print_json({**result, "error": problem})
        else:
            for key in ("added", "removed", "scoring_changed", "thresholds_added", "other_changes"):
                console.print(f"{key.replace('_', ' ')}: {len(result[key])}")
            console.print(f"required bump: {changes.required}")
            for part, counts in result["explained"].items():
                if counts:
                    console.print(f"{part}:")
                for what, n in counts.items():
                    console.print(f"  {n} x {what}", highlight=False)
        if problem:
            if not json_out:
                console.print(f"[red]error[/]: {problem}")
            raise typer.Exit(1)


def cases_add_track(
    track: str = typer.Option(..., "--track", "-t", help="The track whose thresholds to add."),
    version: str = typer.Option(
        ..., "--version", help="The new dataset_version (a minor bump at least)."
    ),
    cases_file: Path = CASES_FILE_OPT,
    cases: list[str] | None = typer.Option(
        None,
        "--cases",
        help="Only these case ids (repeatable, or comma-separated); default: every case "
        "the track supports or its capabilities match.",
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Output file (default: in place)."),
    build_dir: Path = typer.Option(
        Path(".pdeagent-build"), "--build-dir", help="Resumable state (measurements, trials)."
    ),
    card: bool = typer.Option(True, help="Regenerate the dataset card (README.md)."),
    sandbox_name: str | None = SANDBOX_OPT,
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print what was added as JSON on stdout (the progress bar moves to stderr).",
    ),
) -> None:
    """Add TRACK's thresholds to the dataset: run its calibration baseline on every case
    it supports and has no thresholds for (sandbox, timing protocol, one case at a time),
    then write the dataset with the new version. A case the track's declared capabilities
    match (families, domains, dimensions, time dependence, outputs, boundary conditions;
    Track.capabilities) is offered to it: TRACK is added to its supported_libraries with
    the thresholds. Nothing is written unless the baseline runs and is competent on every
    such case. Resumable: measurements are kept in --build-dir.

    Example: pdeagent cases add-track --track dealii --version 1.1.0
    """
    from pdeagent.cases.card import write_card
    from pdeagent.cases.track_thresholds import TrackThresholdsError, add_track_thresholds
    from pdeagent.cases.versioning import VersionError

    with cli_errors():
        h = host()
        trk = h.get_track(track)
        dataset = (cases_file or default_dataset()).resolve()
        if not dataset.is_file():
            raise CLIError(f"no such file: {dataset}")
        target = (output or dataset).resolve()
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=err_console if json_out else console) as bar:
            task: list[TaskID] = []

            def progress(stage: str, done: int, total: int) -> None:
                if not task:
                    task.append(bar.add_task(stage, total=total))
                bar.update(task[0], completed=done)

            try:
                result = add_track_thresholds(
                    h, trk, dataset, output=target, version=version,
                    sandbox=get_sandbox(sandbox_name), build_dir=build_dir,
                    known_libraries=tuple(known_tracks()), progress=progress,
                    case_ids=split_ids(cases) if cases else None,
                )  # fmt: skip
            except (TrackThresholdsError, VersionError) as exc:
                raise CLIError(str(exc)) from None
        if card:
            write_card(target, build_dir, known_libraries=known_tracks())
        if json_out:
            print_json(
                {
                    "track": trk.name,
                    "dataset": str(dataset),
                    "output": str(target),
                    "version": result.version,
                    "cases": len(result.measured) + len(result.reused),
                    "measured": result.measured,
                    "reused": result.reused,
                    "offered": result.offered,
                    "card": card,
                }
            )
            return
        console.print(
            f"{trk.name} thresholds for {len(result.measured) + len(result.reused)} cases "
            f"({len(result.measured)} measured, {len(result.reused)} reused; "
            f"{len(result.offered)} newly supported) -> {target} (version {result.version})"
        )
