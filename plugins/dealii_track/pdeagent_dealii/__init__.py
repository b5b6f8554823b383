"""pdeagent track plugin for deal.II 9.4 (C++: ``./solver case_spec.json OUTDIR``).

Stages:
- compile (``pdeagent_prepare``): one ``g++`` call in the sandbox with deal.II's own
  Release flags, the precompiled header and the gold linker (see
  :mod:`pdeagent_dealii.environment`); its time is recorded apart from the runtime;
  compiler errors are summarised (first errors with file:line, bounded);
- invocation: ``./solver case_spec.json .`` in the sandbox; the ``case_spec.json`` the
  program reads also carries every expression in muparser syntax under ``muparser``
  (same paths as in the case_spec) so ``FunctionParser`` can read them;
- output adapter: ``solution_grid.bin`` (row-major float64, (ny, nx) or (nz, ny, nx);
  one ``solution_grid_<array>.bin`` per array for several output arrays) or a
  ``solution.npz`` -> the canonical npz; wrong sizes are ``F-Exec bad_shape`` with the
  expected and actual sizes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pdeagent import hookimpl
from pdeagent.contracts.track_hooks import (
    case_family,
    highest_degree_first,
    package_text,
    prompt_pieces,
)
from pdeagent.sandbox import Sandbox
from pdeagent.sandbox.base import Limits, SandboxRequest
from pdeagent.stages import (
    AdaptedOutput,
    AgentShell,
    Capabilities,
    DoctorCheck,
    Invocation,
    PrepareResult,
    PromptPieces,
    Track,
    TrackUnavailable,
)
from pdeagent_dealii.bundle import FAMILIES as SOLVER_FAMILIES
from pdeagent_dealii.bundle import SETTINGS_FILE, settings_of

TRACK = Track(
    name="dealii",
    library="deal.II",
    language="cpp",
    source_filename="solver.cc",
    library_version="9.4",
    description="deal.II 9.4.1 (Debian libdeal.ii-dev), C++17, one g++ call with a PCH",
    runtime_manifest=Path(__file__).with_name("runtime_packages.json"),
    # the 9 families of programs/ (bundle.FAMILIES), on every domain template, 2-D and
    # 3-D, steady and transient, every output kind and boundary condition
    capabilities=Capabilities(
        families=SOLVER_FAMILIES,
    ),
)

BINARY = "solver"
COMPILE_LIMITS = Limits(
    wall_time_sec=240.0,
    address_space_bytes=8 * 1024**3,
    file_size_bytes=512 * 1024**2,
    processes=64,
    output_bytes=256 * 1024,
)
"""A compile needs 1.2-2.2 GB and ~12 s with the PCH (ENVIRONMENTS.md)."""
MAX_COMPILER_ERRORS = 8
MAX_SUMMARY_CHARS = 2000
GRID_FILE = "solution_grid.bin"

CONTRACT = """\
Write ONE C++17 source file using deal.II 9.4 (Debian's libdeal.ii-dev). The harness
compiles it with a single `g++ -O2 -std=c++17` call against deal.II (its own Release
flags, a precompiled header of the common deal.II includes, nlohmann/json available
as `#include <nlohmann/json.hpp>`) and runs it as

    ./solver case_spec.json OUTDIR

in a fresh, empty working directory (OUTDIR is `.`). `case_spec.json` is the
case_spec shown above, plus a `muparser` object holding every expression of the
case_spec in muparser syntax at the same path (e.g.
`case_spec["muparser"]["pde"]["forcing"]["f"]`, `...["bc"]["dirichlet"][0]["value"]`,
and coefficient fields given as expressions, e.g. `...["pde"]["params"]["kappa"]`):
`^` for powers, `ln` for the natural logarithm, numbers for pi and E. Use them with
`dealii::FunctionParser<dim>` (variables "x,y" / "x,y,z", plus "t" for time-dependent
cases).

The program must write into OUTDIR:
- the solution sampled on the evaluation grid: `solution_grid.bin`, raw little-endian
  float64 values, row-major with shape (ny, nx) (3-D: (nz, ny, nx)), value
  [j][i] = u(x_i, y_j) where x_i, y_j are `linspace(min, max, n)` over
  `eval_grid.bbox`; when the output requirements name several arrays, one file per
  array: `solution_grid_<name>.bin`, where <name> is the array name of section 5 (a
  component such as `u_x`, or the pressure array), never the field name. The exact
  file names for this case are listed below. Points outside the domain may hold NaN.
  (Alternatively a `solution.npz` with arrays `x`, `y` (`z`) and the named arrays.)
- `meta.json`: {"wall_time_sec": float, "status": "ok", "solver_info": {mesh
  resolution, element degree, number of DOFs, time steps, linear/Newton iterations,
  solver and preconditioner, ...}}.

Exit with status 0 on success. Do not print large amounts of output, do not start
background processes, and do not use MPI launchers (run serially; call
`Utilities::MPI::MPI_InitFinalize` if you use PETSc or Trilinos objects).
"""

INPUT_NOTE = (
    "The program reads case_spec.json itself (path in argv[1]); expressions are also "
    "given in muparser syntax under case_spec['muparser'] at the same paths."
)


def guide() -> str:
    return package_text(__name__, "DEALII_GUIDE.md")


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


@hookimpl
def pdeagent_prompt_pieces(
    track: Track, case_view: dict[str, Any], mode: str
) -> PromptPieces | None:
    from pdeagent_dealii.scaffolds import scaffold

    return prompt_pieces(
        case_view,
        mode,
        contract=contract(case_view["case_spec"]["output"]),
        guide=guide(),
        scaffold=scaffold,
        input_note=INPUT_NOTE,
    )


def contract(output: dict[str, Any]) -> str:
    """:data:`CONTRACT` followed by the names of the files this case's output is read
    from: the list comes from :func:`output_files`, the function the adapter reads with."""
    files = output_files(output)
    lines = [f"- `{name}`: the array `{array}`" for name, array in files.items()]
    many = "these files" if len(files) > 1 else "this file"
    return (
        f"{CONTRACT}\nFor this case the harness reads exactly {many} from OUTDIR (unless a "
        "`solution.npz` is written instead); any other name is not read, and a missing "
        "file fails the run:\n" + "\n".join(lines) + "\n"
    )


@hookimpl
def pdeagent_calibration_source(
    track: Track, case_view: dict[str, Any], calibration_config: dict[str, Any] | None
) -> str | None:
    """The bundled program of the case's family with its calibration settings
    (``calibration_config["dealii"]`` overrides the defaults); None for families
    without a deal.II program yet."""
    from pdeagent_dealii.bundle import FAMILIES, bundle

    family = case_family(case_view)
    if family not in FAMILIES:
        return None
    return bundle(family, (calibration_config or {}).get(TRACK.name))


@hookimpl
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """``null_program.cc`` with the common library inlined: links deal.II, builds a
    one-cell Triangulation, writes zero grids (t_null; its compile time is not part of it)."""
    from pdeagent_dealii.bundle import inline_headers

    return inline_headers(package_text(__name__, "null_program.cc"))


@hookimpl
def pdeagent_calibration_ladder(
    track: Track, case_view: dict[str, Any]
) -> list[list[dict[str, Any]]] | None:
    """The chains of ``ladder.py`` for the case, highest degree first."""
    from pdeagent_dealii.ladder import ladder

    return highest_degree_first(ladder(case_view))


@hookimpl
def pdeagent_reference_source(
    track: Track,
    case_view: dict[str, Any],
    reference_config: dict[str, Any] | None,
    fidelity: str,
) -> str | None:
    """The same program with the high-fidelity settings (``reference``) or halfway
    between calibration and reference (``intermediate``)."""
    from pdeagent_dealii.bundle import DEFAULTS, FAMILIES, REFERENCE, bundle

    family = case_family(case_view)
    if family not in FAMILIES:
        return None
    settings = dict(REFERENCE[family])
    if fidelity == "intermediate":
        base, ref = DEFAULTS[family], REFERENCE[family]
        settings = {
            **base,
            "resolution": round((base["resolution"] * ref["resolution"]) ** 0.5),
        }
    elif fidelity != "reference":
        raise ValueError(f"unknown fidelity {fidelity!r}")
    return bundle(family, settings)


# --- muparser view of the case_spec --------------------------------------------------------


def _coordinates(case_spec: dict[str, Any]) -> tuple[str, ...]:
    dim = len(case_spec["domain"]["bounds"])
    names = ("x", "y", "z")[:dim]
    return (*names, "t") if case_spec["pde"].get("time") else names


def _convert(value: Any, symbols: tuple[str, ...], params: dict[str, Any]) -> Any:
    from pdeagent.cases.expressions import to_muparser

    if isinstance(value, list):
        return [_convert(v, symbols, params) for v in value]
    if isinstance(value, str):
        return to_muparser(value, allowed_symbols=symbols, parameters=params)
    return value  # a number stays a number


def muparser_view(case_spec: dict[str, Any]) -> dict[str, Any]:
    """Every expression of ``case_spec`` in muparser syntax, at the same paths."""
    symbols = _coordinates(case_spec)
    pde = case_spec["pde"]
    params = {k: v for k, v in (pde.get("params") or {}).items() if isinstance(v, int | float)}
    from pdeagent.cases.expressions import ExpressionError

    coefficients: dict[str, Any] = {}
    for name, value in (pde.get("params") or {}).items():
        if isinstance(value, str):  # a coefficient field, or a word such as "plane_strain"
            try:
                coefficients[name] = _convert(value, symbols, params)
            except ExpressionError:
                continue
    out: dict[str, Any] = {
        "pde": {
            "params": coefficients,
            "forcing": {k: _convert(v, symbols, params) for k, v in pde["forcing"].items()},
        }
    }
    bc = case_spec.get("bc") or {}
    mirrored_bc: dict[str, Any] = {}
    for kind in ("dirichlet", "neumann"):
        mirrored_bc[kind] = [
            {"value": _convert(c["value"], symbols, params)} for c in bc.get(kind) or []
        ]
    mirrored_bc["robin"] = [
        {
            "alpha": _convert(c["alpha"], symbols, params),
            "value": _convert(c["value"], symbols, params),
        }
        for c in bc.get("robin") or []
    ]
    out["bc"] = mirrored_bc
    ic = case_spec.get("ic")
    if ic:
        out["ic"] = {k: _convert(v, symbols, params) for k, v in ic.items()}
    return out


# --- compile -----------------------------------------------------------------------------

_ERROR_LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: ")


def summarize_compiler_errors(log: str) -> str:
    """The first errors with file:line, bounded (for reports and feedback prompts)."""
    errors = []
    for line in log.splitlines():
        if _ERROR_LINE.match(line):
            errors.append(line[:300])
            if len(errors) >= MAX_COMPILER_ERRORS:
                break
    if not errors:
        tail = log.strip().splitlines()[-MAX_COMPILER_ERRORS:]
        return "\n".join(t[:300] for t in tail)[:MAX_SUMMARY_CHARS] or "compilation failed"
    more = sum(1 for line in log.splitlines() if _ERROR_LINE.match(line)) - len(errors)
    text = "\n".join(errors) + (f"\n... and {more} more errors" if more > 0 else "")
    return text[:MAX_SUMMARY_CHARS]


def compile_argv(toolchain: dict[str, Any], source: str, output: str) -> list[str]:
    return [
        toolchain["cxx"],
        *toolchain["compile_flags"],
        "-Winvalid-pch",
        "-include",
        toolchain["pch_header"],
        source,
        "-o",
        output,
        *toolchain["link_flags"],
    ]


@hookimpl
def pdeagent_prepare(
    track: Track, source: str, build_dir: Path, sandbox: Sandbox, hide: list[Path]
) -> PrepareResult | None:
    from pdeagent_dealii.environment import load_toolchain

    toolchain = load_toolchain()
    argv = compile_argv(toolchain, TRACK.source_filename, BINARY)
    settings, program = settings_of(source)
    if settings is not None:  # a bundled program: its settings are read at run time
        _write_settings(build_dir, settings)
    cached = _binary_cache(program, argv, hide)
    meta = cached.with_suffix(".json")
    if cached.is_file() and meta.is_file():
        shutil.copy2(cached, build_dir / BINARY)
        seconds = float(json.loads(meta.read_text())["compile_time_sec"])
        note = "reused the binary compiled earlier from the identical source and flags"
        return PrepareResult(True, build_dir, None, "", note, seconds)
    (build_dir / TRACK.source_filename).write_text(source, encoding="utf-8")
    pch_dir = Path(toolchain["pch_header"]).parent
    result = sandbox.run(
        SandboxRequest(
            argv=argv,
            workdir=build_dir,
            env={"PATH": "/usr/bin:/bin", "LANG": "C"},
            expose=[pch_dir],
            limits=COMPILE_LIMITS,
            hide=list(hide or []),
        )
    )
    seconds = result.wall_time_sec
    log = result.stderr + ("\n" + result.stdout if result.stdout.strip() else "")
    if result.timed_out:
        return PrepareResult(False, build_dir, "compile_error", "compilation timed out", log,
                             seconds)  # fmt: skip
    if result.memory_exceeded:
        return PrepareResult(False, build_dir, "compile_error",
                             "the compiler ran out of memory", log, seconds)  # fmt: skip
    binary = build_dir / BINARY
    if result.exit_code != 0 or not binary.is_file() or binary.is_symlink():
        return PrepareResult(
            False, build_dir, "compile_error", summarize_compiler_errors(log), log, seconds
        )
    (build_dir / TRACK.source_filename).unlink()  # the program does not need its source
    _store_binary(binary, cached, seconds)
    return PrepareResult(True, build_dir, None, "", log, seconds)


def _write_settings(build_dir: Path, settings: dict[str, Any]) -> None:
    """The run-time settings of a bundled program, beside its binary (:mod:`.bundle`)."""
    text = json.dumps(settings, sort_keys=True, indent=1)
    (build_dir / SETTINGS_FILE).write_text(text + "\n", encoding="utf-8")


def _binary_cache(source: str, argv: list[str], hide: list[Path]) -> Path:
    """Where the binary of exactly this source, compile command and sandbox view is kept.

    The same source compiled with the same flags, seeing the same files, gives the
    same program, so the calibration program of a family (one source for every case
    and every settings variant: the settings line is not part of ``source`` here) is
    compiled once, and a resumed or repeated grading of a submission does not
    compile it again. The hidden paths are part of the key: a source that includes a
    file compiles only where that file is visible, and must not be reused where it is
    hidden. The harness writes the cache after the sandboxed compile; the compile
    never sees it.
    """
    from pdeagent_dealii.environment import state_dir

    view = sorted(str(p) for p in hide)
    digest = hashlib.sha256(
        json.dumps([source, argv, view], separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    return state_dir() / "binaries" / digest[:2] / digest


def _store_binary(binary: Path, target: Path, seconds: float) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copy2(binary, tmp)
        os.replace(tmp, target)
        meta_tmp = target.with_name(f".{target.name}.{os.getpid()}.json.tmp")
        meta_tmp.write_text(json.dumps({"compile_time_sec": seconds}))
        os.replace(meta_tmp, target.with_suffix(".json"))
    except OSError:
        pass  # a cache that cannot be written only costs the next identical compile


@hookimpl
def pdeagent_invocation(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> Invocation | None:
    spec = dict(case_view["case_spec"])
    spec["muparser"] = muparser_view(case_view["case_spec"])
    return Invocation(
        argv=[f"./{BINARY}", "case_spec.json", "."],
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LANG": "C"},
        files={"case_spec.json": json.dumps(spec, indent=1).encode()},
    )


BUILD_SCRIPT = "build.sh"
"""The agent's build script (``--mode agent``): the grader's own compile command."""


@hookimpl
def pdeagent_agent_shell(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> AgentShell | None:
    """An agent's shell: the grader's run environment, the precompiled header's dir
    exposed, ``build.sh`` holding the exact compile command of the compile stage, and the
    grader's ``case_spec.json`` (with its muparser forms)."""
    from pdeagent_dealii.environment import load_toolchain

    toolchain = load_toolchain()
    argv = compile_argv(toolchain, TRACK.source_filename, BINARY)
    invocation = pdeagent_invocation(track, workdir, case_view)
    if invocation is None:  # cannot happen for this track; never run without the grader's
        raise RuntimeError("the deal.II track gave no invocation")
    script = (
        "#!/bin/sh\n"
        f"# Compiles {TRACK.source_filename} into ./{BINARY} exactly as the grader does.\n"
        f"exec {shlex.join(argv)}\n"
    )
    how = (
        f"Build and run as the grader does: `sh {BUILD_SCRIPT}` compiles "
        f"`{TRACK.source_filename}` into `./{BINARY}` with the grader's compiler, flags and "
        "precompiled deal.II header (10-20 s; the compile time is not part of the runtime), "
        f"then `./{BINARY} case_spec.json .` runs it with the `case_spec.json` given here and "
        "writes its outputs into the current directory. The grader compiles the submitted "
        "file once and runs the binary in a fresh directory."
    )
    return AgentShell(
        env=dict(invocation.env),
        expose=[Path(toolchain["pch_header"]).parent],
        files={**invocation.files, BUILD_SCRIPT: script.encode()},
        how_to_run=how,
    )


# --- crash explanation: a debug rebuild --------------------------------------------------

DEBUG_RUN_LIMITS = Limits(wall_time_sec=300.0, output_bytes=256 * 1024)
"""The debug run: deal.II's assertions make it several times slower than the release run."""
_ASSERTION = re.compile(
    r"An error occurred in line <(?P<line>\d+)> of file <(?P<file>[^>]*)> in function\s*"
    r"(?P<function>.*?)\n\s*The violated condition was:\s*\n(?P<condition>.*?)\n"
    r"\s*Additional information:\s*\n(?P<info>.*?)(?:\n\s*\n|Stacktrace:|$)",
    re.S,
)
_USER_FRAME = re.compile(r"^#\d+\s+\S*solver: (?P<frame>.+)$", re.M)


def debug_compile_argv(toolchain: dict[str, Any], source: str, output: str) -> list[str]:
    """The compile command against deal.II's debug library (``libdeal.ii.g.so``), with
    ``DEBUG`` defined so the inlined header code asserts too, unoptimised, no PCH (the
    PCH is built for the release configuration)."""
    compile_flags = [
        "-O0" if f == "-O2" else f for f in toolchain["compile_flags"] if f != "-DNDEBUG"
    ]
    link_flags = [
        re.sub(r"libdeal\.ii\.so(\.[\d.]+)?$", r"libdeal.ii.g.so\1", f)
        for f in toolchain["link_flags"]
    ]
    return [toolchain["cxx"], *compile_flags, "-DDEBUG", source, "-o", output, *link_flags]


def summarize_debug_run(stderr: str, exit_code: int | None, signal: int | None) -> str:
    """What the debug run says: the first failed deal.II assertion (condition, file:line,
    additional information, the first frame of the program), or how it ended."""
    found = _ASSERTION.search(stderr)
    if found is None:
        how = f"signal {signal}" if signal is not None else f"exit code {exit_code}"
        tail = " | ".join(line.strip() for line in stderr.strip().splitlines()[-4:])[:600]
        return f"debug build of deal.II: no library assertion failed; it ended with {how}" + (
            f": {tail}" if tail else ""
        )
    info = " ".join(found["info"].split())[:700]
    text = (
        f"debug build of deal.II: assertion failed in {found['file'].rsplit('/', 1)[-1]}:"
        f"{found['line']}: {' '.join(found['condition'].split())[:300]}; {info}"
    )
    for frame in _USER_FRAME.finditer(stderr[found.end() :]):
        name = " ".join(frame["frame"].split())
        if not name.startswith(("dealii::", "void dealii::")):  # the program's own code
            text += f"; called from {name[:300]}"
            break
    return text


@hookimpl
def pdeagent_explain_crash(
    track: Track,
    source: str,
    workroot: Path,
    case_view: dict[str, Any],
    sandbox: Sandbox,
    hide: list[Path],
    execution: Any,
) -> str | None:
    """Rebuild the program against deal.II's debug library and run it once more: most
    crashes of deal.II programs (an index out of range, a wrong vector size, a
    constraint object used before it is closed) are a failed assertion there."""
    from pdeagent_dealii.environment import load_toolchain

    toolchain = load_toolchain()
    build = workroot / "debug-build"
    build.mkdir(parents=True)
    (build / TRACK.source_filename).write_text(source, encoding="utf-8")
    settings, _ = settings_of(source)
    compiled = sandbox.run(
        SandboxRequest(
            argv=debug_compile_argv(toolchain, TRACK.source_filename, BINARY),
            workdir=build,
            env={"PATH": "/usr/bin:/bin", "LANG": "C"},
            limits=COMPILE_LIMITS,
            hide=list(hide),
        )
    )
    binary = build / BINARY
    if compiled.exit_code != 0 or not binary.is_file() or binary.is_symlink():
        return "debug build of deal.II: the debug rebuild did not compile"
    run = workroot / "debug-run"
    run.mkdir()
    shutil.copy2(binary, run / BINARY)
    if settings is not None:
        _write_settings(run, settings)
    invocation = pdeagent_invocation(track=track, workdir=run, case_view=case_view)
    assert invocation is not None
    for name, content in invocation.files.items():
        (run / name).write_bytes(content)
    result = sandbox.run(
        SandboxRequest(
            argv=invocation.argv,
            workdir=run,
            env=dict(invocation.env),
            limits=DEBUG_RUN_LIMITS,
            hide=list(hide),
        )
    )
    if result.timed_out:
        return "debug build of deal.II: the debug run did not finish within its time limit"
    return summarize_debug_run(result.stderr, result.exit_code, result.signal)


# --- output adapter ------------------------------------------------------------------------


def _grid(case_view: dict[str, Any]) -> tuple[tuple[int, ...], list[np.ndarray], list[str]]:
    grid = case_view["case_spec"]["eval_grid"]
    counts = [int(grid["nx"]), int(grid["ny"])] + ([int(grid["nz"])] if grid.get("nz") else [])
    bbox = [float(v) for v in grid["bbox"]]
    axes = [np.linspace(bbox[2 * k], bbox[2 * k + 1], n) for k, n in enumerate(counts)]
    shape = tuple(reversed(counts))
    return shape, axes, output_arrays(case_view["case_spec"]["output"])


def output_files(output: dict[str, Any]) -> dict[str, str]:
    """The binary files the adapter reads for a case's ``output``, in order: file name ->
    array name (``solution_grid.bin`` for a single array, else one
    ``solution_grid_<array>.bin`` per array of :func:`output_arrays`)."""
    names = output_arrays(output)
    if len(names) == 1:
        return {GRID_FILE: names[0]}
    return {f"solution_grid_{n}.bin": n for n in names}


def output_arrays(output: dict[str, Any]) -> list[str]:
    """The arrays a case's ``output`` asks for: its components (or its field), then the
    pressure array ``output["pressure"]["array"]`` of a flow case that asks for one."""
    names = list(output["components"]) if output.get("components") else [output["field"]]
    pressure = output.get("pressure")
    if pressure:
        name = pressure.get("array") if isinstance(pressure, dict) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"output.pressure must name its array, got {pressure!r}")
        if name not in names:
            names.append(name)
    return names


def _read_exact(path: Path, expected_bytes: int) -> bytes | AdaptedOutput:
    """The file's bytes if it is a regular file of exactly ``expected_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return AdaptedOutput(None, "missing_artifact", f"{path.name} was not written")
    except OSError as exc:
        return AdaptedOutput(None, "bad_artifact", f"{path.name}: {exc.strerror}")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return AdaptedOutput(None, "bad_artifact", f"{path.name} is not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if info.st_size != expected_bytes:
            return AdaptedOutput(
                None,
                "bad_shape",
                f"{path.name} holds {info.st_size} bytes ({info.st_size / 8:g} float64 values); "
                f"expected {expected_bytes} bytes ({expected_bytes // 8} values)",
            )
        return fh.read(expected_bytes)


@hookimpl
def pdeagent_adapt_output(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> AdaptedOutput | None:
    npz = workdir / "solution.npz"
    if npz.exists() or npz.is_symlink():
        return AdaptedOutput(npz)  # the core's npz checks apply
    shape, axes, _ = _grid(case_view)
    count = int(np.prod(shape))
    files = output_files(case_view["case_spec"]["output"])
    arrays: dict[str, np.ndarray] = {}
    for filename, name in files.items():
        data = _read_exact(workdir / filename, 8 * count)
        if isinstance(data, AdaptedOutput):
            if data.reason == "bad_shape":
                dims = " x ".join(str(n) for n in shape)
                return AdaptedOutput(None, "bad_shape", f"{data.message}; grid shape {dims}")
            if data.reason == "missing_artifact":
                return AdaptedOutput(None, data.reason, _missing_message(workdir, filename, files))
            return data
        arrays[name] = np.frombuffer(data, dtype="<f8").reshape(shape).copy()
    out = workdir / ".pdeagent_solution.npz"
    coords = dict(zip(("x", "y", "z"), axes, strict=False))
    np.savez(out, **coords, **arrays)
    return AdaptedOutput(out)


def _missing_message(workdir: Path, filename: str, files: dict[str, str]) -> str:
    """Which expected file is missing, every file the case expects, and the grid files the
    program did write under other names."""
    expected = ", ".join(files)
    try:
        others = sorted(
            p.name
            for p in workdir.iterdir()
            if p.name.startswith("solution_grid") and p.name not in files
        )
    except OSError:
        others = []
    text = f"{filename} was not written (this case's output files: {expected})"
    if others:
        text += f"; found instead: {', '.join(others[:8])} (not read)"
    return text


# --- environment -----------------------------------------------------------------------------


@hookimpl
def pdeagent_setup_environment(
    track: Track, force: bool, log: Callable[[str], None], update_pins: bool
) -> list[DoctorCheck] | None:
    from pdeagent_dealii import environment

    if update_pins:
        raise TrackUnavailable(
            "deal.II comes from Debian 12's packages (libdeal.ii-dev 9.4.1), whose versions "
            "the Debian release fixes: the track has no pip pins to update"
        )
    environment.setup(environment.state_dir(), force=force, log=log)
    return environment.doctor()


@hookimpl
def pdeagent_runtime_packages(track: Track) -> dict[str, Any] | None:
    from pdeagent_dealii import environment

    return environment.runtime_packages()


@hookimpl
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    from pdeagent_dealii import environment

    return environment.doctor()


__all__ = [
    "TRACK",
    "TrackUnavailable",
    "muparser_view",
    "output_arrays",
    "output_files",
    "summarize_compiler_errors",
]
