"""Prompt building (SPEC §8, §9): jinja templates rendered from the agent view only."""

from pdeagent.prompts.builder import (
    MODES,
    STDERR_EXCERPT_CHARS,
    Feedback,
    build_feedback_turn,
    build_prompt,
    make_environment,
    templates_dir,
    timing_protocol,
)
from pdeagent.prompts.summary import summarize_case

__all__ = [
    "MODES",
    "STDERR_EXCERPT_CHARS",
    "Feedback",
    "build_feedback_turn",
    "build_prompt",
    "make_environment",
    "summarize_case",
    "templates_dir",
    "timing_protocol",
]
