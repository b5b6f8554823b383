"""``DockerSandbox``: one throw-away container per execution, through the ``docker`` SDK.

The image is built here, locally, by ``pdeagent env setup --sandbox docker``
(:func:`build_image`): a tarball of empty mount points and the host's top-level
symlinks (``bin -> usr/bin`` on a merged-/usr system), imported with no registry.
Everything a run sees is mounted explicitly (a whitelist):

* the system trees ``/usr``, ``/etc``, ``/opt`` (and top-level library/binary dirs that
  are real directories on this host), read-only;
* the request's exposed paths (interpreter, track runtime) read-only, with hidden
  trees inside them covered by empty read-only tmpfs;
* the work dir and the request's writable cache dirs read-write;
* a root-only control dir at ``/.pdeagent`` with the launcher, its config and three
  FIFOs (results, stdout, stderr) whose read ends the harness holds;
* a size-capped, exec-able ``/tmp`` and ``/dev/shm``.

Container settings: ``--network none`` (``--network host`` when the request sets
``network``: an external agent's own process, which then reaches the host's loopback
and interfaces like a host process), read-only root file system, private IPC,
``no-new-privileges``, every capability dropped except SETUID/SETGID/KILL (the
launcher, PID 1, spends them on the drop to ``pdeagent-sbx`` and on its back-stop
kill), memory (RAM + swap) and pids limits from :class:`Limits`, pinned to the
calling thread's CPUs, program output streamed through the FIFOs and capped by the
harness (the daemon logs only the launcher's own messages, at most 1 MB). The memory
verdict is Docker's ``State.OOMKilled``. The container is removed in ``finally``;
containers a killed harness left behind (exited or never started, over a minute ago:
younger ones may be a concurrent harness's) are swept on the next start.
"""

from __future__ import annotations

import calendar
import contextlib
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pdeagent.extras import MissingExtra, missing_message, require
from pdeagent.sandbox.base import Limits, SandboxError
from pdeagent.sandbox.cgroups import PROCESS_SLACK, RunCgroup
from pdeagent.sandbox.launched import (
    LAUNCHER,
    Handle,
    LauncherSandbox,
    launcher_interpreter,
    under,
)

IMAGE_REPOSITORY = "pdeagent-sandbox"
IMAGE_FORMAT = 2
"""Bumped when the image's contents change shape."""
LABEL = "pdeagent.sandbox"
"""Label on every container this backend starts (stale ones are found by it)."""
CONTROL = "/.pdeagent"
"""Where the control dir appears inside the container."""
SYSTEM_TREES = ("/usr", "/etc", "/opt")
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_EMPTY_DIRS = ("usr", "etc", "opt", "tmp", "proc", "dev", "sys", "var", "run", "root", "home")
_API_TIMEOUT = 30
STALE_SEC = 60.0
_swept = False
_sweep_lock = threading.Lock()


def _docker_module():
    """The docker SDK (the ``docker`` extra), or None when it is not installed."""
    try:
        return require("docker")
    except MissingExtra:
        return None


def docker_client(timeout: int = _API_TIMEOUT):
    """A client of a daemon that answers, else :class:`SandboxError` saying why not."""
    docker = _docker_module()
    if docker is None:
        raise SandboxError(missing_message("docker"))
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # DockerException, requests errors: no daemon
        raise SandboxError(f"no Docker daemon answers: {exc}") from exc
    return client


def image_layout() -> dict[str, Any]:
    """What the image holds: the host's top-level symlinks, and the empty dirs."""
    links = {}
    dirs = list(_EMPTY_DIRS)
    for name in _TOP_LEVEL:
        path = Path("/") / name
        if path.is_symlink():
            links[name] = os.readlink(path)
        elif path.is_dir():
            dirs.append(name)
    return {"format": IMAGE_FORMAT, "links": links, "dirs": sorted(dirs)}


def image_tag() -> str:
    layout = json.dumps(image_layout(), sort_keys=True).encode()
    return f"{IMAGE_REPOSITORY}:{hashlib.sha256(layout).hexdigest()[:12]}"


def system_mounts() -> list[str]:
    """Host trees every container shows read-only."""
    layout = image_layout()
    trees = [t for t in SYSTEM_TREES if Path(t).is_dir()]
    trees += [f"/{d}" for d in layout["dirs"] if d in _TOP_LEVEL]
    return trees


def build_image() -> str:
    """Build (import) the sandbox image here; returns its tag. Idempotent."""
    client = docker_client(timeout=120)
    tag = image_tag()
    layout = image_layout()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in layout["dirs"]:
            info = tarfile.TarInfo(name)
            # Docker's tmpfs on /tmp takes the mode of the image's dir under it
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
        for name, target in layout["links"].items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    repository, _, version = tag.partition(":")
    try:
        client.api.import_image_from_data(buf.getvalue(), repository=repository, tag=version)
        client.images.get(tag)
    except Exception as exc:
        raise SandboxError(f"cannot build the sandbox image {tag}: {exc}") from exc
    return tag


def labelled_containers(client, statuses: tuple[str, ...] = ()) -> list:
    """The containers this backend started (any harness's), in ``statuses`` if given.
    docker-py inspects each listed container; one removed in between (another run's,
    finishing meanwhile) is gone, not an error (``ignore_removed``)."""
    filters: dict[str, Any] = {"label": LABEL}
    if statuses:
        filters["status"] = list(statuses)
    return client.containers.list(all=True, filters=filters, ignore_removed=True)


def _stale(container, now: float) -> bool:
    """Whether a labelled container is a dead harness's: exited, or never started
    (``created``), over :data:`STALE_SEC` ago. A younger one may be another harness's,
    about to start, or just ended and about to be waited for and removed."""
    state = container.attrs.get("State") or {}
    stamp = {"exited": state.get("FinishedAt"), "created": container.attrs.get("Created")}.get(
        state.get("Status")
    )
    if not stamp:
        return False
    try:
        when = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return False  # an unparsable date: leave it
    return now - when >= STALE_SEC


def _sweep(client) -> None:
    """Remove the containers harnesses killed before their ``finally`` left behind
    (:func:`_stale` ones), once per process."""
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
    now = time.time()
    try:
        found = labelled_containers(client, ("exited", "created"))
    except Exception:
        return
    for container in found:
        if _stale(container, now):
            with contextlib.suppress(Exception):  # vanished meanwhile
                container.remove(force=True)


class ContainerHandle(Handle):
    """A started container running the launcher as its PID 1."""

    def __init__(self, client, control: Path, cfg: dict, mounts: list, caps: dict) -> None:
        from docker.types import LogConfig

        self.control = control
        self.container = None
        self._extra_writers: list[int] = []
        self._exit: dict | None = None
        self.result_fd = self.stdout_fd = self.stderr_fd = -1
        fifos = {}
        for key in ("result", "stdout", "stderr"):
            path = control / key
            os.mkfifo(path, 0o600)
            fifos[key] = path
            cfg[f"{key}_path"] = f"{CONTROL}/{key}"
        try:
            readers = {}
            for key, path in fifos.items():
                readers[key] = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                # a writer of our own, so the reader sees no EOF before the launcher opens
                self._extra_writers.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                os.set_blocking(readers[key], True)
            self.result_fd, self.stdout_fd = readers["result"], readers["stdout"]
            self.stderr_fd = readers["stderr"]
            shutil.copyfile(LAUNCHER, control / "launcher.py")
            (control / "config.json").write_text(json.dumps(cfg))
            python, _ = launcher_interpreter()
            self.container = client.containers.create(
                image_tag(),
                command=[python, "-I", "-S", f"{CONTROL}/launcher.py", f"{CONTROL}/config.json"],
                detach=True,
                labels={LABEL: "1"},
                user="0:0",
                environment={},
                working_dir="/",
                hostname="sandbox",
                # the host's network only for an external agent's own process (the
                # request's ``network``); a bridge would not reach the host's loopback
                network_mode="host" if cfg.get("network", False) else "none",
                ipc_mode="private",
                read_only=True,
                cap_drop=["ALL"],
                cap_add=["SETUID", "SETGID", "KILL"],
                security_opt=["no-new-privileges"],
                mounts=mounts,
                tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={caps['tmpfs']},mode=1777"},
                shm_size=caps["tmpfs"],
                mem_limit=caps["memory"],
                memswap_limit=caps["memory"],
                pids_limit=caps["pids"],
                cpuset_cpus=caps["cpus"],
                log_config=LogConfig(
                    type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "1"}
                ),
            )
            self.container.start()
        except Exception as exc:
            self.close()
            if isinstance(exc, SandboxError):
                raise
            raise SandboxError(f"cannot start the sandbox container: {exc}") from exc

    def _ended(self, status: dict) -> None:
        self._exit = status
        for fd in self._extra_writers:
            os.close(fd)
        self._extra_writers = []

    def wait(self, timeout: float | None) -> bool:
        if self._exit is not None:
            return True
        try:
            if timeout is not None and timeout <= 0:
                self.container.reload()
                if self.container.status in ("created", "running", "restarting"):
                    return False
                status = self.container.wait(timeout=_API_TIMEOUT)
            else:
                status = self.container.wait(timeout=timeout)
        except Exception as exc:  # requests' ConnectionError/ReadTimeout on a timeout
            if "timed out" in str(exc).lower() or "timeout" in type(exc).__name__.lower():
                return False
            raise SandboxError(f"lost the sandbox container: {exc}") from exc
        self._ended(status)
        return True

    def kill(self) -> None:
        try:
            self.container.kill()
        except Exception:
            pass  # already dead
        if not self.wait(_API_TIMEOUT):
            raise SandboxError("the sandbox container did not die after SIGKILL")

    def oom_killed(self) -> bool:
        try:
            self.container.reload()
            return bool(self.container.attrs["State"].get("OOMKilled"))
        except Exception:
            return False

    def diagnostics(self) -> str:
        try:
            return self.container.logs(stdout=True, stderr=True, tail=200).decode(errors="replace")
        except Exception as exc:
            return f"(no container logs: {exc})"

    def describe_exit(self) -> str:
        code = (self._exit or {}).get("StatusCode")
        return f"container exit {code}"

    def close(self) -> None:
        for fd in [*self._extra_writers, self.result_fd, self.stdout_fd, self.stderr_fd]:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._extra_writers = []
        self.result_fd = self.stdout_fd = self.stderr_fd = -1
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except Exception:
                pass
            self.container = None
        shutil.rmtree(self.control, ignore_errors=True)


class DockerSandbox(LauncherSandbox):
    """Runs each program in its own container (see the module docstring)."""

    name = "docker"
    builds_view = False
    uses_cgroups = False  # the container is its own cgroup
    caps_processes = True

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when a daemon answers and the sandbox image is built, else why not."""
        try:
            client = docker_client(timeout=10)
        except SandboxError as exc:
            return str(exc)
        try:
            client.images.get(image_tag())
        except Exception:
            return (
                f"the sandbox image {image_tag()} is not built here "
                "(run: pdeagent env setup --sandbox docker)"
            )
        finally:
            client.close()
        return None

    def _mounts(self, cfg: dict, control: Path) -> list:
        from docker.types import Mount

        _, prefix = launcher_interpreter()
        read_only = list(dict.fromkeys([*system_mounts(), str(prefix), *cfg["expose"]]))
        writable = [cfg["workdir"], *cfg["writable"]]
        targets = [*read_only, *writable]
        mounts = [Mount(p, p, type="bind", read_only=True) for p in read_only]
        mounts += [Mount(p, p, type="bind", read_only=False) for p in writable]
        mounts.append(Mount(CONTROL, str(control), type="bind", read_only=False))
        for path in sorted(set(cfg["hide"])):
            if not os.path.lexists(path) or path in targets:
                continue
            if not any(under(path, t) and path != t for t in targets):
                continue  # not shown at all
            if any(under(t, path) for t in targets):
                # the way to a shown path (the work dir inside a hidden tree): an empty
                # tmpfs nobody but root can write, the shown paths bound back into it
                mounts.append(
                    Mount(path, None, type="tmpfs", read_only=False, tmpfs_size=1 << 20,
                          tmpfs_mode=0o555)
                )  # fmt: skip
            elif os.path.isdir(path) and not os.path.islink(path):
                mounts.append(Mount(path, None, type="tmpfs", read_only=True))
            elif os.path.isfile(path) and not os.path.islink(path):
                mounts.append(Mount(path, "/dev/null", type="bind", read_only=True))
        return mounts

    def _start(self, cfg: dict, cgroup: RunCgroup | None, limits: Limits) -> Handle:
        client = docker_client()
        _sweep(client)
        control = Path(tempfile.mkdtemp(prefix="pdeagent-docker-", dir="/var/tmp"))
        try:
            caps = {
                "tmpfs": int(cfg["tmpfs_bytes"]),
                "memory": int(limits.memory_bytes),
                "pids": int(limits.processes) + PROCESS_SLACK,
                "cpus": ",".join(str(c) for c in sorted(os.sched_getaffinity(0))),
            }
            return ContainerHandle(client, control, dict(cfg), self._mounts(cfg, control), caps)
        except BaseException:
            shutil.rmtree(control, ignore_errors=True)
            raise
