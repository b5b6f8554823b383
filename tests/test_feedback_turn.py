"""The grader's feedback as the next user turn of a feedback conversation (issue #24,
SPEC §8): what it says for every verdict kind, the note on dropped exchanges, and that it
never carries a threshold, a baseline value or a reference value."""

from __future__ import annotations

import tempfile
import typing
from pathlib import Path

import attrs
import pytest

from pdeagent.cases.model import Case, Thresholds, case_from_dict
from pdeagent.extraction import Extraction
from pdeagent.prompts.builder import (
    STDERR_EXCERPT_CHARS,
    Feedback,
    build_feedback_turn,
    build_prompt,
)
from pdeagent.providers import GENERATION_FAILURE_REASONS

from .test_prompts import CANARIES, PIECES, TRACK, record

EXTRACTION_REASONS = tuple(
    reason
    for arg in typing.get_args(typing.get_type_hints(Extraction)["reason"])
    for reason in typing.get_args(arg)  # Literal[...] | None: the Literal's values
)
GEN_REASONS = EXTRACTION_REASONS + tuple(GENERATION_FAILURE_REASONS)

# Distinctive numbers in every evaluator-only value of the case: none may reach a turn.
CANARY_NUMBERS = {
    "e_base": 0.000271828,
    "t_base": 0.0161803,
    "t_null": 0.00141421,
    "tau_acc": 0.00583927,
    "tau_time": 0.000314159,
}
CANARY_DIGITS = ("271828", "161803", "141421", "583927", "314159")
EVALUATOR_WORDS = ("tau_acc", "tau_time", "e_base", "t_base", "t_null", "reference_path")


def canary_case() -> Case:
    data = record("heat")
    canary = {**CANARY_NUMBERS, "protocol": 2, "calibrated_on": {"m": CANARIES["calibrated_on"]}}
    data["evaluation_metadata"]["thresholds"] = {"demo": canary}
    return case_from_dict(data)


def forms(value: float) -> set[str]:
    return {repr(value), f"{value:.6g}", f"{value:.4e}", f"{value:.3e}", f"{value:.2e}"}


def assert_leak_free(text: str) -> None:
    for digits in CANARY_DIGITS:
        assert digits not in text, f"canary digits {digits} leaked"
    for value in CANARY_NUMBERS.values():
        for form in forms(value):
            assert form not in text, f"threshold value {form} leaked"
    for word in EVALUATOR_WORDS:
        assert word not in text, f"evaluator word {word!r} in the turn"
    for canary in CANARIES.values():
        assert canary not in text, f"evaluator-only canary {canary} in the turn"


def exec_feedback() -> Feedback:
    return Feedback(
        attempt=1,
        previous_code="import demo\n" + "x" * 5000 + "\nCODEMARKER\n",
        stage="F-Exec",
        reason="runtime_error",
        error_message="exit code 1",
        stderr_excerpt="Traceback (most recent call last):\n" + "e" * 9000 + "\nZeroDivisionError",
        error_value=None,
        runtime_sec=None,
    )


KINDS: dict[str, Feedback] = {
    "F-Exec": exec_feedback(),
    "F-Acc": Feedback(
        2, "import demo\n", "F-Acc", None,
        "relative L2 error 4.210e-02 is above the accuracy threshold", "", 0.0421, None,
    ),
    "F-Time": Feedback(
        1, "import demo\n", "F-Time", None,
        "runtime 98.77 s is above the time threshold", "", None, 98.765,
    ),
    **{
        f"F-Gen/{reason}": Feedback(
            1, "no code here", "F-Gen", reason, f"message of {reason}", "", None, None
        )
        for reason in GEN_REASONS
    },
}  # fmt: skip


def test_every_generation_reason_is_covered() -> None:
    assert set(GEN_REASONS) == {
        "no_code", "truncated", "too_long", "context_length", "content_filter", "invalid_request"
    }  # fmt: skip


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_turn_is_leak_free_and_names_stage_and_own_values(kind: str) -> None:
    case = canary_case()
    feedback = KINDS[kind]
    turn = build_feedback_turn(case, TRACK, feedback)
    assert_leak_free(turn)
    stage = feedback.stage
    assert f"({stage})" in turn
    assert turn.startswith(f"# Grader feedback on attempt {feedback.attempt}\n")
    assert f"Now write attempt {feedback.attempt + 1}:" in turn
    assert "corrected Python program in a single fenced code block tagged `python`" in turn
    assert "section 4 of the task" in turn
    assert "\n\n\n" not in turn and "\nAdvice:\n- " in turn
    # the conversation holds the task and the reply: neither is repeated
    assert "## 1. Task summary" not in turn and "## 3. Case specification" not in turn
    assert feedback.previous_code.strip() not in turn
    assert "import demo" not in turn
    if stage == "F-Acc":
        assert "relative L2 error on the evaluation grid was 4.2100e-02" in turn
    if stage == "F-Time":
        assert "its measured runtime" in turn and "was 98.77 s" in turn
    if stage == "F-Gen":
        assert f"reason: `{feedback.reason}`" in turn
        assert f"Message: message of {feedback.reason}" in turn


def test_exec_turn_has_message_and_bounded_stderr_tail() -> None:
    turn = build_feedback_turn(canary_case(), TRACK, KINDS["F-Exec"])
    assert "Failed stage: execution (F-Exec)" in turn and "reason: `runtime_error`" in turn
    assert "```text\nexit code 1\n```" in turn
    assert "ZeroDivisionError" in turn and "Last part of stderr (truncated)" in turn
    assert "e" * (STDERR_EXCERPT_CHARS - len("\nZeroDivisionError")) in turn
    assert "e" * STDERR_EXCERPT_CHARS not in turn
    assert "CODEMARKER" not in turn and "xxxxxxxxxx" not in turn
    assert "check imports and API names against the guide in section 6" in turn


def test_generation_advice_follows_the_reason() -> None:
    def turn(reason: str) -> str:
        return build_feedback_turn(canary_case(), TRACK, KINDS[f"F-Gen/{reason}"])

    assert "fenced code block tagged `python`; a reply without" in turn("no_code")
    assert "write a more compact program" in turn("truncated")
    assert "the program and at most a few sentences" in turn("too_long")
    assert "the program and at most a few sentences" in turn("context_length")
    assert "Reply with the program only" in turn("content_filter")


def test_advice_mentions_time_steps_only_for_transient_cases() -> None:
    steady = case_from_dict(record("poisson"))
    assert "smaller time steps" in build_feedback_turn(canary_case(), TRACK, KINDS["F-Acc"])
    assert "smaller time steps" not in build_feedback_turn(steady, TRACK, KINDS["F-Acc"])
    assert "too many time steps" in build_feedback_turn(canary_case(), TRACK, KINDS["F-Time"])


def test_dropped_exchanges_note() -> None:
    case = canary_case()
    none = build_feedback_turn(case, TRACK, KINDS["F-Acc"])
    assert "left out" not in none
    one = build_feedback_turn(case, TRACK, KINDS["F-Acc"], dropped_exchanges=1)
    assert "Note: 1 earlier exchange of this conversation" in one
    assert "was left out to fit the model's context" in one
    three = build_feedback_turn(case, TRACK, KINDS["F-Acc"], dropped_exchanges=3)
    assert "Note: 3 earlier exchanges of this conversation" in three
    assert "were left out to fit the model's context" in three
    assert "The original task (the first message) and your latest reply are kept." in three
    assert three.index("Note: 3") < three.index("Failed stage")
    assert three.replace(three[three.index("Note: 3") : three.index("Your program")], "") == none
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="dropped_exchanges"):
            build_feedback_turn(case, TRACK, KINDS["F-Acc"], dropped_exchanges=bad)  # type: ignore[arg-type]


def test_turn_errors() -> None:
    case = canary_case()
    with pytest.raises(ValueError, match="stage"):
        build_feedback_turn(case, TRACK, Feedback(1, "", "F-What", None, "", "", None, None))
    with pytest.raises(ValueError, match="1-based"):
        build_feedback_turn(case, TRACK, attrs.evolve(KINDS["F-Acc"], attempt=0))


def test_turn_is_deterministic() -> None:
    first = build_feedback_turn(canary_case(), TRACK, KINDS["F-Exec"], dropped_exchanges=2)
    again = build_feedback_turn(canary_case(), TRACK, KINDS["F-Exec"], dropped_exchanges=2)
    assert first == again and first.endswith("\n") and not first.endswith("\n\n")


def test_single_message_feedback_prompt_is_leak_free_too() -> None:
    """The older single-message form (build_prompt mode "feedback") shares the stage text."""
    case = canary_case()
    for feedback in KINDS.values():
        prompt = build_prompt(case, TRACK, PIECES, mode="feedback", feedback=feedback)
        assert_leak_free(prompt)
        assert f"({feedback.stage})" in prompt


# --------------------------------------------------------------------------- graded reports


@pytest.mark.sandbox
def test_turns_from_real_grading_are_leak_free(host, track, case) -> None:
    """Grade F-Exec, F-Acc and F-Time submissions of the sample track against canary
    thresholds and turn each report into feedback as a runner does: the turn carries
    the report's own error or runtime and none of the canaries."""
    from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
    from pdeagent.sandbox import default_sandbox

    from .test_sample_track import BASELINE, SOLVERS

    canary = Thresholds(
        e_base=CANARY_NUMBERS["e_base"],
        t_base=CANARY_NUMBERS["t_base"],
        tau_acc=CANARY_NUMBERS["tau_acc"],
        tau_time=CANARY_NUMBERS["tau_time"],
        protocol=2,
        t_null=CANARY_NUMBERS["t_null"],
    )
    meta = attrs.evolve(case.evaluation_metadata, thresholds={"numpy_fd": canary})
    graded = attrs.evolve(case, evaluation_metadata=meta)
    policy = GradingPolicy(tau_time=CANARY_NUMBERS["tau_time"])  # far below any real run
    thresholds = resolve_thresholds(graded, "numpy_fd", policy)
    assert thresholds.tau_acc == pytest.approx(10 * CANARY_NUMBERS["e_base"])
    sources = {
        "F-Exec": "def solve(case_spec):\n    raise RuntimeError('diverged at step 3')\n",
        "F-Acc": (SOLVERS / "boundary_cheat.py").read_text(),
        "F-Time": BASELINE.read_text(),
    }
    for expected, source in sources.items():
        with tempfile.TemporaryDirectory(prefix="pdeagent-test-", dir="/var/tmp") as d:
            report = evaluate_source(
                host, track, graded, source, sandbox=default_sandbox(),
                workroot=Path(d) / "eval", thresholds=thresholds, policy=policy,
            )  # fmt: skip
        assert report.verdict == expected, (report.verdict, report.message)
        feedback = Feedback.from_graded(report, attempt=1, previous_code=source)
        turn = build_feedback_turn(graded, track, feedback)
        assert_leak_free(turn)
        assert f"({expected})" in turn
        if expected == "F-Exec":
            assert "diverged at step 3" in turn and "`runtime_error`" in turn
        if expected == "F-Acc":
            assert f"was {report.error:.4e}" in turn
        if expected == "F-Time":
            assert f"was {report.runtime_sec:.2f} s" in turn


# ----------------------------------------------------------------- program output as text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain\ttext\n", "plain\ttext\n"),
        ("\x1b[2J\x1b[H\x1b[1;31mred\x1b[0m", "red"),  # CSI: clear, home, colours
        ("\x1b]0;a title\x07after", "after"),  # OSC ended by BEL
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC hyperlink, ST
        ("a\r\nb\rc", "a\nb\nc"),  # no line can be overwritten
        ("nul\x00 bell\x07 del\x7f c1\x9b", "nul\\x00 bell\\x07 del\\x7f c1\\x9b"),
        ("\u202eSSAP\u202c \u2066i\u2069 \u200f", "\\u202eSSAP\\u202c \\u2066i\\u2069 \\u200f"),
        ("bad \udcff byte", "bad \\udcff byte"),  # a surrogateescape'd byte
        ("lone escape \x1b", "lone escape \\x1b"),
        ("ünïcödé ✓ 数学", "ünïcödé ✓ 数学"),
    ],
)
def test_printable(raw: str, shown: str) -> None:
    from pdeagent.prompts.builder import printable

    assert printable(raw) == shown


def test_exec_turn_shows_stderr_and_message_as_printable_text() -> None:
    feedback = attrs.evolve(
        exec_feedback(),
        error_message="exit \x1b[31mcode\x1b[0m 1\x00",
        stderr_excerpt="Traceback\r\n\x1b[2Jnul\x00 \u202eSSAP\u202c\nValueError\n",
    )
    turn = build_feedback_turn(canary_case(), TRACK, feedback)
    assert "exit code 1\\x00" in turn
    assert "Traceback\nnul\\x00 \\u202eSSAP\\u202c\nValueError" in turn
    assert not any(ch in turn for ch in "\x1b\x00\r\u202e\u202c")
