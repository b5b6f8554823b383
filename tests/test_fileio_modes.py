"""Files written atomically get the permissions a plain ``open()`` would give, not
``mkstemp``'s private 0600 (a dataset written by ``cases add-track -o`` was unreadable
to other users, issue #21), and a replaced file keeps its own."""

from __future__ import annotations

import stat

from pdeagent import fileio
from pdeagent.fileio import atomic_write_bytes


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_0666_less_the_umask(tmp_path):
    target = tmp_path / "cases.jsonl"
    atomic_write_bytes(target, b"{}\n")
    assert _mode(target) == 0o666 & ~fileio._UMASK
    assert fileio._UMASK == fileio._read_umask()  # reading it does not change it


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "report.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new" and _mode(target) == 0o640
    target.chmod(0o600)
    atomic_write_bytes(target, b"newer")
    assert _mode(target) == 0o600
