"""Config keys as data: the `setting()` declaration helper, `Key`, and checking one value.

Invariant: pure and schema-agnostic: nothing here knows which sections exist;
`config.py` (and the table modules it imports) declare them with `setting()`.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError


def setting(
    default: Any,
    doc: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    choices: tuple[str, ...] | None = None,
    kind: type | None = None,
    env: str | None = None,
    env_aliases: tuple[str, ...] = (),
) -> Any:
    """A config key: its default plus what validation and documentation need."""
    meta = {
        "doc": doc,
        "lo": lo,
        "hi": hi,
        "choices": choices,
        "kind": kind or type(default),
        "env": env,
        "env_aliases": env_aliases,
    }
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Key:
    """A scalar key of the schema, with everything needed to validate and document it."""

    path: str
    default: Any
    doc: str
    kind: type
    lo: float | None
    hi: float | None
    choices: tuple[str, ...] | None
    env: str
    env_aliases: tuple[str, ...] = ()

    @property
    def env_names(self) -> tuple[str, ...]:
        """The canonical variable first: it wins over a backward-compatible alias."""
        return (self.env,) + self.env_aliases


def _is_section(f: dataclasses.Field) -> bool:
    return f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory)


def _scalar_key(path: str, f: dataclasses.Field) -> Key:
    meta = f.metadata
    env = meta.get("env") or "ZEPH_" + path.replace(".", "_").upper()
    return Key(
        path=path,
        default=f.default,
        doc=meta["doc"],
        kind=meta["kind"],
        lo=meta["lo"],
        hi=meta["hi"],
        choices=meta["choices"],
        env=env,
        env_aliases=tuple(meta.get("env_aliases", ())),
    )


def iter_keys(cls: type, prefix: str = "") -> Iterator[Key]:
    """Every scalar key of `cls` (and its sections), in declaration order."""
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        if _is_section(f):
            yield from iter_keys(f.default_factory, path + ".")  # type: ignore[arg-type]
        elif "kind" in f.metadata:
            yield _scalar_key(path, f)


def describe_range(key: Key) -> str:
    if key.choices:
        return "one of " + ", ".join(repr(c) for c in key.choices if c)
    kind = {bool: "true or false", int: "an integer", float: "a number", str: "a string", tuple: "a list of strings"}[key.kind]

    def num(value: float) -> str:
        return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"

    if key.lo is not None and key.hi is not None:
        return f"{kind} between {num(key.lo)} and {num(key.hi)}"
    if key.lo is not None:
        return f"{kind} >= {num(key.lo)}"
    return kind


def check_value(key: Key, value: Any, where: str) -> Any:
    """Validate one value (already typed) against its key; return it normalised."""
    ok_type = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
        tuple: isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value),
    }[key.kind]
    if not ok_type:
        raise ConfigError(f"{where}: {key.path} = {value!r} is not valid: expected {describe_range(key)}")
    if key.kind is tuple:
        return tuple(value)
    if key.kind is float:
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            raise ConfigError(f"{where}: {key.path} = {value!r} is out of range: expected {describe_range(key)}")
    if key.choices is not None and value not in key.choices:
        raise ConfigError(f"{where}: {key.path} = {value!r} is not valid: expected {describe_range(key)}")
    if key.kind in (int, float):
        if (key.lo is not None and value < key.lo) or (key.hi is not None and value > key.hi):
            raise ConfigError(f"{where}: {key.path} = {value!r} is out of range: expected {describe_range(key)}")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_env(key: Key, raw: str, var: str) -> Any:
    text = raw.strip()
    try:
        if key.kind is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError
        if key.kind is int:
            return int(text)
        if key.kind is float:
            return float(text)
        if key.kind is tuple:  # comma-separated
            return tuple(item.strip() for item in text.split(",") if item.strip())
    except ValueError:
        raise ConfigError(
            f"environment variable {var}={raw!r} is not valid for {key.path}: expected {describe_range(key)}"
        ) from None
    return raw


def suggest(path: str, candidates: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(path, candidates, n=1, cutoff=0.6)
    if not close:
        leaf = path.rsplit(".", 1)[-1]
        leaves = {c.rsplit(".", 1)[-1]: c for c in candidates}
        near = difflib.get_close_matches(leaf, list(leaves), n=1, cutoff=0.6)
        close = [leaves[near[0]]] if near else []
    return f" (did you mean {close[0]}?)" if close else ""
