"""Compression guidelines on disk: detected context-loss pairs and the versioned rule lists.

Invariant: guideline versions only ever grow by one, assigned inside the insert itself
(`INSERT … SELECT COALESCE(MAX(version), 0) + 1`), so two writers never share a version;
the newest version is the active one; failure pairs are consumed oldest first and cleaned
up oldest (processed) first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .sqlite import Database

from ..context.compaction.markers import COMPACTION_SUMMARY
from .conversations import now_iso
from .transactions import write_transaction

if TYPE_CHECKING:
    from ..context.compaction.guidelines import FailurePair


@dataclass(frozen=True)
class Guidelines:
    """One version of the learned compression guidelines."""
    version: int
    text: str
    created_at: str


class GuidelinesStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- detection ------------------------------------------------------------------------

    def loss_window_snapshot(self, conversation_id: int, window_turns: int) -> str | None:
        """The newest compaction summary the model sees, while at most `window_turns` user turns
        have followed it (the turn under way included); None outside such a window."""
        row = self.db.execute(
            "select id, content from messages where conversation_id = ? and agent_visible = 1 "
            f"and role = 'context' and json_extract(metadata, '$.{COMPACTION_SUMMARY}') order by id desc limit 1",
            [conversation_id],
        ).fetchone()
        if row is None:
            return None
        summary_id, content = row
        (turns,) = self.db.execute(
            "select count(*) from messages where conversation_id = ? and role = 'user' and id > ?",
            [conversation_id, summary_id],
        ).fetchone()
        return content if turns <= window_turns else None

    def add_failure(self, conversation_id: int | None, pair: FailurePair) -> int:
        with write_transaction(self.db):
            return self.db.insert(
                "compression_failure_pairs",
                {"conversation_id": conversation_id, "snapshot": pair.snapshot, "reason": pair.reason,
                 "processed": 0, "created_at": now_iso()},
            )

    # ---- updates --------------------------------------------------------------------------

    def unprocessed_count(self) -> int:
        (count,) = self.db.execute("select count(*) from compression_failure_pairs where processed = 0").fetchone()
        return count

    def unprocessed(self, limit: int) -> list[tuple[int, FailurePair]]:
        rows = self.db.execute(
            "select id, snapshot, reason from compression_failure_pairs where processed = 0 order by id limit ?",
            [limit],
        ).fetchall()
        from ..context.compaction.guidelines import FailurePair

        return [(row_id, FailurePair(snapshot, reason)) for row_id, snapshot, reason in rows]

    def add_version(self, text: str, consumed: list[int]) -> int:
        """Store a new active version and mark the pairs it was made from as processed; its number."""
        with write_transaction(self.db):
            cursor = self.db.execute(
                "insert into compression_guidelines (version, text, created_at) "
                "select coalesce(max(version), 0) + 1, ?, ? from compression_guidelines",
                [text, now_iso()],
            )
            if consumed:
                marks = ",".join("?" * len(consumed))
                self.db.execute(f"update compression_failure_pairs set processed = 1 where id in ({marks})", consumed)
            (version,) = self.db.execute(
                "select version from compression_guidelines where rowid = ?", [cursor.lastrowid]
            ).fetchone()
        return version

    def active(self) -> Guidelines | None:
        row = self.db.execute(
            "select version, text, created_at from compression_guidelines order by version desc limit 1"
        ).fetchone()
        return Guidelines(*row) if row else None

    def cleanup(self, max_stored: int) -> int:
        """Keep at most `max_stored` pairs, dropping processed ones first, oldest first; how many went."""
        with write_transaction(self.db):
            (count,) = self.db.execute("select count(*) from compression_failure_pairs").fetchone()
            excess = count - max_stored
            if excess <= 0:
                return 0
            self.db.execute(
                "delete from compression_failure_pairs where id in (select id from compression_failure_pairs "
                "order by processed desc, id limit ?)",
                [excess],
            )
            return excess
