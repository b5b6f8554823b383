"""Hostile submissions (issue #9): a catalogue of attacks and the checks around each.

Every :class:`Attack` is a submission template (a Python ``solve(case_spec)`` file or a
C++ ``./solver case_spec.json OUTDIR`` program) with the verdict and F-Exec reason the
real pipeline must give it, and the (small) limits it runs under. :func:`run_attack`
sets traps on the host, grades the rendered submission through
:func:`pdeagent.evaluation.pipeline.evaluate_source` on a given sandbox backend, and
checks afterwards:

- **verdict**: the expected verdict and reason;
- **secrets**: random tokens planted in a fake evaluator dataset (``dataset_dir``), in a
  path given as ``hide``, in an environment variable of the harness and of a bystander
  host process never appear in the report, the program's output or any file it wrote,
  and no read of a secret target (those, the real dataset and the harness source)
  returned its real content;
- **processes**: no process of the run is left: none with the run's token in its command
  line, its dirs in its environment or as its working directory, none seen running as
  part of the run, and (harness as root) none of the sandbox user in a PID namespace of
  the run (a watcher records those while the run goes on; see ``strict_user``); for
  ``docker`` no labelled container mounting the run's dirs;
- **files**: a world-writable canary dir on the host is unchanged, nothing was created
  in ``/etc``, ``/usr``, ``/var/tmp``, the repository or the package dir, watched host
  files are unchanged, and the work dir does not change after the run has ended;
- **network**: a TCP listener on ``127.0.0.1``, an abstract and a path unix socket of the
  harness accepted no connection, and no connection the program tried succeeded;
- **harness**: a bystander host process that the attacks try to kill is still alive;
- **attack**: the attack's own expectations (e.g. a fork bomb stayed within
  ``Limits.processes``, a fake ``meta.json`` time was ignored).

The attacker is assumed to know the layout (paths, ports, pids are template
parameters), never the secret tokens. Attacks that could harm the machine if the
sandbox failed are written to detect that and stop short (``kill(-1)`` only when no
host process is visible; existing host files are only opened for appending, never
written).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from attrs import define, field

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case
from pdeagent.evaluation.pipeline import (
    CURRENT_PROTOCOL,
    EXCERPT_CHARS,
    EvaluationSetupError,
    GradingPolicy,
    ResolvedThresholds,
    evaluate_source,
    resolve_thresholds,
)
from pdeagent.evaluation.reference import reference_fields
from pdeagent.evaluation.report import Report
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox, SandboxError, SandboxRequest
from pdeagent.sandbox.cgroups import PROCESS_SLACK
from pdeagent.sandbox.launched import source_checkout
from pdeagent.sandbox.users import SANDBOX_USER
from pdeagent.scoring.verdict import FEXEC_REASONS
from pdeagent.stages import Track

SECRET_ENV_VAR = "PDEAGENT_ADVERSARIAL_SECRET"
"""Environment variable of the harness (and the bystander) holding a secret token."""
PRIVATE_PREFIXES = ("/tmp/", "/dev/shm/")
"""Writable inside the sandbox (private tmpfs); must never reach the host."""
_HEAD_BYTES = 64
_MIN_HEAD_MATCH = 16
_SCAN_FILE_BYTES = 16 * 1024**2
_SCAN_TOTAL_BYTES = 256 * 1024**2
_FILL_SLACK_BYTES = 2**30


# --- the catalogue -------------------------------------------------------------------------


@define(frozen=True)
class CheckContext:
    """What an attack's own check sees after the run."""

    attack: Attack
    report: Report | None
    executions: list[ExecutionResult]
    """Results of the program's executions (accuracy run first), compile runs excluded."""
    findings: dict[str, Any]
    """What the program reported in ``findings*.json`` (empty when it wrote none)."""
    limits: Limits
    params: dict[str, Any]
    backend: str
    is_root: bool
    eval_root: Path
    elapsed_sec: float


@define(frozen=True)
class Attack:
    """One hostile submission and the verdict it must get."""

    name: str
    description: str
    language: str
    """``python`` (a ``solve(case_spec)`` file) or ``cpp`` (a ``./solver`` program)."""
    template: str
    """The source with ``$NAME`` parameters (:func:`render_source`)."""
    expected: tuple[str, str | None]
    """(verdict, reason), e.g. ``("F-Exec", "timeout")`` or ``("F-Time", "runtime_above_tau")``."""
    limits: dict[str, Any] = field(factory=dict)
    """:class:`Limits` fields that differ from the attack defaults (small, to stay fast)."""
    wall_time_sec: float = 30.0
    uses_baseline: bool = False
    """The template is appended to the track's own calibration solver for the case."""
    tau_time: float | None = None
    """Explicit time threshold (the accuracy threshold stays the dataset's)."""
    timed_repeats: int = 1
    settle_sec: float = 0.0
    """How long to wait after the run before the late checks (work dir unchanged, ...)."""
    slow: bool = False
    """Takes several seconds by design (a wall limit, bulk I/O, a baseline solve)."""
    check: Callable[[CheckContext], list[str]] | None = None
    """The attack's own expectations; returns problems (empty when fine)."""
    reads: tuple[str, ...] = ()
    """Keys of secret targets (:data:`READ_TARGETS`) the program tries to read."""
    lists: tuple[str, ...] = ()
    """Keys of directories (:data:`LIST_TARGETS`) the program tries to list."""

    def __attrs_post_init__(self) -> None:
        if self.language not in ("python", "cpp"):
            raise ValueError(f"{self.name}: unknown language {self.language!r}")
        verdict, reason = self.expected
        if verdict == "F-Exec" and reason not in FEXEC_REASONS:
            raise ValueError(f"{self.name}: unknown F-Exec reason {reason!r}")

    def make_limits(self) -> Limits:
        return Limits(wall_time_sec=self.wall_time_sec, **self.limits)


READ_TARGETS: dict[str, str] = {
    "dataset_cases": "the fake evaluator dataset's cases.jsonl (holds a secret token)",
    "reference_npy": "a reference array of the fake dataset (holds a secret token)",
    "reference_npz": "the case's exact solution as an npz in the fake dataset",
    "hidden_file": "a file in a directory the evaluation passes as hide=[...]",
    "repo_cases": "the real dataset cases/pdeagent-v1.jsonl of the checkout",
    "harness_source": "the harness source pdeagent/sandbox/local.py",
    "pipeline_source": "the harness source pdeagent/evaluation/pipeline.py",
    "harness_environ": "/proc/<harness pid>/environ",
    "bystander_environ": "/proc/<bystander pid>/environ (starts with a secret token)",
    "host_init_environ": "/proc/1/environ",
}
LIST_TARGETS: dict[str, tuple[str, ...]] = {
    "dataset_dir": ("cases.jsonl", "references"),
    "references_dir": ("ref.npy",),
    "hidden_dir": ("run-secret.txt",),
    "repo_dir": ("cases", "core", "pyproject.toml", "plugins"),
    "package_dir": ("sandbox", "evaluation", "scoring", "adversarial.py"),
}
"""Directory key -> names whose appearance in a listing is a leak."""


def _findings_required(*keys: str) -> Callable[[CheckContext], list[str]]:
    def check(ctx: CheckContext) -> list[str]:
        missing = [k for k in keys if k not in ctx.findings]
        if missing:
            return [f"the attack did not report {missing}: it did not run as intended"]
        return []

    return check


def _check_connects(ctx: CheckContext) -> list[str]:
    problems = _findings_required("connects")(ctx)
    for target, result in (ctx.findings.get("connects") or {}).items():
        if result in ("connected", "resolved"):
            problems.append(f"the program reached {target}: {result}")
    return problems


def _check_writes(ctx: CheckContext) -> list[str]:
    problems = _findings_required("writes")(ctx)
    for target, result in (ctx.findings.get("writes") or {}).items():
        private = any(str(target).startswith(p) for p in PRIVATE_PREFIXES)
        if result in ("written", "opened for writing", "done") and not private:
            problems.append(f"the program could write outside its work dir: {target}: {result}")
    return problems


def _check_signals(ctx: CheckContext) -> list[str]:
    problems = _findings_required("signals")(ctx)
    signals = ctx.findings.get("signals") or {}
    for key in ("probe harness", "probe bystander", "kill bystander"):
        if signals.get(key) == "sent":
            problems.append(f"the program could signal a host process ({key})")
    if signals.get("kill parent") == "sent":
        problems.append("the program could kill its parent (the sandbox's supervisor)")
    return problems


def _check_fork_bomb(ctx: CheckContext) -> list[str]:
    problems = _findings_required("forks")(ctx)
    forks = ctx.findings.get("forks")
    bounded = ctx.is_root or ctx.backend == "docker"
    if isinstance(forks, int) and bounded and forks > ctx.limits.processes + PROCESS_SLACK:
        problems.append(f"{forks} forks succeeded, limit {ctx.limits.processes}")
    return problems


def _check_timeout(ctx: CheckContext) -> list[str]:
    if not ctx.executions:
        return ["no execution was recorded"]
    wall = ctx.executions[0].wall_time_sec
    limit = ctx.limits.wall_time_sec
    problems = []
    if not limit - 0.5 <= wall <= limit + 15:
        problems.append(f"killed after {wall:.1f} s, the wall limit is {limit:.1f} s")
    if ctx.elapsed_sec > limit + 60:
        problems.append(f"the evaluation took {ctx.elapsed_sec:.1f} s for a {limit:.0f} s limit")
    return problems


def _touched_mib(stdout: str) -> int:
    touched = 0
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "touched" and parts[1].isdigit():
            touched = max(touched, int(parts[1]))
    return touched


def _check_touch_memory(ctx: CheckContext) -> list[str]:
    if not ctx.executions:
        return ["no execution was recorded"]
    result = ctx.executions[0]
    touched = _touched_mib(result.stdout)
    if touched == 0:
        return ["the program reported no touched memory: it did not run as intended"]
    cap_mib = ctx.limits.memory_bytes // 2**20
    if result.memory_enforced and touched > cap_mib + 128:
        return [f"{touched} MiB touched under a {cap_mib} MiB memory cap"]
    return []


def _dir_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def _check_fill_disk(ctx: CheckContext) -> list[str]:
    """The work dir stayed well below the 2 GiB the attack writes: a watch that polls lets
    a fast writer (several GB/s into the page cache) overshoot by rate x interval."""
    used = sum(_dir_bytes(p) for p in ctx.eval_root.glob("exec-*"))
    bound = ctx.limits.workdir_bytes + _FILL_SLACK_BYTES
    if used > bound:
        limit = ctx.limits.workdir_bytes >> 20
        return [f"the work dir grew to {used >> 20} MiB (limit {limit} MiB)"]
    return []


def _check_stdout_flood(ctx: CheckContext) -> list[str]:
    problems = _findings_required("flooded_mib")(ctx)
    if ctx.report is not None and len(ctx.report.stdout_excerpt) > EXCERPT_CHARS + 16:
        problems.append(f"stdout excerpt of {len(ctx.report.stdout_excerpt)} chars in the report")
    if ctx.executions:
        result = ctx.executions[0]
        if not result.stdout_truncated:
            problems.append("1 GiB of stdout was not marked truncated")
        if len(result.stdout) > ctx.limits.output_bytes:
            problems.append(f"{len(result.stdout)} chars of stdout kept")
    return problems


def _check_not_pwned(ctx: CheckContext) -> list[str]:
    problems = _findings_required("written")(ctx)
    if Path(ctx.params["PWNED_MARKER"]).exists():
        problems.append("the harness unpickled the submission's npz (the payload ran)")
    return problems


def _check_fake_meta(ctx: CheckContext) -> list[str]:
    report = ctx.report
    if report is None:
        return ["no report"]
    sleep = float(ctx.params["SLEEP_SEC"])
    problems = []
    if report.runtime_sec is None or not report.runtime_sec > sleep:
        problems.append(f"measured runtime {report.runtime_sec} s is not above the sleep {sleep} s")
    if len(report.runtime_samples) != ctx.attack.timed_repeats:
        problems.append(f"{len(report.runtime_samples)} timed repeats were measured")
    if any(not s > sleep for s in report.runtime_samples):
        problems.append(f"a timed repeat shorter than the sleep: {report.runtime_samples}")
    if report.diagnostics.get("reported_wall_time_sec") != 0.001:
        problems.append("the fake meta.json time did not reach the diagnostics")
    return problems


def _runs(ctx: CheckContext) -> dict[str, Any]:
    return {k[4:]: v for k, v in ctx.findings.items() if k.startswith("run ")}


def _check_no_replay(ctx: CheckContext) -> list[str]:
    """The answer was stored in every writable place the first run found, and no timed
    repeat found it again (each starts from the same pristine state)."""
    runs = _runs(ctx)
    first = runs.get("exec-0")
    if not isinstance(first, dict) or not first.get("stored"):
        return [f"the first run stored no answer anywhere ({first}): it did not run as intended"]
    if not any(p.startswith(str(ctx.eval_root)) for p in first["stored"]):
        return [f"the answer was not stored in the run's cache dir: {first['stored']}"]
    problems = []
    if len(runs) != 1 + ctx.attack.timed_repeats:
        problems.append(f"{len(runs)} runs reported, expected {1 + ctx.attack.timed_repeats}")
    for name, note in sorted(runs.items()):
        if isinstance(note, dict) and note.get("replayed_from"):
            problems.append(f"{name} replayed the answer kept in {note['replayed_from']}")
    return problems


def _check_repeat_checked(ctx: CheckContext) -> list[str]:
    runs = _runs(ctx)
    if runs.get("exec-0") != "solved" or runs.get("exec-1") != "zeros":
        return [f"the runs did not behave as intended: {runs}"]
    if ctx.report is None or ctx.report.runtime_sec is not None:
        return ["a runtime was reported for a submission whose timed repeat was wrong"]
    return []


def _check_fill_cache(ctx: CheckContext) -> list[str]:
    used = sum(_dir_bytes(p) for p in ctx.eval_root.glob("cache*"))
    bound = ctx.limits.workdir_bytes + _FILL_SLACK_BYTES
    if used > bound:
        return [f"the cache dir grew to {used >> 20} MiB (limit {ctx.limits.workdir_bytes >> 20})"]
    if not ctx.executions or "written" not in ctx.executions[0].stdout:
        return ["the program wrote nothing into its cache dir: it did not run as intended"]
    return []


def _check_daemon_started(ctx: CheckContext) -> list[str]:
    if ctx.findings.get("daemon_started") is not True:
        return ["the daemon did not start: the attack did not run as intended"]
    return []


def _check_no_late_solution(ctx: CheckContext) -> list[str]:
    problems = _findings_required("daemon_spawned")(ctx)
    for workdir in ctx.eval_root.glob("exec-*"):
        for name in ("solution.npz", "solution_grid.bin"):
            if os.path.lexists(workdir / name):
                problems.append(f"{workdir.name}/{name} exists after the run")
    return problems


def _check_child_forked(ctx: CheckContext) -> list[str]:
    return _findings_required("forked")(ctx)


PY_PRELUDE = r'''# pdeagent adversarial attack $ATTACK_NAME: a hostile submission (sandbox test).
import json as _json
import os
import socket
import sys
import time

RUN_TOKEN = $RUN_TOKEN
READS = $READS
LISTS = $LISTS
FINDINGS = {"attack": $ATTACK_NAME}


def _note(key, value):
    FINDINGS[key] = value
    try:
        with open("findings.json.tmp", "w") as fh:
            _json.dump(FINDINGS, fh)
        os.replace("findings.json.tmp", "findings.json")
    except OSError:
        pass


def _error(exc):
    return type(exc).__name__ + ": " + str(exc)[:200]


def _try_read(path, limit=1 << 20):
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}
    return {"ok": True, "size": len(data), "head": data[:64].hex(),
            "text": data[:4096].decode("latin-1")}


def _try_list(path):
    try:
        return {"ok": True, "names": sorted(os.listdir(path))[:200]}
    except Exception as exc:
        return {"ok": False, "error": _error(exc)}


def _grid(case_spec):
    import numpy as np

    g = case_spec["eval_grid"]
    bbox = g["bbox"]
    coords = {"x": np.linspace(bbox[0], bbox[1], g["nx"]),
              "y": np.linspace(bbox[2], bbox[3], g["ny"])}
    shape = (g["ny"], g["nx"])
    if g.get("nz"):
        coords["z"] = np.linspace(bbox[4], bbox[5], g["nz"])
        shape = (g["nz"], *shape)
    out = case_spec["output"]
    names = list(out.get("components") or [out["field"]])
    if out.get("pressure"):
        names.append(out["pressure"]["array"])
    return coords, shape, names


def _write_meta(seconds=0.5):
    with open("meta.json", "w") as fh:
        _json.dump({"wall_time_sec": seconds, "status": "ok"}, fh)


def _spawn_daemon(code, *args):
    """Double fork + setsid; the daemon runs a fresh interpreter whose command line
    carries RUN_TOKEN."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", code, RUN_TOKEN, *map(str, args)])
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
        return "sent"
    except Exception as exc:
        return _error(exc)

'''

PY_READ = r"""
def solve(case_spec):
    _note("reads", {key: _try_read(path) for key, path in READS.items()})
    _note("lists", {key: _try_list(path) for key, path in LISTS.items()})
    print("PDEAGENT-ADV", _json.dumps(FINDINGS)[:8000])
"""

PY_READ_HARNESS = r"""
def solve(case_spec):
    _note("reads", {key: _try_read(path) for key, path in READS.items()})
    _note("lists", {key: _try_list(path) for key, path in LISTS.items()})
    try:
        import importlib

        module = importlib.import_module("pdeagent.sandbox.local")
        _note("import", {"ok": True, "file": module.__file__, "read": _try_read(module.__file__)})
    except Exception as exc:
        _note("import", {"ok": False, "error": _error(exc)})
    print("PDEAGENT-ADV", _json.dumps(FINDINGS)[:8000])
"""

PY_READ_ENV = r"""
def solve(case_spec):
    _note("environ", dict(os.environ))
    _note("reads", {key: _try_read(path) for key, path in READS.items()})
    scan = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            for what in ("environ", "cmdline"):
                got = _try_read("/proc/%s/%s" % (entry, what), 1 << 16)
                if got["ok"] and got["size"]:
                    scan[entry + "/" + what] = got["text"][:2048]
    _note("proc_scan", scan)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS)[:8000])
"""

PY_TCP = r"""
def solve(case_spec):
    results = {}
    targets = [("127.0.0.1", $PORT), ("localhost", $PORT), ("1.1.1.1", 53), ("8.8.8.8", 443)]
    targets += [(address, $PORT) for address in $HOST_ADDRS]
    for host, port in targets:
        try:
            socket.create_connection((host, port), timeout=2).close()
            results["%s:%d" % (host, port)] = "connected"
        except Exception as exc:
            results["%s:%d" % (host, port)] = _error(exc)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + $ABSTRACT_SOCKET)
        results["abstract unix socket"] = "connected"
    except Exception as exc:
        results["abstract unix socket"] = _error(exc)
    finally:
        sock.close()
    try:
        socket.getaddrinfo("example.com", 80)
        results["dns example.com"] = "resolved"
    except Exception as exc:
        results["dns example.com"] = _error(exc)
    _note("connects", results)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
"""

PY_UNIX = r"""
def solve(case_spec):
    results = {}
    for path in [$UNIX_SOCKET, "/run/dbus/system_bus_socket", "/var/run/docker.sock",
                 "/run/docker.sock", "/run/containerd/containerd.sock", "/run/systemd/private",
                 "/run/systemd/journal/stdout", "/run/user/0/bus"]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(2)
        try:
            sock.connect(path)
            results[path] = "connected"
        except Exception as exc:
            results[path] = _error(exc)
        finally:
            sock.close()
    _note("connects", results)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
"""

PY_FORK_BOMB = r"""
def solve(case_spec):
    count, error = 0, None
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError as exc:
            error = _error(exc)
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        count += 1
    _note("forks", count)
    _note("fork_error", error)
    print("PDEAGENT-ADV forks", count, error, flush=True)
"""

PY_ALLOCATE = r"""
def solve(case_spec):
    _note("started", True)
    block = bytearray(50 * 2**30)
    _note("allocated", len(block))
"""

PY_TOUCH = r"""
def solve(case_spec):
    import numpy as np

    blocks = []
    for i in range(1, 65):
        blocks.append(np.ones(64 * 2**20 // 8))
        print("touched", i * 64, "MiB", flush=True)
    _note("touched_mib", 64 * 64)
"""

PY_SPIN = r"""
def solve(case_spec):
    _note("spinning", True)
    while True:
        pass
"""

PY_DAEMON = r'''
DAEMON = """
import os, sys, time
token, workdir, canary = sys.argv[1:4]
with open(os.path.join(workdir, "daemon.pid"), "w") as fh:
    fh.write(str(os.getpid()))
os.chdir("/")
for i in range(240):
    time.sleep(0.25)
    for path in (os.path.join(workdir, "daemon-%d.txt" % i),
                 os.path.join(canary, "daemon-" + token),
                 "/var/tmp/pdeagent-adv-" + token + "-daemon"):
        try:
            with open(path, "w") as fh:
                fh.write("still alive")
        except OSError:
            pass
"""


def solve(case_spec):
    _spawn_daemon(DAEMON, os.getcwd(), $CANARY_DIR)
    for _ in range(250):
        if os.path.exists("daemon.pid"):
            break
        time.sleep(0.02)
    _note("daemon_started", os.path.exists("daemon.pid"))
'''

PY_WRITE_OUTSIDE = r"""
def solve(case_spec):
    results = {}
    for path in $OUTSIDE_NEW:
        try:
            with open(path, "x") as fh:
                fh.write("pdeagent adversarial " + RUN_TOKEN)
            results[path] = "written"
        except Exception as exc:
            results[path] = _error(exc)
    for path in $OUTSIDE_EXISTING:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            results[path] = "opened for writing"
        except Exception as exc:
            results[path] = _error(exc)
    canary_dir, canary_file = $CANARY_DIR, $CANARY_FILE

    def append():
        with open(canary_file, "a") as fh:
            fh.write("x")

    operations = {
        "append": append,
        "utime": lambda: os.utime(canary_file, (0, 0)),
        "chmod": lambda: os.chmod(canary_dir, 0o700),
        "mkdir": lambda: os.mkdir(os.path.join(canary_dir, "d-" + RUN_TOKEN)),
        "symlink": lambda: os.symlink("/etc/passwd", os.path.join(canary_dir, "l-" + RUN_TOKEN)),
        "rename": lambda: os.rename(canary_file, canary_file + ".moved"),
        "unlink": lambda: os.unlink(canary_file),
    }
    for name, operation in operations.items():
        try:
            operation()
            results["canary " + name] = "done"
        except Exception as exc:
            results["canary " + name] = _error(exc)
    _note("writes", results)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
"""

PY_KILL = r"""
import signal


def solve(case_spec):
    res = {}
    res["probe bystander"] = _signal($BYSTANDER_PID, 0)
    res["probe harness"] = _signal($HARNESS_PID, 0)
    if res["probe bystander"] == "sent":
        res["kill bystander"] = _signal($BYSTANDER_PID, signal.SIGKILL)
    _note("signals", res)
    if "sent" in (res["probe bystander"], res["probe harness"]):
        res["kill -1"] = "skipped: host processes are visible, kill(-1) would hit the host"
    else:
        res["kill -1"] = _signal(-1, signal.SIGKILL)
    ppid = os.getppid()
    res["parent"] = ppid
    _note("signals", res)
    if ppid == $HARNESS_PID:
        res["kill parent"] = "skipped: the parent is the harness"
    else:
        res["kill parent"] = _signal(ppid, signal.SIGKILL)
    time.sleep(0.2)
    _note("signals", res)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
"""

PY_FILL = r"""
def solve(case_spec):
    chunk = b"\xa5" * (1 << 20)
    written = 0
    try:
        for i in range(32):
            with open("fill-%02d.bin" % i, "wb") as fh:
                for _ in range(64):
                    fh.write(chunk)
                    written += len(chunk)
            print("written", written >> 20, "MiB", flush=True)
    except OSError as exc:
        _note("error", _error(exc))
    _note("written_mib", written >> 20)
"""

PY_FLOOD = r"""
def solve(case_spec):
    chunk = b"A" * (1 << 20)
    out = sys.stdout.buffer
    for _ in range(1024):
        out.write(chunk)
    out.flush()
    _note("flooded_mib", 1024)
"""

PY_PICKLE = r"""
class _Payload:
    def __reduce__(self):
        return (open, ($PWNED_MARKER, "w"))


def solve(case_spec):
    import numpy as np

    coords, shape, names = _grid(case_spec)
    arrays = dict(coords)
    for name in names:
        values = np.zeros(shape, dtype=object)
        values.flat[0] = _Payload()
        arrays[name] = values
    np.savez("solution.npz", **arrays)
    _write_meta()
    _note("written", True)
"""

PY_ZIP_BOMB = r"""
def solve(case_spec):
    import zipfile

    import numpy as np

    coords, shape, names = _grid(case_spec)
    big = (16384, 8192)  # 1 GiB of float64 zeros, about 5 MB deflated
    chunk = bytes(8 << 20)
    with zipfile.ZipFile("solution.npz", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for key, values in coords.items():
            with zf.open(key + ".npy", "w") as fh:
                np.lib.format.write_array(fh, values)
        for i, name in enumerate(names):
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                if i:
                    np.lib.format.write_array(fh, np.zeros(shape))
                    continue
                header = {"descr": "<f8", "fortran_order": False, "shape": big}
                np.lib.format.write_array_header_1_0(fh, header)
                for _ in range(big[0] * big[1] * 8 // len(chunk)):
                    fh.write(chunk)
    _write_meta()
    _note("bomb_bytes", os.path.getsize("solution.npz"))
"""

PY_NAN = r"""
def solve(case_spec):
    import numpy as np

    coords, shape, names = _grid(case_spec)
    np.savez("solution.npz", **coords, **{name: np.full(shape, np.nan) for name in names})
    _write_meta()
    _note("written", True)
"""

PY_WRONG_SHAPE = r"""
def solve(case_spec):
    import numpy as np

    coords, shape, names = _grid(case_spec)
    wrong = (*shape[:-1], shape[-1] + 1)
    np.savez("solution.npz", **coords, **{name: np.zeros(wrong) for name in names})
    _write_meta()
    _note("written", True)
"""

PY_FAKE_META = r"""

# --- appended by the pdeagent adversarial attack $ATTACK_NAME: the baseline solver, then a
# sleep, then a meta.json claiming a 1 ms run.
import json as _adv_json
import time as _adv_time

_adv_real_solve = solve


def solve(case_spec, *args, **kwargs):
    result = _adv_real_solve(case_spec, *args, **kwargs)
    _adv_time.sleep($SLEEP_SEC)
    with open("meta.json", "w") as _adv_fh:
        _adv_json.dump({"wall_time_sec": 0.001, "status": "ok", "message": "1 ms"}, _adv_fh)
    return result
"""

PY_CACHE_REPLAY = r"""

# --- appended by the pdeagent adversarial attack $ATTACK_NAME: keep the answer between runs
# in every writable place outside the work dir; replay it when found, else solve + sleep.
import json as _adv_json
import os as _adv_os
import shutil as _adv_shutil
import time as _adv_time

_adv_real_solve = solve
_ADV_FILES = ("solution.npz", "meta.json")


def _adv_places():
    roots = [_adv_os.environ.get(v) for v in ("XDG_CACHE_HOME", "FIREDRAKE_CACHE_DIR", "HOME",
                                              "TMPDIR", "PYTHONPYCACHEPREFIX")]
    roots += ["/tmp", "/dev/shm", "/var/tmp", _adv_os.path.dirname(_adv_os.getcwd()),
              _adv_os.path.expanduser("~"), _adv_os.path.join(_adv_os.getcwd(), "..", "..")]
    places = []
    for root in roots:
        if root:
            place = _adv_os.path.join(_adv_os.path.abspath(root), ".pdeagent-adv-answer")
            if place not in places:
                places.append(place)
    return places


def _adv_record(note):
    try:
        with open("findings.json", "w") as fh:
            _adv_json.dump({"run " + _adv_os.path.basename(_adv_os.getcwd()): note}, fh)
    except OSError:
        pass


def solve(case_spec, *args, **kwargs):
    note = {"replayed_from": None, "stored": [], "store_errors": {}}
    for place in _adv_places():
        if all(_adv_os.path.isfile(_adv_os.path.join(place, f)) for f in _ADV_FILES):
            for f in _ADV_FILES:
                _adv_shutil.copyfile(_adv_os.path.join(place, f), f)
            note["replayed_from"] = place
            _adv_record(note)
            return None
    result = _adv_real_solve(case_spec, *args, **kwargs)
    for place in _adv_places():
        try:
            _adv_os.makedirs(place, exist_ok=True)
            for f in _ADV_FILES:
                _adv_shutil.copyfile(f, _adv_os.path.join(place, f))
            note["stored"].append(place)
        except Exception as exc:
            note["store_errors"][place] = type(exc).__name__
    _adv_record(note)
    _adv_time.sleep($SLEEP_SEC)
    return result
"""

PY_ACCURATE_ONCE = r"""

# --- appended by the pdeagent adversarial attack $ATTACK_NAME: solve only on the first
# run (told apart by the work dir's name), write zeros at once on the timed repeats.
import json as _adv_json
import os as _adv_os

import numpy as _adv_np

_adv_real_solve = solve


def solve(case_spec, *args, **kwargs):
    run = _adv_os.path.basename(_adv_os.getcwd())
    with open("findings.json", "w") as fh:
        _adv_json.dump({"run " + run: "solved" if run.endswith("-0") else "zeros"}, fh)
    if run.endswith("-0"):
        return _adv_real_solve(case_spec, *args, **kwargs)
    g = case_spec["eval_grid"]
    b = g["bbox"]
    axes = {"x": _adv_np.linspace(b[0], b[1], g["nx"]), "y": _adv_np.linspace(b[2], b[3], g["ny"])}
    shape = (g["ny"], g["nx"])
    if g.get("nz"):
        axes["z"] = _adv_np.linspace(b[4], b[5], g["nz"])
        shape = (g["nz"], *shape)
    out = case_spec["output"]
    names = list(out.get("components") or [out["field"]])
    if out.get("pressure"):
        names.append(out["pressure"]["array"])
    _adv_np.savez("solution.npz", **axes, **{n: _adv_np.zeros(shape) for n in names})
    with open("meta.json", "w") as fh:
        _adv_json.dump({"wall_time_sec": 0.001, "status": "ok"}, fh)
    return None
"""

PY_FILL_CACHE = r"""
def solve(case_spec):
    target = os.environ.get("XDG_CACHE_HOME") or "/nonexistent"
    chunk = b"\xa5" * (1 << 20)
    written = 0
    try:
        for i in range(32):
            with open(os.path.join(target, "fill-%02d.bin" % i), "wb") as fh:
                for _ in range(64):
                    fh.write(chunk)
                    written += len(chunk)
            print("written", written >> 20, "MiB", flush=True)
    except OSError as exc:
        _note("error", _error(exc))
    _note("written_mib", written >> 20)
"""

PY_LATE = r'''
LATE = """
import json, os, sys, time
import numpy as np
token, workdir = sys.argv[1:3]
with open(os.path.join(workdir, "case_spec.json")) as fh:
    g = json.load(fh)["eval_grid"]
x = np.linspace(g["bbox"][0], g["bbox"][1], g["nx"])
y = np.linspace(g["bbox"][2], g["bbox"][3], g["ny"])
time.sleep(0.3)
for i in range(40):
    try:
        np.savez(os.path.join(workdir, "solution.npz"), x=x, y=y, u=np.zeros((g["ny"], g["nx"])))
        with open(os.path.join(workdir, "meta.json"), "w") as fh:
            json.dump({"wall_time_sec": 0.001, "status": "ok"}, fh)
    except OSError:
        pass
    time.sleep(0.25)
"""


def solve(case_spec):
    _spawn_daemon(LATE, os.getcwd())
    _note("daemon_spawned", True)
'''

PY_SYMLINK = r"""
def solve(case_spec):
    os.symlink($REFERENCE_NPZ, "solution.npz")
    _write_meta()
    _note("linked", os.readlink("solution.npz"))
"""

PY_HARDLINK = r"""
def solve(case_spec):
    try:
        os.link($REFERENCE_NPZ, "solution.npz")
        _note("linked", True)
    except Exception as exc:
        _note("linked", _error(exc))
    _write_meta()
"""

CPP_PRELUDE = r"""// pdeagent adversarial attack $ATTACK_NAME: a hostile submission (sandbox test).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace adv
{
  const std::string ATTACK = $ATTACK_NAME;
  const std::string RUN_TOKEN = $RUN_TOKEN;
  const std::vector<std::pair<std::string, std::string>> READS = $READS;
  std::string findings_file = "findings.json";
  std::vector<std::pair<std::string, std::string>> findings; // key -> JSON text

  std::string quote(const std::string &s)
  {
    std::string out = "\"";
    char buf[8];
    for (const unsigned char c : s)
      {
        if (c == '"' || c == '\\')
          {
            out += '\\';
            out += static_cast<char>(c);
          }
        else if (c < 0x20 || c >= 0x7f)
          {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
          }
        else
          out += static_cast<char>(c);
      }
    return out + "\"";
  }

  std::string hex(const std::string &s)
  {
    static const char *digits = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : s)
      {
        out += digits[c >> 4];
        out += digits[c & 15];
      }
    return out;
  }

  std::string error(int err)
  {
    return quote(std::string("errno ") + std::to_string(err) + ": " + std::strerror(err));
  }

  void note(const std::string &key, const std::string &json)
  {
    bool found = false;
    for (auto &kv : findings)
      if (kv.first == key)
        {
          kv.second = json;
          found = true;
        }
    if (!found)
      findings.emplace_back(key, json);
    std::string text = "{\"attack\": " + quote(ATTACK);
    for (const auto &kv : findings)
      text += ", " + quote(kv.first) + ": " + kv.second;
    text += "}";
    const std::string tmp = findings_file + ".tmp";
    if (std::FILE *f = std::fopen(tmp.c_str(), "w"))
      {
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
        std::rename(tmp.c_str(), findings_file.c_str());
      }
  }

  std::string try_read(const std::string &path)
  {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
      return "{\"ok\": false, \"error\": " + error(errno) + "}";
    std::string data;
    char buf[65536];
    ssize_t n;
    while (data.size() < (1u << 20) && (n = ::read(fd, buf, sizeof buf)) > 0)
      data.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return "{\"ok\": true, \"size\": " + std::to_string(data.size()) +
           ", \"head\": " + quote(hex(data.substr(0, 64))) +
           ", \"text\": " + quote(data.substr(0, 4096)) + "}";
  }

  std::string try_create(const std::string &path)
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
      return error(errno);
    const std::string text = "pdeagent adversarial " + RUN_TOKEN;
    const ssize_t n = ::write(fd, text.data(), text.size());
    ::close(fd);
    return n >= 0 ? "\"written\"" : error(errno);
  }

  std::string outcome(int rc)
  {
    return rc == 0 ? "\"done\"" : error(errno);
  }

  std::string cwd()
  {
    char buf[4096];
    return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
  }
} // namespace adv
"""

CPP_READ = r"""
int main()
{
  std::string reads = "{";
  for (const auto &kv : adv::READS)
    reads += (reads.size() > 1 ? ", " : "") + adv::quote(kv.first) + ": " +
             adv::try_read(kv.second);
  reads += "}";
  adv::note("reads", reads);
  std::printf("PDEAGENT-ADV read %zu targets\n", adv::READS.size());
  return 0;
}
"""

CPP_INCLUDE = r"""
#include $INCLUDE_TARGET

int main()
{
  return 0;
}
"""

CPP_TCP = r"""
static std::string connect_inet(const char *host, int port)
{
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0)
    return adv::error(errno);
  timeval tv{2, 0};
  ::setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<unsigned short>(port));
  ::inet_pton(AF_INET, host, &addr.sin_addr);
  const int rc = ::connect(s, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  const int err = errno;
  ::close(s);
  return rc == 0 ? "\"connected\"" : adv::error(err);
}

static std::string connect_abstract(const std::string &name)
{
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0)
    return adv::error(errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  const int rc = ::connect(s, reinterpret_cast<sockaddr *>(&addr), len);
  const int err = errno;
  ::close(s);
  return rc == 0 ? "\"connected\"" : adv::error(err);
}

int main()
{
  const int port = $PORT;
  std::vector<std::pair<std::string, int>> targets = {{"127.0.0.1", port}, {"1.1.1.1", 53}};
  for (const std::string &host : std::vector<std::string>$HOST_ADDRS)
    targets.emplace_back(host, port);
  std::string results = "{";
  for (const auto &t : targets)
    results += (results.size() > 1 ? ", " : "") +
               adv::quote(t.first + ":" + std::to_string(t.second)) + ": " +
               connect_inet(t.first.c_str(), t.second);
  results += ", \"abstract unix socket\": " + connect_abstract($ABSTRACT_SOCKET) + "}";
  adv::note("connects", results);
  std::printf("PDEAGENT-ADV %s\n", results.c_str());
  return 0;
}
"""

CPP_FORK_KILL = r"""
int main(int argc, char **argv)
{
  if (argc >= 5 && std::string(argv[3]) == adv::RUN_TOKEN && std::string(argv[4]) == "child")
    {
      adv::findings_file = "findings-child.json";
      const int rc = ::kill(::getppid(), SIGKILL);
      adv::note("child_killed_parent", rc == 0 ? "true" : adv::error(errno));
      ::usleep(300000);
      const std::vector<double> zeros($GRID_POINTS, 0.0);
      for (int i = 0; i < 60; ++i)
        {
          if (std::FILE *f = std::fopen("solution_grid.bin", "wb"))
            {
              std::fwrite(zeros.data(), sizeof(double), zeros.size(), f);
              std::fclose(f);
            }
          if (std::FILE *f = std::fopen("meta.json", "w"))
            {
              std::fputs("{\"wall_time_sec\": 0.001, \"status\": \"ok\"}", f);
              std::fclose(f);
            }
          ::usleep(250000);
        }
      return 0;
    }
  adv::note("forked", "true");
  const pid_t pid = ::fork();
  if (pid == 0)
    {
      ::setsid();
      ::execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "case_spec.json",
              argc > 2 ? argv[2] : ".", adv::RUN_TOKEN.c_str(), "child",
              static_cast<char *>(nullptr));
      _exit(127);
    }
  for (int i = 0; i < 100; ++i)
    ::usleep(100000); // the child kills us long before this ends
  return 0;
}
"""

CPP_SPIN = r"""
int main()
{
  adv::note("spinning", "true");
  volatile unsigned long long counter = 0;
  for (;;)
    counter = counter + 1;
}
"""

CPP_WRITE_OUTSIDE = r"""
int main()
{
  std::string results = "{";
  auto add = [&results](const std::string &key, const std::string &value) {
    results += (results.size() > 1 ? ", " : "") + adv::quote(key) + ": " + value;
  };
  for (const std::string &path : std::vector<std::string>$OUTSIDE_NEW)
    add(path, adv::try_create(path));
  for (const std::string &path : std::vector<std::string>$OUTSIDE_EXISTING)
    {
      const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
      add(path, fd >= 0 ? "\"opened for writing\"" : adv::error(errno));
      if (fd >= 0)
        ::close(fd);
    }
  const std::string canary_dir = $CANARY_DIR, canary_file = $CANARY_FILE;
  {
    const int fd = ::open(canary_file.c_str(), O_WRONLY | O_APPEND);
    add("canary append", fd >= 0 && ::write(fd, "x", 1) == 1 ? "\"done\"" : adv::error(errno));
    if (fd >= 0)
      ::close(fd);
  }
  const timespec times[2] = {{0, 0}, {0, 0}};
  add("canary utime", adv::outcome(::utimensat(AT_FDCWD, canary_file.c_str(), times, 0)));
  add("canary chmod", adv::outcome(::chmod(canary_dir.c_str(), 0700)));
  add("canary mkdir", adv::outcome(::mkdir((canary_dir + "/d-" + adv::RUN_TOKEN).c_str(), 0755)));
  add("canary symlink",
      adv::outcome(::symlink("/etc/passwd", (canary_dir + "/l-" + adv::RUN_TOKEN).c_str())));
  const std::string moved = canary_file + ".moved";
  add("canary rename", adv::outcome(std::rename(canary_file.c_str(), moved.c_str())));
  add("canary unlink", adv::outcome(::unlink(canary_file.c_str())));
  results += "}";
  adv::note("writes", results);
  std::printf("PDEAGENT-ADV %s\n", results.c_str());
  return 0;
}
"""

CPP_DAEMON = r"""
int main(int argc, char **argv)
{
  if (argc >= 6 && std::string(argv[3]) == adv::RUN_TOKEN && std::string(argv[4]) == "daemon")
    {
      const std::string workdir = argv[5];
      if (std::FILE *f = std::fopen((workdir + "/daemon.pid").c_str(), "w"))
        {
          std::fprintf(f, "%d", static_cast<int>(::getpid()));
          std::fclose(f);
        }
      if (::chdir("/") != 0)
        return 1;
      const std::vector<std::string> targets = {
        $CANARY_DIR + std::string("/daemon-") + adv::RUN_TOKEN,
        "/var/tmp/pdeagent-adv-" + adv::RUN_TOKEN + "-daemon"};
      for (int i = 0; i < 240; ++i)
        {
          ::usleep(250000);
          std::vector<std::string> paths = targets;
          paths.push_back(workdir + "/daemon-" + std::to_string(i) + ".txt");
          for (const auto &path : paths)
            if (std::FILE *f = std::fopen(path.c_str(), "w"))
              {
                std::fputs("still alive", f);
                std::fclose(f);
              }
        }
      return 0;
    }
  const std::string workdir = adv::cwd();
  const pid_t pid = ::fork();
  if (pid == 0)
    {
      ::setsid();
      if (::fork() == 0)
        ::execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "case_spec.json",
                argc > 2 ? argv[2] : ".", adv::RUN_TOKEN.c_str(), "daemon", workdir.c_str(),
                static_cast<char *>(nullptr));
      _exit(0);
    }
  ::waitpid(pid, nullptr, 0);
  bool started = false;
  for (int i = 0; i < 250 && !started; ++i)
    {
      started = ::access("daemon.pid", F_OK) == 0;
      if (!started)
        ::usleep(20000);
    }
  adv::note("daemon_started", started ? "true" : "false");
  return 0;
}
"""

_PY = "python"
_CPP = "cpp"
_MISSING = ("F-Exec", "missing_artifact")

ATTACKS: tuple[Attack, ...] = (
    Attack(
        "read_case_file",
        "read the evaluator's case file (a fake dataset_dir and the real dataset)",
        _PY,
        PY_READ,
        _MISSING,
        reads=("dataset_cases", "repo_cases"),
        lists=("dataset_dir", "repo_dir"),
        check=_findings_required("reads", "lists"),
    ),
    Attack(
        "read_reference_array",
        "read reference arrays of the dataset and a file in a hide=[...] directory",
        _PY,
        PY_READ,
        _MISSING,
        reads=("reference_npy", "reference_npz", "hidden_file"),
        lists=("references_dir", "hidden_dir"),
        check=_findings_required("reads", "lists"),
    ),
    Attack(
        "read_harness_source",
        "read the harness source (pdeagent/sandbox/local.py) by path and by import",
        _PY,
        PY_READ_HARNESS,
        _MISSING,
        reads=("harness_source", "pipeline_source"),
        lists=("package_dir", "repo_dir"),
        check=_findings_required("reads", "lists", "import"),
    ),
    Attack(
        "read_environment",
        "read its own environment, /proc/1/environ, the harness's and every /proc/*/environ",
        _PY,
        PY_READ_ENV,
        _MISSING,
        reads=("harness_environ", "bystander_environ", "host_init_environ"),
        check=_findings_required("environ", "reads", "proc_scan"),
    ),
    Attack(
        "tcp_connect",
        "connect to a harness TCP listener on 127.0.0.1, host addresses, the internet, an "
        "abstract unix socket; resolve a name",
        _PY,
        PY_TCP,
        _MISSING,
        check=_check_connects,
    ),
    Attack(
        "unix_socket_connect",
        "connect to a world-writable unix socket of the harness and to host daemons' sockets",
        _PY,
        PY_UNIX,
        _MISSING,
        check=_check_connects,
    ),
    Attack(
        "fork_bomb",
        "fork until failure (at most 5000); the children sleep",
        _PY,
        PY_FORK_BOMB,
        _MISSING,
        limits={"processes": 64},
        check=_check_fork_bomb,
    ),
    Attack(
        "allocate_50gb",
        "bytearray(50 GiB): refused by the address-space limit",
        _PY,
        PY_ALLOCATE,
        ("F-Exec", "memory"),
        check=_findings_required("started"),
    ),
    Attack(
        "touch_memory",
        "touch up to 4 GiB in 64 MiB steps under a 1 GiB memory cap",
        _PY,
        PY_TOUCH,
        ("F-Exec", "memory"),
        limits={"memory_bytes": 2**30},
        wall_time_sec=60.0,
        slow=True,
        check=_check_touch_memory,
    ),
    Attack(
        "spin_forever",
        "busy loop forever",
        _PY,
        PY_SPIN,
        ("F-Exec", "timeout"),
        wall_time_sec=8.0,
        slow=True,
        check=_check_timeout,
    ),
    Attack(
        "setsid_daemon",
        "double-fork a setsid daemon that keeps writing files after the run",
        _PY,
        PY_DAEMON,
        _MISSING,
        settle_sec=1.5,
        check=_check_daemon_started,
    ),
    Attack(
        "write_outside",
        "write the canary dir, /etc, /usr, /var/tmp, the repository, the package dir",
        _PY,
        PY_WRITE_OUTSIDE,
        _MISSING,
        check=_check_writes,
    ),
    Attack(
        "kill_harness",
        "signal a bystander host process and the harness; kill(-1); kill the parent",
        _PY,
        PY_KILL,
        _MISSING,
        check=_check_signals,
    ),
    Attack(
        "fill_disk",
        "write 64 MiB files up to 2 GiB into the work dir (limit 256 MiB)",
        _PY,
        PY_FILL,
        ("F-Exec", "sandbox_violation"),
        limits={"workdir_bytes": 256 * 2**20},
        wall_time_sec=60.0,
        slow=True,
        check=_check_fill_disk,
    ),
    Attack(
        "stdout_flood",
        "print 1 GiB to stdout, write no solution",
        _PY,
        PY_FLOOD,
        _MISSING,
        wall_time_sec=60.0,
        slow=True,
        check=_check_stdout_flood,
    ),
    Attack(
        "pickled_npz",
        "solution.npz whose field is an object array with a pickle payload",
        _PY,
        PY_PICKLE,
        ("F-Exec", "bad_artifact"),
        check=_check_not_pwned,
    ),
    Attack(
        "zip_bomb_npz",
        "solution.npz with a 1 GiB array deflated to a few MB",
        _PY,
        PY_ZIP_BOMB,
        ("F-Exec", "bad_artifact"),
        wall_time_sec=60.0,
        slow=True,
        check=_findings_required("bomb_bytes"),
    ),
    Attack(
        "nan_everywhere",
        "a solution of NaN everywhere",
        _PY,
        PY_NAN,
        ("F-Exec", "non_finite"),
        check=_findings_required("written"),
    ),
    Attack(
        "wrong_shape",
        "a solution with one column too many",
        _PY,
        PY_WRONG_SHAPE,
        ("F-Exec", "bad_shape"),
        check=_findings_required("written"),
    ),
    Attack(
        "fake_meta_time",
        "the track's baseline, then a sleep longer than tau_time and a meta.json claiming 1 ms",
        _PY,
        PY_FAKE_META,
        ("F-Time", "runtime_above_tau"),
        uses_baseline=True,
        tau_time=1.0,
        timed_repeats=2,
        wall_time_sec=300.0,
        slow=True,
        check=_check_fake_meta,
    ),
    Attack(
        "cache_replay",
        "baseline + sleep; the answer kept in every writable place (caches, /tmp, /dev/shm, "
        "...) and replayed",
        _PY,
        PY_CACHE_REPLAY,
        ("F-Time", "runtime_above_tau"),
        uses_baseline=True,
        tau_time=1.0,
        timed_repeats=2,
        wall_time_sec=300.0,
        slow=True,
        check=_check_no_replay,
    ),
    Attack(
        "accurate_once",
        "the track's baseline on the accuracy run only; zeros at once on the timed repeats",
        _PY,
        PY_ACCURATE_ONCE,
        ("F-Acc", "error_above_tau"),
        uses_baseline=True,
        timed_repeats=2,
        wall_time_sec=300.0,
        slow=True,
        check=_check_repeat_checked,
    ),
    Attack(
        "fill_cache",
        "write 64 MiB files up to 2 GiB into the writable cache dir (limit 256 MiB)",
        _PY,
        PY_FILL_CACHE,
        ("F-Exec", "sandbox_violation"),
        limits={"workdir_bytes": 256 * 2**20},
        wall_time_sec=60.0,
        slow=True,
        check=_check_fill_cache,
    ),
    Attack(
        "late_solution",
        "exit at once; a setsid daemon writes solution.npz 0.3 s later",
        _PY,
        PY_LATE,
        _MISSING,
        settle_sec=1.0,
        check=_check_no_late_solution,
    ),
    Attack(
        "symlink_to_reference",
        "solution.npz is a symlink to the dataset's exact solution",
        _PY,
        PY_SYMLINK,
        ("F-Exec", "bad_artifact"),
        check=_findings_required("linked"),
    ),
    Attack(
        "hardlink_to_reference",
        "solution.npz is a hard link to the dataset's exact solution",
        _PY,
        PY_HARDLINK,
        _MISSING,
        check=_findings_required("linked"),
    ),
    Attack(
        "read_case_file",
        "read the fake dataset, its reference, the real dataset, the harness source, the "
        "bystander's environment",
        _CPP,
        CPP_READ,
        _MISSING,
        reads=(
            "dataset_cases",
            "reference_npy",
            "repo_cases",
            "harness_source",
            "bystander_environ",
        ),
        check=_findings_required("reads"),
        slow=True,
    ),
    Attack(
        "include_case_file",
        "#include the fake dataset's cases.jsonl at compile time",
        _CPP,
        CPP_INCLUDE,
        ("F-Exec", "compile_error"),
        slow=True,
    ),
    Attack(
        "tcp_connect",
        "connect to a harness TCP listener, host addresses, the internet, an abstract socket",
        _CPP,
        CPP_TCP,
        _MISSING,
        check=_check_connects,
        slow=True,
    ),
    Attack(
        "fork_and_kill_parent",
        "fork; the setsid child kills its parent and keeps writing a solution",
        _CPP,
        CPP_FORK_KILL,
        ("F-Exec", "runtime_error"),
        settle_sec=1.0,
        check=_check_child_forked,
        slow=True,
    ),
    Attack(
        "spin_forever",
        "busy loop forever",
        _CPP,
        CPP_SPIN,
        ("F-Exec", "timeout"),
        wall_time_sec=8.0,
        slow=True,
        check=_check_timeout,
    ),
    Attack(
        "write_outside",
        "write the canary dir, /etc, /usr, /var/tmp, the repository, the package dir",
        _CPP,
        CPP_WRITE_OUTSIDE,
        _MISSING,
        check=_check_writes,
        slow=True,
    ),
    Attack(
        "setsid_daemon",
        "double-fork a setsid daemon that keeps writing files after the run",
        _CPP,
        CPP_DAEMON,
        _MISSING,
        settle_sec=1.5,
        check=_check_daemon_started,
        slow=True,
    ),
)
"""Every attack; (language, name) is unique."""


def attacks_for(language: str) -> list[Attack]:
    """The attacks written in ``language`` (``python`` or ``cpp``)."""
    return [a for a in ATTACKS if a.language == language]


def get_attack(name: str, language: str) -> Attack:
    for attack in ATTACKS:
        if attack.name == name and attack.language == language:
            return attack
    raise KeyError(f"no {language} attack named {name!r}")


# --- rendering -----------------------------------------------------------------------------


def _literal(value: Any, language: str) -> str:
    if isinstance(value, Path):
        value = str(value)
    if language == _PY:
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # ASCII-escaped: a valid C++ string literal for ASCII
    if isinstance(value, dict):
        pairs = ", ".join(f"{{{_literal(k, language)}, {_literal(v, language)}}}"
                          for k, v in value.items())  # fmt: skip
        return "{" + pairs + "}"
    if isinstance(value, list | tuple):
        return "{" + ", ".join(_literal(v, language) for v in value) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as {language}")


def render_source(attack: Attack, params: dict[str, Any], baseline: str | None = None) -> str:
    """The submission: the attack's template with ``params`` as literals of its language,
    after the shared prelude (or appended to ``baseline`` for ``uses_baseline`` attacks)."""
    literals = {k: _literal(v, attack.language) for k, v in params.items()}
    body = string.Template(attack.template).substitute(literals)
    if attack.uses_baseline:
        if not baseline:
            raise ValueError(f"attack {attack.name} needs the track's baseline source")
        return baseline.rstrip() + "\n" + body
    prelude = PY_PRELUDE if attack.language == _PY else CPP_PRELUDE
    return string.Template(prelude).substitute(literals) + body


# --- the traps and the checks --------------------------------------------------------------


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


def _proc_start(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (tells a reused pid apart)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat_line.rsplit(")", 1)[1].split()[19])


class _RunWatcher:
    """While programs run, finds the processes of the run (by the run's markers) and
    records their pids and PID namespaces, so that afterwards a process of the sandbox
    user in one of those namespaces is known to be ours even if it dropped the markers,
    and concurrent runs of other harnesses are not mistaken for ours."""

    def __init__(self, markers: list[bytes], skip: set[int]) -> None:
        self.markers = markers
        self.skip = set(skip)
        self.checked: set[int] = set()
        self.seen: dict[int, int | None] = {}
        """pid -> start time of the run's processes seen."""
        self.namespaces: dict[str, int] = {}
        """PID namespaces of the run -> an open descriptor of each: held until
        :meth:`close`, so the kernel cannot reuse a namespace's inode number for another
        harness's run meanwhile (the comparison by ``ns/pid`` link stays exact)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _scan(self) -> None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in self.checked or pid in self.skip:
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                environ = b""
                with contextlib.suppress(OSError):
                    environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if not environ and not cmdline:
                continue  # not exec'd yet (or a kernel thread): look again next time
            self.checked.add(pid)
            if any(m in cmdline or m in environ for m in self.markers):
                self.seen[pid] = _proc_start(pid)
                with contextlib.suppress(OSError):
                    fd = os.open(entry / "ns" / "pid", os.O_RDONLY)
                    namespace = os.readlink(f"/proc/self/fd/{fd}")
                    if namespace in self.namespaces:
                        os.close(fd)
                    else:
                        self.namespaces[namespace] = fd

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(Exception):
                self._scan()

    def __enter__(self) -> _RunWatcher:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._stop.clear()

    def close(self) -> None:
        for fd in self.namespaces.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.namespaces.clear()


class _RecordingSandbox:
    """Delegates to a backend, keeps every request and result, and watches the run's
    processes while each request runs."""

    def __init__(self, inner: Sandbox, watcher: _RunWatcher) -> None:
        self._inner = inner
        self._watcher = watcher
        self.name = inner.name
        self.runs: list[tuple[SandboxRequest, ExecutionResult]] = []

    def run(self, request: SandboxRequest) -> ExecutionResult:
        self._watcher.markers.append(str(Path(request.workdir).absolute()).encode())
        with self._watcher:
            result = self._inner.run(request)
        self.runs.append((request, result))
        return result

    def __getattr__(self, item: str) -> Any:
        return getattr(self._inner, item)


def _head(path: Path | str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(_HEAD_BYTES)
    except OSError:
        return b""


def _file_state(path: Path) -> tuple[int, int, str] | None:
    try:
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if st.st_size < 2**27 else ""
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, digest


def _tree_digest(root: Path) -> str:
    """Names, modes, sizes, mtimes and contents of everything under ``root``."""
    h = hashlib.sha256()
    st = os.lstat(root)
    h.update(f"{st.st_mode:o}:{st.st_mtime_ns}\n".encode())
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            h.update(f"{rel}\0{st.st_mode:o}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
            elif stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(path).encode())
    return h.hexdigest()


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def _host_addresses() -> list[str]:
    """IPv4 addresses of this host's non-loopback interfaces."""
    import fcntl
    import struct

    found: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _index, name in socket.if_nameindex():
            if name == "lo":
                continue
            try:
                packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            found.append(socket.inet_ntoa(packed[20:24]))
    return found[:6]


def _sandbox_uid() -> int | None:
    try:
        return pwd.getpwnam(SANDBOX_USER).pw_uid
    except KeyError:
        return None


def _pids_of_uid(uid: int | None) -> set[int]:
    if uid is None:
        return set()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
    return found


def _leftover_processes(
    run_token: str,
    roots: list[Path],
    sandbox_uid: int | None,
    before: set[int],
    skip: set[int],
    watcher: _RunWatcher,
    strict_user: bool,
) -> tuple[dict[int, str], list[str]]:
    """Live (non-zombie) processes of the run (pid -> why), and processes of the sandbox
    user that cannot be attributed to the run (another harness's runs, unless
    ``strict_user``)."""
    found: dict[int, str] = {}
    unattributed: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        pid = int(entry.name)
        try:
            status = (entry / "status").read_text(errors="replace")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if "\nState:\tZ" in status or "\nState:\tX" in status:
            continue
        uid = next((int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("Uid:")), -1)  # fmt: skip
        why = []
        if run_token.encode() in cmdline:
            why.append("token in its command line")
        with contextlib.suppress(OSError):
            environ = (entry / "environ").read_bytes()
            if any(str(r).encode() in environ for r in roots):
                why.append("the run's dirs in its environment")
        with contextlib.suppress(OSError):
            cwd = os.readlink(entry / "cwd")
            if any(cwd == str(r) or cwd.startswith(str(r) + "/") for r in roots):
                why.append(f"working directory {cwd}")
        if pid in watcher.seen and watcher.seen[pid] == _proc_start(pid):
            why.append("seen running as part of the run")
        namespace = ""
        with contextlib.suppress(OSError):
            namespace = os.readlink(entry / "ns" / "pid")
        if sandbox_uid is not None and uid == sandbox_uid and pid not in before:
            if namespace in watcher.namespaces:
                why.append(f"runs as {SANDBOX_USER} in the run's PID namespace")
            elif strict_user:
                why.append(f"runs as {SANDBOX_USER}")
            else:
                text = cmdline.replace(b"\0", b" ").decode(errors="replace")[:120]
                unattributed.append(f"pid {pid} ({text})")
        if why:
            text = cmdline.replace(b"\0", b" ").decode(errors="replace")[:120]
            found[pid] = f"pid {pid} ({text}): {', '.join(why)}"
    return found, unattributed


def _docker_leftovers(roots: list[Path]) -> list[str] | None:
    """Labelled containers mounting the run's dirs; None when Docker cannot be asked."""
    from pdeagent.sandbox.docker import LABEL, docker_client

    try:
        client = docker_client(timeout=10)
    except SandboxError:
        return None
    try:
        found = []
        for container in client.containers.list(all=True, filters={"label": LABEL}):
            sources = [str(m.get("Source", "")) for m in container.attrs.get("Mounts") or []]
            if any(s == str(r) or s.startswith(str(r) + "/") for s in sources for r in roots):
                found.append(f"container {container.short_id} ({container.status})")
        return found
    except Exception as exc:
        return [f"cannot list containers: {exc}"]
    finally:
        client.close()


def _secret_forms(value: str) -> list[bytes]:
    raw = value.encode()
    return [raw, raw.hex().encode()]


def _scan_files(root: Path, needles: dict[str, list[bytes]], budget: list[int]) -> list[str]:
    """``where: which`` for every secret found in the regular files under ``root``."""
    found = []
    if not root.exists():
        return found
    for dirpath, _dirs, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode) or budget[0] <= 0:
                    continue
                with open(path, "rb") as fh:
                    data = fh.read(min(_SCAN_FILE_BYTES, budget[0]))
            except OSError:
                continue
            budget[0] -= len(data)
            for which, forms in needles.items():
                if any(f in data for f in forms):
                    found.append(f"file {os.path.relpath(path, root)}: {which}")
    return found


def _accept_count(sock: socket.socket) -> int:
    sock.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, OSError):
            return count
        conn.close()
        count += 1


def _read_findings(eval_root: Path) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for workdir in sorted(eval_root.glob("exec-*")):
        for path in sorted(workdir.glob("findings*.json")):
            try:
                if path.is_symlink() or path.stat().st_size > 8 * 2**20:
                    continue
                data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                merged.update(data)
    return merged


def _leaked_read(result: Any, real: bytes) -> bool:
    """A read the program reported returned the target's real content."""
    if not isinstance(result, dict) or not result.get("ok") or not result.get("size"):
        return False
    try:
        head = bytes.fromhex(str(result.get("head", "")))
    except ValueError:
        return False
    n = len(head)
    return n >= min(_MIN_HEAD_MATCH, len(real)) and n > 0 and real[:n] == head


@define
class _Traps:
    """Everything planted on the host for one attack, and its cleanup."""

    run_token: str
    scratch: Path
    canary: Path
    secrets: dict[str, str]
    paths: dict[str, Path]
    lists: dict[str, Path]
    real_heads: dict[str, bytes]
    outside_new: list[str]
    outside_existing: list[str]
    watched: dict[str, tuple[int, int, str] | None]
    canary_digest: str
    tcp: socket.socket
    abstract: socket.socket
    unix: socket.socket
    bystander: subprocess.Popen[bytes]
    params: dict[str, Any]


@contextlib.contextmanager
def _traps(case: Case, scratch_dir: Path, run_token: str) -> Iterator[_Traps]:
    pkg, repo = source_checkout()
    secrets_ = {k: f"PDEAGENT-SECRET-{k}-{secrets.token_hex(16)}"
                for k in ("dataset", "reference", "hidden", "environment")}  # fmt: skip
    scratch = Path(tempfile.mkdtemp(prefix=f"pdeagent-adv-{run_token}-", dir=scratch_dir))
    canary = Path(tempfile.mkdtemp(prefix=f"pdeagent-canary-{run_token[-8:]}-", dir=scratch_dir))
    opened: list[socket.socket] = []
    bystander = None
    old_env = os.environ.get(SECRET_ENV_VAR)
    try:
        # the evaluator's data: world-readable, so only the sandbox can keep it away
        scratch.chmod(0o755)
        dataset, hidden = scratch / "dataset", scratch / "hidden"
        references = dataset / "references"
        for d in (dataset, references, hidden):
            d.mkdir(mode=0o755)
            d.chmod(0o755)
        record = {"id": case.id, "evaluator_note": secrets_["dataset"]}
        (dataset / "cases.jsonl").write_text(json.dumps(record) + "\n")
        token_bytes = np.frombuffer(secrets_["reference"].encode(), dtype=np.uint8)
        np.save(references / "ref.npy", token_bytes)
        exact = reference_fields(case, None)
        grid = case.case_spec.eval_grid
        axes = {"x": (grid.nx, 0), "y": (grid.ny, 2), "z": (grid.nz, 4)}
        coords = {name: np.linspace(grid.bbox[k], grid.bbox[k + 1], n)
                  for name, (n, k) in list(axes.items())[: grid.dim]}  # fmt: skip
        ref_npz = references / f"{case.id}.npz"
        np.savez(ref_npz, **coords, **exact, secret=token_bytes)
        (hidden / "run-secret.txt").write_text(secrets_["hidden"])
        for path in (*dataset.rglob("*"), *hidden.rglob("*")):
            if path.is_file():
                path.chmod(0o644)

        # the canary: world-writable, so only the sandbox can keep it unchanged
        canary.chmod(0o777)
        canary_file = canary / "canary.txt"
        canary_file.write_text(f"canary {run_token}\n")
        canary_file.chmod(0o666)
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        opened.append(unix)
        unix.bind(str(canary / "sock"))
        (canary / "sock").chmod(0o777)
        unix.listen(16)
        tcp = socket.create_server(("127.0.0.1", 0), backlog=16)
        opened.append(tcp)
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        opened.append(abstract)
        abstract_name = f"pdeagent-adv-{run_token}"
        abstract.bind("\0" + abstract_name)
        abstract.listen(16)

        # a host process holding a secret in its environment (first, so its head shows it)
        env = {SECRET_ENV_VAR: secrets_["environment"], **os.environ}
        bystander = subprocess.Popen(
            ["sleep", "600"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        os.environ[SECRET_ENV_VAR] = secrets_["environment"]

        paths: dict[str, Path] = {
            "dataset_cases": dataset / "cases.jsonl",
            "reference_npy": references / "ref.npy",
            "reference_npz": ref_npz,
            "hidden_file": hidden / "run-secret.txt",
            "harness_source": pkg / "sandbox" / "local.py",
            "pipeline_source": pkg / "evaluation" / "pipeline.py",
            "harness_environ": Path(f"/proc/{os.getpid()}/environ"),
            "bystander_environ": Path(f"/proc/{bystander.pid}/environ"),
            "host_init_environ": Path("/proc/1/environ"),
        }
        lists = {
            "dataset_dir": dataset,
            "references_dir": references,
            "hidden_dir": hidden,
            "package_dir": pkg,
        }
        if repo is not None:
            lists["repo_dir"] = repo
            if (repo / "cases" / "pdeagent-v1.jsonl").is_file():
                paths["repo_cases"] = repo / "cases" / "pdeagent-v1.jsonl"
        for _ in range(50):  # the bystander has exec'd sleep (its environ is final)
            if _head(paths["bystander_environ"]).startswith(SECRET_ENV_VAR.encode()):
                break
            time.sleep(0.02)
        real_heads = {k: _head(p) for k, p in paths.items()}

        name = f"pdeagent-adv-{run_token}"
        outside_new = [
            str(canary / f"new-{run_token}"),
            f"/etc/{name}",
            f"/usr/{name}",
            f"/var/tmp/{name}-outside",
            str(pkg / f"{name}.py"),
            str(dataset / f"new-{run_token}"),
            f"/root/{name}",
            f"/tmp/{name}",
            f"/dev/shm/{name}",
        ]
        if repo is not None:
            outside_new.append(str(repo / name))
        # existing host files are only opened for appending (never written), so their
        # content is watched only where nobody else edits them
        existing = [paths["harness_source"], Path("/etc/passwd"), Path(sys.executable).resolve()]
        if "repo_cases" in paths:
            existing.append(paths["repo_cases"])
        outside_existing = [str(p) for p in existing]
        watched_paths = [*existing[1:], paths["dataset_cases"], paths["reference_npz"],
                         paths["hidden_file"]]  # fmt: skip
        watched = {str(p): _file_state(p) for p in watched_paths}

        params: dict[str, Any] = {
            "RUN_TOKEN": run_token,
            "PORT": tcp.getsockname()[1],
            "ABSTRACT_SOCKET": abstract_name,
            "UNIX_SOCKET": str(canary / "sock"),
            "HOST_ADDRS": _host_addresses(),
            "BYSTANDER_PID": bystander.pid,
            "HARNESS_PID": os.getpid(),
            "CANARY_DIR": str(canary),
            "CANARY_FILE": str(canary_file),
            "OUTSIDE_NEW": outside_new,
            "OUTSIDE_EXISTING": outside_existing,
            "REFERENCE_NPZ": str(ref_npz),
            "INCLUDE_TARGET": str(dataset / "cases.jsonl"),
            "PWNED_MARKER": str(scratch / f"pwned-{run_token}"),
            "SLEEP_SEC": 1.5,
            "GRID_POINTS": grid.nx * grid.ny * (grid.nz or 1),
        }
        yield _Traps(
            run_token=run_token, scratch=scratch, canary=canary, secrets=secrets_,
            paths=paths, lists=lists, real_heads=real_heads, outside_new=outside_new,
            outside_existing=outside_existing, watched=watched,
            canary_digest=_tree_digest(canary), tcp=tcp, abstract=abstract, unix=unix,
            bystander=bystander, params=params,
        )  # fmt: skip
    finally:
        if old_env is None:
            os.environ.pop(SECRET_ENV_VAR, None)
        else:
            os.environ[SECRET_ENV_VAR] = old_env
        for sock in opened:
            sock.close()
        if bystander is not None and bystander.poll() is None:
            bystander.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                bystander.wait(timeout=10)
        for path in (
            f"/etc/pdeagent-adv-{run_token}",
            f"/usr/pdeagent-adv-{run_token}",
            f"/var/tmp/pdeagent-adv-{run_token}-outside",
            f"/var/tmp/pdeagent-adv-{run_token}-daemon",
            f"/root/pdeagent-adv-{run_token}",
            f"/tmp/pdeagent-adv-{run_token}",
            f"/dev/shm/pdeagent-adv-{run_token}",
            str(pkg / f"pdeagent-adv-{run_token}.py"),
            *([str(repo / f"pdeagent-adv-{run_token}")] if repo is not None else []),
        ):
            with contextlib.suppress(OSError):
                os.unlink(path)
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(OSError):
            canary.chmod(0o755)
        shutil.rmtree(canary, ignore_errors=True)


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
    traps: _Traps
    recording: _RecordingSandbox
    watcher: _RunWatcher
    report: Report | None
    eval_root: Path
    limits: Limits
    params: dict[str, Any]
    sandbox_uid: int | None
    before: set[int]
    is_root: bool
    strict_user: bool
    problems: dict[str, list[str]] = field(
        factory=lambda: {
            k: []
            for k in ("verdict", "secrets", "processes", "files", "network", "harness", "attack")
        }
    )


def visible_scratch_dir() -> Path:
    """A host dir for traps that the sandbox does NOT hide by default (``/srv``, created
    when missing and the harness is root), so a test there proves the evaluation's own
    hide list works; ``/var/tmp`` (hidden by default) when ``/srv`` is not usable."""
    srv = Path("/srv")
    try:
        srv.mkdir(mode=0o755, exist_ok=True)
        if os.access(srv, os.W_OK) and srv.stat().st_mode & stat.S_IXOTH:
            return srv
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
    sandbox_uid = _sandbox_uid() if is_root else None
    outcome = AttackOutcome(
        attack.name, attack.language, track.name, sandbox.name, attack.expected, None, None
    )
    outcome.run_token = run_token
    try:
        scratch = Path(scratch_dir) if scratch_dir is not None else visible_scratch_dir()
        with _traps(case, scratch, run_token) as traps:
            params = dict(traps.params)
            params["ATTACK_NAME"] = attack.name
            params["READS"] = {k: str(traps.paths[k]) for k in attack.reads if k in traps.paths}
            params["LISTS"] = {k: str(traps.lists[k]) for k in attack.lists if k in traps.lists}
            source = render_source(attack, params, baseline)
            limits = attack.make_limits()
            markers = [run_token.encode(), *(str(p).encode() for p in (eval_root, traps.scratch))]
            watcher = _RunWatcher(markers, skip={os.getpid(), traps.bystander.pid})
            recording = _RecordingSandbox(sandbox, watcher)
            before = _pids_of_uid(sandbox_uid)
            report: Report | None = None
            t0 = time.monotonic()
            try:
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
                sandbox_uid, before, is_root, strict_user,
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
        found, unattributed = _leftover_processes(
            traps.run_token, roots, run.sandbox_uid, run.before, skip, run.watcher,
            run.strict_user,
        )  # fmt: skip
        outcome.unattributed = sorted(set(outcome.unattributed) | set(unattributed))
        left.update(found)
        return list(found.values())

    # processes: at once, when run() has returned
    problems["processes"] += leftovers()
    if outcome.backend == "docker":
        problems["processes"] += _docker_leftovers(roots) or []
    listing = _listing(eval_root)
    if attack.settle_sec:
        time.sleep(attack.settle_sec)
        problems["processes"] += [f"after {attack.settle_sec} s: {p}" for p in leftovers()]
    if _listing(eval_root) != listing:
        changed = set(_listing(eval_root).items()) ^ set(listing.items())
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
    findings = _read_findings(eval_root)
    outcome.findings = findings

    # secrets: in what the harness reports and keeps, and in what the program wrote
    needles = {k: _secret_forms(v) for k, v in traps.secrets.items()}
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
    budget = [_SCAN_TOTAL_BYTES]
    outcome.secrets_found += _scan_files(eval_root, needles, budget)
    outcome.secrets_found += [f"canary {w}" for w in _scan_files(traps.canary, needles, budget)]
    problems["secrets"] += [f"secret found in {w}" for w in outcome.secrets_found]
    reads = findings.get("reads") if isinstance(findings.get("reads"), dict) else {}
    for key, result in reads.items():
        if _leaked_read(result, traps.real_heads.get(key, b"")):
            problems["secrets"].append(f"the program read {key} ({traps.paths[key]})")
    imported = findings.get("import")
    if isinstance(imported, dict) and imported.get("ok"):
        if _leaked_read(imported.get("read"), traps.real_heads["harness_source"]):
            problems["secrets"].append("the program imported and read the harness source")
    lists = findings.get("lists") if isinstance(findings.get("lists"), dict) else {}
    for key, result in lists.items():
        names = set(result.get("names") or []) if isinstance(result, dict) else set()
        seen = names & set(LIST_TARGETS.get(key, ()))
        if seen:
            problems["secrets"].append(f"the program listed {key}: {sorted(seen)}")

    # files outside the work dir
    if _tree_digest(traps.canary) != traps.canary_digest:
        problems["files"].append(f"the canary dir {traps.canary} changed")
    for path in [*traps.outside_new, f"/var/tmp/pdeagent-adv-{traps.run_token}-daemon"]:
        if os.path.lexists(path):
            problems["files"].append(f"{path} was created on the host")
    for path, state in traps.watched.items():
        if _file_state(Path(path)) != state:
            problems["files"].append(f"{path} changed")

    # network
    for label, sock in (("TCP 127.0.0.1", traps.tcp), ("abstract unix", traps.abstract),
                        ("path unix", traps.unix)):  # fmt: skip
        accepted = _accept_count(sock)
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
        )  # fmt: skip
        try:
            problems["attack"] += attack.check(ctx)
        except Exception as exc:
            problems["attack"].append(f"check failed: {type(exc).__name__}: {exc}")

    # a sandbox that failed to stop the run's processes: stop them here
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


__all__ = [
    "ATTACKS",
    "Attack",
    "AttackOutcome",
    "CheckContext",
    "attacks_for",
    "get_attack",
    "render_source",
    "run_attack",
]
