"""The attacks' own expectations: each function takes the :class:`CheckContext` of a run
and returns the problems found (empty when the attack was held as it must be). The
catalogue names one per attack (``Attack.check``); the checks every attack gets
(verdict, secrets, processes, files, network, harness) are in :mod:`.runner`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pdeagent.adversarial.model import PRIVATE_PREFIXES, CheckContext
from pdeagent.evaluation.pipeline import EXCERPT_CHARS
from pdeagent.sandbox.cgroups import PROCESS_SLACK

FILL_SLACK_BYTES = 2**30
"""How far a work or cache dir may overshoot its size limit before the watch stops it."""


def findings_required(*keys: str) -> Callable[[CheckContext], list[str]]:
    """A check that the program reported every one of ``keys`` (it ran as intended)."""

    def check(ctx: CheckContext) -> list[str]:
        missing = [k for k in keys if k not in ctx.findings]
        if missing:
            return [f"the attack did not report {missing}: it did not run as intended"]
        return []

    return check


def check_connects(ctx: CheckContext) -> list[str]:
    problems = findings_required("connects")(ctx)
    for target, result in (ctx.findings.get("connects") or {}).items():
        if result in ("connected", "resolved"):
            problems.append(f"the program reached {target}: {result}")
    return problems


def check_writes(ctx: CheckContext) -> list[str]:
    problems = findings_required("writes")(ctx)
    for target, result in (ctx.findings.get("writes") or {}).items():
        private = any(str(target).startswith(p) for p in PRIVATE_PREFIXES)
        if result in ("written", "opened for writing", "done") and not private:
            problems.append(f"the program could write outside its work dir: {target}: {result}")
    return problems


def check_signals(ctx: CheckContext) -> list[str]:
    problems = findings_required("signals")(ctx)
    signals = ctx.findings.get("signals") or {}
    for key in ("probe harness", "probe bystander", "kill bystander"):
        if signals.get(key) == "sent":
            problems.append(f"the program could signal a host process ({key})")
    if signals.get("kill parent") == "sent":
        problems.append("the program could kill its parent (the sandbox's supervisor)")
    return problems


def check_fork_bomb(ctx: CheckContext) -> list[str]:
    problems = findings_required("forks")(ctx)
    forks = ctx.findings.get("forks")
    bounded = ctx.is_root or ctx.backend == "docker"
    if isinstance(forks, int) and bounded and forks > ctx.limits.processes + PROCESS_SLACK:
        problems.append(f"{forks} forks succeeded, limit {ctx.limits.processes}")
    return problems


def check_timeout(ctx: CheckContext) -> list[str]:
    if not ctx.executions:
        return ["no execution was recorded"]
    wall = ctx.executions[0].wall_time_sec
    limit = ctx.limits.wall_time_sec
    problems = []
    if not limit - 0.5 <= wall <= limit + 15:
        problems.append(f"killed after {wall:.1f} s, the wall limit is {limit:.1f} s")
    if ctx.elapsed_sec > limit + 60:
        problems.append(f"the evaluation took {ctx.elapsed_sec:.1f} s for a {limit:.0f} s limit")
    return problems


def _touched_mib(stdout: str) -> int:
    touched = 0
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "touched" and parts[1].isdigit():
            touched = max(touched, int(parts[1]))
    return touched


def check_touch_memory(ctx: CheckContext) -> list[str]:
    if not ctx.executions:
        return ["no execution was recorded"]
    result = ctx.executions[0]
    touched = _touched_mib(result.stdout)
    if touched == 0:
        return ["the program reported no touched memory: it did not run as intended"]
    cap_mib = ctx.limits.memory_bytes // 2**20
    if result.memory_enforced and touched > cap_mib + 128:
        return [f"{touched} MiB touched under a {cap_mib} MiB memory cap"]
    return []


def _dir_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def check_fill_disk(ctx: CheckContext) -> list[str]:
    """The work dir stayed well below the 2 GiB the attack writes: a watch that polls lets
    a fast writer (several GB/s into the page cache) overshoot by rate x interval."""
    used = sum(_dir_bytes(p) for p in ctx.eval_root.glob("exec-*"))
    bound = ctx.limits.workdir_bytes + FILL_SLACK_BYTES
    if used > bound:
        limit = ctx.limits.workdir_bytes >> 20
        return [f"the work dir grew to {used >> 20} MiB (limit {limit} MiB)"]
    return []


def check_stdout_flood(ctx: CheckContext) -> list[str]:
    problems = findings_required("flooded_mib")(ctx)
    if ctx.report is not None and len(ctx.report.stdout_excerpt) > EXCERPT_CHARS + 16:
        problems.append(f"stdout excerpt of {len(ctx.report.stdout_excerpt)} chars in the report")
    if ctx.executions:
        result = ctx.executions[0]
        if not result.stdout_truncated:
            problems.append("1 GiB of stdout was not marked truncated")
        if len(result.stdout) > ctx.limits.output_bytes:
            problems.append(f"{len(result.stdout)} chars of stdout kept")
    return problems


def check_not_pwned(ctx: CheckContext) -> list[str]:
    problems = findings_required("written")(ctx)
    if Path(ctx.params["PWNED_MARKER"]).exists():
        problems.append("the harness unpickled the submission's npz (the payload ran)")
    return problems


def check_fake_meta(ctx: CheckContext) -> list[str]:
    report = ctx.report
    if report is None:
        return ["no report"]
    sleep = float(ctx.params["SLEEP_SEC"])
    problems = []
    if report.runtime_sec is None or not report.runtime_sec > sleep:
        problems.append(f"measured runtime {report.runtime_sec} s is not above the sleep {sleep} s")
    if len(report.runtime_samples) != ctx.attack.timed_repeats:
        problems.append(f"{len(report.runtime_samples)} timed repeats were measured")
    if any(not s > sleep for s in report.runtime_samples):
        problems.append(f"a timed repeat shorter than the sleep: {report.runtime_samples}")
    if report.diagnostics.get("reported_wall_time_sec") != 0.001:
        problems.append("the fake meta.json time did not reach the diagnostics")
    return problems


def _runs(ctx: CheckContext) -> dict[str, Any]:
    return {k[4:]: v for k, v in ctx.findings.items() if k.startswith("run ")}


def check_no_replay(ctx: CheckContext) -> list[str]:
    """The answer was stored in every writable place the first run found, and no timed
    repeat found it again (each starts from the same pristine state)."""
    runs = _runs(ctx)
    first = runs.get("exec-0")
    if not isinstance(first, dict) or not first.get("stored"):
        return [f"the first run stored no answer anywhere ({first}): it did not run as intended"]
    if not any(p.startswith(str(ctx.eval_root)) for p in first["stored"]):
        return [f"the answer was not stored in the run's cache dir: {first['stored']}"]
    problems = []
    if len(runs) != 1 + ctx.attack.timed_repeats:
        problems.append(f"{len(runs)} runs reported, expected {1 + ctx.attack.timed_repeats}")
    for name, note in sorted(runs.items()):
        if isinstance(note, dict) and note.get("replayed_from"):
            problems.append(f"{name} replayed the answer kept in {note['replayed_from']}")
    return problems


def check_repeat_checked(ctx: CheckContext) -> list[str]:
    runs = _runs(ctx)
    if runs.get("exec-0") != "solved" or runs.get("exec-1") != "zeros":
        return [f"the runs did not behave as intended: {runs}"]
    if ctx.report is None or ctx.report.runtime_sec is not None:
        return ["a runtime was reported for a submission whose timed repeat was wrong"]
    return []


def check_fill_cache(ctx: CheckContext) -> list[str]:
    used = sum(_dir_bytes(p) for p in ctx.eval_root.glob("cache*"))
    bound = ctx.limits.workdir_bytes + FILL_SLACK_BYTES
    if used > bound:
        return [f"the cache dir grew to {used >> 20} MiB (limit {ctx.limits.workdir_bytes >> 20})"]
    if not ctx.executions or "written" not in ctx.executions[0].stdout:
        return ["the program wrote nothing into its cache dir: it did not run as intended"]
    return []


def check_daemon_started(ctx: CheckContext) -> list[str]:
    if ctx.findings.get("daemon_started") is not True:
        return ["the daemon did not start: the attack did not run as intended"]
    return []


def check_no_late_solution(ctx: CheckContext) -> list[str]:
    problems = findings_required("daemon_spawned")(ctx)
    for workdir in ctx.eval_root.glob("exec-*"):
        for name in ("solution.npz", "solution_grid.bin"):
            if os.path.lexists(workdir / name):
                problems.append(f"{workdir.name}/{name} exists after the run")
    return problems


def check_child_forked(ctx: CheckContext) -> list[str]:
    return findings_required("forked")(ctx)
