"""SQLite persistence: conversations, messages with visibility flags, search.

Names are imported from their submodule on first use, so a command that only
reads conversations does not import the compaction store.
"""

from __future__ import annotations

from ..lazy_names import lazy_names

_HOME = {
    "CompactionError": "compaction",
    "CompactionMetrics": "compaction",
    "CompactionStore": "compaction",
    "Conversation": "conversations",
    "ConversationStore": "conversations",
    "SearchHit": "search",
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


__getattr__, __dir__ = lazy_names(__name__, _HOME)
