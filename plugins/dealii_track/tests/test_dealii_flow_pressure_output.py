"""The optional pressure output of flow cases (``output.pressure``) with the deal.II
Stokes and Navier-Stokes calibration programs (common.h's write_solution): the program
writes one ``solution_grid_<name>.bin`` per array -- the velocity components, then
``output.pressure.array`` -- and the output adapter turns them into exactly u_x, u_y, p;
with ``normalization: zero_mean`` (velocity on the whole boundary) the reported pressure
has zero mean.

Each program is compiled once (bundle.py with a coarse resolution, through the track's
own compile stage and its cache of identical programs), run directly on a manufactured
unit-square case
(u = curl psi, psi = psi_g + phi^2 chi, phi vanishing on the boundary; the Dirichlet
data curl psi_g equals u on the boundary only) and read back through
``pdeagent_adapt_output``.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from dealii_harness import Setup

from pdeagent.solver_checks import (
    ZERO_MEAN_PRESSURE,
    enclosed_flow_mms,
    flow_case_spec,
    flow_errors,
)
from pdeagent_dealii import BINARY, TRACK, muparser_view, pdeagent_adapt_output
from pdeagent_dealii.bundle import SETTINGS_FILE, bundle

pytestmark = [pytest.mark.dealii, pytest.mark.slow]

RESOLUTION = 16
"""Mesh resolution of both programs (Q2-Q1: u error ~3e-4 on this case)."""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """family -> the build directory of its program (binary and run-time settings),
    prepared on first use."""
    setup = Setup()
    root = tmp_path_factory.mktemp("flow-programs")
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            build = root / family
            start = time.monotonic()
            prepared = setup.prepare(bundle(family, {"resolution": RESOLUTION}), build)
            assert prepared.ok, prepared.log[-4000:]
            print(f"\n{family} prepared in {time.monotonic() - start:.1f} s")
            built[family] = build
        return built[family]

    return get


def _enclosed_case(family: str, nu: float):
    """All-Dirichlet velocity on the unit square, output u_x, u_y and a zero-mean p."""
    u, p, bc = enclosed_flow_mms()
    return flow_case_spec(family, nu, u, p, bc, ZERO_MEAN_PRESSURE), u, p


def _run(
    build: Path, spec: dict, workdir: Path, files: tuple[str, ...] = ("p", "u_x", "u_y")
) -> tuple[dict[str, np.ndarray], dict]:
    """Run the program built in ``build`` on ``spec`` in ``workdir``, check it wrote
    exactly the grid files of the arrays ``files`` (one name: solution_grid.bin); the
    adapted arrays and meta."""
    workdir.mkdir()
    shutil.copy2(build / SETTINGS_FILE, workdir / SETTINGS_FILE)
    program = build / BINARY
    full = {**spec, "muparser": muparser_view(spec)}
    (workdir / "case_spec.json").write_text(json.dumps(full))
    result = subprocess.run(
        [str(program), "case_spec.json", "."],
        cwd=workdir, capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LANG": "C"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    written = sorted(f.name for f in workdir.glob("solution_grid*.bin"))
    expected = (
        [f"solution_grid_{n}.bin" for n in files] if len(files) > 1 else ["solution_grid.bin"]
    )
    assert written == sorted(expected)
    adapted = pdeagent_adapt_output(track=TRACK, workdir=workdir, case_view={"case_spec": spec})
    assert adapted.npz_path is not None, (adapted.reason, adapted.message)
    with np.load(adapted.npz_path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads((workdir / "meta.json").read_text())


@pytest.mark.parametrize(("family", "nu"), [("stokes", 1.0), ("navier_stokes", 0.1)])
def test_zero_mean_pressure_output(programs, tmp_path, family, nu):
    spec, u, p = _enclosed_case(family, nu)
    arrays, meta = _run(programs(family), spec, tmp_path / "run")
    assert sorted(set(arrays) - {"x", "y"}) == ["p", "u_x", "u_y"]
    err = flow_errors(spec, arrays, u, p)
    print(f"\ndealii {family} zero_mean res {RESOLUTION}: {err}")
    assert err.velocity < 1e-3 and err.pressure < 1e-2, err
    assert abs(err.mean) < 1e-2 * err.rms  # the reported pressure has zero mean
    assert meta["solver_info"]["pressure_null_space"] != "none"


def test_magnitude_plus_pressure_and_outputs_without_pressure(programs, tmp_path):
    """A single field plus the pressure are two files; without ``output.pressure`` the
    output is as before (one solution_grid.bin, or one file per component)."""
    spec, _, _ = _enclosed_case("stokes", 1.0)
    magnitude = copy.deepcopy(spec)
    magnitude["output"].update(field="velocity_magnitude", components=None, reason="as |u|")
    arrays, _ = _run(programs("stokes"), magnitude, tmp_path / "mag", ("p", "velocity_magnitude"))
    both, _ = _run(programs("stokes"), spec, tmp_path / "both")
    speed = np.hypot(both["u_x"], both["u_y"])
    inside = np.isfinite(speed)
    assert np.allclose(arrays["velocity_magnitude"][inside], speed[inside], rtol=0, atol=1e-12)
    assert np.array_equal(arrays["p"][inside], both["p"][inside])
    plain = copy.deepcopy(magnitude)
    del plain["output"]["pressure"]
    arrays, _ = _run(programs("stokes"), plain, tmp_path / "plain", ("velocity_magnitude",))
    assert sorted(set(arrays) - {"x", "y"}) == ["velocity_magnitude"]
    components = copy.deepcopy(spec)
    del components["output"]["pressure"]
    arrays, _ = _run(programs("stokes"), components, tmp_path / "components", ("u_x", "u_y"))
    assert sorted(set(arrays) - {"x", "y"}) == ["u_x", "u_y"]
