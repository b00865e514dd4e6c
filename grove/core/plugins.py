"""Registries filled by discovery: every module of a package that declares a given name.

Why: the extension points (file formats, rerank stages) are "add a module and its test",
never "add a module, then edit a list". Both find their plug-ins the same way, here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import Any


def discover(package: str, path: Iterable[str], attribute: str, accept: Callable[[Any], bool],
             name: Callable[[Any], str]) -> list[Any]:
    """What each module of `package` (its `__path__` is `path`) declares as `attribute`, when
    `accept` takes it; two plug-ins of one name are a programming error, raised at import."""
    found: list[Any] = []
    for module in pkgutil.iter_modules(path):
        declared = getattr(importlib.import_module(f"{package}.{module.name}"), attribute, None)
        if declared is not None and accept(declared):
            found.append(declared)
    names = [name(item) for item in found]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise RuntimeError(f"{package}: two plug-ins share a name: {duplicated}")
    return found
