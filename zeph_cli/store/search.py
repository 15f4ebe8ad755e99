"""Full-text search of the messages the user can see, across sessions (`zeph sessions search`).

Invariant: what the user typed is matched as plain words (`fts_terms`): FTS5 operators in it are words
like any other, so no query is a syntax error; a query FTS5 still refuses finds nothing.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from .sqlite import Database


@dataclass(frozen=True)
class SearchHit:
    """A message found by full-text search, with a snippet around the match."""
    conversation_id: int
    message_id: int
    role: str
    title: str
    snippet: str
    created_at: str


_FTS_PHRASE_OR_SPACE = re.compile(r'\s+|(".*?")')


def fts_terms(text: str) -> str:
    """`text` as a full-text query of plain terms: every word quoted, so NOT, OR, NEAR, `*` and `-` are
    words like any other; a "quoted phrase" stays one phrase, and an unbalanced quote is closed."""
    if text.count('"') % 2:
        text += '"'
    bits = [bit for bit in _FTS_PHRASE_OR_SPACE.split(text) if bit and bit != '""']
    return " ".join(bit if bit.startswith('"') else f'"{bit}"' for bit in bits)


def search_messages(db: Database, text: str, limit: int) -> list[SearchHit]:
    sql = """
        select m.id, m.conversation_id, m.role, m.created_at, c.title,
               snippet(messages_fts, 0, '[', ']', '…', 12) as snippet
        from messages_fts
        join messages m on m.rowid = messages_fts.rowid
        join conversations c on c.id = m.conversation_id
        where messages_fts match ? and m.user_visible = 1
        order by rank limit ?
    """
    try:
        rows = list(db.query(sql, [fts_terms(text), limit]))
    except sqlite3.OperationalError:
        return []
    return [
        SearchHit(r["conversation_id"], r["id"], r["role"], r["title"] or "", r["snippet"], r["created_at"])
        for r in rows
    ]
