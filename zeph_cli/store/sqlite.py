"""sqlite-utils' `Database`, imported without numpy and pandas.

Invariant: importing sqlite-utils never imports numpy or pandas. sqlite-utils
imports both at module level when they are installed, only to map their
scalar types to column types; zeph stores vectors as bytes and numbers as
Python ints and floats, so that mapping is never used, and the ~0.1–0.5 s
those imports cost would be paid by every command that opens the store. The
packages stay importable for whatever needs them later (the embedder).
"""

from __future__ import annotations

import sys

import _imp

_NOT_NEEDED = ("numpy", "pandas")


def _import_without_numpy() -> None:
    if "sqlite_utils" in sys.modules:
        return
    _imp.acquire_lock()  # no other thread imports numpy while it reads as missing
    try:
        hidden = [name for name in _NOT_NEEDED if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # `import numpy` raises ImportError
        try:
            import sqlite_utils  # noqa: F401
        finally:
            for name in hidden:
                if sys.modules.get(name, False) is None:
                    del sys.modules[name]
    finally:
        _imp.release_lock()


_import_without_numpy()

from sqlite_utils import Database  # noqa: E402

__all__ = ["Database"]
