"""``pdeagent run``: grade models on a set of cases, resumably.

A run directory holds ``run.json`` (the manifest, written before any work) and one
folder per (track, model, case, attempt) with the prompt, the raw reply, the call
record, the extracted source, the artifacts and logs of the accuracy run, and
``report.json`` written last. Every file is written atomically, so an interrupted
run (Ctrl-C, ``kill -9``) resumes with ``--resume``: finished attempts (a valid
``report.json``) are kept, a saved reply is graded without calling the provider
again, and only the rest is done. An attempt the provider never answered because of
transient failures (``provider_transient``: rate limits, overload, 5xx, timeouts after
the retries) is redone by every ``--resume``; ``--rerun-errors`` also redoes the other
infrastructure failures (``provider_error``: configuration such as a bad key; sandbox or
harness failures, ``ERROR``). Model failures (every F-Gen included:
context length, content filter, invalid request, no code) are never redone.

Feedback mode is one conversation (SPEC §8): attempt k >= 1 sends the earlier
exchanges as history (attempt 0's prompt and reply, attempt 1's feedback turn and reply,
...; each user turn is that attempt's ``prompt.md``, each reply its ``response.md``,
verbatim) and the grader's feedback on attempt k-1 as the next user turn, so
``--resume`` rebuilds the conversation from the attempt folders without calling the
model. When the model's context is exceeded (F-Gen ``context_length``), the oldest
middle exchange is left out and the call retried, repeatedly; the first exchange (the
task) and the latest (the latest program) are never left out, and the new user turn
says how many were (``dropped_exchanges`` in ``call.json`` and ``report.json``).
An infrastructure failure of attempt k > 0 ends the attempts without
replacing attempt k-1's verdict: both reports are kept, the case's outcome is its last
graded attempt (see :mod:`pdeagent.runs.report`), and ``--resume`` continues from it.

Generation and execution are separate: up to ``gen_concurrency`` provider calls are
in flight while at most ``workers`` evaluations run (see
:mod:`pdeagent.runs.executors` for the CPU policy that keeps timed runs apart).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cattrs
from attrs import asdict, define, field

from pdeagent import __version__
from pdeagent.agent.external import ExternalEpisode, build_external_section
from pdeagent.agent.loop import Budgets, Episode, EpisodeResult
from pdeagent.agent.session import AgentSession, SessionLimits
from pdeagent.calls import CallRecord, ProviderCaller
from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case
from pdeagent.evaluation.calibration import LocalCalibration, store_path
from pdeagent.evaluation.pipeline import (
    EvaluationSetupError,
    GradingPolicy,
    ResolvedThresholds,
    resolve_thresholds,
)
from pdeagent.evaluation.reference import reference_file
from pdeagent.fileio import atomic_write_bytes, atomic_write_json, atomic_write_text
from pdeagent.machine import fingerprint
from pdeagent.plugins import PluginHost
from pdeagent.prompts.builder import Feedback, build_agent_section, build_prompt
from pdeagent.providers import Turn
from pdeagent.runs.executors import ExecutionJob, ExecutionOutcome, Executor
from pdeagent.runs.layout import CALL_FILE, PROMPT_FILE, REPORT_FILE, RESPONSE_FILE, attempt_dir
from pdeagent.runs.records import (
    GRADED_FIELDS,
    AttemptReport,
    Tokens,
    read_attempt,
    write_attempt,
)
from pdeagent.runs.submission import (
    PROVIDER_TRANSIENT,
    Submission,
    request_submission,
    saved_submission,
)
from pdeagent.sandbox.base import Limits
from pdeagent.scratch import make_scratch, remove_tree
from pdeagent.stages import Track

RUN_SCHEMA_VERSION = 1
MANIFEST_FILE = "run.json"
MODES = ("single", "feedback", "template", "agent")
LOG_FILE = "execution.log"
HARNESS_ERROR = "harness_error"
"""Reason of an attempt the harness failed (grading, or an agent's sandbox session)."""
ARTIFACTS_DIR = "artifacts"
FRESH_START_SEPARATOR = "\n\n---\n\n"
"""Between the feedback turn and the original prompt when no earlier attempt got a
reply (there is no conversation to continue)."""


def _saved_call(folder: Path) -> dict[str, Any]:
    """The attempt's ``call.json`` as a JSON object; empty when missing or unreadable."""
    try:
        data = json.loads((folder / CALL_FILE).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class RunError(RuntimeError):
    """The run cannot start or continue (bad configuration, a foreign run directory)."""


def _line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def track_not_ready(host: PluginHost, track: Track) -> str | None:
    """Why ``track`` cannot grade on this machine (the first failed check of its
    ``pdeagent_doctor``, or the :class:`~pdeagent.stages.TrackUnavailable` it raises), as
    one line naming ``pdeagent env setup``; None when ready or the track has no doctor."""
    from pdeagent.stages import TrackUnavailable

    setup = f"run `pdeagent env setup {track.name}`"
    try:
        checks = host.hook.pdeagent_doctor(track=track)
    except (TrackUnavailable, OSError) as exc:
        return f"track {track.name!r} is not ready ({_line(exc)}); {setup}"
    failed = next((c for c in checks or [] if not c.ok), None)
    if failed is None:
        return None
    what = _line(f"{failed.name}: {failed.detail}" if failed.detail else failed.name)
    fix = _line(failed.fix or "", 120)
    if "pdeagent env setup" not in fix:  # the doctor's own fix, else the setup command
        fix = f"{setup} ({fix})" if fix else setup
    return (
        f"track {track.name!r} is not ready (check failed: {what}); {fix}, "
        f"then `pdeagent tracks doctor {track.name}`"
    )


def nothing_graded(reports: list[AttemptReport], track: str, out: Path) -> str | None:
    """One line when no case of a finished run could be graded (every outcome an
    infrastructure failure, or none at all); None when at least one was graded."""
    if any(not r.infrastructure for r in reports):
        return None
    first = next((r for r in reports if r.message or r.reason), None)
    cause = f" (first: {_line(first.message or first.reason or '', 160)})" if first else ""
    return (
        f"no case could be graded: {len(reports)} of {len(reports)} outcomes are "
        f"infrastructure failures{cause}; check `pdeagent tracks doctor {track}`, then "
        f"`pdeagent run --resume --rerun-errors --out {out}`"
    )


@define
class RunConfig:
    """Everything that defines a run (stored in ``run.json``; ``--resume`` reuses it)."""

    track: str
    provider: str
    models: list[str]
    cases_file: str
    case_ids: list[str]
    """The selected cases, resolved once when the run starts."""
    mode: str = "single"
    attempts: int = 1
    alpha_acc: float | None = None
    alpha_time: float | None = None
    tau_min: float | None = None
    timed_repeats: int | None = None
    timeout_sec: float | None = None
    tau_acc: float | None = None
    """Explicit accuracy threshold for every case (skips e_base)."""
    tau_time: float | None = None
    """Explicit time threshold in seconds for every case (skips t_base)."""
    time_rule: str | None = None
    """``solve`` or ``paper``; None: each threshold set's own (solve where it has t_null)."""
    explain_crashes: bool | None = None
    """Ask the track to explain crashes (e.g. a debug rebuild); None: in feedback mode."""
    selection: dict[str, Any] = field(factory=dict)
    """How ``case_ids`` were chosen (for the record)."""
    base_url: str | None = None
    provider_options: dict[str, str] = field(factory=dict)
    request_timeout_sec: float = 600.0
    max_tokens: int = 16000
    temperature: float | None = 0.0
    max_retries: int = 6
    response_cache: bool = True
    prices: str | None = None
    sandbox: str | None = None
    """Sandbox backend of every execution (resolved when the run starts; kept on resume)."""
    agent_turns: int = 40
    """Agent mode: model steps per episode."""
    agent_tool_time_sec: float = 900.0
    """Agent mode: wall time of all ``run`` commands of an episode."""
    agent_tokens: int = 2_000_000
    """Agent mode: input plus output tokens per episode."""
    agent_cost_usd: float | None = None
    """Agent mode: cost per episode (None: no limit)."""
    agent_command_sec: float = 120.0
    """Agent mode: wall-time limit of one ``run`` command."""

    def budgets(self) -> Budgets:
        return Budgets(
            turns=self.agent_turns,
            tool_time_sec=self.agent_tool_time_sec,
            tokens=self.agent_tokens,
            cost_usd=self.agent_cost_usd,
        )

    def session_limits(self) -> SessionLimits:
        return SessionLimits(command_wall_sec=self.agent_command_sec)

    def policy(self) -> GradingPolicy:
        return GradingPolicy(
            alpha_acc=self.alpha_acc,
            alpha_time=self.alpha_time,
            tau_min=self.tau_min,
            timed_repeats=self.timed_repeats,
            timeout_sec=self.timeout_sec,
            tau_acc=self.tau_acc,
            tau_time=self.tau_time,
            time_rule=self.time_rule,
            explain_crashes=(
                self.mode == "feedback" if self.explain_crashes is None else self.explain_crashes
            ),
        )

    def check(self) -> None:
        if self.mode not in MODES:
            raise RunError(f"--mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.attempts < 1:
            raise RunError(f"--attempts must be >= 1, got {self.attempts}")
        if self.mode != "feedback" and self.attempts != 1:
            raise RunError(f"--attempts applies to feedback mode only (mode {self.mode!r})")
        if self.mode == "agent":
            try:
                self.budgets()
            except ValueError as exc:
                raise RunError(f"agent budgets: {exc}") from None
            if self.agent_command_sec <= 0:
                raise RunError(f"--agent-command-sec must be > 0, got {self.agent_command_sec}")
        if not self.models:
            raise RunError("no model given")
        if len(set(self.models)) != len(self.models):
            raise RunError("a model is given twice")


_converter = cattrs.Converter(forbid_extra_keys=True)


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parents[3]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write_manifest(
    out: Path, config: RunConfig, host: PluginHost, executor: Executor, sandbox: str
) -> dict[str, Any]:
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": uuid.uuid4().hex,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pdeagent_version": __version__,
        "git_commit": _git_commit(),
        "plugins": [
            {"name": p.name, "distribution": p.distribution, "version": p.version}
            for p in host.plugins
        ],
        "track": {
            "name": config.track,
            "library": host.get_track(config.track).library,
            "library_version": host.get_track(config.track).library_version,
        },
        "config": _converter.unstructure(config),
        "machine": fingerprint(),
        "executor": executor.describe(),
        "sandbox": sandbox,
        "limits": {
            **asdict(Limits()),
            "wall_time_sec": config.timeout_sec or "the case's evaluation_config.timeout_sec",
            "cpu_time_sec": "2 x wall time + 10 s",
        },
        "resumes": [],
    }
    atomic_write_json(out / MANIFEST_FILE, manifest)
    return manifest


def read_manifest(out: Path) -> tuple[dict[str, Any], RunConfig]:
    path = out / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("schema_version") != RUN_SCHEMA_VERSION:
            raise ValueError(f"schema_version {manifest.get('schema_version')!r}")
        config = _converter.structure(manifest["config"], RunConfig)
    except FileNotFoundError:
        raise RunError(f"{out} holds no run ({MANIFEST_FILE} missing)") from None
    except (OSError, ValueError, KeyError, TypeError, cattrs.BaseValidationError) as exc:
        raise RunError(f"{path} is not a readable run manifest: {exc}") from None
    return manifest, config


def note_resume(out: Path, manifest: dict[str, Any], executor: Executor) -> None:
    manifest.setdefault("resumes", []).append(
        {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "pdeagent_version": __version__,
            "git_commit": _git_commit(),
            "executor": executor.describe(),
        }
    )
    atomic_write_json(out / MANIFEST_FILE, manifest)


@define
class Progress:
    """What the progress display shows; updated from worker threads."""

    total: int
    done: int = 0
    passed: int = 0
    infrastructure: int = 0
    lock: threading.Lock = field(factory=threading.Lock)


class Run:
    """One run: the configuration, its cases, a provider caller and an executor."""

    def __init__(
        self,
        host: PluginHost,
        config: RunConfig,
        cases: list[Case],
        out: Path,
        *,
        caller: ProviderCaller,
        executor: Executor,
        rerun_errors: bool = False,
        gen_concurrency: int = 4,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        config.check()
        self.host = host
        self.config = config
        self.track: Track = host.get_track(config.track)
        by_id = {c.id: c for c in cases}
        missing = [cid for cid in config.case_ids if cid not in by_id]
        if missing:
            raise RunError(f"cases of the run are missing from {config.cases_file}: {missing}")
        self.cases = [by_id[cid] for cid in config.case_ids]
        self.out = out
        self.caller = caller
        self.executor = executor
        self.rerun_errors = rerun_errors
        self.gen_concurrency = max(1, gen_concurrency)
        self.progress = Progress(total=len(config.models) * len(self.cases))
        self.on_progress = on_progress or (lambda p: None)
        self._stop = threading.Event()
        cases_path = Path(config.cases_file)
        self._calibration = LocalCalibration(store_path(cases_path, self.track.name))
        missing = []
        self._thresholds: dict[str, ResolvedThresholds] = {}
        self._calibrated_on: dict[str, dict[str, Any] | None] = {}
        for case in self.cases:  # every case can be graded before any model is called
            local = self._calibration.for_case(case, self.track.name)
            try:
                resolved = resolve_thresholds(case, self.track.name, config.policy(), local)
            except EvaluationSetupError:
                missing.append(case.id)
                continue
            self._thresholds[case.id] = resolved
            self._calibrated_on[case.id] = resolved.calibrated_on
        if missing:
            raise RunError(
                f"{len(missing)} of {len(self.cases)} cases have no calibrated thresholds for "
                f"track {self.track.name!r} (e.g. {missing[0]}): calibrate them with "
                f"`pdeagent calibrate --track {self.track.name}` first, or pass explicit "
                "--tau-acc and --tau-time"
            )
        unreadable = [  # every no-exact case's reference arrays are there before any work
            f"{case.id}: {path}"
            for case in self.cases
            if (path := reference_file(case, cases_path.parent)) is not None and not path.is_file()
        ]
        if unreadable:
            raise RunError(
                f"{len(unreadable)} of {len(self.cases)} cases lack their reference file "
                f"(e.g. {unreadable[0]}): a dataset copied or written elsewhere needs its "
                "references/ directory beside it"
            )
        provider = caller.provider
        if config.mode == "agent" and not (provider.agent_steps or provider.external_agent_command):
            raise RunError(
                f"provider {caller.name!r} does not support tool use (no agent_step): "
                "--mode agent needs one that does (anthropic, openai) or an external agent "
                "(command)"
            )
        if config.mode == "agent" and provider.external_agent_command:
            agent = provider.external_agent(caller.settings)
            if agent.network and getattr(executor, "name", None) != "local":
                raise RunError(
                    "an external agent with network=allow runs only with the local executor: "
                    "with the host's network it could reach the dask scheduler, which runs "
                    "code as the harness"
                )
        if config.mode != "agent" and provider.external_agent_command:
            raise RunError(f"provider {caller.name!r} runs an external agent: use --mode agent")
        try:  # the prompt renders (a template-mode track has a scaffold) before any work
            self._prompt(self.cases[0])
        except ValueError as exc:
            raise RunError(f"cannot build the {config.mode} prompt: {exc}") from None

    # --- one attempt ---------------------------------------------------------------------

    def _prompt(self, case: Case) -> str:
        """The full prompt of a first attempt (the conversation's first user turn)."""
        view = agent_view(case, self.track.name)
        prompt_mode = "template" if self.config.mode == "template" else "single"
        pieces = self.host.hook.pdeagent_prompt_pieces(
            track=self.track, case_view=view, mode=prompt_mode
        )
        if pieces is None:
            raise RunError(f"no plugin provides prompt pieces for track {self.track.name!r}")
        return build_prompt(
            case,
            self.track,
            pieces,
            mode=prompt_mode,
            policy=self.config.policy(),  # the run's timeout and timed repeats, as graded
            protocol=self._thresholds[case.id].protocol,
        )

    def _feedback_turn(self, case: Case, feedback: Feedback, dropped: int) -> str:
        from pdeagent.prompts.builder import build_feedback_turn

        return build_feedback_turn(case, self.track, feedback, dropped_exchanges=dropped)

    # --- the conversation of a feedback attempt --------------------------------------------

    def _exchanges(self, model: str, case: Case, attempt: int) -> list[tuple[str, str]]:
        """(user turn, reply) of every earlier attempt that got a reply, oldest first:
        ``prompt.md`` and ``response.md`` verbatim. An attempt without a reply (a
        provider-side F-Gen such as ``context_length`` or ``content_filter``) adds no
        exchange: its user turn is not repeated, the next feedback turn reports it."""
        exchanges = []
        for j in range(attempt):
            folder = attempt_dir(self.out, self.track.name, model, case.id, j)
            if _saved_call(folder).get("error", "missing") is not None:
                continue  # no successful call: a reply file there would be stale
            try:
                user = (folder / PROMPT_FILE).read_bytes().decode("utf-8")
                reply = (folder / RESPONSE_FILE).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            exchanges.append((user, reply))
        return exchanges

    def _original_prompt(self, model: str, case: Case) -> str:
        folder = attempt_dir(self.out, self.track.name, model, case.id, 0)
        try:
            return (folder / PROMPT_FILE).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return self._prompt(case)

    def _conversation(
        self,
        model: str,
        case: Case,
        feedback: Feedback,
        exchanges: list[tuple[str, str]],
        dropped: int,
    ) -> tuple[tuple[Turn, ...], str]:
        """(history, next user turn) with the ``dropped`` oldest middle exchanges left out
        (never the first, the task, nor the last, the latest program)."""
        turn = self._feedback_turn(case, feedback, dropped)
        if not exchanges:  # no earlier reply: start afresh, the task after the feedback
            original = self._original_prompt(model, case)
            return (), turn.rstrip("\n") + FRESH_START_SEPARATOR + original
        kept = exchanges[:1] + exchanges[1 + dropped :]
        history = tuple(
            Turn(role, text)
            for user, reply in kept
            for role, text in (("user", user), ("assistant", reply))
        )
        return history, turn

    def _carried_drops(self, model: str, case: Case, attempt: int) -> int:
        """Exchanges the previous attempt left out: the conversation only grows, so this
        attempt starts from there instead of repeating a call known to overflow."""
        folder = attempt_dir(self.out, self.track.name, model, case.id, attempt - 1)
        dropped = _saved_call(folder).get("dropped_exchanges", 0)
        return dropped if isinstance(dropped, int) and not isinstance(dropped, bool) else 0

    def _request(
        self, case: Case, model: str, attempt: int, feedback: Feedback | None, directory: Path
    ) -> Submission:
        """The provider call of one attempt: the full prompt (first attempt, single and
        template modes), else the conversation so far and the feedback turn, leaving
        out the oldest middle exchanges while the model's context is exceeded."""
        common: dict[str, Any] = {
            "model": model,
            "track_name": self.track.name,
            "language": self.track,
            "source_filename": self.track.source_filename,
            "case_id": case.id,
            "case_view": agent_view(case, self.track.name),
            "calibration_config": case.evaluation_metadata.calibration_config,
            "attempt": attempt,
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
            "directory": directory,
        }
        if feedback is None:
            return request_submission(self.caller, prompt=self._prompt(case), **common)
        exchanges = self._exchanges(model, case, attempt)
        droppable = max(0, len(exchanges) - 2)
        dropped = min(self._carried_drops(model, case, attempt), droppable)
        while True:
            history, turn = self._conversation(model, case, feedback, exchanges, dropped)
            sub = request_submission(
                self.caller, prompt=turn, history=history, dropped_exchanges=dropped, **common
            )
            if sub.failure != "context_length" or dropped >= droppable:
                return sub
            dropped += 1

    # --- agent mode -----------------------------------------------------------------------

    def _agent_attempt(
        self, case: Case, model: str, attempt: int, directory: Path
    ) -> tuple[Submission, EpisodeResult]:
        """Run (or continue, or read back) the agent episode of one attempt in a fresh
        scratch work dir; the submitted file becomes the attempt's submission."""
        from pdeagent.sandbox.select import make_sandbox

        view = agent_view(case, self.track.name)
        scratch = make_scratch("pdeagent-agent-")
        try:
            session = AgentSession(
                host=self.host, track=self.track, case_view=view,
                sandbox=make_sandbox(self.config.sandbox), workdir=scratch / "work",
                hide=[Path(self.config.cases_file).resolve().parent, self.out.resolve()],
                limits=self.config.session_limits(),
                slot=getattr(self.executor, "command_slot", None),
            )  # fmt: skip
            shell = session.start()
            external = self.caller.provider.external_agent_command
            budgets = self.config.budgets()
            if external:  # an agent CLI run in the session (the command provider)
                section = build_external_section(self.track, shell, budgets)
            else:
                section = build_agent_section(self.track, shell, budgets, session.limits)
            prompt = self._prompt(case).rstrip("\n") + "\n\n" + section
            if not (directory / PROMPT_FILE).exists():
                atomic_write_text(directory / PROMPT_FILE, prompt)
            episode: ExternalEpisode | Episode
            if external:
                episode = ExternalEpisode(
                    session=session, directory=directory,
                    agent=self.caller.provider.external_agent(self.caller.settings),
                    prompt=prompt, source_filename=self.track.source_filename, budgets=budgets,
                )  # fmt: skip
            else:
                episode = Episode(
                    caller=self.caller, session=session, directory=directory, model=model,
                    prompt=prompt, source_filename=self.track.source_filename, budgets=budgets,
                    max_tokens=self.config.max_tokens, temperature=self.config.temperature,
                    case_id=case.id, attempt=attempt,
                )  # fmt: skip
            try:
                result = episode.run()
            except (RuntimeError, OSError) as exc:  # e.g. an unreadable transcript: this
                # attempt's harness failure, reported, not the end of the whole run
                result = EpisodeResult(
                    "harness_failure", reason=HARNESS_ERROR, infrastructure=True,
                    message=f"{type(exc).__name__}: {exc}",
                )  # fmt: skip
        finally:
            remove_tree(scratch)
        call = CallRecord(
            provider=self.caller.name, model=model, base_url=self.caller.endpoint,
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), decoding={},
            prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(), response_sha256=None,
            input_tokens=result.input_tokens, output_tokens=result.output_tokens,
            latency_sec=result.generation_sec, cost_usd=result.cost_usd, case_id=case.id,
            attempt=attempt,
        )  # fmt: skip
        if result.source is not None:
            return Submission(result.source, None, result.message, call), result
        sub = Submission(None, result.reason, result.message, call, result.infrastructure)
        return sub, result

    def _base_report(self, case: Case, model: str, attempt: int, sub: Submission) -> AttemptReport:
        call = sub.call
        return AttemptReport(
            track=self.track.name,
            provider=self.config.provider,
            model=model,
            case_id=case.id,
            attempt=attempt,
            mode=self.config.mode,
            verdict="F-Gen",
            family=case.family,
            geometry=case.case_spec.domain.type,
            math_type=list(case.pde_classification.math_type),
            dimension=len(case.case_spec.domain.bounds),
            tokens=Tokens(call.input_tokens, call.output_tokens),
            cost_usd=call.cost_usd,
            cached=call.cached,
            generation_sec=call.latency_sec,
            dropped_exchanges=call.dropped_exchanges,
        )

    def _grade(self, case: Case, source: str) -> ExecutionOutcome:
        job = ExecutionJob(
            track=self.track.name,
            case_id=case.id,
            cases_file=self.config.cases_file,
            source=source,
            thresholds=self._thresholds[case.id].as_dict(),
            policy=asdict(self.config.policy()),
            sandbox=self.config.sandbox,
        )
        return self.executor.submit(job).result()

    def run_attempt(
        self, case: Case, model: str, attempt: int, feedback: Feedback | None
    ) -> tuple[AttemptReport, str | None]:
        """Do (or finish) one attempt; returns its report and the submitted code."""
        directory = attempt_dir(self.out, self.track.name, model, case.id, attempt)
        directory.mkdir(parents=True, exist_ok=True)
        episode: EpisodeResult | None = None
        if self.config.mode == "agent":
            sub, episode = self._agent_attempt(case, model, attempt, directory)
        else:
            sub = saved_submission(directory, self.track, self.track.source_filename)
            if sub is None:
                sub = self._request(case, model, attempt, feedback, directory)
            else:
                sub.call.latency_sec = 0.0  # nothing was called (or billed) this time
        report = self._base_report(case, model, attempt, sub)
        if episode is not None:
            report.agent = {
                "status": episode.status,
                "turns": episode.turns,
                "tool_calls": episode.tool_calls,
                "tool_time_sec": episode.tool_time_sec,
                "submitted_path": episode.submitted_path,
                "transcript": episode.record_file,
            }
        if sub.source is None:
            report.reason = sub.failure
            report.message = sub.message
            report.infrastructure = sub.infrastructure
            if sub.failure == HARNESS_ERROR:  # the sandbox failed an agent: not the model
                report.verdict = "ERROR"
            write_attempt(directory / REPORT_FILE, report)
            return report, None
        outcome = self._grade(case, sub.source)
        report.evaluation_wall_sec = outcome.evaluation_wall_sec
        if outcome.report is None:
            report.verdict = "ERROR"
            report.reason = HARNESS_ERROR
            report.message = outcome.infrastructure_error or "evaluation failed"
            report.infrastructure = True
        else:
            graded = outcome.report
            for name in GRADED_FIELDS:
                setattr(report, name, graded[name])
            report.calibrated_on = self._calibrated_on[case.id]
            cfg, c = case.evaluation_config, self.config
            report.alphas = {
                "alpha_acc": cfg.alpha_acc if c.alpha_acc is None else c.alpha_acc,
                "alpha_time": cfg.alpha_time if c.alpha_time is None else c.alpha_time,
                "tau_min": cfg.tau_min if c.tau_min is None else c.tau_min,
            }
            log = (
                f"# stdout (excerpt)\n{graded['stdout_excerpt']}\n"
                f"# stderr (excerpt)\n{graded['stderr_excerpt']}\n"
                f"# execution\n{json.dumps(graded['execution'], indent=1, default=str)}\n"
            )
            atomic_write_text(directory / LOG_FILE, log)
            for name, data in outcome.artifacts.items():
                atomic_write_bytes(directory / ARTIFACTS_DIR / name, data)
        write_attempt(directory / REPORT_FILE, report)
        return report, sub.source

    # --- one (model, case) task ------------------------------------------------------------

    def _feedback(self, report: AttemptReport, code: str | None, directory: Path) -> Feedback:
        """What the grader tells the next attempt about ``report``. The conversation
        holds the program itself, as the model's reply; a single-message feedback prompt
        shows the start of ``code`` (the saved reply when there is no code)."""
        previous = code
        if previous is None:
            try:
                previous = (directory / RESPONSE_FILE).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                previous = ""
        return Feedback.from_graded(report, attempt=report.attempt + 1, previous_code=previous)

    def _saved_code(self, directory: Path) -> str | None:
        path = directory / self.track.source_filename
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _redo(self, report: AttemptReport) -> bool:
        """Whether a saved attempt is done again: a transient provider failure always,
        other infrastructure failures with ``--rerun-errors``, model failures never."""
        if not report.infrastructure:
            return False
        return self.rerun_errors or report.reason == PROVIDER_TRANSIENT

    def run_task(self, model: str, case: Case) -> AttemptReport | None:
        """All attempts of one (model, case); returns the case's outcome: its last
        graded attempt (an infrastructure failure of a later attempt does not replace
        it), else the last attempt."""
        attempts = self.config.attempts if self.config.mode == "feedback" else 1
        feedback: Feedback | None = None
        last: AttemptReport | None = None
        last_graded: AttemptReport | None = None
        for k in range(attempts):
            if self._stop.is_set():
                return None
            directory = attempt_dir(self.out, self.track.name, model, case.id, k)
            report = read_attempt(directory / REPORT_FILE)
            code: str | None
            if report is not None and not self._redo(report):
                code = self._saved_code(directory)
            else:
                if report is not None:  # an infrastructure failure being redone
                    (directory / REPORT_FILE).unlink(missing_ok=True)
                report, code = self.run_attempt(case, model, k, feedback)
            last = report
            if not report.infrastructure:
                last_graded = report
            if report.passed or report.infrastructure:
                break
            feedback = self._feedback(report, code, directory)
        return last_graded if last_graded is not None else last

    def _task_done(self, report: AttemptReport | None) -> None:
        with self.progress.lock:
            self.progress.done += 1
            if report is not None and report.passed:
                self.progress.passed += 1
            if report is not None and report.infrastructure:
                self.progress.infrastructure += 1
        self.on_progress(self.progress)

    def execute(self) -> list[AttemptReport]:
        """Run every task; on KeyboardInterrupt stop starting new work and re-raise."""
        tasks = [(m, c) for m in self.config.models for c in self.cases]
        workers = self.gen_concurrency + getattr(self.executor, "workers", 1)
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="pdeagent-task"
        )
        futures = {pool.submit(self.run_task, m, c): (m, c) for m, c in tasks}
        results: list[AttemptReport] = []
        try:
            for fut in concurrent.futures.as_completed(futures):
                report = fut.result()
                self._task_done(report)
                if report is not None:
                    results.append(report)
        except BaseException:
            self._stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            self.executor.shutdown(cancel=True)
            raise
        pool.shutdown(wait=True)
        return results
