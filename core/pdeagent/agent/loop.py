"""The agent loop (``--mode agent``, issue #22): the model gets the task prompt and the
tools of :mod:`pdeagent.agent.tools` and works, one model step after another, until it
submits a file or a budget ends. Provider-neutral: a step goes through
:meth:`pdeagent.calls.ProviderCaller.step` (the provider's ``agent_step``); the tools
act on an :class:`~pdeagent.agent.session.AgentSession`.

Everything is saved in the attempt folder as it happens: ``transcript.json`` (every
message, tool call and result, each step's tokens, cost and latency, each command's
wall time, the budgets and the status), rewritten atomically after every step and every
tool result, and the submitted file under the track's source file name. A finished
episode is never run again (``--resume`` regrades its file); an unfinished one (the
harness stopped, or the provider failed transiently) continues: its work dir is rebuilt
from the files it wrote with ``write_file`` (commands are not re-run) and the model is
told so.

Ends:

- ``submitted``: ``submit(path)`` named a readable UTF-8 file; it is graded like a
  single-shot submission;
- ``budget``: turns, tool time, tokens or cost ran out: ``F-Gen agent_budget``;
- ``no_submit``: the model answered :data:`MAX_IDLE_REPLIES` times in a row without a
  tool call: ``F-Gen agent_no_submit``;
- ``generation_failure``: the provider said the request or the model is at fault
  (``context_length``, ``content_filter``, ``invalid_request``): ``F-Gen`` with it;
- ``provider_failure``: no reply after retries or a configuration problem: an
  infrastructure failure (``provider_transient`` / ``provider_error``), continued by
  ``--resume``.
- ``sandbox_failure``: the sandbox could not run a command (``SandboxError``): the
  harness's failure, ``ERROR harness_error``; ``--resume --rerun-errors`` continues the
  episode and runs the unanswered tool calls again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from attrs import asdict, define, field

from pdeagent.agent.protocol import (
    AgentMessage,
    AgentRequest,
    ToolCall,
    ToolResult,
    message_from_dict,
    message_to_dict,
)
from pdeagent.agent.session import AgentSession, ToolError
from pdeagent.agent.tools import READ_FILE, RUN, SUBMIT, TOOLS, WRITE_FILE
from pdeagent.calls import ProviderCaller
from pdeagent.fileio import atomic_write_json, atomic_write_text
from pdeagent.sandbox.base import SandboxError

TRANSCRIPT_FILE = "transcript.json"
TRANSCRIPT_SCHEMA = 1
MAX_IDLE_REPLIES = 3
"""Replies in a row without a tool call that end the episode (``agent_no_submit``)."""
FINAL = ("submitted", "budget", "no_submit", "generation_failure")
"""Statuses of a finished episode (never run again)."""
AGENT_FAILURE_REASONS = ("agent_budget", "agent_no_submit")
"""F-Gen reasons of agent mode (beside the provider's and the extraction's)."""
IDLE_NUDGE = (
    "No tool was called. Work with the tools: write your program with write_file, test it "
    "with run, and call submit(path) with your final program to finish."
)
EMPTY_REPLY = "(an empty reply: no text and no tool call)"
"""Stands in the transcript for a reply without text or tool calls."""
RESUME_NOTE = (
    "The episode was interrupted and is resumed: the files you wrote with write_file are "
    "restored in a fresh work directory; anything else (files your commands created, "
    "build outputs) is gone and must be made again."
)


@define(frozen=True)
class Budgets:
    """What one episode may spend."""

    turns: int = 40
    """Model steps."""
    tool_time_sec: float = 900.0
    """Wall time of all ``run`` commands together."""
    tokens: int = 2_000_000
    """Input plus output tokens of all steps together."""
    cost_usd: float | None = None
    """Cost of all steps together (None: no limit; needs a price table to count)."""

    def __attrs_post_init__(self) -> None:
        if self.turns < 1 or self.tool_time_sec <= 0 or self.tokens < 1:
            raise ValueError(f"budgets must be positive: {self}")
        if self.cost_usd is not None and self.cost_usd <= 0:
            raise ValueError(f"the cost budget must be positive, got {self.cost_usd}")


@define
class EpisodeResult:
    """How an episode ended, with its totals (also in ``transcript.json``)."""

    status: str
    source: str | None = None
    submitted_path: str | None = None
    reason: str | None = None
    """F-Gen reason, or ``provider_transient`` / ``provider_error``."""
    message: str = ""
    turns: int = 0
    tool_calls: int = 0
    tool_time_sec: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    generation_sec: float = 0.0
    infrastructure: bool = False
    record_file: str = TRANSCRIPT_FILE
    """The file of the attempt folder that records the episode."""


@define
class _State:
    """The transcript as kept in memory and on disk."""

    messages: list[AgentMessage] = field(factory=list)
    steps: list[dict[str, Any]] = field(factory=list)
    tool_runs: list[dict[str, Any]] = field(factory=list)
    status: str = "running"
    result: dict[str, Any] | None = None
    idle: int = 0

    def totals(self) -> dict[str, Any]:
        ok = [s for s in self.steps if s.get("error") is None]
        inputs = [s.get("input_tokens") for s in ok]
        outputs = [s.get("output_tokens") for s in ok]
        costs = [s.get("cost_usd") for s in ok]
        return {
            "turns": len(ok),
            "tool_calls": len(self.tool_runs),
            "tool_time_sec": sum(float(r.get("wall_sec") or 0.0) for r in self.tool_runs),
            "input_tokens": None if None in inputs else sum(inputs),  # type: ignore[arg-type]
            "output_tokens": None if None in outputs else sum(outputs),  # type: ignore[arg-type]
            "cost_usd": None if None in costs else sum(costs),  # type: ignore[arg-type]
            "generation_sec": sum(float(s.get("latency_sec") or 0.0) for s in self.steps),
        }


def _tokens_used(totals: dict[str, Any]) -> int:
    return int(totals["input_tokens"] or 0) + int(totals["output_tokens"] or 0)


@define
class Episode:
    """One agent episode of one attempt (see the module docstring)."""

    caller: ProviderCaller
    session: AgentSession
    directory: Path
    """The attempt folder (``transcript.json`` and the submitted file go there)."""
    model: str
    prompt: str
    source_filename: str
    budgets: Budgets = field(factory=Budgets)
    max_tokens: int = 16000
    temperature: float | None = 0.0
    case_id: str | None = None
    attempt: int = 0
    system: str | None = None
    state: _State = field(factory=_State)

    # --- the transcript ---------------------------------------------------------------

    @property
    def transcript_path(self) -> Path:
        return self.directory / TRANSCRIPT_FILE

    def _save(self) -> None:
        atomic_write_json(
            self.transcript_path,
            {
                "schema_version": TRANSCRIPT_SCHEMA,
                "provider": self.caller.name,
                "model": self.model,
                "case_id": self.case_id,
                "attempt": self.attempt,
                "tools": [t.name for t in TOOLS],
                "budgets": asdict(self.budgets),
                "limits": asdict(self.session.limits),
                "status": self.state.status,
                "idle_replies": self.state.idle,
                "totals": self.state.totals(),
                "result": self.state.result,
                "messages": [message_to_dict(m) for m in self.state.messages],
                "steps": self.state.steps,
                "tool_runs": self.state.tool_runs,
            },
        )

    def _load(self) -> bool:
        """Read a saved transcript into the state; False when there is none (a transcript
        that cannot be read is an error: it is never silently started over)."""
        try:
            raw = self.transcript_path.read_bytes()
        except FileNotFoundError:
            return False
        try:
            data = json.loads(raw.decode("utf-8"))
            if data.get("schema_version") != TRANSCRIPT_SCHEMA:
                raise ValueError(f"schema_version {data.get('schema_version')!r}")
            self.state = _State(
                messages=[message_from_dict(m) for m in data["messages"]],
                steps=list(data["steps"]),
                tool_runs=list(data["tool_runs"]),
                status=str(data["status"]),
                result=data.get("result"),
                idle=int(data.get("idle_replies", 0)),
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RuntimeError(
                f"unreadable agent transcript {self.transcript_path}: {exc}"
            ) from None
        return True

    # --- the episode ------------------------------------------------------------------

    def run(self) -> EpisodeResult:
        """Run (or continue, or just report) the episode."""
        resumed = self._load()
        if resumed and self.state.status in FINAL and self.state.result is not None:
            return self._saved_result()
        if self.session.shell is None:
            self.session.start()
        self.state.status = "running"
        self.state.result = None
        if not resumed:
            self.state.messages.append(AgentMessage("user", self.prompt))
        else:
            self._restore_files()
            last = self.state.messages[-1]
            if last.role == "assistant" and last.tool_calls:  # calls left unanswered
                ended = self._do_tools(last.tool_calls)
                if ended is not None:
                    return ended
            self._note(RESUME_NOTE)
        self._save()
        while True:
            last = self.state.messages[-1]
            if last.role == "assistant" and last.tool_calls:
                ended = self._do_tools(last.tool_calls)
                if ended is not None:
                    return ended
                continue
            ended = self._budget_end()
            if ended is not None:
                return ended
            ended = self._step()
            if ended is not None:
                return ended

    def _note(self, text: str) -> None:
        """A harness note to the model as a user message (merged with a pending one)."""
        last = self.state.messages[-1] if self.state.messages else None
        if last is not None and last.role == "user":
            self.state.messages[-1] = AgentMessage("user", f"{last.text}\n\n{text}")
        else:
            self.state.messages.append(AgentMessage("user", text))

    def _restore_files(self) -> None:
        """Write again, in order, every file the episode wrote with ``write_file``."""
        answered: set[str] = set()
        for m in self.state.messages:
            answered.update(r.call_id for r in m.tool_results if not r.is_error)
        for m in self.state.messages:
            for call in m.tool_calls:
                if call.name == WRITE_FILE and call.id in answered:
                    self.session.write_file(call.arguments["path"], call.arguments["content"])

    def _budget_end(self) -> EpisodeResult | None:
        totals = self.state.totals()
        b = self.budgets
        spent = None
        if totals["turns"] >= b.turns:
            spent = f"the turn budget ({b.turns} model steps)"
        elif totals["tool_time_sec"] >= b.tool_time_sec:
            spent = f"the tool-time budget ({b.tool_time_sec:.0f} s)"
        elif _tokens_used(totals) >= b.tokens:
            spent = f"the token budget ({b.tokens} tokens)"
        elif b.cost_usd is not None and (totals["cost_usd"] or 0.0) >= b.cost_usd:
            spent = f"the cost budget (${b.cost_usd:.2f})"
        if spent is None:
            return None
        return self._finish(
            "budget", reason="agent_budget", message=f"spent {spent} without submitting"
        )

    def _step(self) -> EpisodeResult | None:
        request = AgentRequest(
            model=self.model,
            messages=tuple(self.state.messages),
            tools=TOOLS,
            system=self.system,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            case_id=self.case_id,
            attempt=self.attempt,
        )
        outcome = self.caller.step(request)
        turn = len(self.state.steps)
        self.state.steps.append(
            {
                "turn": turn,
                "latency_sec": outcome.latency_sec,
                "retries": outcome.retries,
                "input_tokens": outcome.input_tokens,
                "output_tokens": outcome.output_tokens,
                "cost_usd": outcome.cost_usd,
                "finish_reason": outcome.reply.finish_reason if outcome.reply else None,
                "error": outcome.error,
                "error_kind": outcome.error_kind,
                "temperature_note": outcome.temperature_note,
            }
        )
        if outcome.reply is None:
            if outcome.error_kind == "generation_failure" and outcome.failure_reason:
                return self._finish(
                    "generation_failure", reason=outcome.failure_reason, message=outcome.error or ""
                )
            transient = outcome.error_kind == "retries_exhausted"
            self.state.status = "provider_failure"
            return self._result(
                "provider_failure",
                reason="provider_transient" if transient else "provider_error",
                message=outcome.error or "no reply",
                infrastructure=True,
            )
        reply = outcome.reply
        # an empty assistant message cannot be sent back (both APIs refuse it)
        text = reply.text if (reply.text or reply.tool_calls) else EMPTY_REPLY
        self.state.messages.append(AgentMessage("assistant", text, reply.tool_calls))
        if reply.tool_calls:
            self.state.idle = 0
            self._save()
            return None
        self.state.idle += 1
        if self.state.idle >= MAX_IDLE_REPLIES:
            return self._finish(
                "no_submit",
                reason="agent_no_submit",
                message=f"{MAX_IDLE_REPLIES} replies in a row without a tool call",
            )
        self._note(IDLE_NUDGE)
        self._save()
        return None

    # --- tools ------------------------------------------------------------------------

    def _do_tools(self, calls: tuple[ToolCall, ...]) -> EpisodeResult | None:
        """Answer every call of the last assistant message (in order); a ``submit`` that
        names a usable file ends the episode and the calls after it are not run."""
        results: list[ToolResult] = []
        submitted: tuple[str, str] | None = None
        spent = False
        for call in calls:
            if submitted is not None or spent:
                results.append(ToolResult(call.id, "not run: the episode has ended", True))
                continue
            start = time.monotonic()
            record: dict[str, Any] = {"turn": len(self.state.steps) - 1, "call_id": call.id,
                                      "name": call.name}  # fmt: skip
            try:
                content, is_error, extra = self._tool(call)
            except ToolError as exc:
                content, is_error, extra = f"error: {exc}", True, {}
            except SandboxError as exc:  # the harness failed, not the model: resumable
                self.state.status = "sandbox_failure"
                return self._result(
                    "sandbox_failure", reason="harness_error", infrastructure=True,
                    message=f"the sandbox could not run the agent's command: {exc}",
                )  # fmt: skip
            record.update(extra)
            record.setdefault("wall_sec", 0.0)
            record["harness_sec"] = time.monotonic() - start
            record["is_error"] = is_error
            self.state.tool_runs.append(record)
            results.append(ToolResult(call.id, content, is_error))
            if call.name == SUBMIT and not is_error:
                submitted = (extra["path"], extra["source"])
                record.pop("source", None)
            if extra.get("budget_spent"):
                spent = True
        self.state.messages.append(AgentMessage("tool", tool_results=tuple(results)))
        if submitted is not None:
            path, source = submitted
            atomic_write_text(self.directory / self.source_filename, source)
            return self._finish("submitted", source=source, submitted_path=path,
                                message=f"submitted {path}")  # fmt: skip
        self._budget_notes()
        self._save()
        return None

    def _budget_notes(self) -> None:
        totals = self.state.totals()
        turns_left = self.budgets.turns - totals["turns"]
        time_left = self.budgets.tool_time_sec - totals["tool_time_sec"]
        if turns_left <= 3 or time_left <= 0.2 * self.budgets.tool_time_sec:
            self._note(
                f"Budget left: {turns_left} model turn(s), {max(time_left, 0.0):.0f} s of "
                "command time. Submit your best program with submit(path) before it runs out."
            )

    def _tool(self, call: ToolCall) -> tuple[str, bool, dict[str, Any]]:
        args = call.arguments
        if "_unparsed" in args:
            raise ToolError(f"the arguments are not a JSON object: {str(args['_unparsed'])[:200]}")

        def arg(name: str) -> Any:
            if name not in args:
                raise ToolError(f"{call.name} needs the argument {name!r}")
            return args[name]

        if call.name == WRITE_FILE:
            return self.session.write_file(arg("path"), arg("content")), False, {}
        if call.name == READ_FILE:
            return self.session.read_file(arg("path")), False, {}
        if call.name == RUN:
            left = self.budgets.tool_time_sec - self.state.totals()["tool_time_sec"]
            if left <= 0:
                return "not run: the tool-time budget is spent", True, {"budget_spent": True}
            wall = min(self.session.limits.command_wall_sec, left)
            out = self.session.run(arg("command"), wall_sec=wall)
            extra = {"wall_sec": out.wall_sec, "exit_code": out.exit_code,
                     "timed_out": out.timed_out}  # fmt: skip
            return out.text, out.is_error, extra
        if call.name == SUBMIT:
            path = arg("path")
            data, size = self.session.read_bytes(path, self.session.limits.write_bytes + 1)
            if size > self.session.limits.write_bytes:
                raise ToolError(
                    f"{path!r} has {size} bytes (limit {self.session.limits.write_bytes})"
                )
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(f"{path!r} is not UTF-8 text") from None
            if not source.strip():
                raise ToolError(f"{path!r} is empty")
            return "submitted; the episode ends and the file is graded", False, {
                "path": path, "source": source}  # fmt: skip
        raise ToolError(f"unknown tool {call.name!r} (tools: {', '.join(t.name for t in TOOLS)})")

    # --- endings ----------------------------------------------------------------------

    def _finish(self, status: str, **kwargs: Any) -> EpisodeResult:
        self.state.status = status
        return self._result(status, **kwargs)

    def _result(self, status: str, **kwargs: Any) -> EpisodeResult:
        totals = self.state.totals()
        result = EpisodeResult(status, **kwargs, **totals)
        saved = asdict(result)
        saved.pop("source")
        self.state.result = saved
        self._save()
        return result

    def _saved_result(self) -> EpisodeResult:
        return saved_result(
            self.state.result or {}, self.directory, self.source_filename, self.transcript_path
        )


def saved_result(
    saved: dict[str, Any], directory: Path, source_filename: str, record: Path
) -> EpisodeResult:
    """The result of a finished episode as saved in its ``record``, with the submitted
    file read back from the attempt folder (``--resume`` regrades it; nothing is run
    or called again)."""
    data = dict(saved)
    source = None
    if data.get("status") == "submitted":
        try:
            source = (directory / source_filename).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuntimeError(
                f"the episode in {directory} submitted a file that is no longer readable "
                f"there: {exc}"
            ) from None
    data["source"] = source
    data["generation_sec"] = 0.0  # nothing was called or run this time
    try:
        return EpisodeResult(**data)
    except TypeError as exc:
        raise RuntimeError(f"unreadable episode result in {record}: {exc}") from None
