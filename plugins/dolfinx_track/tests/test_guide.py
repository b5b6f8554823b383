"""Every code block of DOLFINX_GUIDE.md runs, in order, in the real DOLFINx runtime."""

from __future__ import annotations

import re
import subprocess
from importlib import resources

import numpy as np
import pytest
from dolfinx_harness import dolfinx_python

from pdeagent_dolfinx.environment import runtime_env

pytestmark = pytest.mark.dolfinx


def guide_blocks() -> list[str]:
    text = resources.files("pdeagent_dolfinx").joinpath("DOLFINX_GUIDE.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_guide_has_the_promised_sections():
    text = resources.files("pdeagent_dolfinx").joinpath("DOLFINX_GUIDE.md").read_text()
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
    assert len(guide_blocks()) >= 8


def test_every_guide_block_runs(tmp_path):
    python = dolfinx_python()
    script = "\n\n".join(guide_blocks())
    (tmp_path / "guide.py").write_text(script)
    env = runtime_env(python)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [str(python), "guide.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = dict(
        line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("L2", "area"))
    )
    assert float(out["L2"].split()[-1]) < 1e-4
    area, exact = (float(v) for v in out["area"].split()[::2])
    assert abs(area - exact) < 1e-4
    with np.load(tmp_path / "solution.npz", allow_pickle=False) as data:
        assert data["u"].shape == (41, 41)
        assert np.isfinite(data["u"]).all()
