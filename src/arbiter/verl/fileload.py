"""Make a module of :mod:`arbiter.verl` work when verl loads it by file path.

verl's ``load_module`` runs a file given as ``path: /abs/.../reward.py`` under a private name
(``custom_module_<hash>``) that is not in ``sys.modules``; a second copy of the module would then
hold its own judge caps and classes. :func:`adopt` replaces the copy's public names by those of
the real, package-imported module, so verl gets the very same objects as with ``pkg://``.
See ``docs/verl.md`` ("File-path loading").
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


def adopt(namespace: dict[str, Any], canonical: str) -> None:
    """When ``namespace`` (a module's ``globals()``) is not ``canonical`` itself, fill it with
    ``canonical``'s public names and register it in ``sys.modules``. Raises ``ImportError`` with
    a clear message when ``canonical`` cannot be imported (arbiter not installed in verl's env)."""
    name = namespace.get("__name__")
    if name == canonical:
        return
    try:
        real = importlib.import_module(canonical)
    except ImportError as exc:
        raise ImportError(f"arbiter: verl loaded {namespace.get('__file__')} by path, but the package "
                          f"{canonical} cannot be imported ({exc}); install arbiter in verl's environment "
                          f"(pip install arbiter or pip install -e <checkout>) or use path: pkg://{canonical}") from exc
    exported = getattr(real, "__all__", None) or [k for k in vars(real) if not k.startswith("_")]
    for key in exported:
        namespace[key] = getattr(real, key)
    if name and name not in sys.modules:
        sys.modules[name] = sys.modules[canonical]


__all__ = ["adopt"]
