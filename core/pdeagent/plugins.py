"""The plugin host: a pluggy manager loading plugins from the ``pdeagent`` entry-point group.

Hooks reach only their owner: a per-track hook (its spec takes ``track``) is called on
the plugin that registered that track and on the plugins that register no track (the
core's built-ins, cross-cutting extensions), never on another track's plugin
(:meth:`PluginHost.call_track_hook`; ``PluginHost.hook`` routes such calls the same way).

Loading is defensive: a plugin that fails to import or to register is recorded
in :attr:`PluginHost.failures` and reported by ``pdeagent plugins``; with
``PDEAGENT_STRICT_PLUGINS=1`` it is fatal. ``PDEAGENT_PLUGINS`` (comma-separated
entry-point names) is an allow-list, ``PDEAGENT_DISABLE_PLUGINS`` a block-list.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import os
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

import pluggy
from attrs import define, field

from pdeagent import PROJECT_NAME, hookspecs
from pdeagent.providers import Provider, declaration_problems
from pdeagent.stages import Track

BUILTIN_PLUGINS = ("pdeagent.builtin",)
"""Modules of the core registered as plugins (the core's own defaults)."""

ENV_STRICT = "PDEAGENT_STRICT_PLUGINS"
ENV_ALLOW = "PDEAGENT_PLUGINS"
ENV_BLOCK = "PDEAGENT_DISABLE_PLUGINS"


class PluginLoadError(RuntimeError):
    """Raised in strict mode when a plugin cannot be loaded."""


class UnknownNameError(KeyError):
    """An unknown track or provider name (message lists the known ones)."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


@define(frozen=True)
class PluginInfo:
    name: str
    """Entry-point name (or module name for built-ins)."""
    distribution: str | None
    version: str | None
    module: str
    hooks: tuple[str, ...]


@define(frozen=True)
class PluginFailure:
    name: str
    distribution: str | None
    error: str
    """One line: exception type and message."""
    traceback: str = ""


def _env_names(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return None
    return {n.strip() for n in raw.split(",") if n.strip()}


@define
class PluginHost:
    """A plugin manager plus the tracks and providers its plugins registered."""

    pm: pluggy.PluginManager
    plugins: list[PluginInfo] = field(factory=list)
    failures: list[PluginFailure] = field(factory=list)
    tracks: dict[str, Track] = field(factory=dict)
    providers: dict[str, Provider] = field(factory=dict)
    track_owner: dict[str, str] = field(factory=dict)
    provider_owner: dict[str, str] = field(factory=dict)

    @property
    def hook(self) -> Any:
        """The hook relay. A per-track hook (one whose spec takes ``track``) is routed
        through :meth:`call_track_hook`; every other hook reaches every plugin."""
        return _OwnerRoutedRelay(self)

    def track_hook_caller(self, name: str, track: Track | str) -> Any:
        """The caller of per-track hook ``name`` restricted to the plugins that may answer
        for ``track``: the plugin that registered it, and the plugins that register no
        track at all (the core's built-ins, cross-cutting extensions). Every other track
        plugin is left out, so a plugin never sees another track's stage calls, whether
        or not it checks the track itself. An unregistered track reaches no track plugin."""
        owner = self.track_owner.get(track if isinstance(track, str) else track.name)
        track_plugins = self.pm.hook.pdeagent_register_tracks.get_hookimpls()
        others = [impl.plugin for impl in track_plugins if impl.plugin_name != owner]
        return self.pm.subset_hook_caller(name, remove_plugins=others)

    def call_track_hook(self, track: Track, name: str, /, **kwargs: Any) -> Any:
        """Call per-track hook ``name`` for ``track`` on its owner only (see
        :meth:`track_hook_caller`); ``kwargs`` are the hook's other arguments."""
        caller = getattr(self.pm.hook, name)
        if not _takes_track(caller):
            raise TypeError(f"{name} is not a per-track hook (its spec has no track argument)")
        return self.track_hook_caller(name, track)(track=track, **kwargs)

    def get_track(self, name: str) -> Track:
        try:
            return self.tracks[name]
        except KeyError:
            known = ", ".join(sorted(self.tracks)) or "none installed"
            hint = (
                ""
                if self.tracks
                else "; install a track plugin (pdeagent-dolfinx, or see docs/plugins.md)"
            )
            raise UnknownNameError(f"unknown track {name!r} (known: {known}){hint}") from None

    def get_provider(self, name: str) -> Provider:
        try:
            return self.providers[name]
        except KeyError:
            known = ", ".join(sorted(self.providers)) or "none installed"
            hint = "" if self.providers else "; install a provider plugin (see docs/plugins.md)"
            raise UnknownNameError(f"unknown provider {name!r} (known: {known}){hint}") from None

    def library_names(self) -> frozenset[str]:
        """The names a case may list in ``supported_libraries`` here: the registered
        tracks, plus the tracks the shipped benchmark names (so its cases still load
        where one of their tracks is not installed; running that track says it is
        unknown)."""
        from pdeagent.cases.validate import KNOWN_LIBRARIES

        return frozenset(self.tracks) | frozenset(KNOWN_LIBRARIES)


def _takes_track(caller: Any) -> bool:
    spec = getattr(caller, "spec", None)
    return spec is not None and "track" in spec.argnames


class _TrackHookCaller:
    """``host.hook.<name>`` of a per-track hook: calls go to the track's owner only;
    introspection (``get_hookimpls`` ...) is the plain pluggy caller's."""

    __slots__ = ("_caller", "_host", "_name")

    def __init__(self, host: PluginHost, name: str, caller: Any) -> None:
        self._host, self._name, self._caller = host, name, caller

    def __call__(self, **kwargs: Any) -> Any:
        if "track" not in kwargs:
            raise TypeError(f"{self._name} is a per-track hook: call it with track=...")
        track = kwargs.pop("track")
        return self._host.call_track_hook(track, self._name, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._caller, attr)


class _OwnerRoutedRelay:
    """``PluginHost.hook``: pluggy's relay with per-track hooks routed to their owner."""

    __slots__ = ("_host",)

    def __init__(self, host: PluginHost) -> None:
        self._host = host

    def __getattr__(self, name: str) -> Any:
        caller = getattr(self._host.pm.hook, name)
        if _takes_track(caller):
            return _TrackHookCaller(self._host, name, caller)
        return caller


def _hooks_of(pm: pluggy.PluginManager, plugin: object) -> tuple[str, ...]:
    return tuple(sorted(h.name for h in pm.get_hookcallers(plugin) or []))


def load_plugins(
    *,
    strict: bool | None = None,
    entry_points: Iterable[importlib.metadata.EntryPoint] | None = None,
    extra_plugins: Iterable[object] = (),
    builtins: bool = True,
) -> PluginHost:
    """Create a fresh plugin manager, load built-ins and entry-point plugins, collect
    registrations.

    ``entry_points`` defaults to the installed ``pdeagent`` group; ``extra_plugins``
    are registered directly (tests use it for fake providers).
    """
    if strict is None:
        strict = os.environ.get(ENV_STRICT, "") not in ("", "0", "false", "no")
    allow = _env_names(ENV_ALLOW)
    block = _env_names(ENV_BLOCK) or set()

    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    host = PluginHost(pm=pm)

    def fail(name: str, dist: str | None, exc: BaseException) -> None:
        failure = PluginFailure(
            name=name,
            distribution=dist,
            error=f"{type(exc).__name__}: {exc}",
            traceback="".join(traceback.format_exception(exc)),
        )
        if strict:
            raise PluginLoadError(f"plugin {name!r} failed to load: {failure.error}") from exc
        host.failures.append(failure)

    if builtins:
        import importlib

        for modname in BUILTIN_PLUGINS:
            mod = importlib.import_module(modname)
            _register(pm, mod, modname)  # an unknown hook of the core's own: always a bug
            host.plugins.append(
                PluginInfo(
                    modname, "pdeagent", _dist_version("pdeagent"), modname, _hooks_of(pm, mod)
                )
            )

    if entry_points is None:
        entry_points = importlib.metadata.entry_points(group=PROJECT_NAME)
    seen: set[str] = set()
    for ep in sorted(entry_points, key=lambda e: e.name):
        if ep.name in seen:
            continue
        seen.add(ep.name)
        if ep.name in block or (allow is not None and ep.name not in allow):
            continue
        dist = ep.dist.name if ep.dist is not None else None
        try:
            plugin = ep.load()
            _register(pm, plugin, ep.name)
        except Exception as exc:
            fail(ep.name, dist, exc)
            continue
        host.plugins.append(
            PluginInfo(
                name=ep.name,
                distribution=dist,
                version=ep.dist.version if ep.dist is not None else None,
                module=getattr(plugin, "__name__", repr(plugin)),
                hooks=_hooks_of(pm, plugin),
            )
        )

    for i, plugin in enumerate(extra_plugins):
        name = getattr(plugin, "__name__", None) or f"extra-{i}"
        try:
            _register(pm, plugin, name)
        except UnknownHookError as exc:
            fail(name, None, exc)
            continue
        host.plugins.append(PluginInfo(name, None, None, name, _hooks_of(pm, plugin)))

    _collect_registrations(host, fail)
    return host


class UnknownHookError(PluginLoadError):
    """A plugin implements a hook no spec declares (a misspelt or retired hook name)."""

    def __init__(self, plugin: str, hooks: Sequence[str]) -> None:
        known = sorted(name for name in dir(hookspecs) if name.startswith("pdeagent_"))
        parts = []
        for hook in hooks:
            close = difflib.get_close_matches(hook, known, n=1)
            parts.append(f"{hook!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        super().__init__(
            f"plugin {plugin!r} implements unknown hook(s) {', '.join(parts)}: no hook spec "
            "declares them, so they would never be called (docs/plugins.md lists the hooks)"
        )
        self.hooks = list(hooks)


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Register ``plugin``; :class:`UnknownHookError` (and left unregistered) when it
    implements a hook no spec declares: a misspelt hook would otherwise never be called."""
    pm.register(plugin, name=name)
    unknown = unknown_hooks(pm, plugin)
    if unknown:
        pm.unregister(plugin)
        raise UnknownHookError(name, unknown)


def unknown_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """The hooks ``plugin`` implements that no spec declares (pluggy's ``check_pending``,
    for one plugin; ``optionalhook=True`` implementations are allowed)."""
    return sorted(
        caller.name
        for caller in pm.get_hookcallers(plugin) or []
        if caller.spec is None
        and any(impl.plugin is plugin and not impl.optionalhook for impl in caller.get_hookimpls())
    )


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _collect_registrations(host: PluginHost, fail: Any) -> None:
    """Call the registration hooks plugin by plugin, so one broken plugin is isolated."""
    pm = host.pm
    for hook_name, store, owner, kind in (
        ("pdeagent_register_tracks", host.tracks, host.track_owner, Track),
        ("pdeagent_register_providers", host.providers, host.provider_owner, None),
    ):
        caller = getattr(pm.hook, hook_name)
        for impl in caller.get_hookimpls():
            plugin_name = impl.plugin_name
            pending: list[Any] = []
            try:
                kwargs: dict[str, Any] = {"register": pending.append}
                if "host" in impl.argnames:
                    kwargs["host"] = host
                impl.function(**kwargs)
                for obj in pending:
                    if kind is not None and not isinstance(obj, kind):
                        raise TypeError(f"{hook_name}: expected a Track, got {type(obj).__name__}")
                    name = getattr(obj, "name", None)
                    if not isinstance(name, str) or not name:
                        raise TypeError(f"{hook_name}: registered object has no name")
                    problems = declaration_problems(obj) if kind is None else []
                    if problems:
                        raise TypeError(
                            f"provider {name!r} cannot be registered: " + "; ".join(problems)
                        )
                    if name in store:
                        raise ValueError(
                            f"{name!r} is already registered by plugin {owner[name]!r}"
                        )
            except Exception as exc:
                dist = next((p.distribution for p in host.plugins if p.name == plugin_name), None)
                fail(plugin_name, dist, exc)
                continue
            for obj in pending:
                store[obj.name] = obj
                owner[obj.name] = plugin_name
