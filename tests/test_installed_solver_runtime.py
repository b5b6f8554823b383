"""The Python tracks find the core's solver runtime as installed code (issue #33 item 1):
from wheels of pdeagent and the track (not editable installs, no source tree), the
track's ``solvers`` package resolves its sibling runtime modules (``_geometry``, ...)
inside the installed ``pdeagent`` package, and the bundler still makes a submission."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACKS = {name: ROOT / "plugins" / f"{name}_track" for name in ("dolfinx", "firedrake")}

PROBE = """
import json
from importlib.util import find_spec
import pdeagent, pdeagent_{track}.solvers as solvers
from pdeagent_{track}.bundle import bundle
spec = find_spec("pdeagent_{track}.solvers._geometry")
source = bundle("poisson", {{}})
print(json.dumps({{"pdeagent": pdeagent.__file__, "track": solvers.__file__,
                  "path": list(solvers.__path__), "geometry": spec.origin if spec else None,
                  "bundled": "def solve(" in source and "from ._" not in source}}))
"""


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A venv holding wheels of pdeagent and both Python tracks; the other dependencies
    (pluggy, attrs, ...) come from the test venv's site-packages through a .pth line,
    which adds the folder without running its editable-install hooks."""
    work = tmp_path_factory.mktemp("wheels")
    wheels = work / "dist"
    for project in (ROOT, *TRACKS.values()):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "-w", str(wheels), str(project)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         "--target", purelib, *map(str, wheels.glob("*.whl"))],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (Path(purelib) / "zz-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("track", sorted(TRACKS))
def test_an_installed_track_finds_the_solver_runtime_in_the_installed_core(wheel_venv, track):
    proc = subprocess.run(
        [str(wheel_venv), "-c", PROBE.format(track=track)],
        capture_output=True, text=True, timeout=120, cwd=wheel_venv.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    site = str(wheel_venv.parents[1])
    assert found["pdeagent"].startswith(site) and found["track"].startswith(site)
    assert str(ROOT) not in json.dumps(found["path"])  # not the source tree
    installed_runtime = str(Path(found["pdeagent"]).parent / "solver_runtime")
    assert installed_runtime in found["path"]
    assert found["geometry"] == str(Path(installed_runtime) / "_geometry.py")
    assert found["bundled"]  # one self-contained file, the runtime modules inlined
