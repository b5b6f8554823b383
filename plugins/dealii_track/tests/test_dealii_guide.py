"""Every cpp block of DEALII_GUIDE.md compiles with the harness's own command (and the
ones that run without input do what the guide says)."""

from __future__ import annotations

import re
import subprocess

import pytest
from dealii_harness import toolchain

from pdeagent_dealii import compile_argv, guide

pytestmark = [pytest.mark.dealii, pytest.mark.slow]

BLOCKS = re.findall(r"```cpp\n(.*?)```", guide(), flags=re.S)


def test_the_guide_has_code_blocks_and_names_the_version():
    assert len(BLOCKS) >= 3
    assert "9.4" in guide().splitlines()[2] or "9.4" in guide()[:300]


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_block_compiles_and_runs(index, tmp_path):
    tc = toolchain()
    (tmp_path / "solver.cc").write_text(BLOCKS[index])
    build = subprocess.run(
        compile_argv(tc, "solver.cc", "solver"),
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run(
        ["./solver"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, (run.stdout[-1000:], run.stderr[-2000:])
