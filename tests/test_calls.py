"""Call discipline: backoff with jitter honouring retry-after, caps, cache rules, cost."""

from __future__ import annotations

import json
import random
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from pdeagent.calls import (
    CallPolicy,
    ConcurrencyLimits,
    PriceTable,
    ProviderCaller,
    ResponseCache,
    RetriesExhausted,
    RetryableError,
    backoff_delay,
    cache_key,
    call_with_retries,
    record_call,
    retry_after_seconds,
    status_failure,
)
from pdeagent.providers import (
    Generation,
    GenerationRequest,
    Provider,
    ProviderError,
    ProviderSettings,
    ProviderStatus,
    ProviderUnavailable,
    TemperatureRejected,
)

REQ = GenerationRequest(prompt="solve it", model="m-1", temperature=0.0, max_tokens=100)


def flaky(failures):
    """A call failing with each of ``failures`` in turn, then returning 'ok'."""
    left = list(failures)
    calls = []

    def fn():
        calls.append(1)
        if left:
            raise left.pop(0)
        return "ok"

    return fn, calls


def test_backoff_is_full_jitter_and_capped():
    policy = CallPolicy(backoff_base_sec=2.0, backoff_cap_sec=10.0)
    rng = random.Random(0)
    for attempt, ceiling in [(1, 2.0), (2, 4.0), (3, 8.0), (4, 10.0), (9, 10.0)]:
        draws = [backoff_delay(attempt, policy, rng) for _ in range(200)]
        assert 0.0 <= min(draws) and max(draws) <= ceiling
        assert max(draws) > 0.8 * ceiling  # spread over the whole interval


def test_retry_after_is_honoured_then_success():
    sleeps = []
    fn, calls = flaky([RetryableError("429", retry_after=7.5, kind="rate_limit")])
    result, retries = call_with_retries(
        fn, CallPolicy(backoff_base_sec=0.1), sleep=sleeps.append, rng=random.Random(1)
    )
    assert (result, retries, len(calls)) == ("ok", 1, 2)
    assert sleeps == [7.5]  # never sooner than the server asked


def test_two_server_errors_then_success():
    sleeps = []
    fn, calls = flaky([RetryableError("500"), RetryableError("503")])
    result, retries = call_with_retries(
        fn, CallPolicy(backoff_base_sec=1.0), sleep=sleeps.append, rng=random.Random(2)
    )
    assert (result, retries, len(calls)) == ("ok", 2, 3)
    assert 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0


def test_retries_are_capped_and_other_errors_propagate():
    fn, calls = flaky([RetryableError("500")] * 10)
    with pytest.raises(RetriesExhausted, match="gave up after 4 attempts") as info:
        call_with_retries(fn, CallPolicy(max_retries=3), sleep=lambda s: None)
    assert info.value.attempts == 4 and len(calls) == 4
    fn, calls = flaky([ValueError("bad request")])
    with pytest.raises(ValueError, match="bad request"):
        call_with_retries(fn, CallPolicy(), sleep=lambda s: None)
    assert len(calls) == 1


def test_an_absurd_retry_after_ends_the_call():
    fn, _ = flaky([RetryableError("429", retry_after=86400)])
    slept = []
    with pytest.raises(RetriesExhausted, match="retry after 86400 s"):
        call_with_retries(fn, CallPolicy(retry_after_cap_sec=600), sleep=slept.append)
    assert slept == []


def test_concurrency_limit_per_provider():
    limits = ConcurrencyLimits(default=2)
    sem = limits.of("anthropic")
    assert limits.of("anthropic") is sem and limits.of("openai") is not sem
    active, peak, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def work():
        with sem:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            release.wait(0.2)
            with lock:
                active[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert peak[0] == 2


def test_cache_key_covers_everything_that_determines_a_reply():
    base = cache_key("openai", "http://h/v1", REQ)
    variants = [
        cache_key("anthropic", "http://h/v1", REQ),
        cache_key("openai", "http://other/v1", REQ),
        cache_key("openai", "http://h/v1", GenerationRequest("solve it!", "m-1")),
        cache_key("openai", "http://h/v1", GenerationRequest("solve it", "m-2")),
        cache_key("openai", "http://h/v1", GenerationRequest("solve it", "m-1", temperature=1)),
        cache_key("openai", "http://h/v1", GenerationRequest("solve it", "m-1", attempt=1)),
        cache_key("openai", "http://h/v1", GenerationRequest("solve it", "m-1", max_tokens=5)),
    ]
    assert base == cache_key("openai", "http://h/v1", REQ)
    assert len({base, *variants}) == len(variants) + 1


def test_cache_stores_replies_but_never_empty_ones(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    key = cache_key("openai", None, REQ)
    assert cache.get(key) is None
    assert cache.put(key, Generation(text="   ", finish_reason="stop")) is False
    assert cache.get(key) is None
    reply = Generation(text="```python\nx=1\n```", finish_reason="stop", input_tokens=10)
    assert cache.put(key, reply) is True
    assert cache.get(key) == reply
    path = next((tmp_path / "cache").rglob("*.json"))
    path.write_text("{not json", encoding="utf-8")
    assert cache.get(key) is None  # corrupt entry: a miss, not a crash


def test_cost_and_call_record(tmp_path):
    table_file = tmp_path / "prices.json"
    table_file.write_text(
        json.dumps({"m-1": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}), encoding="utf-8"
    )
    prices = PriceTable.from_json(table_file)
    assert prices.cost("m-1", 1_000_000, 100_000) == pytest.approx(4.5)
    assert prices.cost("unknown", 10, 10) is None
    gen = Generation(text="hi", finish_reason="stop", input_tokens=2000, output_tokens=500)
    rec = record_call(
        "openai", "http://h/v1", REQ, gen, latency_sec=1.5, retries=2, prices=prices, cached=False
    )
    assert rec.cost_usd == pytest.approx((2000 * 3 + 500 * 15) / 1e6)
    assert rec.retries == 2 and rec.decoding["temperature"] == 0.0
    assert len(rec.prompt_sha256) == 64 and rec.response_sha256 != rec.prompt_sha256
    again = record_call(
        "openai", "http://h/v1", REQ, gen, latency_sec=0.0, retries=0, prices=prices, cached=True
    )
    assert again.cost_usd == 0.0 and again.cached  # a cached reply is never billed twice
    bad = tmp_path / "bad.json"
    bad.write_text('{"m": {"input_per_mtok": "x"}}', encoding="utf-8")
    with pytest.raises(ValueError, match="price table"):
        PriceTable.from_json(bad)


# --- HTTP failure classification and the disciplined caller (no network) -----------------


def test_retry_after_forms():
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25.0 <= retry_after_seconds({"retry-after": soon}) <= 30.5
    assert retry_after_seconds({"retry-after": "soonish"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_status_failure_classification():
    rl = status_failure(429, "slow down", {"retry-after": "3"})
    assert isinstance(rl, RetryableError) and rl.kind == "rate_limit" and rl.retry_after == 3.0
    assert isinstance(status_failure(529, "overloaded"), RetryableError)
    assert isinstance(status_failure(502, "bad gateway"), RetryableError)
    assert isinstance(status_failure(400, "'temperature' is not supported"), TemperatureRejected)
    bad_key = status_failure(401, "invalid key")
    assert type(bad_key) is ProviderError and "API key" in str(bad_key)
    assert type(status_failure(404, "no such model")) is ProviderError


class Scripted(Provider):
    """A provider whose generate() plays a script of results and exceptions."""

    name = "scripted"
    description = "test"
    cacheable = True

    def __init__(self, *script, ready=True):
        self.script = list(script)
        self.requests = []
        self.ready = ready

    def status(self, settings):
        return ProviderStatus(
            ready=self.ready, package="-", key="-", endpoint="mem://", problem="no key"
        )

    def generate(self, request):
        self.requests.append(request)
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


FAST = CallPolicy(max_retries=2, backoff_base_sec=0.0, backoff_cap_sec=0.0)


def test_caller_refuses_an_unready_provider_before_any_call():
    p = Scripted(ready=False)
    with pytest.raises(ProviderUnavailable, match="no key"):
        ProviderCaller(p, ProviderSettings())
    assert p.requests == []


def test_caller_drops_a_refused_temperature_once():
    p = Scripted(TemperatureRejected("temperature unsupported"), Generation("```python\nx\n```"))
    out = ProviderCaller(p, ProviderSettings(), policy=FAST).call(REQ)
    assert [r.temperature for r in p.requests] == [0.0, None]
    assert out.generation is not None and out.record.decoding["temperature"] is None
    assert out.record.temperature_requested == 0.0 and "temperature" in out.record.temperature_note


def test_caller_does_not_loop_on_a_temperature_refused_twice():
    p = Scripted(TemperatureRejected("t"), TemperatureRejected("t again"))
    out = ProviderCaller(p, ProviderSettings(), policy=FAST).call(REQ)
    assert out.generation is None and out.record.error_kind == "provider_error"
    assert len(p.requests) == 2


def test_caller_survives_a_crashing_or_lying_provider():
    crash = ProviderCaller(Scripted(ZeroDivisionError("oops")), ProviderSettings(), policy=FAST)
    out = crash.call(REQ)
    assert out.generation is None and out.record.error_kind == "provider_crash"
    assert "ZeroDivisionError" in out.record.error
    liar = ProviderCaller(Scripted({"text": "hi"}), ProviderSettings(), policy=FAST)
    out = liar.call(REQ)
    assert out.generation is None and out.record.error_kind == "bad_generation"


def test_caller_counts_retries_and_records_the_effective_settings(tmp_path):
    p = Scripted(
        RetryableError("500", kind="http_500"),
        RetryableError("timeout", kind="timeout"),
        Generation("```python\nx = 1\n```", input_tokens=10, output_tokens=5),
    )
    settings = ProviderSettings(options={"token_param": "max_tokens"})
    out = ProviderCaller(p, settings, policy=FAST, cache=ResponseCache(tmp_path)).call(REQ)
    assert out.record.retries == 2 and out.record.base_url == "mem://"
    assert out.record.decoding["options"] == {"token_param": "max_tokens"}
    assert all(r.settings == settings for r in p.requests)


def test_uncacheable_providers_bypass_the_cache(tmp_path):
    p = Scripted(Generation("```python\n1\n```"), Generation("```python\n2\n```"))
    p.cacheable = False
    caller = ProviderCaller(p, ProviderSettings(), policy=FAST, cache=ResponseCache(tmp_path))
    assert caller.call(REQ).generation.text != caller.call(REQ).generation.text
    assert not list(tmp_path.rglob("*.json"))
