"""``LocalSandbox``: Linux namespaces via util-linux ``unshare`` plus a trusted launcher.

Layout of one run::

    harness ── unshare --mount --net --pid --ipc --uts --fork --kill-child --mount-proc
                 └── python -I -S _launcher.py <fd>      (PID 1, root in the namespaces)
                        └── program (setsid, rlimits, no_new_privs, uid pdeagent-sbx)

* The harness starts ``unshare`` in a new session with an *empty* environment; the
  launcher gets its configuration on an inherited pipe and reports on another.
* The launcher builds the file-system view (see :mod:`pdeagent.sandbox._launcher`):
  private size-capped tmpfs on ``/tmp`` and ``/dev/shm``; hidden trees covered by
  empty read-only tmpfs; ``request.expose`` bound back read-only; the work dir bound
  back writable *at its own path* (so a work dir under ``/tmp`` or under a hidden
  tree still works); every other mount remounted read-only.
* On the wall-clock limit the harness SIGKILLs the launcher (PID 1 of the PID
  namespace); the kernel then kills every process of the namespace, including
  ``setsid`` daemons, before ``unshare`` can observe the launcher's death, so once
  ``run`` returns no process of the run exists.

When the harness is root the program runs as the dedicated system user
``pdeagent-sbx`` (see :mod:`pdeagent.sandbox.users`), and the work dir is chowned to
it for the run and back to its original owner afterwards (set-uid/gid bits
stripped). Otherwise ``unshare --user --map-root-user`` is added and the program
keeps the (already unprivileged) host uid.

Memory verdict: a heuristic until a cgroup backend exists (see
:func:`_memory_exceeded`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from pdeagent.sandbox.base import ExecutionResult, Limits, SandboxError, SandboxRequest
from pdeagent.sandbox.users import SANDBOX_USER, ensure_sandbox_user

LAUNCHER = Path(__file__).with_name("_launcher.py")
HIDE_ENV_VAR = "PDEAGENT_SANDBOX_HIDE"
"""Extra host paths to hide, separated by ``os.pathsep``."""

_SETUP_ALLOWANCE_SEC = 30.0
"""How long namespace setup may take before the wall-clock limit starts anyway."""
_BACKSTOP_GRACE_SEC = 5.0
"""The launcher kills the program itself this long after the wall limit (harness gone)."""
_MEMORY_MARKERS = (
    "MemoryError",
    "std::bad_alloc",
    "Cannot allocate memory",
    "out of memory",
    "Out of memory",
)


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def default_hidden_paths() -> list[Path]:
    """Paths hidden from every program by default.

    ``/root``, ``/home``, the ``pdeagent`` package source tree and, when the package
    is installed from a source checkout (``<repo>/core/pdeagent``), the whole
    checkout (cases, benchmarks, references, ...), plus ``$PDEAGENT_SANDBOX_HIDE``.
    """
    paths = [Path("/root"), Path("/home"), _package_dir()]
    pkg = _package_dir()
    repo = pkg.parents[1]
    if pkg.parent.name == "core" and (repo / "pyproject.toml").is_file():
        paths.append(repo)
    for entry in os.environ.get(HIDE_ENV_VAR, "").split(os.pathsep):
        if entry.strip():
            paths.append(Path(entry.strip()))
    return paths


def _untraversable_ancestor(path: Path) -> Path | None:
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


def _read_bounded(stream, limit: int, sink: dict) -> None:
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


def _memory_exceeded(
    exit_code: int | None, sig: int | None, timed_out: bool, stderr: str, rss: int, limits: Limits
) -> bool:
    """Heuristic (until a cgroup backend reports real OOM events).

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


def _chown_tree(root: Path, uid: int, gid: int, strip_setid: bool) -> None:
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


class LocalSandbox:
    """Runs a program in fresh mount/net/pid namespaces created by ``unshare``."""

    name = "local"

    def __init__(
        self,
        hidden_paths: Iterable[Path | str] | None = None,
        *,
        extra_hidden_paths: Iterable[Path | str] = (),
        unshare_path: Path | str | None = None,
        user: str = SANDBOX_USER,
    ) -> None:
        base = default_hidden_paths() if hidden_paths is None else list(hidden_paths)
        self.hidden_paths = [Path(p) for p in [*base, *extra_hidden_paths]]
        self.unshare_path = Path(unshare_path or shutil.which("unshare") or "/usr/bin/unshare")
        self.user = user

    # -- helpers -------------------------------------------------------------------

    def _command(self, cfg_fd: int, as_root: bool) -> list[str]:
        if not (self.unshare_path.is_file() and os.access(self.unshare_path, os.X_OK)):
            raise SandboxError(f"unshare not available at {self.unshare_path}; refusing to run")
        python = sys.executable
        if not python:
            raise SandboxError("cannot locate a Python interpreter for the sandbox launcher")
        cmd = [str(self.unshare_path)]
        if not as_root:
            cmd += ["--user", "--map-root-user"]
        cmd += ["--mount", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
        cmd += ["--mount-proc", "--propagation", "private", "--"]
        cmd += [python, "-I", "-S", str(LAUNCHER), str(cfg_fd)]
        return cmd

    def _config(self, request: SandboxRequest, workdir: Path, uid, gid, result_fd: int) -> dict:
        limits = request.limits
        expose = []
        for p in request.expose:
            resolved = Path(p).resolve()
            if not resolved.exists():
                raise SandboxError(f"exposed path does not exist: {p}")
            expose.append(str(resolved))
        hide = []
        for p in [*self.hidden_paths, *request.hide]:
            resolved = Path(p).absolute().resolve()
            if resolved == Path("/"):
                raise SandboxError("refusing to hide /")
            hide.append(str(resolved))
        if uid is not None:
            # The program runs as another user: an ancestor it cannot traverse (e.g. a
            # 0700 temp dir) is covered like a hidden tree, and the work dir and exposed
            # paths are bound back inside it. Nothing on the host changes.
            for target in [workdir, *map(Path, expose), *request.writable]:
                blocker = _untraversable_ancestor(target)
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
            "result_fd": result_fd,
            "tmpfs_bytes": limits.tmpfs_bytes,
            "backstop_sec": limits.wall_time_sec + _BACKSTOP_GRACE_SEC,
            "limits": {
                "cpu_time_sec": limits.effective_cpu_time(),
                "address_space_bytes": limits.address_space_bytes,
                "file_size_bytes": limits.file_size_bytes,
                "open_files": limits.open_files,
                "processes": limits.processes,
            },
        }

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        """SIGKILL the launcher (PID 1 of the namespace), then wait for ``unshare``.

        ``unshare`` reaps the launcher only after the kernel has killed every other
        process of the PID namespace, so ``proc.wait()`` returning means all are dead.
        """
        launcher = None
        try:
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
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
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    # -- the protocol --------------------------------------------------------------

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

        # parent keeps: cfg_w (config out), res_r (results in), out_r/err_r (program output)
        fds: dict[str, int] = {}
        for name in ("cfg", "res", "out", "err"):
            fds[name + "_r"], fds[name + "_w"] = os.pipe()
        child_fds = (fds["cfg_r"], fds["res_w"], fds["out_w"], fds["err_w"])
        extra_dirs = [Path(p).absolute().resolve() for p in request.writable]
        for extra in extra_dirs:
            if not extra.is_dir() or extra.is_symlink():
                raise SandboxError(f"writable dir does not exist: {extra}")
        owners = {d: d.stat() for d in [workdir, *extra_dirs]}
        chowned = False
        proc = None
        try:
            cmd = self._command(fds["cfg_r"], as_root)
            cfg = self._config(request, workdir, uid, gid, fds["res_w"])
            cfg["stdout_fd"], cfg["stderr_fd"] = fds["out_w"], fds["err_w"]
            if as_root:
                chowned = True
                for d in owners:
                    _chown_tree(d, uid, gid, strip_setid=False)
            try:
                proc = subprocess.Popen(
                    cmd,
                    env={},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,  # diagnostics of unshare and the launcher
                    pass_fds=child_fds,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SandboxError(f"cannot start {cmd[0]}: {exc}") from exc
            for fd in child_fds:
                os.close(fd)
            for key in ("cfg_r", "res_w", "out_w", "err_w"):
                del fds[key]
            return self._supervise(proc, fds, cfg, request.limits)
        finally:
            if proc is not None and proc.poll() is None:
                self._kill(proc)
            for fd in fds.values():
                try:
                    os.close(fd)
                except OSError:
                    pass
            if proc is not None and proc.stderr is not None:
                proc.stderr.close()
            if chowned:
                for d, st in owners.items():
                    _chown_tree(d, st.st_uid, st.st_gid, strip_setid=True)

    def _supervise(
        self, proc: subprocess.Popen, fds: dict[str, int], cfg: dict, limits: Limits
    ) -> ExecutionResult:
        t_launch = time.monotonic()
        out: dict = {}
        err: dict = {}
        diag: dict = {}
        events: list[dict] = []
        started = threading.Event()
        t_started: list[float] = []

        def read_results() -> None:
            with os.fdopen(fds["res_r"], "rb", closefd=False) as fh:
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

        def read_fd(fd: int, limit: int, sink: dict) -> None:
            with os.fdopen(fd, "rb", buffering=0, closefd=False) as fh:
                _read_bounded(fh, limit, sink)

        threads = [
            threading.Thread(target=read_fd, args=(fds["out_r"], limits.output_bytes, out)),
            threading.Thread(target=read_fd, args=(fds["err_r"], limits.output_bytes, err)),
            threading.Thread(target=_read_bounded, args=(proc.stderr, 65536, diag)),
            threading.Thread(target=read_results),
        ]
        for t in threads:
            t.daemon = True
            t.start()

        try:
            data = json.dumps(cfg).encode()
            while data:
                data = data[os.write(fds["cfg_w"], data) :]
        except OSError:
            pass  # the launcher died early; reported below from its diagnostics
        finally:
            os.close(fds.pop("cfg_w"))

        killed = False
        started.wait(timeout=_SETUP_ALLOWANCE_SEC + limits.wall_time_sec)
        start = t_started[0] if t_started else t_launch
        deadline = start + limits.wall_time_sec
        if not started.is_set():
            deadline = time.monotonic()  # setup hung
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            killed = True
            self._kill(proc)
        t_end = time.monotonic()
        for t in threads:
            t.join(timeout=10)
        if any(t.is_alive() for t in threads):
            raise SandboxError("sandbox output pipes still open after the namespace died")

        stdout = out.get("data", b"").decode(errors="replace")
        stderr = err.get("data", b"").decode(errors="replace")
        diagnostics = diag.get("data", b"").decode(errors="replace").strip()
        final = next((e for e in events if e.get("event") in ("exit", "error")), None)
        if final is not None and final["event"] == "error":
            raise SandboxError(f"sandbox launcher failed: {final.get('message')}")
        if final is None and not (killed and t_started):
            raise SandboxError(
                f"sandbox could not start (unshare exit {proc.returncode}): "
                f"{diagnostics[-2000:] or 'no diagnostics'}"
            )
        if final is None:  # killed by the harness on the wall-clock limit
            exit_code, sig, wall, rss, timed_out = None, signal.SIGKILL, t_end - start, 0, True
        else:
            exit_code, sig = final["exit_code"], final["signal"]
            wall, rss = float(final["wall_time_sec"]), int(final.get("max_rss_bytes", 0))
            timed_out = bool(final.get("timed_out")) or killed
        return ExecutionResult(
            exit_code=exit_code,
            signal=sig,
            timed_out=timed_out,
            memory_exceeded=_memory_exceeded(exit_code, sig, timed_out, stderr, rss, limits),
            wall_time_sec=wall,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=bool(out.get("truncated")),
            stderr_truncated=bool(err.get("truncated")),
            backend=self.name,
        )


def default_sandbox() -> LocalSandbox:
    """The best sandbox available here (for now always :class:`LocalSandbox`)."""
    return LocalSandbox()
