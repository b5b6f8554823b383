"""Build the prompt of one (case, track, mode) from the agent view (SPEC §8, §9).

The template context is made from three things only: the agent view
``agent_view(case, track.name)``, the track with its :class:`PromptPieces` and its
committed runtime manifest (:mod:`pdeagent.runtime_packages`), and the case's
wall-clock limit ``evaluation_config.timeout_sec``. Nothing else of
the record (evaluation metadata, thresholds, tags) is ever read here.
"""

from __future__ import annotations

import copy
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

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
from pdeagent.stages import PromptPieces, Track

MODES = ("single", "feedback", "template")
FEEDBACK_STAGES = ("F-Exec", "F-Acc", "F-Time", "F-Gen")
PREVIOUS_CODE_CHARS = 2000
"""At most this many leading characters of the previous code go into feedback."""
STDERR_EXCERPT_CHARS = 3000
"""At most this many trailing characters of stderr go into feedback."""
ERROR_MESSAGE_CHARS = 2000
"""At most this many leading characters of the error message go into feedback."""


@define(frozen=True)
class Feedback:
    """What attempt k+1 is told about attempt k (SPEC §8).

    Holds only what the submission itself produced: its code, its failed stage,
    its error output, its own error value and runtime. Never thresholds or
    reference values.
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


def _feedback_context(feedback: Feedback) -> dict[str, Any]:
    if feedback.stage not in FEEDBACK_STAGES:
        raise ValueError(
            f"unknown feedback stage {feedback.stage!r} (expected one of {FEEDBACK_STAGES})"
        )
    code = feedback.previous_code
    stderr = feedback.stderr_excerpt.strip()
    message = feedback.error_message.strip()
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
) -> str:
    """Render the prompt for ``case`` on ``track`` in ``mode`` (single/feedback/template).

    Feedback mode puts the feedback block before the full single-shot prompt;
    template mode adds ``pieces.scaffold`` after the implementation contract.
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

    context: dict[str, Any] = {
        **_case_context(view),
        "family_template": family_template,
        "track": track,
        "pieces": pieces,
        "scaffold": pieces.scaffold if mode == "template" else None,
        "timeout_sec": case.evaluation_config.timeout_sec,
        "scoring": scoring_rule(EvalGrid(**view["case_spec"]["eval_grid"])),
        "runtime_packages": _runtime_packages(track),
    }
    prompt = env.get_template("prompt.md.j2").render(context)
    if mode != "feedback":
        return prompt
    assert feedback is not None
    block = env.get_template("feedback.md.j2").render({**context, **_feedback_context(feedback)})
    return block.rstrip("\n") + "\n\n---\n\n" + prompt
