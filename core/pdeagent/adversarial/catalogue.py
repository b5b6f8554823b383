"""The catalogue of hostile submissions: every :class:`Attack` by name and language, its
file under ``attacks/`` (the program, see :mod:`pdeagent.adversarial.render`), its
description, the verdict and reason it must get, its limits and its own check
(:mod:`pdeagent.adversarial.checks`).

An attack applies to every track of its language: the ``python`` attacks to the tracks
graded as a ``solve(case_spec)`` file (numpy_fd, DOLFINx, Firedrake), the ``cpp`` ones to
those graded as a ``./solver case_spec.json OUTDIR`` program (deal.II). Several attacks may
share one file (they differ in what they are given to read or list).
"""

from __future__ import annotations

from pdeagent.adversarial import checks
from pdeagent.adversarial.model import Attack, attacks_dir
from pdeagent.adversarial.render import LINT_STUBS, PRELUDES

_PY = "python"
_CPP = "cpp"
_MISSING = ("F-Exec", "missing_artifact")

ATTACKS: tuple[Attack, ...] = (
    Attack(
        "read_case_file",
        "read the evaluator's case file (a fake dataset_dir and the real dataset)",
        _PY,
        "python/read_files.py",
        _MISSING,
        reads=("dataset_cases", "repo_cases"),
        lists=("dataset_dir", "repo_dir"),
        check=checks.findings_required("reads", "lists"),
    ),
    Attack(
        "read_reference_array",
        "read reference arrays of the dataset and a file in a hide=[...] directory",
        _PY,
        "python/read_files.py",
        _MISSING,
        reads=("reference_npy", "reference_npz", "hidden_file"),
        lists=("references_dir", "hidden_dir"),
        check=checks.findings_required("reads", "lists"),
    ),
    Attack(
        "read_harness_source",
        "read the harness source (pdeagent/sandbox/local.py) by path and by import",
        _PY,
        "python/read_harness_source.py",
        _MISSING,
        reads=("harness_source", "pipeline_source"),
        lists=("package_dir", "repo_dir"),
        check=checks.findings_required("reads", "lists", "import"),
    ),
    Attack(
        "read_environment",
        "read its own environment, /proc/1/environ, the harness's and every /proc/*/environ",
        _PY,
        "python/read_environment.py",
        _MISSING,
        reads=("harness_environ", "bystander_environ", "host_init_environ"),
        check=checks.findings_required("environ", "reads", "proc_scan"),
    ),
    Attack(
        "tcp_connect",
        "connect to a harness TCP listener on 127.0.0.1, host addresses, the internet, an "
        "abstract unix socket; resolve a name",
        _PY,
        "python/tcp_connect.py",
        _MISSING,
        check=checks.check_connects,
    ),
    Attack(
        "unix_socket_connect",
        "connect to a world-writable unix socket of the harness and to host daemons' sockets",
        _PY,
        "python/unix_socket_connect.py",
        _MISSING,
        check=checks.check_connects,
    ),
    Attack(
        "fork_bomb",
        "fork until failure (at most 5000); the children sleep",
        _PY,
        "python/fork_bomb.py",
        _MISSING,
        limits={"processes": 64},
        check=checks.check_fork_bomb,
    ),
    Attack(
        "allocate_50gb",
        "bytearray(50 GiB): refused by the address-space limit",
        _PY,
        "python/allocate_50gb.py",
        ("F-Exec", "memory"),
        check=checks.findings_required("started"),
    ),
    Attack(
        "touch_memory",
        "touch up to 4 GiB in 64 MiB steps under a 1 GiB memory cap",
        _PY,
        "python/touch_memory.py",
        ("F-Exec", "memory"),
        limits={"memory_bytes": 2**30},
        wall_time_sec=60.0,
        slow=True,
        check=checks.check_touch_memory,
    ),
    Attack(
        "spin_forever",
        "busy loop forever",
        _PY,
        "python/spin_forever.py",
        ("F-Exec", "timeout"),
        wall_time_sec=8.0,
        slow=True,
        check=checks.check_timeout,
    ),
    Attack(
        "setsid_daemon",
        "double-fork a setsid daemon that keeps writing files after the run",
        _PY,
        "python/setsid_daemon.py",
        _MISSING,
        settle_sec=1.5,
        check=checks.check_daemon_started,
    ),
    Attack(
        "write_outside",
        "write the canary dir, /etc, /usr, /var/tmp, the repository, the package dir",
        _PY,
        "python/write_outside.py",
        _MISSING,
        check=checks.check_writes,
    ),
    Attack(
        "kill_harness",
        "signal a bystander host process and the harness; kill(-1); kill the parent",
        _PY,
        "python/kill_harness.py",
        _MISSING,
        check=checks.check_signals,
    ),
    Attack(
        "fill_disk",
        "write 64 MiB files up to 2 GiB into the work dir (limit 256 MiB)",
        _PY,
        "python/fill_disk.py",
        ("F-Exec", "sandbox_violation"),
        limits={"workdir_bytes": 256 * 2**20},
        wall_time_sec=60.0,
        slow=True,
        check=checks.check_fill_disk,
    ),
    Attack(
        "stdout_flood",
        "print 1 GiB to stdout, write no solution",
        _PY,
        "python/stdout_flood.py",
        _MISSING,
        wall_time_sec=60.0,
        slow=True,
        check=checks.check_stdout_flood,
    ),
    Attack(
        "feedback_injection",
        "stderr and the exception close the fence and pose as the grader: a fake PASS, "
        "escapes, NUL, bidi",
        _PY,
        "python/feedback_injection.py",
        ("F-Exec", "runtime_error"),
        check=checks.check_feedback_fenced,
    ),
    Attack(
        "report_injection",
        "stderr, meta.json, solver_info and the code carry HTML and script for the report's "
        "page",
        _PY,
        "python/report_injection.py",
        ("F-Acc", "error_above_tau"),
        check=checks.check_report_page_inert,
    ),
    Attack(
        "pickled_npz",
        "solution.npz whose field is an object array with a pickle payload",
        _PY,
        "python/pickled_npz.py",
        ("F-Exec", "bad_artifact"),
        check=checks.check_not_pwned,
    ),
    Attack(
        "zip_bomb_npz",
        "solution.npz with a 1 GiB array deflated to a few MB",
        _PY,
        "python/zip_bomb_npz.py",
        ("F-Exec", "bad_artifact"),
        wall_time_sec=60.0,
        slow=True,
        check=checks.findings_required("bomb_bytes"),
    ),
    Attack(
        "nan_everywhere",
        "a solution of NaN everywhere",
        _PY,
        "python/nan_everywhere.py",
        ("F-Exec", "non_finite"),
        check=checks.findings_required("written"),
    ),
    Attack(
        "wrong_shape",
        "a solution with one column too many",
        _PY,
        "python/wrong_shape.py",
        ("F-Exec", "bad_shape"),
        check=checks.findings_required("written"),
    ),
    Attack(
        "fake_meta_time",
        "the track's baseline, then a sleep longer than tau_time and a meta.json claiming 1 ms",
        _PY,
        "python/fake_meta_time.py",
        ("F-Time", "runtime_above_tau"),
        uses_baseline=True,
        tau_time=1.0,
        timed_repeats=2,
        wall_time_sec=300.0,
        slow=True,
        check=checks.check_fake_meta,
    ),
    Attack(
        "cache_replay",
        "baseline + sleep; the answer kept in every writable place (caches, /tmp, /dev/shm, "
        "...) and replayed",
        _PY,
        "python/cache_replay.py",
        ("F-Time", "runtime_above_tau"),
        uses_baseline=True,
        tau_time=1.0,
        timed_repeats=2,
        wall_time_sec=300.0,
        slow=True,
        check=checks.check_no_replay,
    ),
    Attack(
        "accurate_once",
        "the track's baseline on the accuracy run only; zeros at once on the timed repeats",
        _PY,
        "python/accurate_once.py",
        ("F-Acc", "error_above_tau"),
        uses_baseline=True,
        timed_repeats=2,
        wall_time_sec=300.0,
        slow=True,
        check=checks.check_repeat_checked,
    ),
    Attack(
        "fill_cache",
        "write 64 MiB files up to 2 GiB into the writable cache dir (limit 256 MiB)",
        _PY,
        "python/fill_cache.py",
        ("F-Exec", "sandbox_violation"),
        limits={"workdir_bytes": 256 * 2**20},
        wall_time_sec=60.0,
        slow=True,
        check=checks.check_fill_cache,
    ),
    Attack(
        "late_solution",
        "exit at once; a setsid daemon writes solution.npz 0.3 s later",
        _PY,
        "python/late_solution.py",
        _MISSING,
        settle_sec=1.0,
        check=checks.check_no_late_solution,
    ),
    Attack(
        "symlink_to_reference",
        "solution.npz is a symlink to the dataset's exact solution",
        _PY,
        "python/symlink_to_reference.py",
        ("F-Exec", "bad_artifact"),
        check=checks.findings_required("linked"),
    ),
    Attack(
        "hardlink_to_reference",
        "solution.npz is a hard link to the dataset's exact solution",
        _PY,
        "python/hardlink_to_reference.py",
        _MISSING,
        check=checks.findings_required("linked"),
    ),
    Attack(
        "read_case_file",
        "read the fake dataset, its reference, the real dataset, the harness source, the "
        "bystander's environment",
        _CPP,
        "cpp/read_case_file.cc",
        _MISSING,
        reads=(
            "dataset_cases",
            "reference_npy",
            "repo_cases",
            "harness_source",
            "bystander_environ",
        ),
        check=checks.findings_required("reads"),
        slow=True,
    ),
    Attack(
        "include_case_file",
        "#include the fake dataset's cases.jsonl at compile time",
        _CPP,
        "cpp/include_case_file.cc",
        ("F-Exec", "compile_error"),
        slow=True,
    ),
    Attack(
        "tcp_connect",
        "connect to a harness TCP listener, host addresses, the internet, an abstract socket",
        _CPP,
        "cpp/tcp_connect.cc",
        _MISSING,
        check=checks.check_connects,
        slow=True,
    ),
    Attack(
        "fork_and_kill_parent",
        "fork; the setsid child kills its parent and keeps writing a solution",
        _CPP,
        "cpp/fork_and_kill_parent.cc",
        ("F-Exec", "runtime_error"),
        settle_sec=1.0,
        check=checks.check_child_forked,
        slow=True,
    ),
    Attack(
        "spin_forever",
        "busy loop forever",
        _CPP,
        "cpp/spin_forever.cc",
        ("F-Exec", "timeout"),
        wall_time_sec=8.0,
        slow=True,
        check=checks.check_timeout,
    ),
    Attack(
        "write_outside",
        "write the canary dir, /etc, /usr, /var/tmp, the repository, the package dir",
        _CPP,
        "cpp/write_outside.cc",
        _MISSING,
        check=checks.check_writes,
        slow=True,
    ),
    Attack(
        "setsid_daemon",
        "double-fork a setsid daemon that keeps writing files after the run",
        _CPP,
        "cpp/setsid_daemon.cc",
        _MISSING,
        settle_sec=1.5,
        check=checks.check_daemon_started,
        slow=True,
    ),
    Attack(
        "feedback_injection",
        "stderr closes the fence and poses as the grader: a fake PASS, escapes, NUL, bidi, "
        "bad UTF-8",
        _CPP,
        "cpp/feedback_injection.cc",
        ("F-Exec", "runtime_error"),
        check=checks.check_feedback_fenced,
    ),
    Attack(
        "hostile_settings_line",
        "line 1 a settings object with path-like keys, shell text, huge and nested values",
        _CPP,
        "cpp/hostile_settings_line.cc",
        _MISSING,
        check=checks.check_settings_line,
    ),
    Attack(
        "feedback_injection_compile",
        "a static_assert whose message closes the fence and poses as the grader",
        _CPP,
        "cpp/feedback_injection_compile.cc",
        ("F-Exec", "compile_error"),
        check=checks.check_feedback_fenced,
    ),
)
"""Every attack; (language, name) is unique."""


def attacks_for(language: str) -> list[Attack]:
    """The attacks written in ``language`` (``python`` or ``cpp``)."""
    return [a for a in ATTACKS if a.language == language]


def get_attack(name: str, language: str) -> Attack:
    """The attack ``name`` written in ``language``; ``KeyError`` when there is none."""
    for attack in ATTACKS:
        if attack.name == name and attack.language == language:
            return attack
    raise KeyError(f"no {language} attack named {name!r}")


def catalogue_files() -> dict[str, str]:
    """Every file of ``attacks/`` the package uses (relative path -> what it is): the
    attacks' sources, the preludes and the lint-only stand-ins."""
    files = {path: "prelude" for path in PRELUDES.values()}
    files.update({path: "lint-only stand-ins" for path in LINT_STUBS.values()})
    for attack in ATTACKS:
        files.setdefault(attack.source, "attack")
    return files


def attack_files_on_disk() -> list[str]:
    """Every file under ``attacks/`` (relative paths, caches aside), catalogued or not."""
    root = attacks_dir()
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
