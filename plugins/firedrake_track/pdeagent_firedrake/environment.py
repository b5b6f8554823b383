"""Provisioning and checking the Firedrake runtime (``env setup firedrake`` / ``doctor``).

Firedrake is built here from what this kind of machine can reach (no prebuilt
container, no ``--download-*``): Debian's MPI / HDF5 / MUMPS / ScaLAPACK / METIS /
PT-Scotch / SuiteSparse / SuperLU packages; PETSc from the PyPI ``petsc`` source
distribution configured against them; then mpi4py, h5py, petsc4py (the exact version
Firedrake pins), libsupermesh and Firedrake from PyPI, in a Python 3.12 venv.

The whole build lives in ``$XDG_CACHE_HOME/pdeagent/firedrake/<key>/`` where ``key``
digests every version and option that changes the result (:func:`build_key`): PETSc
must stay at the absolute path it was built in (petsc4py, Firedrake and its runtime
kernel compiler use it), so the build directory is never moved, and a second setup
with the same key reuses it (seconds). Each step leaves a marker when it completes,
so an interrupted build resumes at the step it was in; ``build.json`` records the
seconds each step took. ``$XDG_DATA_HOME/pdeagent/envs/firedrake.json`` names the
build the track uses. The harness itself never imports firedrake.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pdeagent.stages import DoctorCheck, TrackUnavailable

FIREDRAKE_VERSION = "2026.10.0"
PETSC_VERSION = "3.26.0"
"""PETSc and petsc4py must match exactly: Firedrake 2026.10.0 pins petsc4py 3.26.0."""
PYTHON_MINOR = (3, 12)

APT_PACKAGES = (
    "build-essential", "gfortran", "cmake", "pkg-config", "bison", "flex",
    "openmpi-bin", "libopenmpi-dev", "libhdf5-openmpi-dev", "libmumps-dev",
    "libscalapack-openmpi-dev", "libmetis-dev", "libptscotch-dev", "libsuitesparse-dev",
    "libsuperlu-dev", "libsuperlu-dist-dev", "zlib1g-dev", "libblas-dev", "liblapack-dev",
)  # fmt: skip

MULTIARCH = "/usr/lib/x86_64-linux-gnu"
HDF5_INCLUDE = "/usr/include/hdf5/openmpi"
HDF5_LIB = f"{MULTIARCH}/hdf5/openmpi"

PETSC_ARCH = "arch-pdeagent"
PETSC_CONFIGURE = (
    "--with-cc=mpicc", "--with-cxx=mpicxx", "--with-fc=mpif90",
    "COPTFLAGS=-O2", "CXXOPTFLAGS=-O2", "FOPTFLAGS=-O2",
    "--with-debugging=0", "--with-shared-libraries=1", "--with-fortran-bindings=0",
    "--with-c2html=0", "--with-cuda=0", "--with-x=0", "--with-hypre=0",
    "--with-zlib", "--with-bison",
    "--with-hdf5", f"--with-hdf5-include={HDF5_INCLUDE}",
    f"--with-hdf5-lib=-L{HDF5_LIB} -lhdf5_hl -lhdf5",
    "--with-metis",
    "--with-ptscotch", "--with-ptscotch-include=/usr/include/scotch",
    "--with-ptscotch-lib=-lptesmumps -lptscotch -lptscotcherr -lscotch -lscotcherr",
    "--with-scalapack", "--with-scalapack-lib=-lscalapack-openmpi",
    "--with-mumps", "--with-mumps-include=/usr/include",
    "--with-mumps-lib=-ldmumps -lzmumps -lsmumps -lcmumps -lmumps_common -lpord",
    "--with-suitesparse", "--with-suitesparse-include=/usr/include/suitesparse",
    "--with-suitesparse-lib=-lspqr -lumfpack -lklu -lcholmod -lbtf -lccolamd -lcolamd -lcamd"
    " -lamd -lsuitesparseconfig",
    "--with-superlu", "--with-superlu-include=/usr/include/superlu",
    "--with-superlu-lib=-lsuperlu",
    "--with-superlu_dist", "--with-superlu_dist-include=/usr/include/superlu-dist",
    "--with-superlu_dist-lib=-lsuperlu_dist",
)  # fmt: skip
"""Debian's hypre 2.26 does not build with PETSc 3.26, hence no hypre (GAMG instead)."""

BUILD_REQUIREMENTS = (
    "numpy", "Cython", "setuptools", "wheel", "pybind11", "pkgconfig", "petsctools",
    "firedrake-rtree", "rtree", "hatchling",
)  # fmt: skip
"""Build tools the --no-build-isolation steps need in the venv (hatchling: the sdist
of Firedrake's dependency cgen)."""

RUNTIME_EXTRAS = ("gmsh", "scipy")
"""Beyond Firedrake's own dependencies: gmsh for the geometry templates' meshes. sympy
(case expressions are written in its syntax) needs no entry: Firedrake, FIAT and pyadjoint
require it, so every build has it; the doctor's import probe and the runtime manifest
check it (an entry here would change :func:`build_key` and rebuild PETSc)."""

RUNTIME_ROOTS = (
    "pip", *BUILD_REQUIREMENTS, "mpi4py", "h5py", f"petsc4py=={PETSC_VERSION}",
    "scikit-build-core", "libsupermesh", f"firedrake=={FIREDRAKE_VERSION}", *RUNTIME_EXTRAS,
)  # fmt: skip
"""Everything the build steps install into the venv: the roots of the runtime manifest."""

LISTED_PACKAGES = (
    "fenics-ufl", "firedrake", "firedrake-fiat", "gmsh", "h5py", "loopy", "mpi4py", "numpy",
    "petsc4py", "pyadjoint-ad", "scipy", "sympy",
)  # fmt: skip
"""The distributions the prompt names (runtime_packages.json ``packages``); the rest of the
runtime (build tools, Firedrake's helpers) is recorded as ``dependencies``."""

IMPORT_PROBE = textwrap.dedent(
    """
    import json
    from importlib.metadata import version
    import firedrake, petsc4py, mpi4py, numpy, gmsh, sympy
    from firedrake.petsc import PETSc
    print(json.dumps({"firedrake": version("firedrake"),
                      "petsc": ".".join(map(str, PETSc.Sys.getVersion())),
                      "petsc4py": petsc4py.__version__, "numpy": numpy.__version__,
                      "gmsh": gmsh.__version__, "sympy": sympy.__version__}))
    """
)

SOLVE_PROBE = textwrap.dedent(
    """
    import json
    from firedrake import *
    mesh = UnitSquareMesh(8, 8)
    V = FunctionSpace(mesh, "CG", 2)
    x, y = SpatialCoordinate(mesh)
    u, v = TrialFunction(V), TestFunction(V)
    exact = sin(pi * x) * sin(pi * y)
    uh = Function(V)
    solve(inner(grad(u), grad(v)) * dx == 2 * pi**2 * exact * v * dx, uh,
          bcs=[DirichletBC(V, 0.0, "on_boundary")],
          solver_parameters={"ksp_type": "preonly", "pc_type": "lu",
                             "pc_factor_mat_solver_type": "mumps"})
    print(json.dumps({"l2_error": float(errornorm(exact, uh))}))
    """
)

STEPS = (
    "petsc_source", "petsc_configure", "petsc_make", "venv", "build_requirements",
    "mpi4py", "h5py", "petsc4py", "libsupermesh", "firedrake", "runtime_extras",
)  # fmt: skip
PIP_STEPS = STEPS[STEPS.index("venv") :]
"""The steps that install into the venv: their markers hold the digest of the pins they
installed under, so new pins redo them (and keep the PETSc build)."""
UNPINNED = "unpinned"


def build_key() -> str:
    """Digest of everything that changes the build: versions, PETSc options, packages."""
    material = json.dumps(
        {
            "firedrake": FIREDRAKE_VERSION,
            "petsc": PETSC_VERSION,
            "python": list(PYTHON_MINOR),
            "configure": list(PETSC_CONFIGURE),
            "apt": list(APT_PACKAGES),
            "build": list(BUILD_REQUIREMENTS),
            "extras": list(RUNTIME_EXTRAS),
        },
        sort_keys=True,
    )
    return f"{FIREDRAKE_VERSION}-{hashlib.sha256(material.encode()).hexdigest()[:12]}"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pdeagent" / "firedrake"


def build_dir(key: str | None = None) -> Path:
    return cache_root() / (key or build_key())


def record_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pdeagent" / "envs" / "firedrake.json"


def petsc_dir(build: Path) -> Path:
    return build / f"petsc-{PETSC_VERSION}"


def venv_python(build: Path) -> Path:
    return build / "venv" / "bin" / "python"


def load_record() -> dict[str, Any]:
    """The build the track uses, or TrackUnavailable saying how to make one."""
    path = record_path()
    hint = "run `pdeagent env setup firedrake`"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TrackUnavailable(f"no Firedrake runtime ({path} is missing): {hint}") from None
    except (OSError, ValueError) as exc:
        raise TrackUnavailable(f"unreadable {path} ({exc}): {hint} --force") from None
    if not isinstance(record, dict) or not Path(str(record.get("python", ""))).is_file():
        raise TrackUnavailable(f"{path} names no existing Firedrake interpreter: {hint}")
    return record


def runtime_env(record: dict[str, Any], home: str | None = None) -> dict[str, str]:
    """Environment of the runtime interpreter (inside or outside the sandbox)."""
    python = Path(record["python"])
    return {
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": home or os.environ.get("HOME", "/tmp"),
        "PETSC_DIR": record["petsc_dir"],
        "PETSC_ARCH": record["petsc_arch"],
        "OMP_NUM_THREADS": "1",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_plm": "isolated",
        "OMPI_MCA_ess_singleton_isolated": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        "OMPI_MCA_rmaps_base_oversubscribe": "yes",
    }


def build_env(build: Path) -> dict[str, str]:
    """Environment of the source builds (compilers, PETSc, HDF5, a private pip cache)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PATH=f"{venv_python(build).parent}:/usr/local/bin:/usr/bin:/bin",
        CC="mpicc",
        CXX="mpicxx",
        MPICC="mpicc",
        HDF5_MPI="ON",
        HDF5_INCLUDEDIR=HDF5_INCLUDE,
        HDF5_LIBDIR=HDF5_LIB,
        PETSC_DIR=str(petsc_dir(build)),
        PETSC_ARCH=PETSC_ARCH,
        PIP_CACHE_DIR=str(build / "pip-cache"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        OMP_NUM_THREADS="1",
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
    )
    return env


def missing_packages() -> list[str]:
    """The APT_PACKAGES dpkg does not list as installed."""
    if shutil.which("dpkg-query") is None:
        return list(APT_PACKAGES)
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n", *APT_PACKAGES],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    installed = {
        line.split()[0].split(":")[0]
        for line in proc.stdout.splitlines()
        if len(line.split()) > 1 and line.split()[1].startswith("ii")
    }
    return [p for p in APT_PACKAGES if p not in installed]


def install_packages(log: Callable[[str], None]) -> None:
    missing = missing_packages()
    if not missing:
        return
    command = f"apt-get install -y --no-install-recommends {' '.join(missing)}"
    if os.geteuid() != 0:
        raise TrackUnavailable(f"Firedrake needs Debian packages; as root run: {command}")
    if shutil.which("apt-get") is None:
        raise TrackUnavailable(f"no apt-get here: install {', '.join(missing)} by hand")
    log(f"installing {', '.join(missing)} with apt")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], env=env)
    _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env)


def _run(
    argv: list[str], *, env: dict[str, str], cwd: Path | None = None, log_file: Path | None = None
) -> None:
    """Run one build command; its output goes to ``log_file`` (kept for a failed build)."""
    out = log_file.open("a", encoding="utf-8") if log_file else subprocess.DEVNULL
    try:
        if log_file:
            out.write(f"\n$ {shlex.join(argv)}\n")
            out.flush()
        proc = subprocess.run(
            argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT if log_file else
            subprocess.PIPE, text=True, check=False, timeout=7200,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TrackUnavailable(f"{shlex.join(argv[:5])} failed: {exc}") from None
    finally:
        if log_file:
            out.close()
    if proc.returncode != 0:
        where = f"; its output is in {log_file}" if log_file else f":\n{proc.stderr[-2000:]}"
        if log_file:
            tail = log_file.read_text(encoding="utf-8", errors="replace")[-2500:]
            where += f"\n... {tail}"
        raise TrackUnavailable(f"{shlex.join(argv[:5])} ... exited {proc.returncode}{where}")


def _base_python() -> Path:
    """A Python 3.12 to create the venv from (PDEAGENT_PYTHON, the harness's own, python3.12)."""
    candidates = [os.environ.get("PDEAGENT_PYTHON"), getattr(sys, "_base_executable", None)]
    candidates.append(shutil.which("python3.12"))
    for cand in candidates:
        if not cand:
            continue
        proc = subprocess.run(
            [cand, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode == 0 and proc.stdout.strip() == str(PYTHON_MINOR):
            return Path(cand)
    raise TrackUnavailable("no Python 3.12 found for the Firedrake venv (set PDEAGENT_PYTHON)")


def _pip(build: Path, *args: str, log_file: Path, constraints: Path | None) -> None:
    pinned = ["-c", str(constraints)] if constraints is not None else []
    _run([str(venv_python(build)), "-m", "pip", "install", *pinned, *args],
         env=build_env(build), log_file=log_file)  # fmt: skip


def _step_commands(
    build: Path, log_file: Path, constraints: Path | None
) -> dict[str, Callable[[], None]]:
    """The build steps; every pip install runs under ``constraints`` (the committed pins),
    or unconstrained (None: an ``--update-pins`` build)."""
    env = build_env(build)
    petsc = petsc_dir(build)

    def petsc_source() -> None:
        downloads = cache_root() / "downloads"  # shared by the builds of every key
        downloads.mkdir(parents=True, exist_ok=True)
        archive = downloads / f"petsc-{PETSC_VERSION}.tar.gz"
        if not archive.is_file():
            _run([str(_base_python()), "-m", "pip", "download", "--no-deps", "--no-binary",
                  ":all:", f"petsc=={PETSC_VERSION}", "-d", str(downloads)], env=env,
                 log_file=log_file)  # fmt: skip
        if petsc.exists():
            shutil.rmtree(petsc)
        with tarfile.open(archive) as tar:
            tar.extractall(build, filter="data")
        if not (petsc / "configure").is_file():
            raise TrackUnavailable(f"the petsc sdist did not unpack to {petsc}")

    def petsc_configure() -> None:
        _run([str(_base_python()), "./configure", f"PETSC_ARCH={PETSC_ARCH}",
              *PETSC_CONFIGURE], env=env, cwd=petsc, log_file=log_file)  # fmt: skip

    def petsc_make() -> None:
        jobs = str(max(1, os.cpu_count() or 1))
        _run(["make", f"PETSC_DIR={petsc}", f"PETSC_ARCH={PETSC_ARCH}", f"MAKE_NP={jobs}",
              "all"], env=env, cwd=petsc, log_file=log_file)  # fmt: skip

    def venv() -> None:
        target = build / "venv"
        if target.exists():
            shutil.rmtree(target)
        _run([str(_base_python()), "-m", "venv", str(target)], env=env, log_file=log_file)
        pip("--upgrade", "pip", "setuptools", "wheel")()

    def pip(*args: str) -> Callable[[], None]:
        return lambda: _pip(build, *args, log_file=log_file, constraints=constraints)

    def libsupermesh() -> None:
        pip("scikit-build-core")()  # its build backend (CMake + gfortran, MPI)
        pip("--no-build-isolation", "libsupermesh")()

    def firedrake() -> None:
        # first without dependencies and against our PETSc (a resolver left alone would
        # build a default PETSc in a throwaway environment), then its other dependencies
        pip("--no-build-isolation", "--no-deps", f"firedrake=={FIREDRAKE_VERSION}")()
        pip(f"firedrake=={FIREDRAKE_VERSION}")()

    return {
        "petsc_source": petsc_source,
        "petsc_configure": petsc_configure,
        "petsc_make": petsc_make,
        "venv": venv,
        "build_requirements": pip(*BUILD_REQUIREMENTS),
        # the PyPI binary wheel works with Debian's Open MPI (ENVIRONMENTS.md)
        "mpi4py": pip("mpi4py"),
        "h5py": pip("--no-build-isolation", "--no-binary", "h5py", "h5py"),
        "petsc4py": pip("--no-build-isolation", f"petsc4py=={PETSC_VERSION}"),
        "libsupermesh": libsupermesh,
        "firedrake": firedrake,
        "runtime_extras": pip(*RUNTIME_EXTRAS),
    }


def setup_marker() -> Path:
    """Present while a setup runs: ``{"pid", "started"}`` of the process (a test session
    that starts while a background setup builds waits for it, see :func:`wait_for_setup`)."""
    return record_path().with_suffix(".setup-running")


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, finished but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def wait_for_setup(timeout: float, log: Callable[[str], None] = lambda _msg: None) -> bool:
    """Wait while a setup process named by :func:`setup_marker` is alive (at most
    ``timeout`` seconds); True when none runs (any more). A marker of a dead process
    (a crashed setup) is ignored."""
    marker = setup_marker()
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        try:
            pid = int(json.loads(marker.read_text(encoding="utf-8"))["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return True
        if not _pid_alive(pid):
            return True
        if time.monotonic() > deadline:
            return False
        if not announced:
            log(f"waiting for the Firedrake setup running as pid {pid} ({marker})")
            announced = True
        time.sleep(5)


def setup(*, force: bool, log: Callable[[str], None], update_pins: bool = False) -> dict[str, Any]:
    """Build (or reuse) the Firedrake runtime and record it; returns the record.

    Every pip step installs under the pins of the committed manifest; ``update_pins``
    redoes the venv steps unconstrained (the newest versions the requirements allow).
    ``force`` rebuilds the venv and everything after it but keeps the PETSc build and
    the pip cache of the same key (the expensive C compilation)."""
    marker = setup_marker()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"pid": os.getpid(), "started": time.time()}), encoding="utf-8")
    try:
        return _setup(force=force, log=log, update_pins=update_pins)
    finally:
        marker.unlink(missing_ok=True)


def _pins() -> list[str]:
    from pdeagent.runtime_packages import ManifestError, load_pins
    from pdeagent_firedrake import TRACK

    try:
        return load_pins(TRACK)
    except ManifestError as exc:
        raise TrackUnavailable(str(exc)) from None


def _stale(build: Path, step: str, stamp: str) -> bool:
    """Whether venv step ``step`` completed under other pins than those named by ``stamp``."""
    path = build / f".done-{step}"
    return path.is_file() and path.read_text(encoding="utf-8").strip() != stamp


def _setup(*, force: bool, log: Callable[[str], None], update_pins: bool) -> dict[str, Any]:
    from pdeagent.runtime_packages import pins_digest, write_constraints

    pins = None if update_pins else _pins()
    stamp = UNPINNED if pins is None else pins_digest(pins)
    install_packages(log)
    key = build_key()
    build = build_dir(key)
    build.mkdir(parents=True, exist_ok=True)
    timings_path = build / "build.json"
    timings: dict[str, float] = {}
    if timings_path.is_file():
        timings = json.loads(timings_path.read_text(encoding="utf-8")).get("seconds", {})
    constraints = None if pins is None else write_constraints(pins, build / "pins.txt")
    if force or update_pins or any(_stale(build, s, stamp) for s in PIP_STEPS):
        for step in PIP_STEPS:  # the venv is made anew, so every step after it too
            (build / f".done-{step}").unlink(missing_ok=True)
    log_file = build / "build.log"
    commands = _step_commands(build, log_file, constraints)
    todo = [s for s in STEPS if not (build / f".done-{s}").is_file()]  # resumes mid-build
    if todo:
        how = "unpinned" if pins is None else f"under {len(pins)} pins"
        log(f"building Firedrake {FIREDRAKE_VERSION} in {build} ({how}; log: {log_file}); "
            f"steps: {', '.join(todo)}")  # fmt: skip
    for step in todo:
        log(f"  {step} ...")
        start = time.monotonic()
        commands[step]()
        timings[step] = round(time.monotonic() - start, 1)
        (build / f".done-{step}").write_text(stamp if step in PIP_STEPS else "")
        timings_path.write_text(json.dumps({"key": key, "seconds": timings}, indent=1))
        log(f"  {step}: {timings[step]:.0f} s")
    record = {
        "key": key,
        "python": str(venv_python(build)),
        "petsc_dir": str(petsc_dir(build)),
        "petsc_arch": PETSC_ARCH,
        "firedrake": FIREDRAKE_VERSION,
        "build_seconds": timings,
    }
    path = record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(tmp, path)
    if pins is None:
        # what the unpinned build installed becomes the pins the caller commits: stamp the
        # venv steps with them, so the next (pinned) setup reuses this venv
        stamp = pins_digest(runtime_packages()["pins"])
        for step in PIP_STEPS:
            (build / f".done-{step}").write_text(stamp)
    log(f"Firedrake {FIREDRAKE_VERSION} runtime ready ({sum(timings.values()):.0f} s of build)")
    return record


def _probe(record: dict[str, Any], code: str, timeout: float = 600) -> tuple[bool, str]:
    try:
        proc = subprocess.run(
            [record["python"], "-c", code], capture_output=True, text=True, timeout=timeout,
            env=runtime_env(record), check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if proc.returncode != 0:
        return False, (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    return True, proc.stdout.strip().splitlines()[-1]


def doctor() -> list[DoctorCheck]:
    """What is present and how to fix what is not."""
    missing = missing_packages()
    checks = [
        DoctorCheck(
            "Debian packages",
            not missing,
            "all present" if not missing else "missing: " + ", ".join(missing),
            None if not missing else "apt-get install -y " + " ".join(missing),
        )
    ]
    try:
        record = load_record()
    except TrackUnavailable as exc:
        hint = "pdeagent env setup firedrake"
        checks.append(DoctorCheck("Firedrake build", False, str(exc), hint))
        return checks
    current = record.get("key") == build_key()
    checks.append(
        DoctorCheck(
            "Firedrake build",
            current,
            f"{record['key']} ({record['python']})",
            None if current else "built for other versions: pdeagent env setup firedrake",
        )
    )
    ok, out = _probe(record, IMPORT_PROBE)
    checks.append(
        DoctorCheck(
            "imports (firedrake, petsc4py, mpi4py, numpy, gmsh, sympy)",
            ok,
            out,
            None if ok else "pdeagent env setup firedrake --force",
        )
    )
    if not ok:
        return checks
    ok, out = _probe(record, SOLVE_PROBE)
    solved = ok and json.loads(out).get("l2_error", 1.0) < 1e-3
    checks.append(
        DoctorCheck(
            "P2 Poisson smoke solve (MUMPS)",
            solved,
            out,
            None if solved else "the runtime cannot solve a small problem: see the build log",
        )
    )
    checks.append(sandbox_check(record))
    return checks


def runtime_packages() -> dict[str, Any]:
    """The runtime manifest, asked from the recorded build's interpreter (the closure of
    :data:`RUNTIME_ROOTS`)."""
    from pdeagent.runtime_packages import python_runtime_manifest

    record = load_record()
    return python_runtime_manifest(
        "firedrake", Path(record["python"]), runtime_env(record),
        roots=RUNTIME_ROOTS, listed=LISTED_PACKAGES,
    )  # fmt: skip


def runtime_expose(record: dict[str, Any]) -> list[Path]:
    """What the sandbox must show read-only for the runtime to run: the venv and its
    base interpreter, and the PETSc build (headers and libraries: Firedrake compiles
    its kernels against them at run time)."""
    from pdeagent.sandbox import python_runtime_expose

    return [*python_runtime_expose(Path(record["python"])), Path(record["petsc_dir"])]


def sandbox_check(record: dict[str, Any]) -> DoctorCheck:
    """The smoke solve again, inside the sandbox submissions run in (kernels compiled
    into the sandbox's private cache, as a submission's are)."""
    from pdeagent.sandbox import SandboxError, default_sandbox
    from pdeagent.sandbox.base import Limits, SandboxRequest

    name = "smoke solve inside the sandbox"
    with tempfile.TemporaryDirectory(prefix="pdeagent-doctor-", dir="/var/tmp") as tmp:
        workdir = Path(tmp)
        (workdir / "probe.py").write_text(SOLVE_PROBE)
        env = runtime_env(record, home=str(workdir))
        env["XDG_CACHE_HOME"] = str(workdir / ".cache")
        try:
            result = default_sandbox().run(
                SandboxRequest(
                    argv=[record["python"], "probe.py"],
                    workdir=workdir,
                    env=env,
                    expose=runtime_expose(record),
                    limits=Limits(wall_time_sec=600),
                )
            )
        except SandboxError as exc:
            return DoctorCheck(name, False, str(exc), "see pdeagent's sandbox requirements")
    ok = result.ok and '"l2_error"' in result.stdout
    detail = result.stdout.strip()[-200:] if ok else (result.stderr.strip()[-600:] or "failed")
    return DoctorCheck(name, ok, detail, None if ok else "the sandbox cannot run the runtime")
