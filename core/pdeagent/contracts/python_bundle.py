"""Turn a Python track's family solver module plus its shared runtime modules into ONE
source file (a submission must be a single file).

A track keeps its calibration and reference solvers as ordinary modules in one
package (importable and testable in the track's runtime); :class:`PythonBundler`
inlines the modules a family module imports relatively (``from ._common import
...``), in dependency order, drops those imports and fixes ``SETTINGS`` to the given
configuration. A relative import is looked up in the track's package first, then in
:data:`SHARED_RUNTIME_PACKAGE` (library-neutral runtime code shared by tracks, e.g.
the gmsh geometry of the domain templates). Nothing here imports a FEM library.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pdeagent.cases.families import FAMILIES as DATASET_FAMILIES
from pdeagent.contracts.track_hooks import case_family

SETTINGS_MARKER = "SETTINGS = None  # bundle: settings"
SHARED_RUNTIME_PACKAGE = "pdeagent.solver_runtime"
FIDELITIES = ("intermediate", "reference")
SCREENING_DRIVER = Path(__file__).with_name("python_screening.py")
"""The screening driver appended (as text run in its own namespace) by
:meth:`PythonBundler.screening_source`."""


class BundleError(RuntimeError):
    pass


def _relative_imports(tree: ast.Module) -> list[ast.ImportFrom]:
    return [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1]


def _strip(source: str, name: str) -> tuple[str, list[str]]:
    """Source without its docstring, ``__future__`` import and relative imports, plus the
    names of the sibling modules it imports."""
    tree = ast.parse(source, filename=f"{name}.py")
    drop: set[int] = set()
    deps: list[str] = []
    for node in tree.body:
        is_doc = (
            node is tree.body[0]
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_doc or is_future:
            drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    for node in _relative_imports(tree):
        if not node.module:
            raise BundleError(f"{name}.py: bare relative import is not supported")
        deps.append(node.module)
        drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines = [ln for i, ln in enumerate(source.splitlines(), start=1) if i not in drop]
    return "\n".join(lines).strip("\n") + "\n", deps


def family_modules(package: str) -> tuple[str, ...]:
    """The families with a solver module in ``package``: its modules whose name does not
    start with ``_`` (``_common.py`` and the like are shared runtime code), in the
    dataset's family order. A module that is not a dataset family is an error."""
    names = {
        entry.name[: -len(".py")]
        for entry in resources.files(package).iterdir()
        if entry.name.endswith(".py") and not entry.name.startswith("_")
    }
    unknown = sorted(names - set(DATASET_FAMILIES))
    if unknown:
        raise BundleError(
            f"{package} has modules that are not dataset families ({', '.join(unknown)}); "
            "give a shared module a name that starts with an underscore"
        )
    return tuple(f for f in DATASET_FAMILIES if f in names)


def with_screening_driver(source: str) -> str:
    """``source`` (one Python solver file whose ``solve(case_spec, settings=None)`` takes a
    settings dict) as a screening program for the frontier-2 search
    (:mod:`pdeagent.evaluation.screening`): its ``solve(case_spec)`` runs the screening
    driver (:data:`SCREENING_DRIVER`, executed in its own namespace so none of its names
    can shadow the solver's), which calls the original ``solve`` once per requested
    configuration."""
    driver = SCREENING_DRIVER.read_text(encoding="utf-8")
    program = (
        source.rstrip("\n")
        + "\n\n\n# ---- screening driver (pdeagent.contracts.python_screening) "
        + "-" * 10
        + "\n_PDEAGENT_SCREENING = {}\n"
        + f"exec(compile({driver!r}, 'pdeagent_screening', 'exec'), _PDEAGENT_SCREENING)\n"
        + 'solve = _PDEAGENT_SCREENING["screening_entry"](solve)\n'
    )
    ast.parse(program)
    return program


class PythonBundler:
    """Bundles the family modules of ``package`` (e.g. ``pdeagent_dolfinx.solvers``):
    ``families``, or when None every family module found there (:func:`family_modules`).

    ``library`` and ``generator`` only go into the bundle's docstring."""

    def __init__(
        self,
        package: str,
        families: Sequence[str] | None = None,
        *,
        library: str,
        generator: str,
    ):
        self.package = package
        self.families = family_modules(package) if families is None else tuple(families)
        self.library = library
        self.generator = generator

    def module_source(self, name: str) -> str:
        for package in (self.package, SHARED_RUNTIME_PACKAGE):
            try:
                return resources.files(package).joinpath(f"{name}.py").read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
        raise BundleError(
            f"no solver module {name!r} in {self.package} or {SHARED_RUNTIME_PACKAGE}"
        )

    def _ordered_modules(self, family: str) -> list[str]:
        order: list[str] = []
        visiting: set[str] = set()

        def visit(name: str) -> None:
            if name in order:
                return
            if name in visiting:
                raise BundleError(f"import cycle through {name!r}")
            visiting.add(name)
            _, deps = _strip(self.module_source(name), name)
            for dep in deps:
                visit(dep)
            visiting.discard(name)
            order.append(name)

        visit(family)
        return order

    def bundle(self, family: str, settings: dict | None = None) -> str:
        """One self-contained solver file for ``family`` with ``SETTINGS`` fixed to
        ``settings``."""
        if family not in self.families:
            raise BundleError(f"unknown family {family!r}; known: {', '.join(self.families)}")
        parts = [
            f'"""pdeagent {self.library} calibration solver: {family}.\n\n'
            f"Generated by {self.generator}. Entry point: solve(case_spec) writes\n"
            'solution.npz and meta.json."""\n'
        ]
        for name in self._ordered_modules(family):
            body, _ = _strip(self.module_source(name), name)
            if name == family:
                if SETTINGS_MARKER not in body:
                    raise BundleError(f"{name}.py lacks the line {SETTINGS_MARKER!r}")
                clean = json.loads(json.dumps(settings or {}))  # JSON types only
                body = body.replace(SETTINGS_MARKER, f"SETTINGS = {clean!r}")
            parts.append(f"# ---- {name} " + "-" * max(4, 70 - len(name)) + "\n" + body)
        source = "\n\n".join(parts)
        ast.parse(source)  # a bundle must always be valid Python
        return source

    def module_settings(self, family: str, name: str) -> dict | None:
        """A family module's settings dict (``DEFAULTS`` or ``REFERENCE``), read without
        importing the module (the harness has no FEM library). Literals and
        ``{**OTHER, ...}`` over an earlier settings dict of the module are understood."""
        tree = ast.parse(self.module_source(family))
        known: dict[str, dict] = {}

        def evaluate(node: ast.expr) -> dict:
            if not isinstance(node, ast.Dict):
                return ast.literal_eval(node)
            out: dict = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:  # {**OTHER}
                    if not (isinstance(value, ast.Name) and value.id in known):
                        raise ValueError("unsupported ** in a settings dict")
                    out.update(known[value.id])
                else:
                    out[ast.literal_eval(key)] = ast.literal_eval(value)
            return out

        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("DEFAULTS", "REFERENCE", name)
            ):
                try:
                    known[node.targets[0].id] = evaluate(node.value)
                except ValueError as exc:
                    raise BundleError(
                        f"{family}.{node.targets[0].id} is not a literal dict"
                    ) from exc
        return known.get(name)

    def fidelity_settings(self, family: str, fidelity: str, override: dict | None = None) -> dict:
        """Settings of the family solver at a fidelity above the calibration baseline.

        ``reference``: the module's ``REFERENCE`` with ``override`` (the case's
        track-specific reference config) on top. ``intermediate``: per numeric setting
        the geometric mean of ``DEFAULTS`` and that reference (integers rounded), other
        settings as in the reference.
        """
        if fidelity not in FIDELITIES:
            raise BundleError(f"unknown fidelity {fidelity!r}; known: {', '.join(FIDELITIES)}")
        defaults = self.module_settings(family, "DEFAULTS")
        reference = self.module_settings(family, "REFERENCE")
        if defaults is None or reference is None:
            raise BundleError(f"{family}.py lacks DEFAULTS or REFERENCE")
        reference = {**defaults, **reference, **(override or {})}
        if fidelity == "reference":
            return reference
        out = dict(reference)
        for key, ref in reference.items():
            low = defaults.get(key)
            numeric = (
                isinstance(ref, int | float)
                and isinstance(low, int | float)
                and not isinstance(ref, bool)
                and not isinstance(low, bool)
            )
            if not numeric or ref <= 0 or low <= 0:
                continue
            mean = (float(ref) * float(low)) ** 0.5
            out[key] = round(mean) if isinstance(ref, int) and isinstance(low, int) else mean
        return out

    def calibration_source(
        self, case_view: dict[str, Any], calibration_config: dict[str, Any] | None, *, track: str
    ) -> str:
        """The calibration solver of the case's family: the bundle with the case's
        ``calibration_config[track]`` settings when given, else the module's DEFAULTS."""
        return self.bundle(case_family(case_view), (calibration_config or {}).get(track))

    def screening_source(self, case_view: dict[str, Any]) -> str:
        """The calibration solver of the case's family (the bundle with the module's
        DEFAULTS) as a screening program (:func:`with_screening_driver`)."""
        return with_screening_driver(self.bundle(case_family(case_view), {}))

    def reference_source(
        self,
        case_view: dict[str, Any],
        reference_config: dict[str, Any] | None,
        fidelity: str,
        *,
        track: str,
    ) -> str:
        """The family solver at ``fidelity`` (:meth:`fidelity_settings`); the case's
        generic ``reference_config`` and its ``reference_config[track]`` override the
        module's REFERENCE settings (:func:`reference_overrides`)."""
        family = case_family(case_view)
        is_3d = case_view["case_spec"]["domain"]["type"] == "unit_cube"
        override = reference_overrides(family, reference_config or {}, is_3d=is_3d, track=track)
        return self.bundle(family, self.fidelity_settings(family, fidelity, override))


def reference_overrides(
    family: str, config: dict[str, Any], *, is_3d: bool, track: str
) -> dict[str, Any]:
    """Family-module settings from a case's generic ``reference_config``
    (``mesh_resolution``, ``element_degree``, ``time_step``), with
    ``reference_config[track]`` on top.

    This is the settings convention the Python tracks' family modules share
    (``resolution`` / ``resolution_3d``, ``degree``, ``dt``; biharmonic's ``*_cip``).
    For Stokes / Navier-Stokes ``element_degree`` is the velocity degree (Taylor-Hood
    P(k+1)-P(k): the module's ``degree`` is k)."""
    out: dict[str, Any] = {}
    if "mesh_resolution" in config:
        res = int(config["mesh_resolution"])
        out["resolution_3d" if is_3d else "resolution"] = res
        if family == "biharmonic" and not is_3d:
            out["resolution_cip"] = res
    if "element_degree" in config:
        degree = int(config["element_degree"])
        if family in ("stokes", "navier_stokes"):
            degree -= 1
        out["degree"] = degree
        if family == "biharmonic":
            out["degree_cip"] = max(2, degree)
    if "time_step" in config:
        out["dt"] = float(config["time_step"])
    out.update(config.get(track) or {})
    return out
