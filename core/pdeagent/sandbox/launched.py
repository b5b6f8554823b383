"""What every backend shares: a trusted launcher inside, a supervisor outside.

Each backend builds an isolated world its own way (``unshare`` namespaces,
bubblewrap, a Docker container) and starts :mod:`pdeagent.sandbox._launcher` in it
as that world's PID 1. The launcher forks the program with rlimits, a new session,
no new privileges and the sandbox user's uid/gid, and reports ``started`` and the
program's ``exit`` as JSON lines. The supervisor here (:meth:`LauncherSandbox.run`)
feeds the launcher its config, reads the program's stdout/stderr (bounded), enforces
the wall-clock limit from the ``started`` event, watches the work dir's size, and
after the run kills anything left (the world's PID 1 dies, so the kernel kills every
process in it; where the run has a cgroup, its members are killed and checked too).

Subclasses implement :meth:`LauncherSandbox._start`, returning a :class:`Handle`.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from pdeagent.sandbox.base import ExecutionResult, Limits, SandboxError, SandboxRequest
from pdeagent.sandbox.cgroups import RunCgroup
from pdeagent.sandbox.users import SANDBOX_USER, ensure_sandbox_user

LAUNCHER = Path(__file__).with_name("_launcher.py")
HIDE_ENV_VAR = "PDEAGENT_SANDBOX_HIDE"
"""Extra host paths to hide, separated by ``os.pathsep``."""

SETUP_ALLOWANCE_SEC = 60.0
"""How long setting up the world may take before the wall-clock limit starts anyway."""
BACKSTOP_GRACE_SEC = 5.0
"""The launcher kills the program itself this long after the wall limit (harness gone)."""
SHARED_NPROC = 4096
"""RLIMIT_NPROC when the run's own cgroup or container caps its processes: the rlimit
counts every process of the sandbox user on the host, so at ``Limits.processes`` one
run's fork bomb would starve the runs of other workers; the per-run cap does the work."""
WATCH_INTERVAL_SEC = 0.2
"""How often the work dir's size is checked while the program runs."""
_MEMORY_MARKERS = (
    "MemoryError",
    "std::bad_alloc",
    "Cannot allocate memory",
    "out of memory",
    "Out of memory",
)


def launcher_interpreter() -> tuple[str, Path]:
    """The interpreter that runs the launcher (``-I -S``: only its standard library is
    needed) and the prefix a backend must show read-only for it."""
    python = os.path.realpath(sys.executable) if sys.executable else ""
    if not python:
        raise SandboxError("cannot locate a Python interpreter for the sandbox launcher")
    return python, Path(sys.base_prefix).resolve()


def probe(cmd: list[str], what: str) -> str | None:
    """Run a trial command of a backend: None when it succeeds, else why not (one line)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {Path(cmd[0]).name}: {exc}"
    if proc.returncode != 0:
        return f"{what}: {proc.stderr.strip()[-300:] or f'exit {proc.returncode}'}"
    return None


SHOWN_TOP_LEVEL = frozenset(
    {"usr", "etc", "opt", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc",
     "sys", "tmp"}
)  # fmt: skip
"""The top-level entries of ``/`` a program sees (``/tmp`` as a private tmpfs). The rest
(``/var``, ``/run``, ``/srv``, ``/mnt``, ``/home``, ...) is covered by empty read-only
tmpfs, with the work dir and exposed paths bound back in: a unix socket file is
connectable through a read-only mount and the network namespace does not cover socket
files, so every world-writable socket outside these trees (D-Bus, journald, a service's
socket in ``/srv``) stays out of reach. The docker backend mounts only these trees."""


def unshown_top_level() -> list[Path]:
    """The top-level entries of ``/`` that every backend hides."""
    try:
        names = sorted(os.listdir("/"))
    except OSError:
        return []
    return [Path("/") / n for n in names if n not in SHOWN_TOP_LEVEL]


def under(path: str, root: str) -> bool:
    """``path`` equals ``root`` or lies inside it (strings of absolute paths)."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def depth(path: str) -> int:
    """How many components ``path`` has (``/`` has none)."""
    return len([p for p in path.split("/") if p])


def source_checkout() -> tuple[Path, Path | None]:
    """The ``pdeagent`` package dir, and the source checkout around it (``<repo>`` when
    the package is ``<repo>/core/pdeagent`` beside a ``pyproject.toml``) or None."""
    pkg = Path(__file__).resolve().parents[1]
    repo = pkg.parents[1]
    return pkg, repo if pkg.parent.name == "core" and (repo / "pyproject.toml").is_file() else None


def default_hidden_paths() -> list[Path]:
    """Paths hidden from every program by default.

    ``/root``, ``/home``, the ``pdeagent`` package source tree and, when the package
    is installed from a source checkout (``<repo>/core/pdeagent``), the whole
    checkout (cases, benchmarks, references, ...), plus ``$PDEAGENT_SANDBOX_HIDE``.
    Every backend also hides every top-level entry of ``/`` outside
    :data:`SHOWN_TOP_LEVEL` (see :func:`unshown_top_level`).
    """
    pkg, repo = source_checkout()
    paths = [Path("/root"), Path("/home"), pkg]
    if repo is not None:
        paths.append(repo)
    for entry in os.environ.get(HIDE_ENV_VAR, "").split(os.pathsep):
        if entry.strip():
            paths.append(Path(entry.strip()))
    return paths


def untraversable_ancestor(path: Path) -> Path | None:
    """The top-most proper ancestor of ``path`` (below ``/``) that others cannot traverse."""
    for ancestor in reversed(path.parents[:-1]):
        try:
            if not ancestor.stat().st_mode & stat.S_IXOTH:
                return ancestor
        except OSError:
            return None
    return None


def python_runtime_expose(python: Path | str | None = None) -> list[Path]:
    """Paths to expose so that ``python`` (default: this interpreter) runs in the sandbox.

    For a venv interpreter that is the venv root and the real interpreter prefix
    the venv's ``bin/python`` symlinks into (e.g. ``/root/.pyenv/versions/3.12.1``).
    """
    exe = Path(python if python is not None else sys.executable).absolute()
    paths: list[Path] = []
    root = exe.parent.parent
    if (root / "pyvenv.cfg").is_file():
        paths.append(root)
    real_prefix = exe.resolve().parents[1]
    if real_prefix not in paths:
        paths.append(real_prefix)
    if python is None and Path(sys.base_prefix) not in paths:
        paths.append(Path(sys.base_prefix))
    return paths


def read_bounded(stream, limit: int, sink: dict) -> None:
    """Read ``stream`` to EOF; keep the first ``limit`` bytes, drop (but drain) the rest."""
    kept = bytearray()
    truncated = False
    try:
        while chunk := stream.read(65536):
            room = limit - len(kept)
            if room > 0:
                kept += chunk[:room]
            if len(chunk) > max(room, 0):
                truncated = True
    except (OSError, ValueError):
        pass
    sink["data"] = bytes(kept)
    sink["truncated"] = truncated


def memory_heuristic(
    exit_code: int | None, sig: int | None, timed_out: bool, stderr: str, rss: int, limits: Limits
) -> bool:
    """Memory verdict where no kernel count exists (no cgroup, no container).

    True when the program failed (non-zero exit or a signal) and the tail of its
    stderr names an allocation failure, or when it died of SIGKILL/SIGSEGV (not a
    timeout) with a peak RSS of at least 80 % of its address-space limit.
    """
    if timed_out or (exit_code == 0 and sig is None):
        return False
    tail = stderr[-4096:]
    if any(marker in tail for marker in _MEMORY_MARKERS):
        return True
    return sig in (signal.SIGKILL, signal.SIGSEGV) and rss >= 0.8 * limits.address_space_bytes


def chown_tree(root: Path, uid: int, gid: int, strip_setid: bool) -> None:
    """``lchown -R`` without following symlinks; optionally strip set-uid/gid bits."""
    os.lchown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                os.lchown(path, uid, gid)
                if strip_setid:
                    st = os.lstat(path)
                    if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                        os.chmod(path, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            except FileNotFoundError:
                pass


def workdir_usage(root: Path, max_entries: int) -> tuple[int, int]:
    """(allocated bytes, entries) under ``root``; stops counting past ``max_entries``."""
    total = entries = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    if entries > max_entries:
                        return total, entries
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
        except OSError:
            continue
    return total, entries


class Handle:
    """A started world running the launcher (what a backend's ``_start`` returns)."""

    result_fd: int
    """Harness end of the launcher's JSON-lines result channel."""
    stdout_fd: int
    stderr_fd: int

    def wait(self, timeout: float | None) -> bool:
        """Wait for the world to end; True when it ended within ``timeout``."""
        raise NotImplementedError

    def kill(self) -> None:
        """Kill the world's PID 1 (and with it every process in it) and wait for it."""
        raise NotImplementedError

    def diagnostics(self) -> str:
        """The backend's and launcher's own messages (not the program's output)."""
        return ""

    def describe_exit(self) -> str:
        return ""

    def oom_killed(self) -> bool:
        """True when the backend's own accounting says the run hit its memory cap."""
        return False

    def close(self) -> None:
        """Release everything (after the world ended)."""


class PopenHandle(Handle):
    """A world started as a host process (``unshare`` or ``bwrap``) whose child is the
    launcher; the config goes down an inherited pipe, results and output come back up
    inherited pipes."""

    def __init__(self, argv: list[str], cfg: dict) -> None:
        fds: dict[str, int] = {}
        try:
            for name in ("cfg", "res", "out", "err"):
                fds[name + "_r"], fds[name + "_w"] = os.pipe()
            child_fds = (fds["cfg_r"], fds["res_w"], fds["out_w"], fds["err_w"])
            cfg = {**cfg, "result_fd": fds["res_w"], "stdout_fd": fds["out_w"]}
            cfg["stderr_fd"] = fds["err_w"]
            argv = [fds["cfg_r"] if a == "{cfg_fd}" else a for a in argv]
            try:
                self.proc = subprocess.Popen(
                    [str(a) for a in argv],
                    env={},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,  # the backend's and the launcher's diagnostics
                    pass_fds=child_fds,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SandboxError(f"cannot start {argv[0]}: {exc}") from exc
        except BaseException:
            for fd in fds.values():
                os.close(fd)
            raise
        for fd in child_fds:
            os.close(fd)
        self.result_fd, self.stdout_fd, self.stderr_fd = fds["res_r"], fds["out_r"], fds["err_r"]
        self._diag: dict = {}
        self._diag_thread = threading.Thread(
            target=read_bounded, args=(self.proc.stderr, 65536, self._diag), daemon=True
        )
        self._diag_thread.start()
        data = json.dumps(cfg).encode()
        cfg_w = fds["cfg_w"]

        def feed() -> None:
            nonlocal data
            try:
                while data:
                    data = data[os.write(cfg_w, data) :]
            except OSError:
                pass  # the launcher died early; reported from its diagnostics
            finally:
                os.close(cfg_w)

        threading.Thread(target=feed, daemon=True).start()

    def wait(self, timeout: float | None) -> bool:
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def kill(self) -> None:
        """SIGKILL the launcher (PID 1 of the PID namespace), then wait for its parent.

        The parent reaps the launcher only after the kernel has killed every other
        process of the namespace, so the wait returning means all are dead.
        """
        launcher = None
        try:
            task = f"/proc/{self.proc.pid}/task/{self.proc.pid}/children"
            children = Path(task).read_text().split()
            if children:
                launcher = int(children[0])
        except (OSError, ValueError):
            pass
        if launcher is not None:
            try:
                pidfd = os.pidfd_open(launcher)
            except OSError:
                pidfd = None
            if pidfd is not None:
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                except OSError:
                    pass
                finally:
                    os.close(pidfd)
        if self.wait(10):
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def diagnostics(self) -> str:
        self._diag_thread.join(timeout=5)
        return self._diag.get("data", b"").decode(errors="replace")

    def describe_exit(self) -> str:
        return f"{Path(str(self.proc.args[0])).name} exit {self.proc.returncode}"

    def close(self) -> None:
        for fd in (self.result_fd, self.stdout_fd, self.stderr_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr is not None:
            self._diag_thread.join(timeout=5)
            self.proc.stderr.close()


class LauncherSandbox:
    """Base of the backends that run :mod:`pdeagent.sandbox._launcher` in their world."""

    name = "launcher"
    builds_view = False
    """True when the launcher builds the file-system view itself (local)."""
    uses_cgroups = True
    """True when the run gets its own cgroup here (local, bwrap; docker has its own)."""
    caps_processes = False
    """True when the backend itself caps the run's processes (docker's pids limit)."""

    def __init__(
        self,
        hidden_paths: Iterable[Path | str] | None = None,
        *,
        extra_hidden_paths: Iterable[Path | str] = (),
        user: str = SANDBOX_USER,
    ) -> None:
        base = default_hidden_paths() if hidden_paths is None else list(hidden_paths)
        self.hidden_paths = [Path(p) for p in [*base, *extra_hidden_paths]]
        self.user = user

    # -- what backends implement ---------------------------------------------------

    def _start(self, cfg: dict, cgroup: RunCgroup | None, limits: Limits) -> Handle:
        raise NotImplementedError

    # -- shared --------------------------------------------------------------------

    def _config(self, request: SandboxRequest, workdir: Path, uid, gid) -> dict:
        limits = request.limits
        expose = []
        for p in request.expose:
            resolved = Path(p).resolve()
            if not resolved.exists():
                raise SandboxError(f"exposed path does not exist: {p}")
            expose.append(str(resolved))
        hide = []
        for p in [*unshown_top_level(), *self.hidden_paths, *request.hide]:
            resolved = Path(p).absolute().resolve()
            if resolved == Path("/"):
                raise SandboxError("refusing to hide /")
            hide.append(str(resolved))
        if uid is not None:
            # The program runs as another user: an ancestor it cannot traverse (e.g. a
            # 0700 temp dir) is covered like a hidden tree, and the work dir and exposed
            # paths are bound back inside it. Nothing on the host changes.
            for target in [workdir, *map(Path, expose), *request.writable]:
                blocker = untraversable_ancestor(target)
                if blocker is not None and str(blocker) not in hide:
                    hide.append(str(blocker))
        env = dict(request.env)
        env.setdefault("HOME", str(workdir))
        env.setdefault("TMPDIR", "/tmp")
        env.setdefault("PATH", "/usr/bin:/bin")
        return {
            "argv": [str(a) for a in request.argv],
            "workdir": str(workdir),
            "writable": [str(Path(p).absolute().resolve()) for p in request.writable],
            "env": env,
            "expose": expose,
            "hide": hide,
            "uid": uid,
            "gid": gid,
            "build_view": self.builds_view,
            "network": bool(request.network),
            "tmpfs_bytes": limits.tmpfs_bytes,
            "backstop_sec": limits.wall_time_sec + BACKSTOP_GRACE_SEC,
            "limits": {
                "cpu_time_sec": limits.effective_cpu_time(),
                "address_space_bytes": limits.address_space_bytes,
                "file_size_bytes": limits.file_size_bytes,
                "open_files": limits.open_files,
                "processes": limits.processes,
            },
        }

    def run(self, request: SandboxRequest) -> ExecutionResult:
        if not request.argv:
            raise SandboxError("empty argv")
        workdir = Path(request.workdir).absolute().resolve()
        if not workdir.is_dir():
            raise SandboxError(f"work dir does not exist: {request.workdir}")
        as_root = os.geteuid() == 0
        uid = gid = None
        if as_root:
            uid, gid = ensure_sandbox_user(self.user)
        extra_dirs = [Path(p).absolute().resolve() for p in request.writable]
        for extra in extra_dirs:
            if not extra.is_dir() or extra.is_symlink():
                raise SandboxError(f"writable dir does not exist: {extra}")
        owners = {d: d.stat() for d in [workdir, *extra_dirs]}
        cfg = self._config(request, workdir, uid, gid)
        chowned = False
        cgroup: RunCgroup | None = None
        handle: Handle | None = None
        try:
            if self.uses_cgroups:
                cgroup = RunCgroup.create(request.limits)
            if cgroup is not None or self.caps_processes:
                cfg["limits"]["processes"] = max(SHARED_NPROC, request.limits.processes)
            if as_root:
                chowned = True
                for d in owners:
                    chown_tree(d, uid, gid, strip_setid=False)
            handle = self._start(cfg, cgroup, request.limits)
            return self._supervise(handle, request.limits, workdir, cgroup, extra_dirs)
        finally:
            if handle is not None:
                try:
                    if not handle.wait(0):
                        handle.kill()
                finally:
                    handle.close()
            if cgroup is not None:
                cgroup.close()
            if chowned:
                for d, st in owners.items():
                    chown_tree(d, st.st_uid, st.st_gid, strip_setid=True)

    def _supervise(
        self,
        handle: Handle,
        limits: Limits,
        workdir: Path,
        cgroup: RunCgroup | None,
        extra_dirs: list[Path] | None = None,
    ) -> ExecutionResult:
        t_launch = time.monotonic()
        out: dict = {}
        err: dict = {}
        events: list[dict] = []
        started = threading.Event()
        t_started: list[float] = []

        def read_results() -> None:
            with os.fdopen(handle.result_fd, "rb", closefd=False) as fh:
                for line in fh:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if event.get("event") == "started":
                        t_started.append(time.monotonic())
                    events.append(event)
                    started.set()
            started.set()

        def read_fd(fd: int, sink: dict) -> None:
            with os.fdopen(fd, "rb", buffering=0, closefd=False) as fh:
                read_bounded(fh, limits.output_bytes, sink)

        threads = [
            threading.Thread(target=read_fd, args=(handle.stdout_fd, out)),
            threading.Thread(target=read_fd, args=(handle.stderr_fd, err)),
            threading.Thread(target=read_results),
        ]
        for t in threads:
            t.daemon = True
            t.start()

        killed = False
        violation: str | None = None
        setup_deadline = t_launch + SETUP_ALLOWANCE_SEC + limits.wall_time_sec
        while not started.wait(0.05):
            if handle.wait(0.05):  # the world ended before the program started
                started.wait(5)  # the result reader drains what the launcher said
                break
            if time.monotonic() > setup_deadline:
                break
        start = t_started[0] if t_started else t_launch
        deadline = start + limits.wall_time_sec
        if not started.is_set():
            deadline = time.monotonic()  # setup hung
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed = True
                handle.kill()
                break
            if handle.wait(min(remaining, WATCH_INTERVAL_SEC)):
                break
            size = entries = 0
            for watched in (workdir, *(extra_dirs or [])):  # writable dirs share the budget
                used, count = workdir_usage(watched, limits.workdir_entries)
                size, entries = size + used, entries + count
            if size > limits.workdir_bytes or entries > limits.workdir_entries:
                violation = (
                    f"the work dir and caches outgrew their limit ({size / 2**20:.0f} MiB in "
                    f"{entries} "
                    f"entries; limit {limits.workdir_bytes / 2**20:.0f} MiB, "
                    f"{limits.workdir_entries} entries)"
                )
                handle.kill()
                break
        t_end = time.monotonic()
        oom_kills = cgroup.oom_kills() if cgroup is not None else 0
        if cgroup is not None:
            cgroup.close()  # nothing of the run may outlive it (the namespace is gone too)
        for t in threads:
            t.join(timeout=10)
        if any(t.is_alive() for t in threads):
            raise SandboxError("sandbox output pipes still open after the run ended")

        stdout = out.get("data", b"").decode(errors="replace")
        stderr = err.get("data", b"").decode(errors="replace")
        final = next((e for e in events if e.get("event") in ("exit", "error")), None)
        if final is not None and final["event"] == "error":
            raise SandboxError(f"sandbox launcher failed: {final.get('message')}")
        if final is None and not ((killed or violation) and t_started):
            diagnostics = handle.diagnostics().strip()
            raise SandboxError(
                f"sandbox could not start ({handle.describe_exit()}): "
                f"{diagnostics[-2000:] or 'no diagnostics'}"
            )
        if final is None:  # killed by the harness (wall clock or a violation)
            exit_code, sig, wall, rss = None, signal.SIGKILL, t_end - start, 0
            timed_out = killed
        else:
            exit_code, sig = final["exit_code"], final["signal"]
            wall, rss = float(final["wall_time_sec"]), int(final.get("max_rss_bytes", 0))
            timed_out = bool(final.get("timed_out")) or killed
        enforced = handle.oom_killed() or oom_kills > 0
        memory = enforced or memory_heuristic(exit_code, sig, timed_out, stderr, rss, limits)
        return ExecutionResult(
            exit_code=exit_code,
            signal=sig,
            timed_out=timed_out and violation is None,
            memory_exceeded=memory and violation is None,
            wall_time_sec=wall,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=bool(out.get("truncated")),
            stderr_truncated=bool(err.get("truncated")),
            backend=self.name,
            violation=violation,
            memory_enforced=enforced and violation is None,
        )
