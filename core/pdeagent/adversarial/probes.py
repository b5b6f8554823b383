"""Watching the host around an attack: the run's processes (while it runs and after),
files and trees (digests, listings), the harness's sockets, the secrets in what the
program wrote, and what the program reported about itself (``findings*.json``)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import socket
import stat
import threading
from pathlib import Path
from typing import Any

from pdeagent.sandbox.base import ExecutionResult, Sandbox, SandboxError, SandboxRequest
from pdeagent.sandbox.users import SANDBOX_USER

_HEAD_BYTES = 64
_MIN_HEAD_MATCH = 16
_SCAN_FILE_BYTES = 16 * 1024**2


def proc_start(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (tells a reused pid apart)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat_line.rsplit(")", 1)[1].split()[19])


class RunWatcher:
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
                self.seen[pid] = proc_start(pid)
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

    def __enter__(self) -> RunWatcher:
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


class RecordingSandbox:
    """Delegates to a backend, keeps every request and result, and watches the run's
    processes while each request runs."""

    def __init__(self, inner: Sandbox, watcher: RunWatcher) -> None:
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


def file_head(path: Path | str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(_HEAD_BYTES)
    except OSError:
        return b""


def file_state(path: Path) -> tuple[int, int, str] | None:
    try:
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if st.st_size < 2**27 else ""
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, digest


def tree_digest(root: Path) -> str:
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


def dir_listing(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def host_addresses() -> list[str]:
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


def sandbox_user_uid() -> int | None:
    try:
        return pwd.getpwnam(SANDBOX_USER).pw_uid
    except KeyError:
        return None


def pids_of_uid(uid: int | None) -> set[int]:
    if uid is None:
        return set()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
    return found


def leftover_processes(
    run_token: str,
    roots: list[Path],
    sandbox_uid: int | None,
    before: set[int],
    skip: set[int],
    watcher: RunWatcher,
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
        if pid in watcher.seen and watcher.seen[pid] == proc_start(pid):
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


def docker_leftovers(roots: list[Path]) -> list[str] | None:
    """Labelled containers mounting the run's dirs; None when Docker cannot be asked."""
    from pdeagent.sandbox.docker import docker_client, labelled_containers

    try:
        client = docker_client(timeout=10)
    except SandboxError:
        return None
    try:
        found = []
        for container in labelled_containers(client):
            sources = [str(m.get("Source", "")) for m in container.attrs.get("Mounts") or []]
            if any(s == str(r) or s.startswith(str(r) + "/") for s in sources for r in roots):
                found.append(f"container {container.short_id} ({container.status})")
        return found
    except Exception as exc:
        return [f"cannot list containers: {exc}"]
    finally:
        client.close()


def secret_forms(value: str) -> list[bytes]:
    raw = value.encode()
    return [raw, raw.hex().encode()]


def scan_files(root: Path, needles: dict[str, list[bytes]], budget: list[int]) -> list[str]:
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


def accept_count(sock: socket.socket) -> int:
    sock.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, OSError):
            return count
        conn.close()
        count += 1


def read_findings(eval_root: Path) -> dict[str, Any]:
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


def leaked_read(result: Any, real: bytes) -> bool:
    """A read the program reported returned the target's real content."""
    if not isinstance(result, dict) or not result.get("ok") or not result.get("size"):
        return False
    try:
        head = bytes.fromhex(str(result.get("head", "")))
    except ValueError:
        return False
    n = len(head)
    return n >= min(_MIN_HEAD_MATCH, len(real)) and n > 0 and real[:n] == head
