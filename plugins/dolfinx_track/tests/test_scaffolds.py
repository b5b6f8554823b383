"""Template-guided scaffolds: one per family, valid Python, plumbing that runs for real."""

from __future__ import annotations

import ast
import subprocess

import numpy as np
import pytest
from dolfinx_harness import case_spec, dolfinx_python

from pdeagent.cases.families import FAMILIES
from pdeagent_dolfinx.environment import runtime_env
from pdeagent_dolfinx.scaffolds import scaffold


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_scaffold_parses_and_leaves_only_the_core(family):
    source = scaffold(family, FAMILIES[family].title)
    tree = ast.parse(source)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"solve", "numerical_core", "build_mesh", "sample", "expression"} <= names
    assert 'raise NotImplementedError("write the numerical core")' in source


def test_unknown_family_has_no_scaffold():
    with pytest.raises(KeyError):
        scaffold("maxwell", "Maxwell")


@pytest.mark.dolfinx
def test_scaffold_plumbing_writes_valid_artifacts(tmp_path):
    python = dolfinx_python()
    spec = case_spec(
        "poisson",
        params={"kappa": 1.0},
        forcing={"f": "1"},
        bc={"dirichlet": [{"boundary": ["all"], "value": "0", "quantity": None}]},
        output={"field": "u"},
        n=21,
    )
    core = (
        "def numerical_core(case_spec, msh):\n"
        "    V = fem.functionspace(msh, ('Lagrange', 1))\n"
        "    uh = fem.Function(V)\n"
        "    points = V.element.interpolation_points\n"
        "    uh.interpolate(fem.Expression(expression('x + 2*y', msh), points))\n"
        "    axes, [[u]] = sample([uh], msh, case_spec['eval_grid'])\n"
        "    return {'u': u}, {'dofs': V.dofmap.index_map.size_global}\n"
    )
    source = scaffold("poisson", "Poisson") + "\n\n" + core
    (tmp_path / "solver.py").write_text(source)
    driver = "import json, solver\nsolver.solve(json.load(open('case.json')))\n"
    import json

    (tmp_path / "case.json").write_text(json.dumps(spec))
    (tmp_path / "drive.py").write_text(driver)
    env = runtime_env(python)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [str(python), "drive.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(tmp_path / "solution.npz", allow_pickle=False) as data:
        x, y, u = data["x"], data["y"], data["u"]
    assert u.shape == (21, 21)
    np.testing.assert_allclose(u, x[None, :] + 2 * y[:, None], atol=1e-12)
