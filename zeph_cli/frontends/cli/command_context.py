"""What every command shares: the global options' state, the config, the store, standard input.

Invariant: imports nothing heavy at module level (commands import the config,
store and SDKs inside), so `zeph --help` stays lean; command modules import
from here, never from `cli`, which only wires them together.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from .stderr import eprint

if TYPE_CHECKING:
    from ...config import LoadedConfig
    from ...store import ConversationStore


class State:
    config_path: str | None = None


state = State()


def load(overrides: dict[str, tuple[Any, str]] | None = None) -> "LoadedConfig":
    from ...config import load_config

    loaded = load_config(config_path=state.config_path, overrides=overrides or {})
    for warning in loaded.warnings:
        eprint(f"zeph: warning: {warning}")
    return loaded


def open_store() -> "ConversationStore":
    from ...log import log_to
    from ...paths import database_path
    from ...store import ConversationStore, open_database

    path = database_path()
    log_to(path.parent)
    return ConversationStore(open_database(path))


def read_stdin() -> str:
    stream = sys.stdin
    if stream is None or stream.closed:
        return ""
    try:
        if stream.isatty():
            return ""
        data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode()
    except (OSError, ValueError):
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"standard input is not UTF-8 text (invalid byte at offset {exc.start}); pipe text, not binary data"
        ) from None


def stdout_is_terminal() -> bool:
    """Standard output is a terminal that can render (not a pipe, a file or TERM=dumb)."""
    import os

    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
