"""Running one attack: :func:`run_attack` sets the traps, grades the rendered submission
through the real pipeline on a sandbox backend, and checks afterwards what every attack
must leave intact (verdict, secrets, processes, files, network, harness) and the attack's
own expectations (:mod:`pdeagent.adversarial.checks`)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import time
from pathlib import Path
from typing import Any

import attrs
from attrs import define, field

from pdeagent.adversarial.model import LIST_TARGETS, Attack, CheckContext
from pdeagent.adversarial.probes import (
    RecordingSandbox,
    RunWatcher,
    accept_count,
    dir_listing,
    docker_leftovers,
    file_state,
    leaked_read,
    leftover_processes,
    pids_of_uid,
    read_findings,
    sandbox_user_uid,
    scan_files,
    secret_forms,
    tree_digest,
)
from pdeagent.adversarial.render import render_source
from pdeagent.adversarial.traps import Traps, set_traps
from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case
from pdeagent.evaluation.pipeline import (
    CURRENT_PROTOCOL,
    EvaluationSetupError,
    GradingPolicy,
    ResolvedThresholds,
    evaluate_source,
    resolve_thresholds,
)
from pdeagent.evaluation.report import Report
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Limits, Sandbox
from pdeagent.stages import Track

SCAN_TOTAL_BYTES = 256 * 1024**2
"""How much of what the program wrote is scanned for secrets, at most."""


@define
class AttackOutcome:
    """What happened to one attack on one track and backend."""

    attack: str
    language: str
    track: str
    backend: str
    expected: tuple[str, str | None]
    verdict: str | None
    reason: str | None
    message: str = ""
    checks: dict[str, bool] = field(factory=dict)
    """verdict, secrets, processes, files, network, harness, attack -> passed."""
    problems: list[str] = field(factory=list)
    secrets_found: list[str] = field(factory=list)
    """Where a secret token turned up (never the token itself); should be empty."""
    findings: dict[str, Any] = field(factory=dict, repr=False)
    """What the program reported about its own attempts (``findings*.json``)."""
    executions: list[dict[str, Any]] = field(factory=list, repr=False)
    wall_time_sec: float = 0.0
    """Time of the evaluation (``evaluate_source``) alone."""
    report: dict[str, Any] | None = field(default=None, repr=False)
    run_token: str = ""
    """The run's public token (in the command line of the attack's daemons)."""
    unattributed: list[str] = field(factory=list)
    """Processes of the sandbox user that appeared during the run but belong to no
    namespace of it (other harnesses' runs); informational unless ``strict_user``."""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(self.checks.values())

    def explain(self) -> str:
        """Several lines for a failing test."""
        lines = [
            f"{self.language} attack {self.attack} on {self.track}/{self.backend}: "
            f"{self.verdict} {self.reason} (expected {self.expected[0]} {self.expected[1]}) "
            f"in {self.wall_time_sec:.1f} s",
            f"checks: {self.checks}",
            *[f"- {p}" for p in self.problems],
        ]
        if self.message:
            lines.append(f"message: {self.message[:500]}")
        if self.executions:
            lines.append(f"executions: {self.executions}")
        if self.report:
            lines.append(f"stderr: {str(self.report.get('stderr_excerpt', ''))[-800:]}")
        return "\n".join(lines)


def _thresholds(
    case: Case, track: str, attack: Attack, protocol: int = CURRENT_PROTOCOL
) -> ResolvedThresholds:
    """The dataset's tau_acc (0.05 without one) and the attack's tau_time, graded with
    ``protocol`` (default: the protocol new calibrations use)."""
    policy = GradingPolicy(tau_time=attack.tau_time if attack.tau_time is not None else 3600.0)
    try:
        resolved = resolve_thresholds(case, track, policy)
    except EvaluationSetupError:
        resolved = ResolvedThresholds(0.05, policy.tau_time or 3600.0, None, None, "explicit")
    return attrs.evolve(resolved, protocol=protocol)


@define
class _Run:
    """The state of one attack between the evaluation and the checks."""

    attack: Attack
    outcome: AttackOutcome
    traps: Traps
    recording: RecordingSandbox
    watcher: RunWatcher
    report: Report | None
    eval_root: Path
    limits: Limits
    params: dict[str, Any]
    sandbox_uid: int | None
    before: set[int]
    is_root: bool
    strict_user: bool
    case: Case
    track: Track
    source: str
    problems: dict[str, list[str]] = field(
        factory=lambda: {
            k: []
            for k in ("verdict", "secrets", "processes", "files", "network", "harness", "attack")
        }
    )


def visible_scratch_dir() -> Path:
    """A host dir for traps that the sandbox does NOT hide by default: ``/opt`` (a
    top-level entry every backend shows, :data:`~pdeagent.sandbox.launched.SHOWN_TOP_LEVEL`),
    so a test there proves the evaluation's own hide list works; ``/var/tmp`` (hidden by
    default) when ``/opt`` is not writable (the harness is not root)."""
    for candidate in (Path("/opt"),):
        try:
            if os.access(candidate, os.W_OK) and candidate.stat().st_mode & stat.S_IXOTH:
                return candidate
        except OSError:
            pass
    return Path("/var/tmp")


def run_attack(
    attack: Attack,
    *,
    host: PluginHost,
    track_name: str,
    case: Case,
    backend: str | Sandbox,
    workroot: Path,
    scratch_dir: Path | None = None,
    keep_workroot: bool = False,
    strict_user: bool = False,
    protocol: int = CURRENT_PROTOCOL,
    through_session: bool = False,
) -> AttackOutcome:
    """Grade ``attack`` rendered for ``case`` on ``track_name`` in ``backend`` (a backend
    name or a sandbox), through the real pipeline, and check everything afterwards.
    ``protocol`` is the timing protocol it is graded with (a control of an attack on an
    older protocol passes the legacy one).

    ``workroot`` (created; must be empty) receives the evaluation (``eval/``), removed
    afterwards unless ``keep_workroot``. The traps (fake dataset, hidden dir, canary) live
    in fresh world-readable directories under ``scratch_dir`` (default
    :func:`visible_scratch_dir`: a host dir the ``local`` and ``bwrap`` backends show, so
    that only the evaluation's own hide list keeps the traps unreadable; it must be
    world-traversable and outside ``/tmp``, which the sandbox replaces) and are removed
    afterwards. The case must have a manufactured solution.

    ``through_session``: instead of grading it, run the program once through an agent's
    ``run`` tool (:class:`~pdeagent.agent.session.AgentSession`, issue #22) with the same
    sandbox, traps and hidden paths, as an agent testing its program would: every check
    but the verdict applies (there is none), so a read, network, process or file attack
    must fail there as it does in grading. Python tracks only.

    Processes of the sandbox user left after the run count as the run's when they carry
    its markers or live in one of its PID namespaces; with ``strict_user`` every new
    process of the sandbox user counts (right only when nothing else uses the sandbox
    user meanwhile, e.g. a serial CI job); otherwise the rest is listed in
    ``AttackOutcome.unattributed``. Raises for harness problems that prevent the attack
    from being set up; problems while grading are recorded in the outcome.
    """
    from pdeagent.sandbox.select import get_sandbox

    track: Track = host.get_track(track_name)
    if track.language != attack.language:
        raise ValueError(f"{attack.language} attack {attack.name} on {track.language} track")
    if case.evaluation_metadata.construction_method != "manufactured_solution":
        raise ValueError(f"case {case.id} has no manufactured solution")
    sandbox = get_sandbox(backend) if isinstance(backend, str) else backend
    workroot = Path(workroot).absolute()
    workroot.mkdir(parents=True, exist_ok=True)
    if any(workroot.iterdir()):
        raise ValueError(f"work root {workroot} is not empty")
    workroot.chmod(0o755)
    eval_root = workroot / "eval"
    baseline = None
    if attack.uses_baseline:
        baseline = host.hook.pdeagent_calibration_source(
            track=track, case_view=agent_view(case, track.name), calibration_config=None
        )
        if not baseline:
            raise ValueError(f"track {track.name} has no baseline for case {case.id}")

    run_token = "pdeagentadv" + secrets.token_hex(8)
    is_root = os.geteuid() == 0
    sandbox_uid = sandbox_user_uid() if is_root else None
    outcome = AttackOutcome(
        attack.name, attack.language, track.name, sandbox.name, attack.expected, None, None
    )
    outcome.run_token = run_token
    try:
        scratch = Path(scratch_dir) if scratch_dir is not None else visible_scratch_dir()
        with set_traps(case, scratch, run_token) as traps:
            params = dict(traps.params)
            params["ATTACK_NAME"] = attack.name
            params["READS"] = {k: str(traps.paths[k]) for k in attack.reads if k in traps.paths}
            params["LISTS"] = {k: str(traps.lists[k]) for k in attack.lists if k in traps.lists}
            source = render_source(attack, params, baseline)
            limits = attack.make_limits()
            markers = [run_token.encode(), *(str(p).encode() for p in (eval_root, traps.scratch))]
            watcher = RunWatcher(markers, skip={os.getpid(), traps.bystander.pid})
            recording = RecordingSandbox(sandbox, watcher)
            before = pids_of_uid(sandbox_uid)
            report: Report | None = None
            t0 = time.monotonic()
            try:
                if through_session:
                    hidden = [traps.scratch / "dataset", traps.scratch / "hidden"]
                    _run_in_session(host, track, case, source, recording, eval_root, limits, hidden)
                    outcome.verdict, outcome.reason = attack.expected  # no verdict to check
                    outcome.message = "run through an agent's run tool (not graded)"
                else:
                    report = evaluate_source(
                        host, track, case, source, sandbox=recording, workroot=eval_root,
                        thresholds=_thresholds(case, track.name, attack, protocol),
                        policy=GradingPolicy(
                            timed_repeats=attack.timed_repeats, timeout_sec=limits.wall_time_sec
                        ),
                        limits=limits, dataset_dir=traps.scratch / "dataset",
                        hide=[traps.scratch / "hidden"],
                    )  # fmt: skip
            except Exception as exc:  # a harness failure is a failed attack check, not a crash
                outcome.verdict, outcome.reason = "ERROR", type(exc).__name__
                outcome.message = str(exc)[:2000]
            outcome.wall_time_sec = time.monotonic() - t0
            run = _Run(
                attack, outcome, traps, recording, watcher, report, eval_root, limits, params,
                sandbox_uid, before, is_root, strict_user, case, track, source,
            )  # fmt: skip
            try:
                _after_run(run)
            finally:
                watcher.close()
    finally:
        if not keep_workroot:
            shutil.rmtree(eval_root, ignore_errors=True)
    outcome.checks = {k: not v for k, v in run.problems.items()}
    outcome.problems = [f"{k}: {p}" for k, v in run.problems.items() for p in v]
    return outcome


def _run_in_session(
    host: PluginHost, track: Track, case: Case, source: str, sandbox: Sandbox,
    eval_root: Path, limits: Limits, hide: list[Path],
) -> None:  # fmt: skip
    """Run ``source`` once the way an agent tests its program: written into an agent
    session's work dir (``eval_root/exec-0``, where the checks look) and started with the
    grader's own command through the session's ``run`` tool."""
    from pdeagent.agent.session import AgentSession, SessionLimits

    session = AgentSession(
        host=host, track=track, case_view=agent_view(case, track.name), sandbox=sandbox,
        workdir=eval_root / "exec-0", hide=hide,
        limits=SessionLimits(command_wall_sec=limits.wall_time_sec,
                             memory_bytes=limits.memory_bytes),
    )  # fmt: skip
    session.start()
    session.write_file(track.source_filename, source)
    session.run(f"python pdeagent_runner.py {track.source_filename}")


def assert_attack_held(attack: Attack, **kwargs: Any) -> AttackOutcome:
    """:func:`run_attack`, then assert (for tests) that the attack got its verdict and
    reason and that every check after it held; the assertion message explains."""
    outcome = run_attack(attack, **kwargs)
    assert outcome.ok, outcome.explain()
    assert (outcome.verdict, outcome.reason) == attack.expected, outcome.explain()
    assert outcome.secrets_found == [], outcome.explain()
    return outcome


def _after_run(run: _Run) -> None:
    attack, outcome, traps, report = run.attack, run.outcome, run.traps, run.report
    eval_root, limits, problems = run.eval_root, run.limits, run.problems
    roots = [eval_root, traps.scratch, traps.canary]
    skip = {os.getpid(), traps.bystander.pid}

    left: set[int] = set()

    def leftovers() -> list[str]:
        found, unattributed = leftover_processes(
            traps.run_token, roots, run.sandbox_uid, run.before, skip, run.watcher,
            run.strict_user,
        )  # fmt: skip
        outcome.unattributed = sorted(set(outcome.unattributed) | set(unattributed))
        left.update(found)
        return list(found.values())

    # processes: at once, when run() has returned
    problems["processes"] += leftovers()
    if outcome.backend == "docker":
        problems["processes"] += docker_leftovers(roots) or []
    listing = dir_listing(eval_root)
    if attack.settle_sec:
        time.sleep(attack.settle_sec)
        problems["processes"] += [f"after {attack.settle_sec} s: {p}" for p in leftovers()]
    if dir_listing(eval_root) != listing:
        changed = set(dir_listing(eval_root).items()) ^ set(listing.items())
        names = sorted({name for name, _ in changed})[:10]
        problems["files"].append(f"the work dir changed after the run had ended: {names}")

    # the verdict
    if report is not None:
        outcome.verdict, outcome.reason, outcome.message = (
            report.verdict,
            report.reason,
            report.message,
        )
        outcome.report = report.to_dict()
    if (outcome.verdict, outcome.reason) != attack.expected:
        problems["verdict"].append(
            f"got {outcome.verdict} {outcome.reason}, expected {attack.expected[0]} "
            f"{attack.expected[1]}: {outcome.message[:300]}"
        )
    program_runs = [(req, res) for req, res in run.recording.runs
                    if Path(req.workdir).name.startswith("exec-")]  # fmt: skip
    outcome.executions = [
        {
            "workdir": Path(req.workdir).name,
            "exit_code": res.exit_code,
            "signal": res.signal,
            "timed_out": res.timed_out,
            "memory_exceeded": res.memory_exceeded,
            "memory_enforced": res.memory_enforced,
            "violation": res.violation,
            "wall_time_sec": round(res.wall_time_sec, 3),
            "stdout_truncated": res.stdout_truncated,
        }
        for req, res in program_runs
    ]
    findings = read_findings(eval_root)
    outcome.findings = findings

    # secrets: in what the harness reports and keeps, and in what the program wrote
    needles = {k: secret_forms(v) for k, v in traps.secrets.items()}
    texts: dict[str, str] = {}
    if report is not None:
        texts["report"] = json.dumps(report.to_dict())
    for i, (req, res) in enumerate(run.recording.runs):
        texts[f"run {i} ({Path(req.workdir).name}) stdout"] = res.stdout
        texts[f"run {i} ({Path(req.workdir).name}) stderr"] = res.stderr
    texts["outcome message"] = outcome.message
    for where, text in texts.items():
        data = text.encode(errors="replace")
        for which, forms in needles.items():
            if any(f in data for f in forms):
                outcome.secrets_found.append(f"{where}: {which}")
    budget = [SCAN_TOTAL_BYTES]
    outcome.secrets_found += scan_files(eval_root, needles, budget)
    outcome.secrets_found += [f"canary {w}" for w in scan_files(traps.canary, needles, budget)]
    problems["secrets"] += [f"secret found in {w}" for w in outcome.secrets_found]
    reads = findings.get("reads") if isinstance(findings.get("reads"), dict) else {}
    for key, result in reads.items():
        if leaked_read(result, traps.real_heads.get(key, b"")):
            problems["secrets"].append(f"the program read {key} ({traps.paths[key]})")
    imported = findings.get("import")
    if isinstance(imported, dict) and imported.get("ok"):
        if leaked_read(imported.get("read"), traps.real_heads["harness_source"]):
            problems["secrets"].append("the program imported and read the harness source")
    lists = findings.get("lists") if isinstance(findings.get("lists"), dict) else {}
    for key, result in lists.items():
        names = set(result.get("names") or []) if isinstance(result, dict) else set()
        seen = names & set(LIST_TARGETS.get(key, ()))
        if seen:
            problems["secrets"].append(f"the program listed {key}: {sorted(seen)}")

    # files outside the work dir
    if tree_digest(traps.canary) != traps.canary_digest:
        problems["files"].append(f"the canary dir {traps.canary} changed")
    for path in [*traps.outside_new, f"/var/tmp/pdeagent-adv-{traps.run_token}-daemon"]:
        if os.path.lexists(path):
            problems["files"].append(f"{path} was created on the host")
    for path, state in traps.watched.items():
        if file_state(Path(path)) != state:
            problems["files"].append(f"{path} changed")

    # network
    for req, _res in run.recording.runs:
        if req.network:  # only an external agent's own process may have it, never grading
            problems["network"].append(f"a run in {Path(req.workdir).name} had the network")
    for label, sock in (("TCP 127.0.0.1", traps.tcp), ("abstract unix", traps.abstract),
                        ("path unix", traps.unix)):  # fmt: skip
        accepted = accept_count(sock)
        if accepted:
            problems["network"].append(f"the harness's {label} socket accepted {accepted}")

    # the harness and its bystander
    if traps.bystander.poll() is not None:
        problems["harness"].append(f"the bystander died ({traps.bystander.returncode})")
    for pid in (os.getpid(), os.getppid()):
        try:
            os.kill(pid, 0)
        except OSError as exc:
            problems["harness"].append(f"harness process {pid}: {exc}")

    # the attack's own expectations
    if attack.check is not None:
        ctx = CheckContext(
            attack=attack, report=report, executions=[res for _, res in program_runs],
            findings=findings, limits=limits, params=run.params, backend=outcome.backend,
            is_root=run.is_root, eval_root=eval_root, elapsed_sec=outcome.wall_time_sec,
            case=run.case, track=run.track, source=run.source,
        )  # fmt: skip
        try:
            problems["attack"] += attack.check(ctx)
        except Exception as exc:
            problems["attack"].append(f"check failed: {type(exc).__name__}: {exc}")

    # a sandbox that failed to stop the run's processes: stop them here
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
