"""The deal.II toolchain: Debian's deal.II 9.4, its exact compile and link flags, a
precompiled header.

``setup`` installs ``libdeal.ii-dev`` and ``nlohmann-json3-dev`` with apt (as root;
otherwise it says exactly what to install), configures a throw-away CMake project
once to read the flags deal.II's own CMake configuration gives a Release build, and
builds a precompiled header of the common deal.II includes with those flags. The
result, ``toolchain.json`` and ``pch/``, lives in the track's state directory; a
compile is then one ``g++`` call (PCH, gold linker, ``--as-needed``) instead of a CMake
project (see ENVIRONMENTS.md: ~36 s with CMake, ~12 s with the PCH).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pdeagent.stages import DoctorCheck, TrackUnavailable

APT_PACKAGES = ("libdeal.ii-dev", "nlohmann-json3-dev")
DEAL_II_CMAKE_DIR = Path("/usr/share/cmake/deal.II")
TOOLCHAIN_FILE = "toolchain.json"
PCH_DIR = "pch"
PCH_HEADER = "dealii_pch.h"
TOOLCHAIN_SCHEMA = 1

PCH_INCLUDES = (
    "deal.II/base/function.h",
    "deal.II/base/function_parser.h",
    "deal.II/base/quadrature_lib.h",
    "deal.II/base/tensor_function.h",
    "deal.II/base/timer.h",
    "deal.II/base/utilities.h",
    "deal.II/dofs/dof_handler.h",
    "deal.II/dofs/dof_renumbering.h",
    "deal.II/dofs/dof_tools.h",
    "deal.II/fe/fe_nothing.h",
    "deal.II/fe/fe_q.h",
    "deal.II/fe/fe_simplex_p.h",
    "deal.II/fe/fe_system.h",
    "deal.II/fe/fe_values.h",
    "deal.II/fe/mapping_fe.h",
    "deal.II/fe/mapping_q.h",
    "deal.II/grid/grid_generator.h",
    "deal.II/grid/grid_in.h",
    "deal.II/grid/grid_tools.h",
    "deal.II/grid/grid_tools_cache.h",
    "deal.II/grid/manifold_lib.h",
    "deal.II/grid/tria.h",
    "deal.II/lac/affine_constraints.h",
    "deal.II/lac/dynamic_sparsity_pattern.h",
    "deal.II/lac/precondition.h",
    "deal.II/lac/solver_cg.h",
    "deal.II/lac/solver_control.h",
    "deal.II/lac/solver_gmres.h",
    "deal.II/lac/sparse_direct.h",
    "deal.II/lac/sparse_matrix.h",
    "deal.II/lac/sparsity_pattern.h",
    "deal.II/lac/vector.h",
    "deal.II/numerics/data_out.h",
    "deal.II/numerics/fe_field_function.h",
    "deal.II/numerics/matrix_tools.h",
    "deal.II/numerics/vector_tools.h",
    "nlohmann/json.hpp",
    "fstream",
    "iostream",
    "string",
    "vector",
)
"""The precompiled header: what most solvers include (unused headers cost nothing)."""

DROPPED_FLAGS = ("-g", "-pedantic")
DROPPED_PREFIXES = ("-ffile-prefix-map=", "-W")
"""Debian's build flags carried into deal.II's CMake config that only cost compile
time (debug info) or flood the error summary (warnings); ``-Werror=...`` included."""


def state_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pdeagent" / "envs" / "dealii"


def _run(argv: list[str], log: Callable[[str], None], cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=1800, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TrackUnavailable(f"{shlex.join(argv[:4])} failed: {exc}") from None
    if out.returncode != 0:
        tail = (out.stderr or out.stdout)[-2000:]
        raise TrackUnavailable(f"{shlex.join(argv[:4])} ... exited {out.returncode}:\n{tail}")
    return out.stdout


def packages_installed() -> bool:
    return (DEAL_II_CMAKE_DIR / "deal.IIConfig.cmake").is_file() and Path(
        "/usr/include/nlohmann/json.hpp"
    ).is_file()


def install_packages(log: Callable[[str], None]) -> None:
    command = f"apt-get install -y --no-install-recommends {' '.join(APT_PACKAGES)}"
    if os.geteuid() != 0:
        raise TrackUnavailable(
            f"deal.II is not installed; as root run: apt-get update && {command}"
        )
    if shutil.which("apt-get") is None:
        raise TrackUnavailable(f"no apt-get here: install {', '.join(APT_PACKAGES)} by hand")
    log(f"installing {', '.join(APT_PACKAGES)} with apt (about a minute, 2.3 GB)")
    env_cmd = ["env", "DEBIAN_FRONTEND=noninteractive"]
    _run([*env_cmd, "apt-get", "update", "-qq"], log)
    _run([*env_cmd, *command.split(), "-qq"], log)


_PROBE_CMAKE = """cmake_minimum_required(VERSION 3.13)
find_package(deal.II 9.4 REQUIRED HINTS {hint})
deal_ii_initialize_cached_variables()
project(pdeagent_probe CXX)
add_executable(probe probe.cc)
deal_ii_setup_target(probe RELEASE)
"""


def _keep(flag: str) -> bool:
    return flag not in DROPPED_FLAGS and not flag.startswith(DROPPED_PREFIXES)


def extract_flags(log: Callable[[str], None]) -> dict[str, Any]:
    """Compile and link flags of a deal.II Release target, read from CMake's own output."""
    if shutil.which("cmake") is None:
        raise TrackUnavailable("cmake not found (it comes with libdeal.ii-dev)")
    with tempfile.TemporaryDirectory(prefix="pdeagent-dealii-probe-") as tmp:
        src, build = Path(tmp), Path(tmp) / "build"
        (src / "CMakeLists.txt").write_text(_PROBE_CMAKE.format(hint=DEAL_II_CMAKE_DIR))
        (src / "probe.cc").write_text("int main() { return 0; }\n")
        build.mkdir()
        log("reading deal.II's compile and link flags from its CMake configuration")
        _run(
            ["cmake", "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", ".."],
            log,
            cwd=build,
        )
        [entry] = json.loads((build / "compile_commands.json").read_text())
        compile_argv = shlex.split(entry["command"])
        link_argv = shlex.split((build / "CMakeFiles" / "probe.dir" / "link.txt").read_text())
    cxx = compile_argv[0]
    compile_flags: list[str] = []
    skip = False
    for arg in compile_argv[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-c"):
            skip = True
            continue
        if arg.endswith("probe.cc"):
            continue
        if _keep(arg):
            compile_flags.append(arg)
    link_flags: list[str] = []
    skip = False
    for arg in link_argv[1:]:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        if arg.endswith("probe.cc.o"):
            continue
        link_flags.append(arg)
    if "-fuse-ld=gold" not in link_flags:
        link_flags.insert(0, "-fuse-ld=gold")
    # Drop direct links the program does not use (libdeal.ii itself still pulls in its
    # ~200 dependencies at load time: ldd counts 198 either way).
    link_flags.insert(0, "-Wl,--as-needed")
    version = "unknown"
    version_file = DEAL_II_CMAKE_DIR / "deal.IIConfigVersion.cmake"
    if version_file.is_file():
        for line in version_file.read_text().splitlines():
            if 'set(PACKAGE_VERSION "' in line:
                version = line.split('"')[1]
    return {"cxx": cxx, "compile_flags": compile_flags, "link_flags": link_flags,
            "deal_ii_version": version}  # fmt: skip


def flags_digest(compile_flags: list[str]) -> str:
    return hashlib.sha256("\0".join(compile_flags).encode()).hexdigest()[:16]


def build_pch(directory: Path, toolchain: dict[str, Any], log: Callable[[str], None]) -> float:
    """Build ``pch/dealii_pch.h.gch`` with the toolchain's exact compile flags."""
    pch = directory / PCH_DIR
    if pch.exists():
        shutil.rmtree(pch)
    pch.mkdir(parents=True)
    header = pch / PCH_HEADER
    header.write_text(
        "// pdeagent: precompiled header of the common deal.II includes\n"
        "#pragma once\n" + "".join(f"#include <{name}>\n" for name in PCH_INCLUDES)
    )
    log("building the precompiled header (about 45 s, ~800 MB)")
    start = time.monotonic()
    _run(
        [toolchain["cxx"], *toolchain["compile_flags"], "-x", "c++-header", str(header),
         "-o", str(header) + ".gch"],
        log,
    )  # fmt: skip
    for path in (header, Path(str(header) + ".gch")):
        path.chmod(0o644)
    for path in (pch, directory):
        path.chmod(0o755)
    return time.monotonic() - start


def load_toolchain(directory: Path | None = None) -> dict[str, Any]:
    """The toolchain of a completed setup, or TrackUnavailable saying how to get one."""
    directory = directory or state_dir()
    path = directory / TOOLCHAIN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise TrackUnavailable(
            f"the deal.II toolchain is not set up ({path} missing): run `pdeagent env setup dealii`"
        ) from None
    if data.get("schema") != TOOLCHAIN_SCHEMA:
        raise TrackUnavailable(f"{path} is outdated: run `pdeagent env setup dealii --force`")
    data["pch_header"] = str(directory / PCH_DIR / PCH_HEADER)
    return data


def setup(directory: Path, *, force: bool, log: Callable[[str], None]) -> None:
    if not packages_installed():
        install_packages(log)
    if not force:
        try:
            current = load_toolchain(directory)
            if Path(current["pch_header"] + ".gch").is_file() and current.get(
                "pch_flags"
            ) == flags_digest(current["compile_flags"]):
                log(f"deal.II toolchain already set up in {directory}")
                return
        except TrackUnavailable:
            pass
    directory.mkdir(parents=True, exist_ok=True)
    toolchain = extract_flags(log)
    seconds = build_pch(directory, toolchain, log)
    toolchain.update(
        schema=TOOLCHAIN_SCHEMA,
        pch_flags=flags_digest(toolchain["compile_flags"]),
        pch_build_sec=round(seconds, 1),
    )
    tmp = directory / (TOOLCHAIN_FILE + ".tmp")
    tmp.write_text(json.dumps(toolchain, indent=1))
    tmp.chmod(0o644)
    os.replace(tmp, directory / TOOLCHAIN_FILE)
    log(f"deal.II {toolchain['deal_ii_version']} toolchain ready in {directory}")


def doctor(directory: Path | None = None) -> list[DoctorCheck]:
    directory = directory or state_dir()
    compilers = bool(shutil.which("g++") and shutil.which("ld.gold"))
    checks = [
        DoctorCheck(
            "deal.II and nlohmann-json packages",
            packages_installed(),
            str(DEAL_II_CMAKE_DIR),
            None if packages_installed() else f"apt-get install -y {' '.join(APT_PACKAGES)}",
        ),
        DoctorCheck(
            "g++ and the gold linker",
            compilers,
            f"{shutil.which('g++')}, {shutil.which('ld.gold')}",
            None if compilers else "apt-get install -y g++ binutils",
        ),
    ]
    try:
        tc = load_toolchain(directory)
    except TrackUnavailable as exc:
        checks.append(DoctorCheck("toolchain flags", False, str(exc), "pdeagent env setup dealii"))
        return checks
    checks.append(DoctorCheck("toolchain flags", True, f"deal.II {tc['deal_ii_version']}"))
    gch = Path(tc["pch_header"] + ".gch")
    ok = gch.is_file() and tc.get("pch_flags") == flags_digest(tc["compile_flags"])
    checks.append(
        DoctorCheck(
            "precompiled header",
            ok,
            f"{gch} ({gch.stat().st_size / 1e6:.0f} MB)" if gch.is_file() else str(gch),
            None if ok else "pdeagent env setup dealii --force",
        )
    )
    return checks


# --- the runtime manifest (``pdeagent env packages -t dealii``) ------------------------

MANIFEST_PROBE = """\
#include <deal.II/base/config.h>
#if __has_include(<petscversion.h>)
#  include <petscversion.h>
#endif
#if __has_include(<slepcversion.h>)
#  include <slepcversion.h>
#endif
#include <nlohmann/json.hpp>
"""
"""Preprocessed with the toolchain's compile flags (``-dM -E``): the macros give the
deal.II version, the libraries it was built with and their versions, as a solver sees
them."""

NOT_LIBRARIES = frozenset({"COMPLEX_VALUES", "THREADS", "CXX11", "CXX14", "CXX17", "CXX20"})
"""``DEAL_II_WITH_*`` macros that name a language or build option, not a library."""

VERSION_MACROS = {"PETSC": "PETSC_VERSION", "SLEPC": "SLEPC_VERSION"}
"""Libraries whose version macros are their own (others: ``DEAL_II_<NAME>_VERSION``)."""


def _macro_version(macros: dict[str, str], prefix: str) -> str | None:
    parts = [macros.get(f"{prefix}_MAJOR"), macros.get(f"{prefix}_MINOR")]
    parts.append(macros.get(f"{prefix}_SUBMINOR", macros.get(f"{prefix}_PATCH")))
    given = [p for p in parts if p is not None]
    return ".".join(given) if given and all(p.isdigit() for p in given) else None


def runtime_packages(toolchain: dict[str, Any] | None = None) -> dict[str, Any]:
    """The runtime manifest, asked from the compiler with the toolchain's flags: deal.II
    and nlohmann/json with their versions and the libraries deal.II was built with
    (``packages``), and the libraries a solver is linked against (``dependencies``)."""
    from pdeagent.runtime_packages import ManifestError, make_manifest

    tc = toolchain or load_toolchain()
    argv = [tc["cxx"], *tc["compile_flags"], "-dM", "-E", "-x", "c++", "-"]
    proc = subprocess.run(
        argv, input=MANIFEST_PROBE, capture_output=True, text=True, timeout=300, check=False
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise ManifestError(f"preprocessing the deal.II headers failed: {tail}")
    macros: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0] == "#define" and "(" not in parts[1]:
            macros[parts[1]] = parts[2].strip() if len(parts) == 3 else ""
    deal_ii = macros.get("DEAL_II_PACKAGE_VERSION", "").strip('"')
    nlohmann = _macro_version(macros, "NLOHMANN_JSON_VERSION")
    gnuc = _macro_version(
        {"V_MAJOR": macros.get("__GNUC__", "?"), "V_MINOR": macros.get("__GNUC_MINOR__", "?"),
         "V_PATCH": macros.get("__GNUC_PATCHLEVEL__", "?")}, "V",
    )  # fmt: skip
    standard = macros.get("__cplusplus", "").rstrip("L")
    if not deal_ii or nlohmann is None or gnuc is None or len(standard) != 6:
        raise ManifestError(
            f"the deal.II headers gave no versions (deal.II {deal_ii!r}, nlohmann/json "
            f"{nlohmann!r}, GCC {gnuc!r}, __cplusplus {standard!r})"
        )
    packages = [
        {"name": "deal.II", "version": deal_ii},
        {"name": "nlohmann/json", "version": nlohmann},
    ]
    features = {m.removeprefix("DEAL_II_WITH_") for m in macros if m.startswith("DEAL_II_WITH_")}
    features = (features - NOT_LIBRARIES) | {"BOOST"}  # Boost: always required
    for name in sorted(features):
        version = _macro_version(macros, VERSION_MACROS.get(name, f"DEAL_II_{name}_VERSION"))
        packages.append({"name": name, **({"version": version} if version else {})})
    linked = set()
    for flag in tc["link_flags"]:
        if flag.startswith("-l"):
            linked.add(f"lib{flag[2:]}")
        elif flag.startswith("/") and (".so" in Path(flag).name or flag.endswith(".a")):
            linked.add(Path(flag).name)
    return make_manifest(
        "dealii",
        runtime=f"C++{standard[2:4]} (GCC {gnuc}, deal.II's Release flags)",
        standard_library="the C++ standard library",
        packages=packages,
        dependencies=[{"name": n} for n in linked],
    )
