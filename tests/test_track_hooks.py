"""The core's shared track-hook helpers (issue #21): family discovery of a solver package,
the standard prompt pieces, the hooks of a bundled Python track and the settings runner
a track's tests run in its runtime."""

from __future__ import annotations

import ast
import os
import sys

import pytest

from pdeagent.contracts.python import SETTINGS_RUNNER, contract_text
from pdeagent.contracts.python_bundle import BundleError, PythonBundler, family_modules
from pdeagent.contracts.python_track import PythonTrackHooks
from pdeagent.contracts.settings_runs import run_settings, solved_runs
from pdeagent.contracts.track_hooks import highest_degree_first, prompt_pieces
from pdeagent.stages import Track

FAMILY_MODULE = """\
DEFAULTS = {"resolution": 4}
REFERENCE = {"resolution": 16}
SETTINGS = None  # bundle: settings


def solve(case_spec, settings=None):
    return None
"""


def _package(tmp_path, monkeypatch, name: str, modules: dict[str, str]) -> str:
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    for module, text in modules.items():
        (root / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _view(family: str = "heat", domain: str = "unit_square") -> dict:
    return {"case_spec": {"pde": {"type": family}, "domain": {"type": domain}}}


def test_family_modules_skips_shared_modules_and_keeps_the_dataset_order(tmp_path, monkeypatch):
    package = _package(
        tmp_path,
        monkeypatch,
        "h22_solvers_ok",
        {"heat": FAMILY_MODULE, "poisson": FAMILY_MODULE, "_common": "X = 1\n"},
    )
    assert family_modules(package) == ("poisson", "heat")
    bundler = PythonBundler(package, library="Lib", generator="test")
    assert bundler.families == ("poisson", "heat")


def test_family_modules_rejects_a_module_that_is_no_family(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, "h22_solvers_bad", {"helpers": "X = 1\n"})
    with pytest.raises(BundleError, match=r"not dataset families \(helpers\).*underscore"):
        family_modules(package)


def test_prompt_pieces_call_the_scaffold_only_in_template_mode():
    calls = []

    def scaffold(name: str, title: str) -> str:
        calls.append((name, title))
        return f"scaffold of {title}"

    single = prompt_pieces(_view(), "single", contract="C", guide="G", scaffold=scaffold)
    assert (single.contract, single.guide, single.scaffold, calls) == ("C", "G", None, [])
    template = prompt_pieces(
        _view("poisson"), "template", contract="C", guide="G", scaffold=scaffold, input_note="N"
    )
    assert template.scaffold == "scaffold of Poisson" and template.input_note == "N"
    assert calls == [("poisson", "Poisson")]


def test_highest_degree_first_reverses_the_chains():
    chains = [[{"degree": 1}], [{"degree": 2}], [{"degree": 3}]]
    assert highest_degree_first(chains) == [[{"degree": 3}], [{"degree": 2}], [{"degree": 1}]]
    assert chains[0] == [{"degree": 1}]  # the input is left alone


def test_python_track_hooks_answer_for_their_track_only(tmp_path, monkeypatch):
    package = _package(
        tmp_path,
        monkeypatch,
        "h22_track",
        {
            "scaffolds": "def scaffold(family, title):\n    return 'S:' + family\n",
            "ladder": "def ladder(case_view):\n    return [['p1'], ['p2']]\n",
        },
    )
    (tmp_path / package / "GUIDE.md").write_text("the guide\n")
    solvers = _package(tmp_path, monkeypatch, "h22_track_solvers", {"heat": FAMILY_MODULE})
    track = Track(
        name="mine", library="Lib", language="python", source_filename="solver.py",
        library_version="1.2",
    )  # fmt: skip
    bundler = PythonBundler(solvers, library="Lib", generator="test")
    hooks = PythonTrackHooks(track, package=package, guide="GUIDE.md", bundler=bundler)

    pieces = hooks.pdeagent_prompt_pieces(track=track, case_view=_view(), mode="template")
    assert pieces.contract == contract_text("Lib 1.2")
    assert (pieces.guide, pieces.scaffold) == ("the guide\n", "S:heat")
    assert hooks.pdeagent_calibration_ladder(track=track, case_view=_view()) == [["p2"], ["p1"]]
    source = hooks.pdeagent_calibration_source(
        track=track, case_view=_view(), calibration_config={"mine": {"resolution": 7}}
    )
    assert "SETTINGS = {'resolution': 7}" in source
    reference = hooks.pdeagent_reference_source(
        track=track, case_view=_view(), reference_config={"mesh_resolution": 32},
        fidelity="reference",
    )  # fmt: skip
    assert "SETTINGS = {'resolution': 32}" in reference
    prepared = hooks.pdeagent_prepare(
        track=track, source="def solve(case_spec):\n    pass\n", build_dir=tmp_path / "b",
        sandbox=None,
    )  # fmt: skip
    assert prepared.ok and (tmp_path / "b" / "solver.py").is_file()
    # Another track's calls never reach these hooks: the core routes a per-track hook to
    # the plugin that registered the track (tests/test_dispatch_owner.py), so they do not
    # check the track themselves.


PROGRAM = """\
import json

import numpy as np


def solve(case_spec, settings):
    if settings.get("fail"):
        raise ValueError("asked to fail")
    np.savez("solution.npz", u=np.full(2, case_spec["n"] * settings["k"]))
    with open("meta.json", "w") as fh:
        json.dump({"status": "ok"}, fh)
"""


def test_settings_runner_runs_each_settings_entry_in_its_own_directory(tmp_path):
    settings = [{"k": 2}, {"fail": True}]
    proc, records = run_settings(
        sys.executable, PROGRAM, "demo", {"n": 3}, settings, tmp_path, env=os.environ
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "demo.py").read_text() == PROGRAM
    assert [(r["index"], r["ok"]) for r in records] == [(0, True), (1, False)]
    assert "ValueError: asked to fail" in records[1]["error"]
    assert all(r["wall_time_sec"] >= 0 for r in records)
    assert not (tmp_path / "1" / "solution.npz").exists()
    with pytest.raises(AssertionError, match=r"solver failed with settings \{'fail': True\}"):
        solved_runs(proc, records, settings, tmp_path)
    (ok,) = solved_runs(proc, records[:1], settings[:1], tmp_path)
    assert ok["arrays"]["u"].tolist() == [6, 6] and ok["meta"] == {"status": "ok"}


def test_settings_runner_is_a_standalone_script():
    """It runs with a runtime's interpreter, which has no pdeagent: standard library only."""
    source = SETTINGS_RUNNER.read_text(encoding="utf-8")
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert imported <= set(sys.stdlib_module_names), imported
