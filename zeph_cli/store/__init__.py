"""SQLite persistence: conversations, messages with visibility flags, search.

Names are imported from their submodule on first use, so a command that only
reads conversations does not import the compaction store.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "CompactionError": "compaction",
    "CompactionMetrics": "compaction",
    "CompactionStore": "compaction",
    "Conversation": "conversations",
    "ConversationStore": "conversations",
    "SearchHit": "conversations",
    "StoredMessage": "conversations",
    "open_database": "database",
    "ToolLog": "tool_log",
    "ToolRun": "tool_log",
    "forget_window": "windows",
    "remember_window": "windows",
    "remembered_window": "windows",
}

__all__ = [
    "CompactionError",
    "CompactionMetrics",
    "CompactionStore",
    "Conversation",
    "ConversationStore",
    "SearchHit",
    "StoredMessage",
    "ToolLog",
    "ToolRun",
    "forget_window",
    "open_database",
    "remember_window",
    "remembered_window",
]


def __getattr__(name: str) -> Any:
    """A name of a submodule, imported on first use (PEP 562)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
