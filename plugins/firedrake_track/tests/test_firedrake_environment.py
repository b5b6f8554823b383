"""The Firedrake build's bookkeeping (no build needed): what its cache key depends on,
how a missing or broken runtime record is reported, and the PETSc configuration's
promise of no downloads."""

from __future__ import annotations

import json
import os

import pytest
from pdeagent_firedrake import environment as env

from pdeagent.stages import TrackUnavailable


def test_the_build_key_changes_with_every_version_and_petsc_option(monkeypatch):
    key = env.build_key()
    assert key.startswith(env.FIREDRAKE_VERSION + "-") and key == env.build_key()
    for name, value in [
        ("PETSC_VERSION", "3.26.1"),
        ("FIREDRAKE_VERSION", "2026.11.0"),
        ("PETSC_CONFIGURE", (*env.PETSC_CONFIGURE, "--with-hypre=1")),
        ("APT_PACKAGES", env.APT_PACKAGES[:-1]),
    ]:
        with monkeypatch.context() as m:
            m.setattr(env, name, value)
            assert env.build_key() != key, name


def test_petsc_is_configured_against_system_libraries_only():
    assert not [o for o in env.PETSC_CONFIGURE if o.startswith("--download")]
    assert "--with-debugging=0" in env.PETSC_CONFIGURE
    assert "--with-mumps" in env.PETSC_CONFIGURE and "--with-hypre=0" in env.PETSC_CONFIGURE


def test_build_and_record_live_under_the_users_cache_and_data_dirs(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    build = env.build_dir()
    assert build == tmp_path / "cache" / "pdeagent" / "firedrake" / env.build_key()
    assert env.petsc_dir(build).name == f"petsc-{env.PETSC_VERSION}"
    assert env.record_path() == tmp_path / "data" / "pdeagent" / "envs" / "firedrake.json"


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "is missing"),
        ("{not json", "unreadable"),
        (json.dumps({"python": "/nonexistent/python"}), "names no existing"),
        (json.dumps(["a", "list"]), "names no existing"),
    ],
)
def test_a_missing_or_broken_record_says_how_to_set_up(monkeypatch, tmp_path, content, says):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    if content is not None:
        env.record_path().parent.mkdir(parents=True)
        env.record_path().write_text(content)
    with pytest.raises(TrackUnavailable, match=says) as info:
        env.load_record()
    assert "pdeagent env setup firedrake" in str(info.value)


def test_the_runtime_environment_points_at_the_recorded_petsc(tmp_path):
    record = {"python": str(tmp_path / "venv/bin/python"), "petsc_dir": "/p", "petsc_arch": "a"}
    runtime = env.runtime_env(record, home="/w")
    assert runtime["PETSC_DIR"] == "/p" and runtime["PETSC_ARCH"] == "a"
    assert runtime["PATH"].split(":")[0] == str(tmp_path / "venv/bin")
    assert runtime["HOME"] == "/w" and runtime["OMP_NUM_THREADS"] == "1"


@pytest.mark.firedrake
def test_the_built_runtime_solves_a_p2_poisson_problem_inside_the_sandbox():
    from firedrake_harness import firedrake_record

    record = firedrake_record()
    checks = {c.name: c for c in env.doctor()}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    # P2 on an 8x8 mesh: the error of sin(pi x) sin(pi y) is ~5e-4 (h^3 / ~1000)
    for name in ("P2 Poisson smoke solve (MUMPS)", "smoke solve inside the sandbox"):
        error = json.loads(checks[name].detail)["l2_error"]
        assert 1e-5 < error < 1e-3, (name, error)
    assert record["key"] == env.build_key()


def test_a_running_setup_is_waited_for_and_a_dead_ones_marker_ignored(monkeypatch, tmp_path):
    import subprocess
    import sys
    import time

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert env.wait_for_setup(0.0)  # no marker: nothing to wait for
    marker = env.setup_marker()
    marker.parent.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(8)"])
    try:
        marker.write_text(json.dumps({"pid": sleeper.pid, "started": time.time()}))
        assert not env.wait_for_setup(0.0)  # alive: the wait times out
        start = time.monotonic()
        assert env.wait_for_setup(60.0)  # returns once the process has ended
        assert time.monotonic() - start < 30
    finally:
        sleeper.kill()
        sleeper.wait()
    marker.write_text(json.dumps({"pid": sleeper.pid, "started": 0}))  # dead: ignored
    assert env.wait_for_setup(0.0)
    marker.write_text("not json")
    assert env.wait_for_setup(0.0)


def test_setup_announces_itself_while_it_runs_and_clears_the_marker(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    seen = {}

    def fake_setup(*, force, log, update_pins):
        seen["marker"] = json.loads(env.setup_marker().read_text())
        raise RuntimeError("build failed")

    monkeypatch.setattr(env, "_setup", fake_setup)
    with pytest.raises(RuntimeError, match="build failed"):
        env.setup(force=False, log=print)
    assert seen["marker"]["pid"] == os.getpid()
    assert not env.setup_marker().exists()


def _fake_build(monkeypatch, tmp_path, pins):
    """Point the build at tmp_path with ``pins`` committed; steps only record themselves."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(env, "install_packages", lambda log: None)
    monkeypatch.setattr(env, "_pins", lambda: list(pins))
    ran: list[tuple[str, object]] = []

    def commands(build, log_file, constraints):
        def step(name):
            def run():
                text = constraints.read_text() if constraints is not None else None
                ran.append((name, text))
                if name == "venv":  # the record must name an existing interpreter
                    env.venv_python(build).parent.mkdir(parents=True, exist_ok=True)
                    env.venv_python(build).write_text("")

            return run

        return {name: step(name) for name in env.STEPS}

    monkeypatch.setattr(env, "_step_commands", commands)
    return ran


def test_every_pip_step_installs_under_the_pins_and_new_pins_keep_petsc(monkeypatch, tmp_path):
    pins = ["numpy==2.5.5", "tomlkit==0.15.2"]
    ran = _fake_build(monkeypatch, tmp_path, pins)
    env.setup(force=False, log=lambda _m: None)
    assert [name for name, _ in ran] == list(env.STEPS)
    for name, constraints in ran:  # the committed pins reach every pip step
        if name in env.PIP_STEPS:
            assert constraints == "numpy==2.5.5\ntomlkit==0.15.2\n", name
    ran.clear()
    env.setup(force=False, log=lambda _m: None)
    assert ran == []  # the same pins: nothing to redo
    monkeypatch.setattr(env, "_pins", lambda: ["numpy==2.5.5", "tomlkit==0.15.3"])
    env.setup(force=False, log=lambda _m: None)
    assert [name for name, _ in ran] == list(env.PIP_STEPS)  # PETSc is kept
    assert all("tomlkit==0.15.3" in text for _, text in ran)


def test_an_update_pins_build_is_unconstrained_and_stamped_with_what_it_installed(
    monkeypatch, tmp_path
):
    ran = _fake_build(monkeypatch, tmp_path, ["numpy==2.5.5"])
    installed = {"pins": ["numpy==2.6.0", "tomlkit==0.16.0"]}
    monkeypatch.setattr(env, "runtime_packages", lambda: installed)
    env.setup(force=False, log=lambda _m: None, update_pins=True)
    assert {text for name, text in ran if name in env.PIP_STEPS} == {None}
    ran.clear()
    # the caller commits what the build installed: the next pinned setup reuses the venv
    monkeypatch.setattr(env, "_pins", lambda: list(installed["pins"]))
    env.setup(force=False, log=lambda _m: None)
    assert ran == []


def test_an_interrupted_pinned_build_resumes_at_the_step_it_was_in(monkeypatch, tmp_path):
    ran = _fake_build(monkeypatch, tmp_path, ["numpy==2.5.5"])
    env.setup(force=False, log=lambda _m: None)
    build = env.build_dir()
    resume_from = env.STEPS.index("petsc4py")
    for step in env.STEPS[resume_from:]:  # killed during petsc4py
        (build / f".done-{step}").unlink()
    ran.clear()
    env.setup(force=False, log=lambda _m: None)
    assert [name for name, _ in ran] == list(env.STEPS[resume_from:])
