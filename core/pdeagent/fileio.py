"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Data goes to a temporary file in the same directory, is flushed to disk, and is
renamed over the target; a crash leaves at most a stray ``.tmp-*`` file.

Test hooks (for crash tests; read once, at the first write of the process; nothing
is counted or locked while both are unset):

- ``PDEAGENT_CRASH_AT_WRITE=N`` (an integer >= 1): the process kills itself with
  SIGKILL during its N-th call of :func:`atomic_write_bytes` (counted across all
  threads): for odd N after the temporary file is written and fsynced but before
  the rename (the target keeps its old content, a ``.tmp-*`` file stays behind),
  for even N right after the rename (the target is complete). With a malformed
  value every write raises ValueError (nothing is written).
- ``PDEAGENT_COUNT_WRITES=FILE``: every completed write appends one line
  ``<number>\\t<target path>`` to FILE (the number is the one the crash hook uses).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, NamedTuple

CRASH_AT_WRITE_ENV = "PDEAGENT_CRASH_AT_WRITE"
COUNT_WRITES_ENV = "PDEAGENT_COUNT_WRITES"


class _TestHooks(NamedTuple):
    crash_at: int | None
    count_file: str | None

    @property
    def active(self) -> bool:
        return self.crash_at is not None or self.count_file is not None


_hooks: _TestHooks | None = None
"""The parsed test hooks; None until the first write of the process."""
_hooks_lock = threading.Lock()
_writes = 0
"""Writes numbered so far in this process (only while a hook is set)."""


def _parse_hooks() -> _TestHooks:
    raw = os.environ.get(CRASH_AT_WRITE_ENV)
    crash_at = None
    if raw is not None:
        try:
            crash_at = int(raw.strip())
        except ValueError:
            crash_at = 0
        if crash_at < 1:
            raise ValueError(f"{CRASH_AT_WRITE_ENV} must be an integer >= 1, got {raw!r}")
    return _TestHooks(crash_at, os.environ.get(COUNT_WRITES_ENV) or None)


def _number_this_write() -> tuple[_TestHooks, int] | None:
    """The hooks and this write's number (1, 2, ...), or None when no hook is set."""
    global _hooks, _writes
    hooks = _hooks
    if hooks is None:
        with _hooks_lock:
            if _hooks is None:
                _hooks = _parse_hooks()
            hooks = _hooks
    if not hooks.active:
        return None
    with _hooks_lock:
        _writes += 1
        return hooks, _writes


def _after_write(hooks: _TestHooks, number: int, path: Path) -> None:
    if hooks.count_file is not None:
        with _hooks_lock, open(hooks.count_file, "a", encoding="utf-8") as fh:
            fh.write(f"{number}\t{path}\n")
    if hooks.crash_at == number and number % 2 == 0:  # even: after the rename
        os.kill(os.getpid(), signal.SIGKILL)


def _read_umask() -> int:
    """The process umask, read once at import (``os.umask`` can only be read by setting
    it, which is not safe once threads run)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _read_umask()


def _file_mode(path: Path) -> int:
    """The permission bits the written file gets: those of the file it replaces, else what
    ``open()`` would give a new file (0666 less the umask), not ``mkstemp``'s 0600 (a
    dataset written by ``cases add-track -o`` must be as readable as the one it came from)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_UMASK


def atomic_write_bytes(path: Path, data: bytes) -> None:
    numbered = _number_this_write()
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if numbered is not None:
            hooks, number = numbered
            if hooks.crash_at == number and number % 2 == 1:  # odd: before the rename
                os.kill(os.getpid(), signal.SIGKILL)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if numbered is not None:
        _after_write(*numbered, path)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any, *, indent: int | None = 2) -> None:
    atomic_write_text(path, json.dumps(data, indent=indent, default=str) + "\n")
