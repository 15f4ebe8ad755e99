"""SQLite persistence: conversations, messages with visibility flags, search."""

from .compaction import CompactionError, CompactionMetrics, CompactionStore
from .conversations import Conversation, ConversationStore, SearchHit, StoredMessage
from .database import open_database
from .tool_log import ToolLog, ToolRun
from .windows import forget_window, remember_window, remembered_window

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
