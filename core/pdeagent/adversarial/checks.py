"""The attacks' own expectations: each function takes the :class:`CheckContext` of a run
and returns the problems found (empty when the attack was held as it must be). The
catalogue names one per attack (``Attack.check``); the checks every attack gets
(verdict, secrets, processes, files, network, harness) are in :mod:`.runner`."""

from __future__ import annotations

import contextlib
import html.parser
import json
import os
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import evolve

from pdeagent.adversarial.model import PRIVATE_PREFIXES, CheckContext
from pdeagent.cases.model import ALL_RUNS_TIMED_PROTOCOL
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
    # protocol 3 times the accuracy run too: timed_repeats runs in all, else one more
    all_timed = ctx.report is not None and ctx.report.protocol >= ALL_RUNS_TIMED_PROTOCOL
    expected = ctx.attack.timed_repeats + (0 if all_timed else 1)
    if len(runs) != expected:
        problems.append(f"{len(runs)} runs reported, expected {expected}")
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


FEEDBACK_INJECTION_MARKER = "PDEAGENT-INJECTED"
"""Written by the feedback-injection attacks on every line they want the next prompt to
show as the grader's own words."""
_FENCE_OPEN = re.compile(r"^(`{3,})[^`]*$")


def split_fences(markdown: str) -> tuple[str, list[str]]:
    """(the text outside fenced code blocks, the bodies of the blocks) of ``markdown``, by
    the CommonMark rule a model's reader follows: a block opens on a line of three or more
    backticks (an info string after them, no backtick in it) and closes on a line of
    backticks at least as long; an unclosed block runs to the end."""
    outside: list[str] = []
    blocks: list[str] = []
    body: list[str] | None = None
    ticks = 0
    for line in markdown.split("\n"):
        if body is None:
            opened = _FENCE_OPEN.match(line)
            if opened:
                body, ticks = [], len(opened.group(1))
            else:
                outside.append(line)
        elif line.strip() and set(line.strip()) == {"`"} and len(line.strip()) >= ticks:
            blocks.append("\n".join(body))
            body = None
        else:
            body.append(line)
    if body is not None:
        blocks.append("\n".join(body))
    return "\n".join(outside), blocks


def check_feedback_fenced(ctx: CheckContext) -> list[str]:
    """The program's output tries to pass for the grader in the next prompt: a closing
    fence and a fake feedback heading, a jinja expression, terminal escapes, a carriage
    return, NUL, a bidirectional override, undecodable bytes. Built from the report as a
    runner builds it, the feedback turn and the single-message feedback prompt must show
    the injected lines, but only inside a fenced block, with no control character, the
    jinja text literal, and the stderr part bounded."""
    from pdeagent.prompts.builder import (
        ERROR_MESSAGE_CHARS,
        STDERR_EXCERPT_CHARS,
        Feedback,
        build_feedback_turn,
        build_prompt,
    )
    from pdeagent.stages import PromptPieces

    # the track's own sections hold fenced examples of their own: only the feedback's
    # fences matter here
    probe_pieces = PromptPieces(contract="(the contract)", guide="(the guide)")

    report = ctx.report
    if report is None:
        return ["no report to build feedback from"]
    if FEEDBACK_INJECTION_MARKER not in report.stderr_excerpt:
        return ["the injected text did not reach the report's stderr excerpt"]
    feedback = Feedback.from_graded(report, attempt=1, previous_code=ctx.source)
    texts = {
        "feedback turn": build_feedback_turn(ctx.case, ctx.track, feedback),
        "feedback prompt": build_prompt(
            ctx.case, ctx.track, probe_pieces, mode="feedback", feedback=feedback
        ),
    }
    problems: list[str] = []
    for name, text in texts.items():
        outside, blocks = split_fences(text)
        inside = "\n".join(blocks)
        if FEEDBACK_INJECTION_MARKER in outside:
            line = next(x for x in outside.split("\n") if FEEDBACK_INJECTION_MARKER in x)
            problems.append(f"{name}: injected text outside a fenced block: {line[:200]!r}")
        if FEEDBACK_INJECTION_MARKER not in inside:
            problems.append(f"{name}: the program's output is not shown in a fenced block")
        if "{{ tau_acc }}" not in inside:
            problems.append(f"{name}: the injected jinja expression was not kept literally")
        if outside.count("# Grader feedback on attempt") > 1:
            problems.append(f"{name}: a second grader heading outside the fences")
        hidden = sorted(
            {f"U+{ord(c):04X}" for c in text if c not in "\n\t" and _hidden_character(c)}
        )
        if hidden:
            problems.append(f"{name}: control or reordering characters {hidden}")
    turn = texts["feedback turn"]
    bound = STDERR_EXCERPT_CHARS + ERROR_MESSAGE_CHARS + 4000
    if len(turn) > bound:
        problems.append(f"feedback turn of {len(turn)} chars (bound {bound})")
    return problems


REPORT_INJECTION_MARKER = "PDEAGENT-REPORT-INJECTED"
_ACTIVE_TAGS = frozenset({"script", "iframe", "img", "svg", "object", "embed", "base", "form"})


def check_report_page_inert(ctx: CheckContext) -> list[str]:
    """The program's stderr, its meta.json message and solver_info, and its own code
    carry HTML and script. The walkthrough page ``pdeagent report --out`` writes for the
    attempt (rendered from the report as the report command does) must show that text,
    as text: no element, attribute or URL of it may become markup (no script, image,
    frame, svg, base or form element, no ``on*`` attribute, no ``javascript:`` URL, no
    style element beyond the page's own), and the template syntax in it stays literal."""
    from pdeagent.runs.records import GRADED_FIELDS, AttemptReport, attempt_to_dict
    from pdeagent.runs.walkthrough import render_walkthrough

    report = ctx.report
    if report is None:
        return ["no report to render a page from"]
    if REPORT_INJECTION_MARKER not in report.stderr_excerpt:
        return ["the injected text did not reach the report's stderr excerpt"]

    def page(graded: Any, code: str) -> str:
        attempt = AttemptReport(
            track=ctx.track.name, provider="adversarial", model="attack", case_id=ctx.case.id,
            attempt=0, mode="single", verdict=graded.verdict, family=ctx.case.family,
            geometry=ctx.case.case_spec.domain.type,
            dimension=len(ctx.case.case_spec.domain.bounds),
        )  # fmt: skip
        for name in GRADED_FIELDS:
            setattr(attempt, name, getattr(graded, name))
        return render_walkthrough(
            case=ctx.case, track=ctx.track.name, attempt_report=attempt, code=code,
            pictures=None, picture_files={}, report_json=attempt_to_dict(attempt),
            code_file=ctx.track.source_filename,
        )  # fmt: skip

    text = page(report, ctx.source)
    hostile = _Markup.of(text)
    benign = _Markup.of(page(evolve(report, stderr_excerpt="", message="", diagnostics={}), ""))
    problems: list[str] = []
    if REPORT_INJECTION_MARKER not in hostile.text:
        problems.append("the injected text is not shown on the page")
    if "{{ 7*7 }}" not in hostile.text:
        problems.append("the injected template expression was not kept literally")
    for tag in sorted(_ACTIVE_TAGS & set(hostile.tags)):
        problems.append(f"a <{tag}> element on the page")
    if hostile.tags.count("style") > benign.tags.count("style"):
        problems.append("a <style> element beyond the page's own")
    for tag, name, value in hostile.attributes:
        if name.startswith("on"):
            problems.append(f"an event attribute {name}= on <{tag}>")
        if name in ("href", "src", "action") and value.strip().lower().startswith("javascript:"):
            problems.append(f"a javascript: URL in <{tag} {name}>")
    return problems


class _Markup(html.parser.HTMLParser):
    """The elements, attributes and text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.parts: list[str] = []

    @classmethod
    def of(cls, text: str) -> _Markup:
        parser = cls()
        parser.feed(text)
        parser.close()
        return parser

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend((tag, name, value or "") for name, value in attrs)

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _hidden_character(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs") or unicodedata.bidirectional(ch) in (
        "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI", "LRM", "RLM", "ALM",
    )  # fmt: skip


SETTINGS_ESCAPE = Path("/var/tmp/pdeagent-settings-escape")
"""Where the hostile settings line's path-like key and shell text point."""


def check_settings_line(ctx: CheckContext) -> list[str]:
    """A first-line settings object with path-like keys, huge and nested values and
    shell text: the compile stage writes exactly that JSON beside the program's own
    binary under its fixed name (the program reads it back) and nothing anywhere else."""
    problems = findings_required("settings_found", "settings_text")(ctx)
    if problems:
        return problems
    first = ctx.source.split("\n", 1)[0]
    expected = json.loads(first.split(":", 1)[1])
    if ctx.findings["settings_found"] is not True:
        problems.append("the program found no settings file beside its binary")
    else:
        try:
            got = json.loads(ctx.findings["settings_text"])
        except ValueError:
            got = None
        if got != expected:
            problems.append(f"the settings file holds {str(got)[:200]}, not line 1's object")
    if SETTINGS_ESCAPE.exists():
        problems.append(f"{SETTINGS_ESCAPE} was created")
    return problems
