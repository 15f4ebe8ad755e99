"""Vector indexes for message recall: the embedded sqlite one and qdrant.

`open_index(config, db, db_path)` gives the configured one; numpy and
qdrant-client load only when an index is opened.
"""

from .base import PendingMessage, VectorIndex, VectorIndexDown, VectorRow
from .factory import open_index

__all__ = ["PendingMessage", "VectorIndex", "VectorIndexDown", "VectorRow", "open_index"]
