"""Wire-level tests: the real anthropic and openai SDKs talk HTTP to a scripted server
on 127.0.0.1 (no SDK class is patched). Every scenario is bounded: request timeouts
of about a second, backoff of milliseconds, at most a few requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import define
from wire_server import (
    Reply,
    WireServer,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
)

from pdeagent.calls import CallPolicy, Price, PriceTable, ProviderCaller, ResponseCache
from pdeagent.extraction import extract_code
from pdeagent.plugins import load_plugins
from pdeagent.providers import GenerationRequest, ProviderSettings, ProviderUnavailable
from pdeagent_provider_anthropic import AnthropicProvider
from pdeagent_provider_openai import OpenAIProvider

CODE = "import numpy as np\n\ndef solve(case_spec):\n    return {}\n"
REPLY = f"Here is the solver:\n\n```python\n{CODE}```\n"
TIMEOUT = 1.0


@define
class Wire:
    name: str
    provider: Any
    path: str
    key_env: str
    ok: Callable[..., dict[str, Any]]
    error: Callable[[str, str], dict[str, Any]]
    length_stop: str
    suffix: str

    @staticmethod
    def auth(headers: dict[str, str]) -> str | None:
        """The API key the SDK sent (``x-api-key``, or a bearer token in newer SDKs)."""
        return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


WIRES = {
    "anthropic": Wire(
        "anthropic",
        AnthropicProvider(),
        "/v1/messages",
        "ANTHROPIC_API_KEY",
        anthropic_message,
        anthropic_error,
        "max_tokens",
        "",
    ),
    "openai": Wire(
        "openai",
        OpenAIProvider(),
        "/v1/chat/completions",
        "OPENAI_API_KEY",
        openai_completion,
        openai_error,
        "length",
        "/v1",
    ),
}


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Wire:
    w = WIRES[request.param]
    monkeypatch.setenv(w.key_env, "sk-test-key")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return w


@pytest.fixture
def server():
    s = WireServer().start()
    yield s
    s.stop()


class Sleeps(list):
    """Records every backoff the caller asks for, and really sleeps it."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        time.sleep(seconds)


def make_caller(
    wire: Wire,
    server: WireServer,
    *,
    max_retries: int = 3,
    cache: ResponseCache | None = None,
    prices: PriceTable | None = None,
    timeout: float = TIMEOUT,
) -> tuple[ProviderCaller, Sleeps]:
    sleeps = Sleeps()
    caller = ProviderCaller(
        wire.provider,
        ProviderSettings(base_url=server.url + wire.suffix, timeout_sec=timeout),
        policy=CallPolicy(max_retries=max_retries, backoff_base_sec=0.01, backoff_cap_sec=0.05),
        cache=cache,
        prices=prices,
        sleep=sleeps,
    )
    return caller, sleeps


def request(model: str = "model-x", **kw: Any) -> GenerationRequest:
    return GenerationRequest(prompt="Write the solver.", model=model, max_tokens=2048, **kw)


def test_normal_reply(wire: Wire, server: WireServer):
    server.script(Reply(200, wire.ok(REPLY)))
    prices = PriceTable({"model-x": Price(input_per_mtok=3.0, output_per_mtok=15.0)})
    caller, sleeps = make_caller(wire, server, prices=prices)
    out = caller.call(request(case_id="c1", attempt=2))
    assert out.generation is not None and out.generation.text == REPLY
    assert out.generation.finish_reason == "stop"
    assert extract_code(out.generation.text, "python").code == CODE
    rec = out.record
    assert (rec.input_tokens, rec.output_tokens, rec.retries, rec.error) == (120, 80, 0, None)
    assert rec.cost_usd == pytest.approx((120 * 3.0 + 80 * 15.0) / 1e6)
    assert rec.decoding["temperature"] == 0.0 and rec.temperature_requested == 0.0
    assert rec.base_url == server.url + wire.suffix and rec.model == "model-x"
    assert (rec.case_id, rec.attempt) == ("c1", 2)
    assert rec.raw["usage"]  # the raw reply is kept
    [seen] = server.seen
    assert seen.path == wire.path
    assert wire.auth(seen.headers) == "sk-test-key"
    assert seen.body["model"] == "model-x" and seen.body["temperature"] == 0
    assert seen.body["messages"][-1] == {"role": "user", "content": "Write the solver."}
    assert 2048 in (seen.body.get("max_tokens"), seen.body.get("max_completion_tokens"))
    assert sleeps == []


def test_rate_limit_honours_retry_after(wire: Wire, server: WireServer):
    server.script(
        Reply(429, wire.error("rate_limit_error", "slow down"), headers={"retry-after": "0.4"}),
        Reply(200, wire.ok(REPLY)),
    )
    caller, sleeps = make_caller(wire, server)
    t0 = time.monotonic()
    out = caller.call(request())
    assert out.generation is not None and out.generation.text == REPLY
    assert out.record.retries == 1 and len(server.seen) == 2
    assert sleeps[0] >= 0.4  # never sooner than the server asked
    assert time.monotonic() - t0 >= 0.4


def test_rate_limit_retry_after_ms(wire: Wire, server: WireServer):
    server.script(
        Reply(429, wire.error("rate_limit_error", "slow"), headers={"retry-after-ms": "300"}),
        Reply(200, wire.ok(REPLY)),
    )
    caller, sleeps = make_caller(wire, server)
    assert caller.call(request()).generation is not None
    assert sleeps[0] >= 0.3


def test_retry_after_beyond_the_cap_gives_up_without_sleeping(wire: Wire, server: WireServer):
    server.script(
        Reply(429, wire.error("rate_limit_error", "later"), headers={"retry-after": "7200"})
    )
    caller, sleeps = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is None and out.record.error_kind == "retries_exhausted"
    assert "7200" in out.record.error and sleeps == []


def test_server_error_twice_then_success(wire: Wire, server: WireServer):
    server.script(
        Reply(500, wire.error("api_error", "boom")),
        Reply(500, wire.error("api_error", "boom again")),
        Reply(200, wire.ok(REPLY)),
    )
    caller, sleeps = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is not None and out.record.retries == 2
    assert len(server.seen) == 3 and len(sleeps) == 2
    assert all(0.0 <= s <= 0.05 for s in sleeps)  # jittered, within the cap


def test_server_errors_beyond_the_retry_cap_fail_the_call(
    wire: Wire, server: WireServer, tmp_path: Path
):
    server.script(*[Reply(503, wire.error("overloaded_error", "busy")) for _ in range(3)])
    cache = ResponseCache(tmp_path)
    caller, _ = make_caller(wire, server, max_retries=2, cache=cache)
    out = caller.call(request())
    assert out.generation is None
    assert out.record.error_kind == "retries_exhausted" and out.record.retries == 2
    assert "503" in out.record.error and len(server.seen) == 3
    assert not list(tmp_path.rglob("*.json"))  # errors are never cached


def test_malformed_json_is_retried(wire: Wire, server: WireServer):
    server.script(Reply(200, b'{"id": "x", "content": [{"type": "te'), Reply(200, wire.ok(REPLY)))
    caller, _ = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is not None and out.generation.text == REPLY
    assert out.record.retries == 1


def test_malformed_json_every_time_fails_the_call(wire: Wire, server: WireServer):
    server.script(Reply(200, b"<html>proxy error</html>"), Reply(200, b"not json at all"))
    caller, _ = make_caller(wire, server, max_retries=1)
    out = caller.call(request())
    assert out.generation is None and out.record.error_kind == "retries_exhausted"
    assert "malformed" in out.record.error


def test_hang_past_the_timeout_is_retried(wire: Wire, server: WireServer):
    server.script(Reply(200, wire.ok(REPLY), delay=4.0), Reply(200, wire.ok(REPLY)))
    caller, _ = make_caller(wire, server, timeout=0.5)
    t0 = time.monotonic()
    out = caller.call(request())
    elapsed = time.monotonic() - t0
    assert out.generation is not None and out.record.retries == 1
    assert elapsed < 3.0  # gave up on the hung request after the timeout, not after 4 s


def test_reply_cut_by_the_token_limit_is_fgen_truncated(wire: Wire, server: WireServer):
    cut = "Here it is:\n\n```python\nimport numpy as np\n\ndef solve(case_spec):\n    x = ("
    server.script(Reply(200, wire.ok(cut, stop=wire.length_stop)))
    caller, _ = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is not None and out.generation.finish_reason == "length"
    extraction = extract_code(out.generation.text, "python", finish_reason="length")
    assert extraction.code is None and extraction.reason == "truncated"
    assert "token limit" in extraction.message


def test_body_cut_short_on_the_wire_is_retried(wire: Wire, server: WireServer):
    server.script(Reply(200, wire.ok(REPLY), cut_at=40), Reply(200, wire.ok(REPLY)))
    caller, _ = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is not None and out.generation.text == REPLY
    assert out.record.retries == 1


def test_refused_temperature_is_dropped_and_recorded(wire: Wire, server: WireServer):
    msg = "Unsupported value: 'temperature' does not support 0 with this model."
    server.script(Reply(400, wire.error("invalid_request_error", msg)), Reply(200, wire.ok(REPLY)))
    caller, _ = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is not None
    first, second = server.seen
    assert first.body["temperature"] == 0 and "temperature" not in second.body
    rec = out.record
    assert rec.temperature_requested == 0.0 and rec.decoding["temperature"] is None
    assert "refused" in rec.temperature_note and "temperature" in rec.temperature_note


def test_bad_key_is_not_retried(wire: Wire, server: WireServer):
    server.script(Reply(401, wire.error("authentication_error", "invalid x-api-key")))
    caller, sleeps = make_caller(wire, server)
    out = caller.call(request())
    assert out.generation is None and out.record.error_kind == "provider_error"
    assert "401" in out.record.error and "API key" in out.record.error
    assert len(server.seen) == 1 and sleeps == []


def test_missing_key_is_one_clear_error_before_any_request(
    wire: Wire, server: WireServer, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(wire.key_env)
    settings = ProviderSettings(
        base_url=None if wire.name == "openai" else server.url, timeout_sec=TIMEOUT
    )
    with pytest.raises(ProviderUnavailable, match=wire.key_env):
        ProviderCaller(wire.provider, settings)
    assert server.seen == []


def test_cache_serves_a_repeat_without_a_request_and_bills_once(
    wire: Wire, server: WireServer, tmp_path: Path
):
    server.script(Reply(200, wire.ok(REPLY)))
    prices = PriceTable({"model-x": Price(1.0, 2.0)})
    caller, _ = make_caller(wire, server, cache=ResponseCache(tmp_path), prices=prices)
    first = caller.call(request())
    again = caller.call(request())
    other_attempt = caller.call(request(attempt=1))  # a new sample: not served from cache
    assert len(server.seen) == 2
    assert first.record.cost_usd > 0 and not first.record.cached
    assert again.record.cached and again.record.cost_usd == 0.0
    assert again.generation.text == REPLY
    assert other_attempt.generation is None  # the script was exhausted: 418, not a cache hit


def test_empty_reply_is_not_cached(wire: Wire, server: WireServer, tmp_path: Path):
    server.script(Reply(200, wire.ok("")), Reply(200, wire.ok(REPLY)))
    caller, _ = make_caller(wire, server, cache=ResponseCache(tmp_path))
    assert caller.call(request()).generation.text == ""
    assert caller.call(request()).generation.text == REPLY
    assert len(server.seen) == 2


def test_providers_are_found_through_entry_points():
    host = load_plugins(strict=True)
    for name in ("anthropic", "openai", "baseline", "replay"):
        assert name in host.providers
    assert host.provider_owner["anthropic"] == "provider-anthropic"


def test_openai_compatible_server_needs_no_key(server: WireServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server.script(Reply(200, openai_completion(REPLY)))
    caller = ProviderCaller(
        OpenAIProvider(), ProviderSettings(base_url=server.url + "/v1", timeout_sec=TIMEOUT)
    )
    assert caller.status.key.startswith("not set")
    out = caller.call(request())
    assert out.generation is not None
    assert server.seen[0].body["max_tokens"] == 2048  # compatible servers get max_tokens
