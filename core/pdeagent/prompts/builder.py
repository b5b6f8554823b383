"""Build the prompt of one (case, track, mode) from the agent view (SPEC §8, §9), and
the grader's feedback as the next user turn of a feedback conversation.

The template context is made from four things only: the agent view
``agent_view(case, track.name)``, the track with its :class:`PromptPieces` and its
committed runtime manifest (:mod:`pdeagent.runtime_packages`), the case's
``evaluation_config`` (wall-clock limit, number of timed repeats) and the timing protocol
the case is graded with (:func:`timing_protocol`: the protocol number of the track's
shipped thresholds, never a threshold value). Nothing else of the record (threshold
values, evaluation metadata, tags) is ever read here.
"""

from __future__ import annotations

import copy
import json
import math
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from attrs import define

import pdeagent
from pdeagent.cases.families import FAMILIES
from pdeagent.cases.model import Case, EvalGrid, output_arrays
from pdeagent.geometry.mask import scoring_rule
from pdeagent.prompts.summary import (
    QUANTITY_LABELS,
    boundary_parts,
    fmt_num,
    summarize_case,
)
from pdeagent.stages import LANGUAGES, PromptPieces, Track

if TYPE_CHECKING:
    from pdeagent.agent.loop import Budgets
    from pdeagent.agent.session import SessionLimits
    from pdeagent.evaluation.pipeline import GradingPolicy
    from pdeagent.stages import AgentShell

MODES = ("single", "feedback", "template")
FEEDBACK_STAGES = ("F-Exec", "F-Acc", "F-Time", "F-Gen")
PREVIOUS_CODE_CHARS = 2000
"""At most this many leading characters of the previous code go into a single-message
feedback prompt (``build_prompt(mode="feedback")``; the conversation carries the whole
reply instead)."""
STDERR_EXCERPT_CHARS = 3000
"""At most this many trailing characters of stderr go into feedback."""
ERROR_MESSAGE_CHARS = 2000
"""At most this many leading characters of the error message go into feedback."""


@define(frozen=True)
class Feedback:
    """What attempt k+1 is told about attempt k (SPEC §8).

    Holds only what the submission itself produced: its code, its failed stage,
    its error output, its own error value and runtime. Never thresholds or
    reference values. :func:`build_feedback_turn` ignores ``previous_code`` (the
    conversation holds the reply verbatim); ``build_prompt(mode="feedback")`` shows
    its start.
    """

    attempt: int
    """Number (1-based) of the attempt this feedback is about."""
    previous_code: str
    stage: str
    """``F-Exec``, ``F-Acc``, ``F-Time`` or ``F-Gen``."""
    reason: str | None
    """Machine-readable F-Exec reason (``runtime_error``, ``timeout``, ...)."""
    error_message: str
    stderr_excerpt: str
    error_value: float | None
    """The submission's own relative L2 error (F-Acc)."""
    runtime_sec: float | None
    """The submission's own measured runtime (F-Time)."""

    @classmethod
    def from_graded(cls, graded: Any, *, attempt: int, previous_code: str) -> Feedback:
        """The feedback on a graded submission: ``graded`` is an evaluation
        :class:`~pdeagent.evaluation.report.Report` or a run's attempt report (both have
        ``verdict``, ``reason``, ``message``, ``stderr_excerpt``, ``error`` and
        ``runtime_sec``). Its error only for F-Acc, its runtime only for F-Time."""
        return cls(
            attempt=attempt,
            previous_code=previous_code,
            stage=graded.verdict,
            reason=graded.reason,
            error_message=graded.message,
            stderr_excerpt=graded.stderr_excerpt,
            error_value=graded.error if graded.verdict == "F-Acc" else None,
            runtime_sec=graded.runtime_sec if graded.verdict == "F-Time" else None,
        )


def templates_dir() -> Path:
    """The prompt templates: ``pdeagent/templates`` in an installed wheel, else the
    top-level ``templates/`` of a source checkout."""
    package_dir = Path(pdeagent.__file__).resolve().parent
    candidates = [package_dir / "templates", package_dir.parents[1] / "templates"]
    for candidate in candidates:
        if (candidate / "prompt.md.j2").is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"pdeagent prompt templates not found (looked in: {tried})")


def _to_json(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, sort_keys=True, indent=indent, ensure_ascii=False, allow_nan=False)


def _fence(text: str, lang: str = "") -> str:
    """Wrap ``text`` in a fenced code block longer than any backtick run inside it."""
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{lang}\n{body}{ticks}"


def _sci(value: float) -> str:
    """A number in fixed 4-significant-digit scientific notation."""
    if not math.isfinite(value):
        return str(value)
    return f"{value:.4e}"


def _raise(message: str) -> None:
    raise ValueError(message)


def make_environment(directory: Path | None = None) -> jinja2.Environment:
    """A fresh jinja environment over the prompt templates (StrictUndefined, no
    autoescaping, deterministic filters)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory or templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.filters["to_json"] = _to_json
    env.filters["num"] = fmt_num
    env.filters["sci"] = _sci
    env.filters["fence"] = _fence
    env.filters["parts"] = boundary_parts
    env.globals["raise_error"] = _raise
    env.globals["quantity_labels"] = QUANTITY_LABELS
    return env


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return make_environment()


def _domain_definition(domain: dict[str, Any]) -> str:
    """The exact set definition of the agent view's ``domain`` (from its geometry template)."""
    from pdeagent.geometry import get_geometry

    params = dict(domain.get("geometry_params") or {})
    return get_geometry(domain["type"], params).definition().strip()


def _case_context(view: dict[str, Any]) -> dict[str, Any]:
    """Template variables derived from the agent view alone."""
    spec = view["case_spec"]
    pde = spec["pde"]
    grid = spec["eval_grid"]
    output = spec["output"]
    family = pde["type"]
    time = pde.get("time")
    components = output.get("components")
    return {
        "spec": spec,
        "case_spec_json": _to_json(spec),
        "target_library": view["target_library"],
        "family": family,
        "family_title": FAMILIES[family].title if family in FAMILIES else family,
        "pde": pde,
        "params": pde.get("params") or {},
        "forcing": pde.get("forcing") or {},
        "time": time,
        "transient": bool(time),
        "domain": spec["domain"],
        "bc": spec.get("bc") or {},
        "ic": spec.get("ic") or {},
        "grid": grid,
        "dim": 3 if grid.get("nz") is not None else 2,
        "output": output,
        "arrays": output_arrays(output),
        "field_arrays": list(components) if components else [output["field"]],
        "pressure_output": output.get("pressure"),
        "summary": summarize_case(spec),
        "domain_definition": _domain_definition(spec["domain"]),
    }


def timing_protocol(
    case: Case,
    track: Track,
    *,
    policy: GradingPolicy | None = None,
    protocol: int | None = None,
) -> dict[str, Any]:
    """The timing protocol ``case`` is graded with on ``track``, resolved as the evaluator
    resolves it (:func:`pdeagent.evaluation.pipeline.evaluate_source` and
    :func:`~pdeagent.evaluation.pipeline.resolve_thresholds`).

    ``timeout_sec`` and ``timed_repeats``: ``policy``'s overrides, else the case's
    ``evaluation_config``. ``protocol``: as given (a run passes the one its resolved
    thresholds carry, e.g. a local calibration's), else the protocol of the track's
    shipped thresholds, else the evaluator's
    :data:`~pdeagent.evaluation.pipeline.CURRENT_PROTOCOL`. ``pristine``: every run
    starts with fresh caches; ``all_timed``: the accuracy run is the first timed run
    (protocol 3); ``compiled``: the track compiles the program before the
    runs (its compile time is recorded apart from the runtime). Raises ``ValueError``
    for an unknown protocol or fewer than one timed repeat (the evaluator refuses both).
    """
    from pdeagent.cases.model import ALL_RUNS_TIMED_PROTOCOL, PRISTINE_PROTOCOL, PROTOCOLS
    from pdeagent.evaluation import pipeline

    cfg = case.evaluation_config
    policy = policy if policy is not None else pipeline.GradingPolicy()
    timeout = policy.timeout_sec if policy.timeout_sec is not None else cfg.timeout_sec
    repeats = policy.timed_repeats if policy.timed_repeats is not None else cfg.timed_repeats
    if protocol is None:
        shipped = case.evaluation_metadata.thresholds.get(track.name)
        protocol = shipped.protocol if shipped is not None else pipeline.CURRENT_PROTOCOL
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown timing protocol {protocol!r} (expected one of {PROTOCOLS})")
    if repeats < 1:
        raise ValueError(f"timed_repeats={repeats}: grading needs at least one timed repeat")
    # A track whose stage 1 "compiles" (a compiled language's default verb) builds the
    # program once before the runs; the prepare hook records that time apart.
    compiled = track.prepare_verb == LANGUAGES["cpp"].prepare_verb
    return {
        "timeout_sec": timeout,
        "repeats": repeats,
        "protocol": protocol,
        "pristine": protocol >= PRISTINE_PROTOCOL,
        "all_timed": protocol >= ALL_RUNS_TIMED_PROTOCOL,
        "compiled": compiled,
    }


_TERMINAL_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clears
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks
    r"|[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|[ -/]*[0-~])"  # other two- and three-character escapes
)
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f"
    + "".join(map(chr, range(0x202A, 0x202F)))
    + "".join(map(chr, range(0x2066, 0x206A)))
)
"""Marks and embeddings/overrides/isolates that reorder how text is displayed."""
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cs"})
"""Control characters and lone surrogates (undecodable bytes kept by some decoders)."""


def printable(text: str) -> str:
    """``text`` as plain visible text, for program output shown to a model: terminal
    escape sequences removed, carriage returns made line breaks, every other control
    character, lone surrogate and bidirectional override written as a visible escape
    (``\\x00``, ``\\u202e``). A program's output cannot hide or reorder what the
    feedback shows, or send bytes an API would refuse."""
    text = _TERMINAL_ESCAPE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    out = []
    for ch in text:
        visible = ch not in _BIDI_CONTROLS and unicodedata.category(ch) not in _HIDDEN_CATEGORIES
        if ch in "\n\t" or visible:
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


def _feedback_context(feedback: Feedback) -> dict[str, Any]:
    if feedback.stage not in FEEDBACK_STAGES:
        raise ValueError(
            f"unknown feedback stage {feedback.stage!r} (expected one of {FEEDBACK_STAGES})"
        )
    code = feedback.previous_code
    stderr = printable(feedback.stderr_excerpt).strip()
    message = printable(feedback.error_message).strip()
    return {
        "attempt": feedback.attempt,
        "stage": feedback.stage,
        "reason": feedback.reason,
        "previous_code": code[:PREVIOUS_CODE_CHARS],
        "code_truncated": len(code) > PREVIOUS_CODE_CHARS,
        "code_chars": len(code),
        "error_message": message[:ERROR_MESSAGE_CHARS],
        "message_truncated": len(message) > ERROR_MESSAGE_CHARS,
        "stderr_excerpt": stderr[-STDERR_EXCERPT_CHARS:],
        "stderr_truncated": len(stderr) > STDERR_EXCERPT_CHARS,
        "error_value": feedback.error_value,
        "runtime_sec": feedback.runtime_sec,
    }


def _runtime_packages(track: Track) -> str | None:
    """The sandbox line naming what the runtime offers (from the track's committed
    manifest); None for a track that declares no manifest. A declared but missing
    manifest raises :class:`~pdeagent.runtime_packages.ManifestError`."""
    from pdeagent.runtime_packages import load_manifest, packages_line

    if track.runtime_manifest is None:
        return None
    return packages_line(load_manifest(track))


def build_prompt(
    case: Case,
    track: Track,
    pieces: PromptPieces,
    *,
    mode: str = "single",
    feedback: Feedback | None = None,
    policy: GradingPolicy | None = None,
    protocol: int | None = None,
) -> str:
    """Render the prompt for ``case`` on ``track`` in ``mode`` (single/feedback/template).

    Template mode adds ``pieces.scaffold`` after the implementation contract. Feedback
    mode is the single-message form (the feedback block, with the start of the previous
    code, before the full single-shot prompt); a feedback conversation sends the
    single-shot prompt once and then :func:`build_feedback_turn`. ``policy`` and
    ``protocol`` are the run's grading overrides and the protocol of its resolved
    thresholds, for the evaluation section (see :func:`timing_protocol`).
    """
    if mode not in MODES:
        raise ValueError(f"unknown prompt mode {mode!r} (expected one of {MODES})")
    if mode == "template" and pieces.scaffold is None:
        raise ValueError(f"template mode needs a scaffold, but track {track.name!r} gave none")
    if mode == "feedback" and feedback is None:
        raise ValueError("feedback mode needs a Feedback")
    if mode != "feedback" and feedback is not None:
        raise ValueError(f"a Feedback is only accepted in feedback mode, not {mode!r}")

    from pdeagent.cases.agent_view import agent_view

    view = copy.deepcopy(agent_view(case, track.name))
    env = _environment()
    family = view["case_spec"]["pde"]["type"]
    family_template = f"families/{family}.md.j2"
    try:
        env.get_template(family_template)
    except jinja2.TemplateNotFound:
        raise ValueError(f"no governing-equation template for pde type {family!r}") from None

    timing = timing_protocol(case, track, policy=policy, protocol=protocol)
    context: dict[str, Any] = {
        **_case_context(view),
        "family_template": family_template,
        "track": track,
        "pieces": pieces,
        "scaffold": pieces.scaffold if mode == "template" else None,
        "timing": timing,
        "timeout_sec": timing["timeout_sec"],
        "scoring": scoring_rule(EvalGrid(**view["case_spec"]["eval_grid"])),
        "runtime_packages": _runtime_packages(track),
    }
    prompt = env.get_template("prompt.md.j2").render(context)
    if mode != "feedback":
        return prompt
    assert feedback is not None
    block = env.get_template("feedback.md.j2").render({**context, **_feedback_context(feedback)})
    return block.rstrip("\n") + "\n\n---\n\n" + prompt


def build_feedback_turn(
    case: Case, track: Track, feedback: Feedback, *, dropped_exchanges: int = 0
) -> str:
    """The grader's feedback on attempt ``feedback.attempt`` as the next user turn of a
    feedback conversation (SPEC §8).

    The conversation already holds the task (its first user turn) and the model's replies
    verbatim, so the turn repeats neither: it gives the failed stage and reason, the
    message, a bounded stderr excerpt (F-Exec), the submission's own error (F-Acc) or
    runtime (F-Time), generic advice, and asks for one complete corrected program in one
    fenced block per the original contract. ``dropped_exchanges`` > 0 says that many
    earlier exchanges (a reply and its feedback) were left out to fit the model's
    context. Reads nothing of ``case`` but its agent view: never thresholds or reference
    values.
    """
    if isinstance(dropped_exchanges, bool) or not isinstance(dropped_exchanges, int):
        raise ValueError(f"dropped_exchanges must be an integer, got {dropped_exchanges!r}")
    if dropped_exchanges < 0:
        raise ValueError(f"dropped_exchanges must be >= 0, got {dropped_exchanges}")
    if feedback.attempt < 1:
        raise ValueError(f"feedback.attempt is 1-based, got {feedback.attempt}")
    from pdeagent.cases.agent_view import agent_view

    view = agent_view(case, track.name)
    context = {
        **_feedback_context(feedback),
        "track": track,
        "transient": bool(view["case_spec"]["pde"].get("time")),
        "dropped_exchanges": dropped_exchanges,
    }
    text = _environment().get_template("feedback_turn.md.j2").render(context)
    return text.rstrip("\n") + "\n"


def build_agent_section(
    track: Track, shell: AgentShell, budgets: Budgets, limits: SessionLimits
) -> str:
    """The agent-mode section appended to the task prompt (``templates/agent.md.j2``):
    the tools, how to build and run the program as the grader does (the track's
    :class:`~pdeagent.stages.AgentShell`), the command limits and the budgets."""
    from pdeagent.agent.loop import MAX_IDLE_REPLIES

    context = {
        "track": track,
        "helper_files": sorted(shell.files),
        "how_to_run": shell.how_to_run,
        "budgets": budgets,
        "command_wall_sec": limits.command_wall_sec,
        "output_chars": limits.output_chars,
        "max_idle": MAX_IDLE_REPLIES,
    }
    text = _environment().get_template("agent.md.j2").render(context)
    return text.rstrip("\n") + "\n"
