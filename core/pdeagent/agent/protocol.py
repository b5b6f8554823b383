"""The provider-neutral shape of an agent episode (``--mode agent``, issue #22): the
messages of a tool-use conversation, the tools the model is offered, one model step in
and one reply out.

A provider plugin that supports tool use adds one optional method to its provider
object::

    def agent_step(self, request: AgentRequest) -> AgentReply: ...

It translates ``request.messages`` and ``request.tools`` to its API's tool-use
protocol, sends them, and translates the reply back: the assistant's text and the tool
calls it made, with the ids the API gave them. It raises exactly like ``generate``
(:mod:`pdeagent.providers`): :class:`~pdeagent.calls.RetryableError` for transient
trouble, :class:`~pdeagent.providers.GenerationFailure` when the request or the model is
at fault, :class:`~pdeagent.providers.ProviderError` for configuration problems. The
loop itself (tools, budgets, transcript, grading) lives in the core
(:mod:`pdeagent.agent.loop`); a provider never runs a tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import define, field

from pdeagent.providers import ProviderSettings

AGENT_ROLES = ("user", "assistant", "tool")


@define(frozen=True)
class ToolSpec:
    """One tool offered to the model."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON Schema of the arguments object (``{"type": "object", "properties": ...}``)."""


@define(frozen=True)
class ToolCall:
    """A tool call the model made."""

    id: str
    """The API's id of the call (echoed back in the :class:`ToolResult`)."""
    name: str
    arguments: dict[str, Any]
    """The parsed arguments; a provider whose API returns a JSON string parses it (an
    unparseable string becomes ``{"_unparsed": text}``, for the loop to report back)."""


@define(frozen=True)
class ToolResult:
    """What the harness answers to one :class:`ToolCall`."""

    call_id: str
    content: str
    is_error: bool = False


@define(frozen=True)
class AgentMessage:
    """One message of the episode.

    - ``user``: ``text`` (the task prompt, or a note from the harness);
    - ``assistant``: the model's ``text`` (may be empty) and its ``tool_calls``;
    - ``tool``: the ``tool_results`` answering every call of the assistant message
      before it, in the same order.
    """

    role: str = field()
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=(), converter=tuple)
    tool_results: tuple[ToolResult, ...] = field(default=(), converter=tuple)

    @role.validator
    def _role(self, _attribute: Any, value: str) -> None:
        if value not in AGENT_ROLES:
            raise ValueError(f"an agent message's role is one of {AGENT_ROLES}, got {value!r}")


@define(frozen=True)
class AgentRequest:
    """One model step: the whole episode so far and the tools."""

    model: str
    messages: tuple[AgentMessage, ...] = field(converter=tuple)
    """Oldest first; starts with the ``user`` task prompt; every ``assistant`` message
    with tool calls is followed by a ``tool`` message answering all of them."""
    tools: tuple[ToolSpec, ...] = field(converter=tuple)
    system: str | None = None
    max_tokens: int = 16000
    temperature: float | None = 0.0
    case_id: str | None = None
    attempt: int = 0
    settings: ProviderSettings = field(factory=ProviderSettings)


@define(frozen=True)
class AgentReply:
    """The model's answer to one step."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=(), converter=tuple)
    finish_reason: str | None = None
    """``tool_use``/``tool_calls``, ``stop``/``end_turn``, ``length``, ... as the API said."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    raw: dict[str, Any] = field(factory=dict)
    """The API's reply as JSON-able data (kept in the transcript)."""


def message_to_dict(message: AgentMessage) -> dict[str, Any]:
    """A message as JSON-able data (the transcript's form)."""
    out: dict[str, Any] = {"role": message.role}
    if message.text:
        out["text"] = message.text
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_results:
        out["tool_results"] = [
            {"call_id": r.call_id, "content": r.content, "is_error": r.is_error}
            for r in message.tool_results
        ]
    return out


def message_from_dict(data: Mapping[str, Any]) -> AgentMessage:
    """The inverse of :func:`message_to_dict`; ``ValueError`` on a malformed record."""
    if not isinstance(data, Mapping):
        raise ValueError("a transcript message must be an object")
    try:
        calls = tuple(
            ToolCall(str(c["id"]), str(c["name"]), dict(c["arguments"]))
            for c in data.get("tool_calls", ())
        )
        results = tuple(
            ToolResult(str(r["call_id"]), str(r["content"]), bool(r.get("is_error", False)))
            for r in data.get("tool_results", ())
        )
        return AgentMessage(str(data["role"]), str(data.get("text", "")), calls, results)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed transcript message: {exc}") from None
