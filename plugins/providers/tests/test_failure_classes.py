"""Which provider failures are the request's or the model's (F-Gen, counted) and which
are transient (infrastructure, excluded, re-runnable): the real anthropic and openai
SDKs against a scripted server on 127.0.0.1, every reply shaped like the API's own."""

# ruff: noqa: F811 (the wire and server fixtures of test_wire, used by name)
from __future__ import annotations

from typing import Any

import pytest
from test_wire import REPLY, Wire, make_caller, request, server, wire  # noqa: F401
from wire_server import Reply, WireServer, anthropic_message, openai_completion

CONTEXT = {
    "anthropic": Reply(
        400,
        {"type": "error", "error": {"type": "invalid_request_error",
                                    "message": "prompt is too long: 210377 tokens > 200000"}},
    ),
    "openai": Reply(
        400,
        {"error": {"message": "This model's maximum context length is 128000 tokens.",
                   "type": "invalid_request_error", "param": "messages",
                   "code": "context_length_exceeded"}},
    ),
}  # fmt: skip
REFUSED = {
    "anthropic": Reply(200, anthropic_message("I can't help with that.", stop="refusal")),
    "openai": Reply(200, openai_completion("```python\nimport nu", stop="content_filter")),
}


def _outcome(out: Any) -> tuple[Any, ...]:
    return (out.generation, out.record.error_kind, out.record.failure_reason)


def test_context_length_is_a_generation_failure(wire: Wire, server: WireServer):
    server.script(CONTEXT[wire.name])
    caller, sleeps = make_caller(wire, server)
    out = caller.call(request())
    assert _outcome(out) == (None, "generation_failure", "context_length")
    assert "400" in out.record.error
    assert len(server.seen) == 1 and sleeps == []  # never retried


def test_request_too_large_is_context_length(wire: Wire, server: WireServer):
    server.script(Reply(413, wire.error("request_too_large", "Request exceeds the maximum size")))
    caller, _ = make_caller(wire, server)
    assert _outcome(caller.call(request())) == (None, "generation_failure", "context_length")


def test_refusal_or_content_filter_is_a_generation_failure_with_its_tokens(
    wire: Wire, server: WireServer
):
    server.script(REFUSED[wire.name])
    caller, _ = make_caller(wire, server)
    out = caller.call(request())
    assert _outcome(out) == (None, "generation_failure", "content_filter")
    assert (out.record.input_tokens, out.record.output_tokens) == (120, 80)
    assert out.record.raw and len(server.seen) == 1


def test_openai_prompt_rejected_by_the_content_filter(server: WireServer, wire: Wire):
    if wire.name != "openai":
        pytest.skip("an Azure OpenAI error code")
    server.script(
        Reply(400, {"error": {"message": "The response was filtered", "type": None,
                              "param": "prompt", "code": "content_filter"}})
    )  # fmt: skip
    caller, _ = make_caller(wire, server)
    assert _outcome(caller.call(request())) == (None, "generation_failure", "content_filter")


@pytest.mark.parametrize("status", [400, 422])
def test_other_invalid_requests_are_generation_failures(
    wire: Wire, server: WireServer, status: int
):
    server.script(Reply(status, wire.error("invalid_request_error", "messages: bad role")))
    caller, _ = make_caller(wire, server)
    assert _outcome(caller.call(request())) == (None, "generation_failure", "invalid_request")


def test_rate_limit_then_overload_until_retries_run_out_is_transient(
    wire: Wire, server: WireServer
):
    server.script(
        Reply(429, wire.error("rate_limit_error", "slow down")),
        Reply(529, wire.error("overloaded_error", "overloaded")),
        Reply(503, wire.error("api_error", "unavailable")),
    )
    caller, sleeps = make_caller(wire, server, max_retries=2)
    out = caller.call(request())
    assert _outcome(out) == (None, "retries_exhausted", None)
    assert len(server.seen) == 3 and len(sleeps) == 2


def test_a_bad_key_is_configuration_not_a_model_failure(wire: Wire, server: WireServer):
    server.script(Reply(401, wire.error("authentication_error", "invalid x-api-key")))
    caller, _ = make_caller(wire, server)
    assert _outcome(caller.call(request())) == (None, "provider_error", None)


def test_a_normal_reply_is_no_failure(wire: Wire, server: WireServer):
    server.script(Reply(200, wire.ok(REPLY)))
    caller, _ = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is not None and out.record.failure_reason is None
