"""SQLite persistence: conversations, messages with visibility flags, search."""

from .conversations import Conversation, ConversationStore, SearchHit, StoredMessage
from .database import open_database

__all__ = ["Conversation", "ConversationStore", "SearchHit", "StoredMessage", "open_database"]
