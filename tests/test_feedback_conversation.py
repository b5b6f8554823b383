"""Feedback mode as one conversation (issue #24), on the sample track with a scripted
provider: attempt k sends the earlier exchanges verbatim (the original prompt, each
reply, each feedback turn) and the feedback on attempt k-1 as the next user turn;
``--resume`` rebuilds that history from the attempt folders without calling the model;
the response cache keys on the whole conversation; when the model's context is
exceeded the oldest middle exchanges are left out (never the task, never the latest
program) and the next user turn says how many; with nothing left to leave out the
attempt is F-Gen ``context_length``.

The feedback turn's wording is the prompt builder's (tested in its own tests); here a
stand-in renders it, so every assertion is about what the runner sends and stores.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pdeagent.calls import (
    CallPolicy,
    ProviderCaller,
    ResponseCache,
    cache_key,
    decoding_config,
)
from pdeagent.cases.io import load_cases
from pdeagent.prompts import builder
from pdeagent.providers import (
    Generation,
    GenerationFailure,
    GenerationRequest,
    Provider,
    ProviderSettings,
    ProviderStatus,
    Turn,
)
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import read_attempt
from pdeagent.runs.runner import FRESH_START_SEPARATOR, RunConfig
from pdeagent.runs.submission import saved_submission
from pdeagent.sandbox.select import resolve_backend

from .test_run import BASELINE, RAISES, fenced, make_cases, run_one_task

pytestmark = pytest.mark.sandbox

MODEL = "m"
CID = "sample_poisson_copy_000"
RAISES_AGAIN = "def solve(case_spec):\n    raise ValueError('still no mesh, attempt three')\n"
# Trailing spaces, a carriage return and prose after the code: kept verbatim.
REPLY_0 = f"Here is my solver.  \r\n\n```python\n{RAISES}```\n\nIt should work.\n"
NO_CODE = "I would use a five-point stencil and a sparse solve; no code this time.\n"


def context_length() -> GenerationFailure:
    return GenerationFailure(
        "HTTP 400: maximum context length is 8192 tokens", reason="context_length"
    )


class Scripted(Provider):
    """A provider answering each request with the next item of its script (a reply
    text, or an exception to raise); keeps every request it got."""

    name = "scripted"
    description = "test"
    cacheable = True
    free = True

    def __init__(self, *script: str | BaseException) -> None:
        self.script = list(script)
        self.requests: list[GenerationRequest] = []

    def status(self, settings: ProviderSettings) -> ProviderStatus:
        return ProviderStatus(ready=True, package="-", key="-", endpoint="mem://")

    def generate(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return Generation(text=item, finish_reason="stop", input_tokens=10, output_tokens=5)


@pytest.fixture
def turns(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """A stand-in ``build_feedback_turn``; returns the calls it got."""
    calls: list[dict[str, Any]] = []

    def build_feedback_turn(case, track, feedback, *, dropped_exchanges: int = 0) -> str:
        calls.append({"case": case.id, "track": track.name, "feedback": feedback,
                      "dropped": dropped_exchanges})  # fmt: skip
        return (
            f"FEEDBACK on attempt {feedback.attempt}: {feedback.stage} {feedback.reason}\n"
            f"{feedback.error_message}\n{feedback.stderr_excerpt[-200:]}\n"
            f"dropped exchanges: {dropped_exchanges}\n"
        )

    monkeypatch.setattr(builder, "build_feedback_turn", build_feedback_turn, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # no local calibration
    return calls


def run_feedback(
    host, tmp_path: Path, provider: Scripted, attempts: int, *, resume: bool = False,
    cache: ResponseCache | None = None,
) -> Path:  # fmt: skip
    """One feedback-mode task of the sample case through ``provider``; the run dir."""
    cases_file = tmp_path / "cases.jsonl"
    if not cases_file.exists():
        make_cases(tmp_path, n=1)
    out = tmp_path / "run"
    cases = load_cases(cases_file, known_libraries={"numpy_fd", "dolfinx", "firedrake", "dealii"})
    config = RunConfig(
        track="numpy_fd", provider="scripted", models=[MODEL], cases_file=str(cases_file),
        case_ids=[CID], mode="feedback", attempts=attempts, response_cache=cache is not None,
        sandbox=resolve_backend(None),
    )  # fmt: skip
    caller = ProviderCaller(
        provider, ProviderSettings(), policy=CallPolicy(max_retries=0), cache=cache
    )
    return run_one_task(host, config, cases, out, caller, MODEL, resume=resume)


def folder(out: Path, attempt: int) -> Path:
    return attempt_dir(out, "numpy_fd", MODEL, CID, attempt)


def saved(out: Path, attempt: int, name: str) -> str:
    return (folder(out, attempt) / name).read_bytes().decode("utf-8")


def call_json(out: Path, attempt: int) -> dict[str, Any]:
    return json.loads(saved(out, attempt, "call.json"))


def report(out: Path, attempt: int):
    r = read_attempt(folder(out, attempt) / "report.json")
    assert r is not None
    return r


def conversation(*texts: str) -> tuple[Turn, ...]:
    return tuple(Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts))


# ----------------------------------------------------------------------------- history


def test_attempt_2_continues_the_conversation_verbatim(host, tmp_path, turns):
    provider = Scripted(REPLY_0, NO_CODE, fenced(BASELINE))
    out = run_feedback(host, tmp_path, provider, attempts=3)
    assert [(report(out, k).verdict, report(out, k).reason) for k in range(3)] == [
        ("F-Exec", "runtime_error"), ("F-Gen", "no_code"), ("PASS", None),
    ]  # fmt: skip
    prompt0, fb1, fb2 = (saved(out, k, "prompt.md") for k in range(3))
    assert saved(out, 0, "response.md") == REPLY_0 and saved(out, 1, "response.md") == NO_CODE
    first, second, third = provider.requests
    assert first.history == () and first.prompt == prompt0
    assert "## 1. Task summary" in prompt0 and "## 3. Case specification" in prompt0
    assert second.history == conversation(prompt0, REPLY_0) and second.prompt == fb1
    # Attempt 2: exactly prompt 0, reply 0 verbatim, feedback 1, reply 1 (no code).
    assert third.history == conversation(prompt0, REPLY_0, fb1, NO_CODE)
    assert third.prompt == fb2
    assert fb1.startswith("FEEDBACK on attempt 1: F-Exec runtime_error")
    assert "the model forgot the mesh" in fb1
    assert fb2.startswith("FEEDBACK on attempt 2: F-Gen no_code")
    assert prompt0 not in fb1 and prompt0 not in fb2  # the task is not repeated
    assert [c["dropped"] for c in turns] == [0, 0]
    assert [c["feedback"].attempt for c in turns] == [1, 2]
    # call.json shows the whole conversation of each call.
    messages = call_json(out, 2)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in messages] == [prompt0, REPLY_0, fb1, NO_CODE, fb2]
    assert call_json(out, 0)["messages"] == [{"role": "user", "content": prompt0}]
    assert call_json(out, 2)["dropped_exchanges"] == 0
    assert call_json(out, 2)["prompt_sha256"] == hashlib.sha256(fb2.encode()).hexdigest()


def test_resume_rebuilds_the_history_from_the_attempt_folders(host, tmp_path, turns):
    provider = Scripted(REPLY_0, NO_CODE, fenced(BASELINE))
    out = run_feedback(host, tmp_path, provider, attempts=3)
    uninterrupted = provider.requests[2]
    for path in folder(out, 2).iterdir():  # interrupted before attempt 2's call
        if path.is_file():
            path.unlink()
    again = Scripted(fenced(BASELINE))
    run_feedback(host, tmp_path, again, attempts=3, resume=True)
    [request] = again.requests  # attempts 0 and 1 were not asked again
    assert request.history == uninterrupted.history and len(request.history) == 4
    assert request.prompt == uninterrupted.prompt
    assert report(out, 2).verdict == "PASS"

    # A saved reply of the interrupted attempt is graded without any call.
    (folder(out, 2) / "report.json").unlink()
    none = Scripted()
    run_feedback(host, tmp_path, none, attempts=3, resume=True)
    assert none.requests == [] and report(out, 2).verdict == "PASS"


def test_no_reply_to_the_first_prompt_starts_afresh(host, tmp_path, turns):
    filtered = GenerationFailure("filtered", reason="content_filter")
    provider = Scripted(filtered, NO_CODE)
    out = run_feedback(host, tmp_path, provider, attempts=2)
    assert (report(out, 0).verdict, report(out, 0).reason) == ("F-Gen", "content_filter")
    assert not (folder(out, 0) / "response.md").exists()
    prompt0 = saved(out, 0, "prompt.md")
    second = provider.requests[1]
    assert second.history == ()  # nothing to continue: the task follows the feedback
    assert second.prompt.startswith("FEEDBACK on attempt 1: F-Gen content_filter")
    assert second.prompt.endswith(FRESH_START_SEPARATOR + prompt0)
    assert saved(out, 1, "prompt.md") == second.prompt


# ----------------------------------------------------------------------------- cache


def test_cache_keys_cover_the_history():
    plain = GenerationRequest(prompt="fix it", model="m-1")
    a = GenerationRequest(prompt="fix it", model="m-1", history=conversation("task", "reply A"))
    b = GenerationRequest(prompt="fix it", model="m-1", history=conversation("task", "reply B"))
    keys = {cache_key("p", None, r) for r in (plain, a, b)}
    assert len(keys) == 3
    assert cache_key("p", None, a) == cache_key(
        "p", None, GenerationRequest(prompt="fix it", model="m-1", history=a.history)
    )
    # A single-turn request keys as before conversations (existing caches stay valid).
    old = {"provider": "p", "model": "m-1", "base_url": None, "prompt": "fix it",
           "decoding": decoding_config(plain), "attempt": 0}  # fmt: skip
    expected = hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()
    assert cache_key("p", None, plain) == expected


def test_cached_reply_is_not_served_for_another_history(tmp_path):
    provider = Scripted("reply to A", "reply to B")
    caller = ProviderCaller(
        provider, ProviderSettings(), policy=CallPolicy(max_retries=0),
        cache=ResponseCache(tmp_path / "cache"),
    )  # fmt: skip
    a = GenerationRequest(prompt="fix it", model="m-1", history=conversation("task", "A"))
    b = GenerationRequest(prompt="fix it", model="m-1", history=conversation("task", "B"))
    first, second, third = caller.call(a), caller.call(b), caller.call(a)
    assert (first.generation.text, second.generation.text) == ("reply to A", "reply to B")
    assert not second.record.cached and len(provider.requests) == 2
    assert third.record.cached and third.generation.text == "reply to A"
    assert third.record.messages == [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "fix it"},
    ]


def test_an_older_call_json_without_the_conversation_still_loads(tmp_path, track):
    record = {
        "provider": "openai", "model": "m", "base_url": None,
        "timestamp": "2026-01-01T00:00:00Z", "decoding": {"temperature": 0.0},
        "prompt_sha256": "0" * 64, "response_sha256": "1" * 64, "finish_reason": "stop",
    }  # fmt: skip
    (tmp_path / "call.json").write_text(json.dumps(record))
    (tmp_path / "response.md").write_text(fenced(BASELINE))
    sub = saved_submission(tmp_path, track, track.source_filename)
    assert sub is not None and sub.source.strip() == BASELINE.strip()
    assert sub.call.messages == [] and sub.call.dropped_exchanges == 0


# ----------------------------------------------------------------------------- context


def test_context_overflow_drops_the_oldest_middle_exchanges_then_carries_them(
    host, tmp_path, turns
):
    raises = [fenced(RAISES_AGAIN.replace("three", str(k))) for k in range(2, 5)]
    provider = Scripted(
        REPLY_0, NO_CODE, raises[0], raises[1],  # attempts 0-3
        context_length(), context_length(), raises[2],  # attempt 4: two drops, F-Exec
        fenced(BASELINE),  # attempt 5: starts with the two drops
    )  # fmt: skip
    out = run_feedback(host, tmp_path, provider, attempts=6)
    p0, f1, f2, f3, f4, f5 = (saved(out, k, "prompt.md") for k in range(6))
    r0, r1, r2, r3, r4 = REPLY_0, NO_CODE, raises[0], raises[1], raises[2]
    tries = [r for r in provider.requests if r.attempt == 4]
    assert [len(r.history) // 2 for r in tries] == [4, 3, 2]
    assert tries[0].history == conversation(p0, r0, f1, r1, f2, r2, f3, r3)
    assert tries[1].history == conversation(p0, r0, f2, r2, f3, r3)  # exchange 1 left out
    assert tries[2].history == conversation(p0, r0, f3, r3)  # the task, the latest program
    assert [c["dropped"] for c in turns if c["feedback"].attempt == 4] == [0, 1, 2]
    assert tries[2].prompt == f4 and "dropped exchanges: 2" in f4
    assert "dropped exchanges: 0" in tries[0].prompt
    call = call_json(out, 4)
    assert call["dropped_exchanges"] == 2 and len(call["messages"]) == 5
    assert call["messages"][-2]["content"] == r3 and call["messages"][-1]["content"] == f4
    assert (report(out, 4).verdict, report(out, 4).dropped_exchanges) == ("F-Exec", 2)
    # Attempt 5 starts from attempt 4's drops: no call known to overflow is repeated.
    [last] = [r for r in provider.requests if r.attempt == 5]
    assert last.history == conversation(p0, r0, f3, r3, f4, r4) and last.prompt == f5
    assert "dropped exchanges: 2" in f5
    assert (report(out, 5).verdict, report(out, 5).dropped_exchanges) == ("PASS", 2)
    assert len(provider.requests) == 8 and provider.script == []


def test_context_overflow_with_nothing_to_drop_is_f_gen(host, tmp_path, turns):
    provider = Scripted(REPLY_0, NO_CODE, context_length(), context_length())
    out = run_feedback(host, tmp_path, provider, attempts=4)
    # Attempt 2: [prompt 0, reply 0] and [feedback 1, reply 1] are the task and the
    # latest program: nothing to leave out, one call.
    assert len(provider.requests) == 4
    for k in (2, 3):
        r = report(out, k)
        assert (r.verdict, r.reason, r.infrastructure) == ("F-Gen", "context_length", False)
        assert "maximum context length" in r.message and r.dropped_exchanges == 0
        assert call_json(out, k)["failure_reason"] == "context_length"
        assert not (folder(out, k) / "response.md").exists()
    p0, f1, f2, f3 = (saved(out, k, "prompt.md") for k in range(4))
    assert provider.requests[2].history == conversation(p0, REPLY_0, f1, NO_CODE)
    assert provider.requests[2].prompt == f2
    # Attempt 2 got no reply: it adds no exchange; attempt 3's turn reports its failure.
    assert provider.requests[3].history == conversation(p0, REPLY_0, f1, NO_CODE)
    assert f2 not in [t.content for t in provider.requests[3].history]
    assert f3.startswith("FEEDBACK on attempt 3: F-Gen context_length")
    assert call_json(out, 3)["messages"][-1]["content"] == f3
