"""Optional features and the pip extra that installs each one.

The core depends only on what every command needs. A feature whose package is not
installed says so in one line naming the extra (``pip install 'pdeagent[docker]'``)
when it is used, never when pdeagent is imported.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from attrs import define


@define(frozen=True)
class Extra:
    """An optional feature: the module it imports and the extra that installs it."""

    name: str
    """The pip extra (``pdeagent[NAME]``)."""
    module: str
    """The top-level module the feature imports."""
    package: str
    """The distribution that provides ``module``."""
    feature: str
    """What needs it, as the subject of a sentence."""


EXTRAS: dict[str, Extra] = {
    "docker": Extra("docker", "docker", "docker", "the docker sandbox"),
    "dask": Extra("dask", "distributed", "distributed", "--executor dask"),
    "report": Extra("report", "matplotlib", "matplotlib", "drawing the report's PNG figures"),
}
"""Every optional feature of the core, by extra name (pyproject.toml has the same extras)."""


class MissingExtra(RuntimeError):
    """An optional feature is used but the package its extra installs is not."""

    def __init__(self, extra: Extra) -> None:
        super().__init__(missing_message(extra.name))
        self.extra = extra


def missing_message(name: str) -> str:
    """One line: what needs which package, and the pip command that installs it."""
    extra = EXTRAS[name]
    return (
        f"{extra.feature} needs the {extra.package} package: pip install 'pdeagent[{extra.name}]'"
    )


def require(name: str) -> ModuleType:
    """The module of extra ``name``, imported now; :class:`MissingExtra` when it is not
    installed. An import error from inside an installed package propagates (a bug or a
    broken install, not a missing extra)."""
    extra = EXTRAS[name]
    try:
        return importlib.import_module(extra.module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name != extra.module:
            raise
        raise MissingExtra(extra) from None


def available(name: str) -> bool:
    """Whether extra ``name``'s module can be imported here."""
    try:
        require(name)
    except MissingExtra:
        return False
    return True
