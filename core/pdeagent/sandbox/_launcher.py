"""Trusted launcher: PID 1 of the sandbox's fresh mount/net/pid namespaces.

Run by the sandbox backends as ``python -I -S _launcher.py <config-fd>`` (local,
bwrap: the config arrives on an inherited pipe, results and program output leave on
inherited pipes) or ``python -I -S _launcher.py <config-file>`` (docker: the config is
a root-only file, results and output leave through FIFOs the harness reads), with an
empty environment, as (namespace or container) root. Standard library only; it is
never imported, only executed as a script.

``build_view`` in the config says whether the launcher builds the file-system view
itself (local) or finds it built by the backend (bwrap, docker).

Steps: read the JSON config from the inherited fd; build the file-system view
(private tmpfs /tmp and /dev/shm, hidden trees covered by empty read-only tmpfs,
exposed paths and the work dir bound back in, everything else read-only); fork the
program with rlimits, a new session, no new privileges and the sandbox user's
uid/gid; report ``{"event": "started"}`` and finally one ``{"event": "exit", ...}``
JSON line on the result fd; exit, which makes the kernel kill every process left
in the PID namespace. Setup failures are reported as ``{"event": "error"}``.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import resource
import select
import signal
import sys
import time
import traceback

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_RELATIME = 1 << 21
PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong]
_libc.mount.argtypes += [ctypes.c_void_p]


class SetupError(Exception):
    pass


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None):
    rc = _libc.mount(
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        flags,
        ctypes.c_char_p(data.encode()) if data else None,
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target} (flags {flags:#x}): {os.strerror(err)}")


def _preserved_flags(path: str) -> int:
    """Per-mount flags of ``path`` that a bind remount must keep (locked in user namespaces)."""
    f = os.statvfs(path).f_flag
    flags = 0
    for st, ms in (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
        (os.ST_NOATIME, MS_NOATIME),
        (os.ST_NODIRATIME, MS_NODIRATIME),
        (os.ST_RELATIME, MS_RELATIME),
    ):
        if f & st:
            flags |= ms
    return flags


def _under(path: str, root: str) -> bool:
    """``path`` equals ``root`` or lies inside it."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len([p for p in path.split("/") if p])


def _make_target(path: str, is_dir: bool) -> None:
    if os.path.lexists(path):
        return
    os.makedirs(os.path.dirname(path) or "/", mode=0o755, exist_ok=True)
    if is_dir:
        os.mkdir(path, 0o755)
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            raw = line.split()[4]
            # mountinfo escapes space, tab, newline and backslash as \ooo
            points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), raw))
    return points


def _hide(path: str, read_only: bool) -> bool:
    """Cover ``path``: an empty tmpfs over a directory, /dev/null over a file.

    Returns True when a directory tmpfs was mounted that is still writable.
    """
    if os.path.isdir(path) and not os.path.islink(path):
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (MS_RDONLY if read_only else 0)
        mount("tmpfs", path, "tmpfs", flags, "size=1m,mode=755")
        return not read_only
    if os.path.isfile(path) and not os.path.islink(path):
        mount("/dev/null", path, None, MS_BIND)
        mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return False


def build_filesystem(cfg: dict) -> None:
    """Construct the sandbox's view of the file system (in our private mount namespace)."""
    workdir = cfg["workdir"]
    tmpfs_opts = f"size={int(cfg['tmpfs_bytes'])},mode=1777"
    # O_PATH handles taken before anything is covered: bind sources after hiding.
    binds = []  # (target, fd, writable, is_dir)
    for path in cfg["expose"]:
        binds.append((path, os.open(path, os.O_PATH), False, os.path.isdir(path)))
    binds.append((workdir, os.open(workdir, os.O_PATH | os.O_DIRECTORY), True, True))
    for extra in cfg.get("writable", []):
        binds.append((extra, os.open(extra, os.O_PATH | os.O_DIRECTORY), True, True))
    binds.sort(key=lambda b: (_depth(b[0]), b[2]))  # parents first; workdir after same-path

    # a. private, size-capped /tmp and /dev/shm
    for path in ("/tmp", "/dev/shm"):
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts)

    # b. hide: an empty tmpfs (later read-only) over each top-level hidden directory
    hides = sorted({h for h in cfg["hide"] if os.path.lexists(h)}, key=_depth)
    top_hides: list[str] = []
    for path in hides:
        if any(_under(path, t) for t in top_hides):
            continue
        if _hide(path, read_only=False):
            top_hides.append(path)

    # c./d. bind exposed paths (read-only) and the work dir (writable) back in
    for target, fd, writable, is_dir in binds:
        _make_target(target, is_dir)
        mount(f"/proc/self/fd/{fd}", target, None, MS_BIND)
        flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | _preserved_flags(target)
        mount("none", target, None, flags if writable else flags | MS_RDONLY)
        os.close(fd)

    # hidden trees inside exposed ones stay hidden
    bind_targets = [b[0] for b in binds]
    for path in hides:
        if path not in bind_targets and any(_under(path, t) for t in bind_targets):
            _hide(path, read_only=True)

    for path in top_hides:
        flags = MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        mount("none", path, None, flags, "mode=755")

    # everything else read-only (bind remounts only change this namespace's mounts)
    writable = {"/tmp", "/dev/shm", workdir, *cfg.get("writable", [])}
    for point in _mount_points():
        if point in writable or _under(point, "/proc"):
            continue
        try:
            if os.statvfs(point).f_flag & os.ST_RDONLY:
                continue
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | _preserved_flags(point)
            mount("none", point, None, flags)
        except OSError as exc:
            # shadowed by a covering mount (not reachable) or not a mount root
            if exc.errno not in (errno.ENOENT, errno.EINVAL, errno.ENOTDIR):
                raise
    if not os.statvfs("/").f_flag & os.ST_RDONLY:
        raise SetupError("root file system is still writable")
    if os.statvfs(workdir).f_flag & os.ST_RDONLY:
        raise SetupError("work dir is not writable")


def _child(cfg: dict, err_w: int) -> None:
    """In the forked child: never returns."""
    stage = "setup"
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGXCPU):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.dup2(cfg["stdout_fd"], 1)
        os.dup2(cfg["stderr_fd"], 2)
        os.closerange(3, err_w)
        os.closerange(err_w + 1, 1 << 16)
        lim = cfg["limits"]
        cpu = int(lim["cpu_time_sec"])
        for res, value in (
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_FSIZE, (lim["file_size_bytes"],) * 2),
            (resource.RLIMIT_NOFILE, (lim["open_files"],) * 2),
            (resource.RLIMIT_NPROC, (lim["processes"],) * 2),
            (resource.RLIMIT_AS, (lim["address_space_bytes"],) * 2),
        ):
            resource.setrlimit(res, value)
        os.setsid()
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        uid, gid = cfg["uid"], cfg["gid"]
        if uid is not None:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            if os.getresuid() != (uid, uid, uid) or os.getgroups():
                raise SetupError("privilege drop did not take effect")
            try:
                os.setuid(0)
            except PermissionError:
                pass
            else:
                raise SetupError("could regain root after dropping privileges")
        os.chdir(cfg["workdir"])  # with the program's own permissions
        os.umask(0o022)
        stage = "exec"
        argv = cfg["argv"]
        os.execvpe(argv[0], argv, cfg["env"])
    except BaseException as exc:
        msg = f"{stage}\0{type(exc).__name__}: {exc}".encode(errors="replace")
        try:
            os.write(err_w, msg[:4000])
        finally:
            os._exit(127)


def _emit(fd: int, obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _decode_status(status: int) -> tuple[int | None, int | None]:
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status), None


def run(cfg: dict, result_fd: int) -> None:
    if cfg.get("build_view", True):
        build_filesystem(cfg)

    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)

    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(cfg, err_w)
    os.close(err_w)
    chunks = []
    while chunk := os.read(err_r, 4096):
        chunks.append(chunk)
    os.close(err_r)
    failure = b"".join(chunks).decode(errors="replace")
    if failure.startswith("setup\0"):
        os.waitpid(pid, 0)
        _emit(result_fd, {"event": "error", "message": "program setup: " + failure[6:]})
        return
    _emit(result_fd, {"event": "started"})
    if failure:
        os.write(
            cfg["stderr_fd"],
            f"pdeagent-sandbox: cannot execute {cfg['argv'][0]!r}: {failure[5:]}\n".encode(),
        )

    deadline = t0 + float(cfg["backstop_sec"])
    timed_out = False
    poller = select.poll()
    poller.register(wake_r, select.POLLIN)
    while True:
        found = None
        while True:  # reap the program and any orphan re-parented to us (we are init)
            try:
                wpid, status, rusage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if wpid == 0:
                break
            if wpid == pid:
                found = (status, rusage)
        if found is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0 and not timed_out:
            timed_out = True  # backstop: the harness should have killed us by now
            os.kill(-1, signal.SIGKILL)
            deadline = time.monotonic() + 3600
            continue
        poller.poll(max(1, min(int(remaining * 1000) + 1, 1000)))
        try:
            while os.read(wake_r, 512):
                pass
        except BlockingIOError:
            pass
    wall = time.monotonic() - t0
    status, rusage = found
    exit_code, sig = _decode_status(status)
    _emit(
        result_fd,
        {
            "event": "exit",
            "exit_code": exit_code,
            "signal": sig,
            "wall_time_sec": wall,
            "max_rss_bytes": int(rusage.ru_maxrss) * 1024,
            "cpu_time_sec": rusage.ru_utime + rusage.ru_stime,
            "timed_out": timed_out,
            "exec_failed": bool(failure),
        },
    )


def _read_config(arg: str) -> dict:
    """The config from an inherited fd (a number) or a file; FIFO paths become fds."""
    if arg.isdigit():
        with os.fdopen(int(arg), "rb") as fh:
            return json.loads(fh.read())
    with open(arg, "rb") as fh:
        cfg = json.loads(fh.read())
    # The harness holds the read ends open already, so these opens do not block.
    for key in ("result", "stdout", "stderr"):
        cfg[f"{key}_fd"] = os.open(cfg[f"{key}_path"], os.O_WRONLY)
    return cfg


def main() -> None:
    cfg = _read_config(sys.argv[1])
    result_fd = int(cfg["result_fd"])
    for fd in (result_fd, cfg["stdout_fd"], cfg["stderr_fd"]):
        os.set_inheritable(fd, False)
    try:
        run(cfg, result_fd)
    except BaseException as exc:
        _emit(
            result_fd,
            {
                "event": "error",
                "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            },
        )
        os._exit(1)
    os._exit(0)  # tears the namespace down: the kernel kills whatever is left


if __name__ == "__main__":
    main()
