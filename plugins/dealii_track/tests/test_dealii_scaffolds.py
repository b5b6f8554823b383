"""Template-guided deal.II scaffolds: one per deal.II family, in the template-mode
prompt, compiling as they are; the plumbing runs for real (mesh, sampling with NaN
outside, output grids, meta.json) once a numerical core is filled in."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest
from dealii_harness import DATASET, Setup

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.families import FAMILIES
from pdeagent.cases.io import load_cases
from pdeagent.plugins import load_plugins
from pdeagent.prompts import build_prompt
from pdeagent_dealii import compile_argv, muparser_view
from pdeagent_dealii.environment import load_toolchain
from pdeagent_dealii.scaffolds import CORES, TODO, scaffold

DEALII_FAMILIES = sorted(f for f in FAMILIES if f not in ("burgers", "wave"))


@pytest.mark.parametrize("family", DEALII_FAMILIES)
def test_each_dealii_family_has_a_scaffold_with_only_the_core_left(family):
    source = scaffold(family, FAMILIES[family].title)
    assert source.count(TODO) == 1
    assert "json numerical_core(const json &spec, Triangulation<dim> &tria" in source
    assert f'main_program("{family}"' in source
    assert not re.search(r'^#include "', source, re.M)  # the track's headers are inlined
    assert CORES[family].splitlines()[0] in source


def test_unknown_family_has_no_scaffold():
    with pytest.raises(KeyError):
        scaffold("wave", "Wave")


def test_template_mode_prompt_carries_the_scaffold_and_single_mode_does_not():
    host = load_plugins(strict=True)
    track = host.get_track("dealii")
    case = next(
        c for c in load_cases(DATASET) if c.family == "heat" and "dealii" in c.supported_libraries
    )
    prompts = {}
    for mode in ("template", "single"):
        pieces = host.hook.pdeagent_prompt_pieces(
            track=track, case_view=agent_view(case, "dealii"), mode=mode
        )
        prompts[mode] = build_prompt(case, track, pieces, mode=mode)
    assert TODO in prompts["template"] and 'main_program("heat"' in prompts["template"]
    assert TODO not in prompts["single"]


def _compile(tmp_path, source: str):
    toolchain = load_toolchain()
    (tmp_path / "solver.cc").write_text(source)
    proc = subprocess.run(
        compile_argv(toolchain, "solver.cc", "solver"),
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


def _spec(tmp_path, case) -> None:
    spec = dict(agent_view(case, "dealii")["case_spec"])
    spec["muparser"] = muparser_view(spec)
    (tmp_path / "case_spec.json").write_text(json.dumps(spec))


@pytest.mark.dealii
@pytest.mark.slow
def test_scaffold_compiles_as_is_and_fails_loudly_until_the_core_is_written(tmp_path):
    setup = Setup()
    case = next(
        c for c in setup.cases if c.family == "stokes" and "dealii" in c.supported_libraries
    )
    _compile(tmp_path, scaffold("stokes", "Stokes"))
    _spec(tmp_path, case)
    proc = subprocess.run(["./solver", "case_spec.json", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1
    assert "pdeagent stokes: write the numerical core" in proc.stderr
    assert not (tmp_path / "solution_grid.bin").exists()


CORE = """
  const unsigned int degree = 1;
  FE_Q<dim> fe(degree);
  MappingQ<dim> mapping(degree);
  DoFHandler<dim> dofs(tria);
  dofs.distribute_dofs(fe);
  FunctionParser<dim> g(1);
  pdeagent::parse(g, json("x + 2*y"));
  Vector<double> u(dofs.n_dofs());
  VectorTools::interpolate(mapping, dofs, g, u);
  pdeagent::write_solution(outdir, spec, mapping, dofs, u);
  return {{"num_dofs", dofs.n_dofs()}, {"element_degree", degree}};
"""


@pytest.mark.dealii
@pytest.mark.slow
def test_scaffold_plumbing_samples_a_linear_field_exactly_with_nan_in_the_hole(tmp_path):
    """An annulus case: the filled-in core interpolates x + 2y (exact for Q1); the
    written grid equals it to rounding inside the mesh and is NaN in the hole and the
    corners."""
    setup = Setup()
    case = next(
        c for c in sorted(setup.cases, key=lambda c: c.id)
        if c.family == "poisson" and c.case_spec.domain.type == "annulus"
        and "dealii" in c.supported_libraries
    )  # fmt: skip
    _compile(tmp_path, scaffold("poisson", "Poisson").replace(TODO, CORE))
    _spec(tmp_path, case)
    proc = subprocess.run(["./solver", "case_spec.json", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    grid = case.case_spec.eval_grid
    x = np.linspace(grid.bbox[0], grid.bbox[1], grid.nx)
    y = np.linspace(grid.bbox[2], grid.bbox[3], grid.ny)
    values = np.fromfile(tmp_path / "solution_grid.bin", dtype="<f8").reshape(grid.ny, grid.nx)
    X, Y = np.meshgrid(x, y)
    r = np.hypot(X - 0.0, Y - 0.0)
    inside = (r > 0.5 + 0.02) & (r < 1.0 - 0.02)
    outside = (r < 0.5 - 0.02) | (r > 1.0 + 0.02)
    assert inside.sum() > 1000 and outside.sum() > 500
    np.testing.assert_allclose(values[inside], (X + 2 * Y)[inside], atol=1e-11)
    assert np.isnan(values[outside]).all()
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["solver_info"]["element_degree"] == 1
