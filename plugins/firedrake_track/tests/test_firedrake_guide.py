"""Every code block of FIREDRAKE_GUIDE.md runs, in order, in the real Firedrake runtime,
and prints the numbers the guide's text promises."""

from __future__ import annotations

import json
import math
import re
import subprocess
from importlib import resources

import numpy as np
import pytest
from firedrake_harness import firedrake_record
from pdeagent_firedrake import environment

pytestmark = pytest.mark.firedrake


def guide_text() -> str:
    return resources.files("pdeagent_firedrake").joinpath("FIREDRAKE_GUIDE.md").read_text()


def guide_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", guide_text(), re.S)


def test_guide_has_the_promised_sections():
    text = guide_text()
    for heading in (
        "## Meshes",
        "## Function spaces",
        "Dirichlet, Neumann and Robin",
        "## A nonlinear problem",
        "## Mixed spaces",
        "## Time stepping",
        "## Evaluating on the evaluation grid",
        "## Writing the artifacts",
    ):
        assert heading in text
    assert len(guide_blocks()) >= 9


def test_every_guide_block_runs_and_its_numbers_hold(tmp_path):
    record = firedrake_record()
    (tmp_path / "guide.py").write_text("\n\n".join(guide_blocks()))
    env = environment.runtime_env(record, home=str(tmp_path))
    env["FIREDRAKE_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [record["python"], "guide.py"], cwd=tmp_path, capture_output=True, text=True,
        timeout=900, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = {}
    for line in proc.stdout.splitlines():
        key, _, rest = line.partition(" ")
        out[key] = rest
    assert out["square"].strip() == "ids [1 2 3 4]"
    assert out["annulus"].strip() == "ids [1 2]"
    inner, exact = (float(v) for v in out["inner"].split())
    assert exact - 1e-2 < inner < exact  # a polygon inscribed in the circle
    assert float(out["L2"]) < 1e-4  # P2 on 16x16
    assert float(out["nonlinear"].split()[-1]) < 1e-5
    assert 1 <= int(out["newton"].split()[-1]) <= 8
    stokes = {
        line.split()[1]: line.split()[-1]
        for line in proc.stdout.splitlines()
        if line.startswith("stokes ")
    }
    assert abs(float(stokes["mean"])) < 1e-12  # the constant chosen: zero mean
    heat_error, t_final = (float(v) for v in out["heat"].split()[1::2])
    assert math.isclose(t_final, 0.5) and heat_error < 1e-2  # backward Euler, dt 0.05
    assert "nan" in out["outside"]
    with np.load(tmp_path / "solution.npz", allow_pickle=False) as data:
        assert data["u"].shape == (41, 41) and np.isfinite(data["u"]).all()
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["wall_time_sec"] >= 0
