"""What a track's runtime offers submissions: the committed manifest and its prompt line.

A track that sets :attr:`~pdeagent.stages.Track.runtime_manifest` commits a JSON
manifest generated from the runtime itself by ``pdeagent env packages -t TRACK
--write`` (the track's ``pdeagent_runtime_packages`` hook asks the installed
runtime). The prompt's sandbox section lists the manifest's packages, so a model
knows before it writes an ``import`` what it may use; a marked test per track checks
that the committed manifest still equals what the runtime reports.

A manifest is a JSON object::

    {"schema": 1, "track": "NAME", "generated_by": "pdeagent env packages -t NAME --write",
     "runtime": "Python 3.12.1", "standard_library": "the Python standard library",
     "packages": [{"name": ..., "version": ..., "modules": [...]}, ...],
     "dependencies": [...]}

``packages`` are the ones the prompt names (the track's scientific surface);
``dependencies`` are the rest of what the runtime holds (build tools, helpers of the
packages, linked libraries), recorded but not named in the prompt. ``modules`` (the
top-level import names) is given for Python distributions only. Both lists are sorted
by name (case-insensitive).

A runtime installed with pip also records ``"pins": ["name==version", ...]``: every
distribution of the closure, those without a module (shared libraries such as ``mpich``)
included, sorted. The track installs its runtime under these pins (a pip constraints
file, :func:`write_constraints`), so a fresh build reproduces the manifest whatever the
registry has published since; ``pdeagent env setup TRACK --update-pins`` builds afresh
from the newest versions the top-level requirements allow and rewrites the manifest.

:func:`python_runtime_manifest` builds the manifest of a Python runtime: it runs a
standard-library-only probe with the runtime's interpreter, then takes the closure of
the given root distributions under their requirements (markers evaluated for that
interpreter, no extras), so packages installed into a runtime by hand do not count.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pdeagent.stages import Track

MANIFEST_SCHEMA = 1
MANIFEST_KEYS = (
    "schema",
    "track",
    "generated_by",
    "runtime",
    "standard_library",
    "packages",
    "dependencies",
)
OPTIONAL_KEYS = ("pins",)
_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[^\s=;]+")


class ManifestError(RuntimeError):
    """A runtime manifest is missing, unreadable or malformed, or cannot be made."""


def write_command(track_name: str) -> str:
    """The command that (re)generates a track's committed manifest."""
    return f"pdeagent env packages -t {track_name} --write"


def _sorted_entries(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return sorted((dict(e) for e in entries), key=lambda e: (str(e["name"]).lower(), e["name"]))


def make_manifest(
    track_name: str,
    *,
    runtime: str,
    standard_library: str,
    packages: Iterable[Mapping[str, Any]],
    dependencies: Iterable[Mapping[str, Any]],
    pins: Iterable[str] | None = None,
) -> dict[str, Any]:
    """A manifest dict in the canonical form (sorted lists, fixed keys); ``pins`` for a
    runtime installed with pip (every distribution as ``name==version``)."""
    manifest: dict[str, Any] = {
        "schema": MANIFEST_SCHEMA,
        "track": track_name,
        "generated_by": write_command(track_name),
        "runtime": runtime,
        "standard_library": standard_library,
        "packages": _sorted_entries(packages),
        "dependencies": _sorted_entries(dependencies),
    }
    if pins is not None:
        manifest["pins"] = sorted(pins, key=lambda p: (p.lower(), p))
    validate_manifest(manifest, source=f"the {track_name} runtime")
    return manifest


def validate_manifest(manifest: Any, *, source: str) -> None:
    """Raise :class:`ManifestError` unless ``manifest`` has the documented shape."""
    if not isinstance(manifest, dict) or sorted(set(manifest) - set(OPTIONAL_KEYS)) != sorted(
        MANIFEST_KEYS
    ):
        keys = sorted(manifest) if isinstance(manifest, dict) else type(manifest).__name__
        raise ManifestError(
            f"{source}: expected the keys {list(MANIFEST_KEYS)} (and optionally "
            f"{list(OPTIONAL_KEYS)}), got {keys}"
        )
    if manifest["schema"] != MANIFEST_SCHEMA:
        raise ManifestError(f"{source}: schema {manifest['schema']!r}, expected {MANIFEST_SCHEMA}")
    for key in ("packages", "dependencies"):
        entries = manifest[key]
        if not isinstance(entries, list):
            raise ManifestError(f"{source}: {key!r} must be a list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ManifestError(f"{source}: every entry of {key!r} needs a name: {entry!r}")
            extra = set(entry) - {"name", "version", "modules"}
            if extra:
                raise ManifestError(f"{source}: unknown fields {sorted(extra)} in {entry!r}")
    if not manifest["packages"]:
        raise ManifestError(f"{source}: no packages")
    if "pins" in manifest:
        pins = manifest["pins"]
        if not isinstance(pins, list) or not pins:
            raise ManifestError(f"{source}: 'pins' must be a non-empty list")
        for pin in pins:
            if not isinstance(pin, str) or not _PIN.fullmatch(pin):
                raise ManifestError(f"{source}: a pin must read 'name==version', got {pin!r}")
        names = [_canonical(p.split("==")[0]) for p in pins]
        if len(set(names)) != len(names):
            raise ManifestError(f"{source}: a distribution is pinned twice")


def manifest_json(manifest: Mapping[str, Any]) -> str:
    """The manifest as it is committed (2-space indent, trailing newline)."""
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def load_manifest(track: Track) -> dict[str, Any]:
    """The committed manifest of ``track``; :class:`ManifestError` when it has none."""
    path = track.runtime_manifest
    if path is None:
        raise ManifestError(f"track {track.name!r} declares no runtime manifest")
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(
            f"runtime manifest {path} is missing: run `{write_command(track.name)}`"
        ) from None
    except (OSError, ValueError) as exc:
        raise ManifestError(
            f"runtime manifest {path} is unreadable ({exc}): run `{write_command(track.name)}`"
        ) from None
    validate_manifest(manifest, source=str(path))
    if manifest["track"] != track.name:
        raise ManifestError(f"{path} is the manifest of track {manifest['track']!r}")
    return manifest


def write_manifest(track: Track, manifest: Mapping[str, Any]) -> Path:
    """Write ``manifest`` to ``track.runtime_manifest``; returns the path."""
    if track.runtime_manifest is None:
        raise ManifestError(f"track {track.name!r} declares no runtime manifest path")
    validate_manifest(dict(manifest), source=f"the {track.name} runtime")
    path = Path(track.runtime_manifest)
    path.write_text(manifest_json(manifest), encoding="utf-8")
    return path


def load_pins(track: Track) -> list[str]:
    """The pins of ``track``'s committed manifest; :class:`ManifestError` when it has none
    (the runtime would then install whatever the registry offers today)."""
    manifest = load_manifest(track)
    if "pins" not in manifest:
        raise ManifestError(
            f"{track.runtime_manifest} records no pins: run "
            f"`pdeagent env setup {track.name} --update-pins` and commit the manifest"
        )
    return list(manifest["pins"])


def write_constraints(pins: Iterable[str], path: Path) -> Path:
    """Write ``pins`` as a pip constraints file (``pip install -c PATH``); returns it."""
    path.write_text("".join(f"{pin}\n" for pin in pins), encoding="utf-8")
    return path


def pins_digest(pins: Iterable[str]) -> str:
    """A short digest naming one set of pins (marks what a build installed)."""
    return hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()[:16]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _entry_text(entry: Mapping[str, Any]) -> str:
    text = entry["name"]
    if entry.get("version"):
        text += f" {entry['version']}"
    modules = list(entry.get("modules") or ())
    own = [m for m in modules if _canonical(m) == _canonical(entry["name"])]
    others = [m for m in modules if m not in own]
    if others:
        text += f" ({'also ' if own else ''}import {', '.join(others)})"
    return text


def packages_line(manifest: Mapping[str, Any]) -> str:
    """The prompt's sentence, e.g. ``Python 3.12.1 with fenics-basix 0.11.0 (import basix),
    sympy 1.14.0 (also import isympy), and the Python standard library``: a distribution
    whose modules are not just its own name says what to import."""
    names = ", ".join(_entry_text(e) for e in manifest["packages"])
    return f"{manifest['runtime']} with {names}, and {manifest['standard_library']}"


# --- Python runtimes ------------------------------------------------------------------

PYTHON_PROBE = r"""
import json, os, platform, sys
from importlib import metadata

def _version(info):
    v = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        v += info.releaselevel[0] + str(info.serial)
    return v

def _modules(dist):
    top = dist.read_text("top_level.txt")
    names = set(top.split()) if top else set()
    if not names:
        for f in dist.files or ():
            parts = f.parts
            if not parts or parts[0] in ("..", "") or parts[0].endswith(
                (".dist-info", ".egg-info", ".data", ".libs", ".pth")
            ) or parts[0] == "__pycache__":
                continue
            if len(parts) == 1:
                stem, _, ext = parts[0].partition(".")
                if ext == "py" or ext == "so" or ext.endswith(".so"):
                    names.add(stem)
            elif parts[1] == "__init__.py":
                names.add(parts[0])
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))

dists = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name is None or name in dists:
        continue
    dists[name] = {"version": dist.version, "requires": list(dist.requires or []),
                   "modules": _modules(dist)}
env = {
    "implementation_name": sys.implementation.name,
    "implementation_version": _version(sys.implementation.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
    "extra": "",
}
print(json.dumps({"python": platform.python_version(), "marker_env": env,
                  "distributions": dists}))
"""
"""Run by the runtime's interpreter: its version, marker environment and distributions
(name, version, requirements, top-level modules). Standard library only."""


def probe_python_runtime(
    python: Path, env: Mapping[str, str], timeout: float = 120
) -> dict[str, Any]:
    """Run :data:`PYTHON_PROBE` with ``python``; ManifestError when it fails."""
    proc = subprocess.run(
        [str(python), "-c", PYTHON_PROBE],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env),
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise ManifestError(f"the runtime probe failed with {python}: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def requirement_closure(
    probe: Mapping[str, Any], roots: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The installed distributions the requirement specifiers ``roots`` need (themselves
    included; each root's installed version must satisfy its specifier), by canonical
    name; requirements whose marker is false for the runtime (or needs an extra) are
    skipped. A needed distribution that is not installed raises ManifestError."""
    from packaging.markers import Marker
    from packaging.requirements import Requirement

    installed = {_canonical(n): {"name": n, **d} for n, d in probe["distributions"].items()}
    env = dict(probe["marker_env"])
    needed: dict[str, dict[str, Any]] = {}
    for text in roots:
        root = Requirement(text)
        dist = installed.get(_canonical(root.name))
        if dist is not None and not root.specifier.contains(dist["version"], prereleases=True):
            raise ManifestError(
                f"the runtime has {dist['name']} {dist['version']}, not {text}: "
                "set the runtime up again (pdeagent env setup)"
            )
    todo = [(_canonical(Requirement(r).name), "the runtime's requirements") for r in roots]
    while todo:
        key, by = todo.pop()
        if key in needed:
            continue
        if key not in installed:
            raise ManifestError(f"{key} (needed by {by}) is not installed in the runtime")
        dist = installed[key]
        needed[key] = dist
        for text in dist["requires"]:
            req = Requirement(text)
            if req.marker is not None and not Marker(str(req.marker)).evaluate(env):
                continue
            todo.append((_canonical(req.name), dist["name"]))
    return needed


def python_runtime_manifest(
    track_name: str,
    python: Path,
    env: Mapping[str, str],
    *,
    roots: Iterable[str],
    listed: Iterable[str],
) -> dict[str, Any]:
    """The manifest of a Python runtime: the importable distributions in the closure of
    ``roots`` (requirement specifiers such as ``numpy==2.5.5``); those named in
    ``listed`` become ``packages`` (each must be in the closure), the rest
    ``dependencies``. Distributions without a module (shared
    libraries only) are left out of both lists (nothing can import them) but pinned:
    ``pins`` holds every distribution of the closure."""
    probe = probe_python_runtime(python, env)
    closure = requirement_closure(probe, roots)
    wanted = {_canonical(n) for n in listed}
    missing = sorted(wanted - set(closure))
    if missing:
        raise ManifestError(f"listed packages {missing} are not in the {track_name} runtime")
    packages, dependencies = [], []
    for key, dist in closure.items():
        if not dist["modules"]:
            if key in wanted:
                raise ManifestError(f"listed package {dist['name']} has no importable module")
            continue
        entry = {"name": dist["name"], "version": dist["version"], "modules": dist["modules"]}
        (packages if key in wanted else dependencies).append(entry)
    return make_manifest(
        track_name,
        runtime=f"Python {probe['python']}",
        standard_library="the Python standard library",
        packages=packages,
        dependencies=dependencies,
        pins=[f"{dist['name']}=={dist['version']}" for dist in closure.values()],
    )
