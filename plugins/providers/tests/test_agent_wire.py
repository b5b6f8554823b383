"""Agent mode (issue #22) through the providers: ``agent_step`` of the anthropic and openai
providers, with the real SDKs talking HTTP to the scripted server on 127.0.0.1 (no SDK
class is patched). The episode goes out in each API's tool-use wire shape, the tool calls
of a reply come back with their ids and argument dicts, and failures raise like
``generate``'s."""

# ruff: noqa: F811 (the wire and server fixtures of test_wire, used by name)
from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from test_conversation import CONTEXT_ERRORS
from test_wire import TIMEOUT, WIRES, Wire, server, wire  # noqa: F401
from wire_server import Reply, WireServer, anthropic_message, openai_completion

from pdeagent.agent.protocol import AgentMessage, AgentReply, AgentRequest, ToolCall, ToolResult
from pdeagent.agent.tools import TOOLS
from pdeagent.calls import RetryableError
from pdeagent.providers import GenerationFailure, ProviderSettings
from pdeagent_provider_anthropic import agent_messages as anthropic_messages
from pdeagent_provider_openai import agent_messages as openai_messages

SYSTEM = "You write finite-element solvers with the tools you are given."
TASK = "Write a solver for the case below, run it, then submit it.\n\n```json\n{}\n```\n"
CODE = "import numpy as np\n\ndef solve(case_spec):\n\treturn {'κ': 1}\n"
NOTE = "Harness note: 3 steps left."
WRITE_ARGS = {"path": "solver.py", "content": CODE}
RUN_ARGS = {"command": "python solver.py"}
WROTE = "wrote solver.py (61 bytes)"
CRASHED = "exit status 1\nstderr:\nTraceback (most recent call last):\nNameError: x"

EPISODE = (
    AgentMessage("user", TASK),
    AgentMessage(
        "assistant",
        "I write the solver, then run it.",
        [ToolCall("call_1", "write_file", WRITE_ARGS), ToolCall("call_2", "run", RUN_ARGS)],
    ),
    AgentMessage(
        "tool",
        tool_results=[ToolResult("call_1", WROTE), ToolResult("call_2", CRASHED, is_error=True)],
    ),
    AgentMessage("user", NOTE),
)


def _use(name: str, monkeypatch: pytest.MonkeyPatch) -> Wire:
    """One provider's wire, with the environment the ``wire`` fixture of test_wire sets."""
    w = WIRES[name]
    monkeypatch.setenv(w.key_env, "sk-test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return w


@pytest.fixture
def anthropic_wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    return _use("anthropic", monkeypatch)


@pytest.fixture
def openai_wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    return _use("openai", monkeypatch)


def settings(wire: Wire, server: WireServer) -> ProviderSettings:
    return ProviderSettings(base_url=server.url + wire.suffix, timeout_sec=TIMEOUT)


def step(messages: tuple[AgentMessage, ...] = EPISODE, **kw: Any) -> AgentRequest:
    base: dict[str, Any] = {"model": "model-x", "tools": TOOLS, "max_tokens": 4096}
    return AgentRequest(messages=messages, **{**base, **kw})


def tool_reply(wire: Wire, *, text: str = "Writing the solver.") -> dict[str, Any]:
    """A reply with ``text`` and two tool calls (write_file, then run), as each API sends
    it: ids ``tc_write`` and ``tc_run``, 1500 input and 210 output tokens."""
    if wire.name == "anthropic":
        body = anthropic_message(text, stop="tool_use")
        body["content"] += [
            {"type": "tool_use", "id": "tc_write", "name": "write_file", "input": WRITE_ARGS},
            {"type": "tool_use", "id": "tc_run", "name": "run", "input": RUN_ARGS},
        ]
        body["usage"] = {"input_tokens": 1500, "output_tokens": 210}
        return body
    body = openai_completion(text, stop="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": "tc_write",
            "type": "function",
            "function": {"name": "write_file", "arguments": json.dumps(WRITE_ARGS)},
        },
        {
            "id": "tc_run",
            "type": "function",
            "function": {"name": "run", "arguments": json.dumps(RUN_ARGS)},
        },
    ]
    body["usage"] = {"prompt_tokens": 1500, "completion_tokens": 210, "total_tokens": 1710}
    return body


# --- the request on the wire -----------------------------------------------------------


def test_anthropic_episode_wire_shape(anthropic_wire: Wire, server: WireServer):
    wire = anthropic_wire
    server.script(Reply(200, tool_reply(wire)))
    wire.provider.agent_step(step(system=SYSTEM, settings=settings(wire, server)))
    [seen] = server.seen
    body = seen.body
    assert seen.path == "/v1/messages"
    assert wire.auth(seen.headers) == "sk-test-key"
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("model-x", 4096, 0)
    assert body["system"] == SYSTEM
    assert body["tools"] == [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in TOOLS
    ]
    assert [t["name"] for t in body["tools"]] == ["write_file", "read_file", "run", "submit"]
    assert body["messages"] == [
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I write the solver, then run it."},
                {"type": "tool_use", "id": "call_1", "name": "write_file", "input": WRITE_ARGS},
                {"type": "tool_use", "id": "call_2", "name": "run", "input": RUN_ARGS},
            ],
        },
        # The tool results and the harness note after them: ONE user message.
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": WROTE,
                 "is_error": False},
                {"type": "tool_result", "tool_use_id": "call_2", "content": CRASHED,
                 "is_error": True},
                {"type": "text", "text": NOTE},
            ],
        },
    ]  # fmt: skip
    roles = [m["role"] for m in body["messages"]]
    assert all(a != b for a, b in pairwise(roles))  # alternating


def test_openai_episode_wire_shape(openai_wire: Wire, server: WireServer):
    wire = openai_wire
    server.script(Reply(200, tool_reply(wire)))
    wire.provider.agent_step(step(system=SYSTEM, settings=settings(wire, server)))
    [seen] = server.seen
    body = seen.body
    assert seen.path == "/v1/chat/completions"
    assert wire.auth(seen.headers) == "sk-test-key"
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("model-x", 4096, 0)
    assert "max_completion_tokens" not in body  # a compatible server gets max_tokens
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in TOOLS
    ]
    calls = body["messages"][2]["tool_calls"]
    # The arguments travel as JSON strings, which parse back to the call's arguments.
    assert [c["function"]["arguments"] for c in calls] == [
        json.dumps(WRITE_ARGS),
        json.dumps(RUN_ARGS),
    ]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [WRITE_ARGS, RUN_ARGS]
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": "I write the solver, then run it.",
            "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "write_file", "arguments": json.dumps(WRITE_ARGS)}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "run", "arguments": json.dumps(RUN_ARGS)}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": WROTE},
        {"role": "tool", "tool_call_id": "call_2", "content": "ERROR: " + CRASHED},
        {"role": "user", "content": NOTE},
    ]  # fmt: skip


def test_no_system_and_no_temperature_send_neither(wire: Wire, server: WireServer):
    server.script(Reply(200, tool_reply(wire)))
    wire.provider.agent_step(step(temperature=None, settings=settings(wire, server)))
    body = server.seen[0].body
    assert "temperature" not in body and "system" not in body
    assert body["messages"][0] == {"role": "user", "content": TASK}


def test_assistant_without_text_and_a_tool_message_before_an_assistant():
    """No text: no text block (anthropic), content None (openai); tool results that an
    assistant message follows stand alone (nothing to merge)."""
    messages = (
        AgentMessage("user", TASK),
        AgentMessage("assistant", "", [ToolCall("c1", "read_file", {"path": "a.txt"})]),
        AgentMessage("tool", tool_results=[ToolResult("c1", "hello")]),
        AgentMessage("assistant", "", [ToolCall("c2", "submit", {"path": "a.py"})]),
        AgentMessage("tool", tool_results=[ToolResult("c2", "submitted")]),
    )
    request = step(messages)
    assert anthropic_messages(request) == [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.txt"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "hello", "is_error": False}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c2", "name": "submit", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c2", "content": "submitted",
             "is_error": False}]},
    ]  # fmt: skip
    assert openai_messages(request) == [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function",
             "function": {"name": "submit", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "submitted"},
    ]  # fmt: skip


# --- the reply -------------------------------------------------------------------------


def test_reply_with_text_and_two_tool_calls(wire: Wire, server: WireServer):
    server.script(Reply(200, tool_reply(wire)))
    reply = wire.provider.agent_step(step(settings=settings(wire, server)))
    assert isinstance(reply, AgentReply)
    assert reply.text == "Writing the solver."
    assert reply.tool_calls == (
        ToolCall("tc_write", "write_file", WRITE_ARGS),
        ToolCall("tc_run", "run", RUN_ARGS),
    )
    assert reply.tool_calls[0].arguments["content"] == CODE  # tabs, non-ASCII intact
    assert reply.finish_reason == ("tool_use" if wire.name == "anthropic" else "tool_calls")
    assert (reply.input_tokens, reply.output_tokens) == (1500, 210)
    assert reply.raw["id"] in ("msg_test", "chatcmpl-test")
    assert json.dumps(reply.raw)  # JSON-able, for the transcript


def test_reply_without_a_tool_call(wire: Wire, server: WireServer):
    server.script(
        Reply(200, wire.ok("I am done.")), Reply(200, wire.ok("cut", stop=wire.length_stop))
    )
    reply = wire.provider.agent_step(step(settings=settings(wire, server)))
    assert (reply.text, reply.tool_calls, reply.finish_reason) == ("I am done.", (), "stop")
    assert (reply.input_tokens, reply.output_tokens) == (120, 80)
    cut = wire.provider.agent_step(step(settings=settings(wire, server)))
    assert (cut.text, cut.tool_calls, cut.finish_reason) == ("cut", (), "length")


def test_openai_reply_with_tool_calls_only_has_empty_text(openai_wire: Wire, server: WireServer):
    wire = openai_wire
    body = tool_reply(wire)
    body["choices"][0]["message"]["content"] = None
    server.script(Reply(200, body))
    reply = wire.provider.agent_step(step(settings=settings(wire, server)))
    assert reply.text == "" and [c.id for c in reply.tool_calls] == ["tc_write", "tc_run"]


def test_openai_malformed_arguments_are_kept_unparsed(openai_wire: Wire, server: WireServer):
    wire = openai_wire
    broken = '{"path": "solver.py", "content": "import numpy'
    not_object = '["solver.py"]'
    body = tool_reply(wire)
    calls = body["choices"][0]["message"]["tool_calls"]
    calls[0]["function"]["arguments"] = broken
    calls[1]["function"]["arguments"] = not_object
    server.script(Reply(200, body))
    reply = wire.provider.agent_step(step(settings=settings(wire, server)))
    assert reply.tool_calls == (
        ToolCall("tc_write", "write_file", {"_unparsed": broken}),
        ToolCall("tc_run", "run", {"_unparsed": not_object}),
    )


def test_malformed_tool_call_is_retryable(wire: Wire, server: WireServer):
    body = tool_reply(wire)
    if wire.name == "anthropic":
        body["content"][1]["input"] = "path=solver.py"  # not an object
    else:
        del body["choices"][0]["message"]["tool_calls"][0]["id"]
    server.script(Reply(200, body))
    with pytest.raises(RetryableError, match="malformed") as info:
        wire.provider.agent_step(step(settings=settings(wire, server)))
    assert info.value.kind == "malformed"


# --- failures --------------------------------------------------------------------------


def test_rate_limit_is_retryable(wire: Wire, server: WireServer):
    server.script(
        Reply(429, wire.error("rate_limit_error", "slow down"), headers={"retry-after": "0.4"})
    )
    with pytest.raises(RetryableError) as info:
        wire.provider.agent_step(step(settings=settings(wire, server)))
    assert info.value.kind == "rate_limit" and info.value.retry_after == pytest.approx(0.4)
    assert "HTTP 429" in str(info.value)
    assert len(server.seen) == 1  # the SDK's own retries are off


def test_context_length_is_fgen_context_length(wire: Wire, server: WireServer):
    for i, reply in enumerate(CONTEXT_ERRORS[wire.name]):
        server.script(reply)
        with pytest.raises(GenerationFailure) as info:
            wire.provider.agent_step(step(settings=settings(wire, server)))
        assert info.value.reason == "context_length", (i, str(info.value))
        assert f"HTTP {reply.status}" in str(info.value)
        assert len(server.seen) == i + 1


def test_refusal_is_fgen_content_filter_with_the_reply(wire: Wire, server: WireServer):
    if wire.name == "anthropic":
        body = anthropic_message("I can't help with that.", stop="refusal")
    else:
        body = openai_completion("", stop="content_filter")
    server.script(Reply(200, body))
    with pytest.raises(GenerationFailure) as info:
        wire.provider.agent_step(step(settings=settings(wire, server)))
    assert info.value.reason == "content_filter"
    refused = info.value.generation
    assert isinstance(refused, AgentReply)  # recorded (its tokens billed), never acted on
    assert (refused.input_tokens, refused.output_tokens, refused.tool_calls) == (120, 80, ())
