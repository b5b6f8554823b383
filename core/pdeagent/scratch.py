"""Scratch folders of the harness: made under one root, removed however the work ends.

An evaluation, a run's executions and a calibration work in folders under
:func:`scratch_root` (``$PDEAGENT_SCRATCH``, else ``/var/tmp``: on disk, not in a
small tmpfs). What a submission writes there (its outputs, its caches, whatever a
hostile program leaves) must not outlive the work: :func:`scratch_dir` removes the
folder when its block ends, by return or by exception, and the CLI turns SIGTERM and
SIGHUP into an exit that unwinds those blocks (:func:`exit_on_termination`), so an
interrupted ``pdeagent evaluate`` or ``cases add-track`` cleans up too. A folder that
cannot be removed is reported on stderr, never left silently.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

SCRATCH_ENV = "PDEAGENT_SCRATCH"


def scratch_root() -> Path:
    """Where scratch folders are made: ``$PDEAGENT_SCRATCH``, else ``/var/tmp``."""
    return Path(os.environ.get(SCRATCH_ENV) or "/var/tmp")


def make_scratch(prefix: str, root: Path | None = None) -> Path:
    """A new empty folder ``<root>/<prefix>XXXX`` (the caller removes it)."""
    base = root if root is not None else scratch_root()
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


@contextmanager
def scratch_dir(prefix: str, root: Path | None = None) -> Iterator[Path]:
    """A new folder under ``root`` (default :func:`scratch_root`), removed when the block
    ends however it ends."""
    path = make_scratch(prefix, root)
    try:
        yield path
    finally:
        remove_tree(path)


def _writable_parent(function: object, path: str, exc: BaseException) -> None:
    """rmtree's error hook: a folder a program made read-only (or unsearchable) cannot
    lose its entries; make it ours again and retry once."""
    parent = os.path.dirname(path)
    try:
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def remove_tree(path: Path) -> bool:
    """Remove ``path`` and everything in it; True when it is gone. A tree that resists
    (entries owned by another user, a mount point) is reported on stderr."""
    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        try:
            os.chmod(path, stat.S_IRWXU)
        except OSError:
            pass
        shutil.rmtree(path, onexc=_writable_parent)
    if os.path.lexists(path):
        print(f"pdeagent: could not remove the scratch folder {path}", file=sys.stderr)
        return False
    return True


def _terminate(signum: int, _frame: FrameType | None) -> None:
    # a second signal of the same kind ends the process at once
    signal.signal(signum, signal.SIG_DFL)
    raise SystemExit(128 + signum)


def exit_on_termination() -> None:
    """In the main thread: SIGTERM and SIGHUP raise ``SystemExit(128 + signal)``, so
    ``finally`` blocks run (sandboxed programs are killed, scratch folders removed)
    instead of the process vanishing mid-work. Ctrl-C already raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)
