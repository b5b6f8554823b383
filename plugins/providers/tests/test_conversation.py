"""Conversations (feedback mode) through the providers: the real anthropic and openai SDKs
send the whole message list to a scripted server on 127.0.0.1 (the original prompt, each
earlier reply verbatim, each feedback turn, in order; the system prompt where each API
wants it), a conversation the model's context cannot hold is F-Gen ``context_length``,
and the offline baseline and replay providers answer multi-turn requests."""

# ruff: noqa: F811 (the wire and server fixtures of test_wire, used by name)
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_wire import Wire, make_caller, server, wire  # noqa: F401
from wire_server import Reply, WireServer

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import find_case, load_cases
from pdeagent.extraction import extract_code
from pdeagent.plugins import load_plugins
from pdeagent.providers import (
    GenerationRequest,
    ProviderError,
    ProviderSettings,
    Turn,
    messages,
)
from pdeagent.runs.layout import CALL_FILE, RESPONSE_FILE, attempt_dir

SAMPLE_TRACK_DIR = Path(__file__).resolve().parents[3] / "tests" / "sample_track"
SAMPLE_CASE_ID = "sample_poisson_unit_square_001"

SYSTEM = "You write finite-element solvers."
PROMPT = 'Write a solver for the case below.\n\n```json\n{"pde": {"type": "poisson"}}\n```\n'
# Replies with what a careless copy would lose: trailing spaces, tabs, non-ASCII, fences.
REPLY_1 = (
    "Here is my first try (κ = 1):  \n\n```python\nimport numpy as np\n\n"
    "def solve(case_spec):\n\tgrid = np.linspaces(0, 1, 41)   \n    return {}\n```\n"
)
FEEDBACK_1 = (
    "Failed stage: execution (the program did not build, run or leave valid artifacts); "
    "reason: `runtime_error`.\n\nstderr (excerpt):\nAttributeError: module 'numpy' has no "
    "attribute 'linspaces'\n"
)
REPLY_2 = "Fixed:\n\n```python\nimport numpy as np\n\ndef solve(case_spec):\n    return {}\n```\n"
FEEDBACK_2 = "Failed stage: accuracy. Its relative L2 error on the evaluation grid was 3.2e-01."


def conversation(*turns: str) -> tuple[Turn, ...]:
    """Alternating user / assistant turns, starting with the user."""
    return tuple(Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turns))


def ask(prompt: str, history: tuple[Turn, ...] = (), **kw: Any) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, model="model-x", max_tokens=2048, history=history, **kw)


def sent(wire: Wire, body: dict[str, Any]) -> tuple[list[dict[str, str]], str | None]:
    """(the conversation messages, the system prompt) of a request body, per API."""
    if wire.name == "anthropic":
        return body["messages"], body.get("system")
    msgs = body["messages"]
    if msgs and msgs[0]["role"] == "system":
        return msgs[1:], msgs[0]["content"]
    return msgs, None


def test_messages_put_the_history_before_the_prompt():
    request = ask(FEEDBACK_1, conversation(PROMPT, REPLY_1))
    assert messages(request) == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": REPLY_1},
        {"role": "user", "content": FEEDBACK_1},
    ]


def test_single_turn_request_is_one_user_message_as_before(wire: Wire, server: WireServer):
    server.script(Reply(200, wire.ok(REPLY_1)), Reply(200, wire.ok(REPLY_1)))
    caller, _ = make_caller(wire, server)
    assert caller.call(ask(PROMPT)).generation is not None
    assert caller.call(ask(PROMPT, system=SYSTEM)).generation is not None
    plain, with_system = (seen.body for seen in server.seen)
    assert plain["messages"] == [{"role": "user", "content": PROMPT}]
    assert "system" not in plain  # no system prompt: none is sent (either API)
    assert sent(wire, with_system) == ([{"role": "user", "content": PROMPT}], SYSTEM)
    if wire.name == "anthropic":
        assert with_system["system"] == SYSTEM and len(with_system["messages"]) == 1
    else:
        assert with_system["messages"][0] == {"role": "system", "content": SYSTEM}


def test_two_turn_request_carries_prompt_reply_and_feedback_in_order(
    wire: Wire, server: WireServer
):
    server.script(Reply(200, wire.ok(REPLY_2)))
    caller, _ = make_caller(wire, server)
    out = caller.call(ask(FEEDBACK_1, conversation(PROMPT, REPLY_1), system=SYSTEM, attempt=1))
    assert out.generation is not None and out.generation.text == REPLY_2
    [seen] = server.seen
    assert seen.path == wire.path
    conv, system = sent(wire, seen.body)
    assert system == SYSTEM
    assert conv == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": REPLY_1},  # the previous reply, byte for byte
        {"role": "user", "content": FEEDBACK_1},
    ]
    roles = [m["role"] for m in seen.body["messages"]]
    expected = ["user", "assistant", "user"]
    assert roles == (expected if wire.name == "anthropic" else ["system", *expected])


def test_third_attempt_sees_both_earlier_exchanges(wire: Wire, server: WireServer):
    server.script(Reply(200, wire.ok(REPLY_2)))
    caller, _ = make_caller(wire, server)
    history = conversation(PROMPT, REPLY_1, FEEDBACK_1, REPLY_2)
    assert caller.call(ask(FEEDBACK_2, history, attempt=2)).generation is not None
    conv, system = sent(wire, server.seen[0].body)
    assert system is None
    assert [m["content"] for m in conv] == [PROMPT, REPLY_1, FEEDBACK_1, REPLY_2, FEEDBACK_2]
    assert [m["role"] for m in conv] == ["user", "assistant", "user", "assistant", "user"]


def test_refused_temperature_resends_the_whole_conversation(wire: Wire, server: WireServer):
    msg = "Unsupported value: 'temperature' does not support 0 with this model."
    server.script(
        Reply(400, wire.error("invalid_request_error", msg)), Reply(200, wire.ok(REPLY_2))
    )
    caller, _ = make_caller(wire, server)
    out = caller.call(ask(FEEDBACK_1, conversation(PROMPT, REPLY_1), attempt=1))
    assert out.generation is not None and out.generation.text == REPLY_2
    first, second = server.seen
    assert first.body["messages"] == second.body["messages"]
    assert [m["content"] for m in second.body["messages"]] == [PROMPT, REPLY_1, FEEDBACK_1]


# Each API's reply when the conversation does not fit, as the servers send it.
CONTEXT_ERRORS = {
    "anthropic": [
        Reply(400, {"type": "error", "error": {"type": "invalid_request_error",
              "message": "prompt is too long: 212044 tokens > 200000 maximum"}}),
        Reply(400, {"type": "error", "error": {"type": "invalid_request_error",
              "message": "input length and `max_tokens` exceed context limit: 190211 + 2048 "
                         "> 200000, decrease input length or `max_tokens` and try again"}}),
        Reply(413, {"type": "error", "error": {"type": "request_too_large",
              "message": "Request exceeds the maximum allowed number of bytes."}}),
    ],
    "openai": [
        Reply(400, {"error": {"message": "This model's maximum context length is 128000 "
              "tokens. However, your messages resulted in 131072 tokens. Please reduce the "
              "length of the messages.", "type": "invalid_request_error", "param": "messages",
              "code": "context_length_exceeded"}}),
        # vLLM: no error code, the limit in the message
        Reply(400, {"object": "error", "message": "This model's maximum context length is "
              "32768 tokens. However, you requested 40000 tokens (37952 in the messages, 2048 "
              "in the completion). Please reduce the length of the messages or completion.",
              "type": "BadRequestError", "param": None, "code": 400}),
        # llama.cpp server: its own error type, sent as a 400 or (older builds) a 500
        Reply(400, {"error": {"code": 400, "message": "the request exceeds the available "
              "context size, try increasing it", "type": "exceed_context_size_error",
              "n_prompt_tokens": 40000, "n_ctx": 32768}}),
        Reply(500, {"error": {"code": 500, "message": "the request exceeds the available "
              "context size. try increasing the context size or enable context shift",
              "type": "exceed_context_size_error", "n_prompt_tokens": 40000, "n_ctx": 32768}}),
    ],
}  # fmt: skip


def long_conversation(exchanges: int = 6) -> tuple[Turn, ...]:
    """``exchanges`` (prompt or feedback, 20 kB reply) pairs: a long feedback run."""
    turns = [PROMPT]
    for k in range(exchanges):
        if k:
            turns.append(f"{FEEDBACK_1}(attempt {k})")
        turns.append(f"Attempt {k}:\n```python\n" + "x = 1  # padding\n" * 1200 + "```\n")
    return conversation(*turns)


def test_long_conversation_past_the_context_is_fgen_context_length(wire: Wire, server: WireServer):
    history = long_conversation()
    for i, reply in enumerate(CONTEXT_ERRORS[wire.name]):
        server.script(reply)
        caller, sleeps = make_caller(wire, server)
        out = caller.call(ask(FEEDBACK_2, history, attempt=6))
        rec = out.record
        assert (out.generation, rec.error_kind, rec.failure_reason) == (
            None, "generation_failure", "context_length",
        ), (i, rec.error)  # fmt: skip
        assert f"HTTP {reply.status}" in rec.error
        assert len(server.seen) == i + 1 and sleeps == []  # never retried
        conv, _ = sent(wire, server.seen[-1].body)
        assert len(conv) == 13  # the provider sent all of it: trimming is the runner's job
        assert conv[11]["content"] == history[11].content and conv[12]["content"] == FEEDBACK_2


# --- the offline providers -------------------------------------------------------------


@pytest.fixture(scope="module")
def host():
    return load_plugins(strict=True)


@pytest.fixture(scope="module")
def sample_view() -> dict[str, Any]:
    cases = load_cases(
        SAMPLE_TRACK_DIR / "cases.jsonl",
        known_libraries={"numpy_fd", "dolfinx", "firedrake", "dealii"},
    )
    return agent_view(find_case(cases, SAMPLE_CASE_ID), "numpy_fd")


def test_baseline_answers_the_calibration_solver_whatever_the_history(host, sample_view):
    baseline = host.providers["baseline"]
    base = {"model": "baseline", "track": "numpy_fd", "case_id": SAMPLE_CASE_ID,
            "case_view": sample_view}  # fmt: skip
    single = baseline.generate(GenerationRequest(prompt=PROMPT, **base))
    feedback = baseline.generate(
        GenerationRequest(
            prompt=FEEDBACK_2,
            history=conversation(PROMPT, REPLY_1, FEEDBACK_1, REPLY_2),
            attempt=2,
            **base,
        )
    )
    assert feedback.text == single.text
    expected = host.hook.pdeagent_calibration_source(
        track=host.get_track("numpy_fd"), case_view=sample_view, calibration_config=None
    )
    assert "def solve" in expected
    assert extract_code(feedback.text, "python").code.strip() == expected.strip()
    assert (single.raw["history_turns"], feedback.raw["history_turns"]) == (0, 4)


def save_attempt(root: Path, attempt: int, text: str, **call: Any) -> Path:
    folder = attempt_dir(root, "numpy_fd", "model-x", "c1", attempt)
    folder.mkdir(parents=True)
    (folder / RESPONSE_FILE).write_text(text, encoding="utf-8")
    if call:
        (folder / CALL_FILE).write_text(json.dumps(call), encoding="utf-8")
    return folder


def test_replay_finds_a_feedback_attempts_reply_by_its_attempt_index(host, tmp_path: Path):
    replay = host.providers["replay"]
    save_attempt(tmp_path, 0, REPLY_1, finish_reason="stop")
    save_attempt(tmp_path, 1, REPLY_2, finish_reason="stop")
    settings = ProviderSettings(options={"dir": str(tmp_path)})
    base = {"model": "model-x", "track": "numpy_fd", "case_id": "c1", "settings": settings}
    first = replay.generate(GenerationRequest(prompt=PROMPT, **base))
    second = replay.generate(
        GenerationRequest(
            prompt=FEEDBACK_1, history=conversation(PROMPT, REPLY_1), attempt=1, **base
        )
    )
    assert (first.text, second.text) == (REPLY_1, REPLY_2)
    assert second.finish_reason == "stop" and second.raw["history_turns"] == 2
    assert second.raw["replayed_from"].endswith("attempt-1")
    # The key is the attempt index: another feedback text (the re-grade failed at another
    # stage) or a trimmed history gets the same saved reply.
    other = replay.generate(
        GenerationRequest(prompt=FEEDBACK_2, history=conversation(PROMPT, "?"), attempt=1, **base)
    )
    assert other.text == REPLY_2
    # A third attempt that the original run never made is a provider error, not a reply.
    with pytest.raises(ProviderError, match="no saved response"):
        replay.generate(
            GenerationRequest(
                prompt=FEEDBACK_2,
                history=conversation(PROMPT, REPLY_1, FEEDBACK_1, REPLY_2),
                attempt=2,
                **base,
            )
        )
