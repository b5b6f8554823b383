"""Template-guided scaffolds: one per Firedrake family, valid Python, plumbing that runs
for real in the Firedrake runtime and fails loudly at its TODO."""

from __future__ import annotations

import ast
import json
import subprocess

import numpy as np
import pytest
from firedrake_harness import case_spec, firedrake_record
from pdeagent_firedrake import environment
from pdeagent_firedrake.bundle import FAMILIES as SOLVER_FAMILIES
from pdeagent_firedrake.scaffolds import CORES, scaffold

from pdeagent.cases.families import FAMILIES


def test_every_firedrake_family_has_a_scaffold():
    assert set(CORES) == set(SOLVER_FAMILIES)


@pytest.mark.parametrize("family", sorted(CORES))
def test_scaffold_parses_and_leaves_only_the_core(family):
    source = scaffold(family, FAMILIES[family].title)
    tree = ast.parse(source)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"solve", "numerical_core", "build_mesh", "sample", "expression"} <= names
    assert 'raise NotImplementedError("write the numerical core")' in source


def test_unknown_family_has_no_scaffold():
    with pytest.raises(KeyError):
        scaffold("navier_stokes", "Navier-Stokes")  # not a Firedrake family


def _run(tmp_path, source, spec):
    record = firedrake_record()
    (tmp_path / "solver.py").write_text(source)
    (tmp_path / "case.json").write_text(json.dumps(spec))
    (tmp_path / "drive.py").write_text(
        "import json, solver\nsolver.solve(json.load(open('case.json')))\n"
    )
    env = environment.runtime_env(record, home=str(tmp_path))
    env["FIREDRAKE_CACHE_DIR"] = str(tmp_path / "cache")
    return subprocess.run(
        [record["python"], "drive.py"], cwd=tmp_path, capture_output=True, text=True,
        timeout=600, env=env,
    )  # fmt: skip


SPEC = case_spec(
    "poisson", params={"kappa": 1.0}, forcing={"f": "1"},
    bc={"dirichlet": [{"boundary": ["all"], "value": "0", "quantity": None}]},
    output={"field": "u"}, n=21,
)  # fmt: skip


@pytest.mark.firedrake
def test_scaffold_plumbing_writes_valid_artifacts(tmp_path):
    core = (
        "def numerical_core(case_spec, msh, boundary_ids):\n"
        "    V = fd.FunctionSpace(msh, 'CG', 1)\n"
        "    uh = fd.Function(V).interpolate(expression('x + 2*y', msh))\n"
        "    [[u]] = sample([uh], msh, case_spec['eval_grid'])\n"
        "    return {'u': u}, {'dofs': V.dim()}\n"
    )
    proc = _run(tmp_path, scaffold("poisson", "Poisson") + "\n\n" + core, SPEC)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(tmp_path / "solution.npz", allow_pickle=False) as data:
        X, Y = np.meshgrid(data["x"], data["y"], indexing="xy")
        assert data["u"].shape == (21, 21)
        np.testing.assert_allclose(data["u"], X + 2 * Y, atol=1e-12)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["solver_info"]["dofs"] == 33 * 33


@pytest.mark.firedrake
def test_the_unmodified_scaffold_fails_loudly_at_its_todo(tmp_path):
    proc = _run(tmp_path, scaffold("poisson", "Poisson"), SPEC)
    assert proc.returncode != 0
    assert "NotImplementedError: write the numerical core" in proc.stderr
    assert not (tmp_path / "solution.npz").exists()
