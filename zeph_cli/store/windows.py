"""Context windows learned from providers, remembered across sessions.

Invariant: one row per (provider, model, base_url); remembering again replaces
it (the newest word of the server wins); only positive token counts are kept.
"""

from __future__ import annotations

from .sqlite import Database

from .conversations import now_iso
from .transactions import write_transaction

TABLE = "learned_windows"


def remembered_window(db: Database, provider: str, model: str, base_url: str) -> tuple[int, str] | None:
    """(tokens, source) learned earlier for this provider entry, model and endpoint; None if never.

    With no model name (none configured and the server did not say, e.g. it was
    too busy to answer its listing in time), what the unnamed model taught
    comes first; else the endpoint's named models' window, when they all agree
    on it (such an endpoint usually serves one model; a disagreement means the
    window depends on the model, and none is guessed).
    """
    row = db.execute(
        f"select tokens, source from {TABLE} where provider = ? and model = ? and base_url = ?",
        [provider, model, base_url],
    ).fetchone()
    if row is None and not model:
        rows = db.execute(
            f"select tokens, source from {TABLE} where provider = ? and base_url = ? order by updated_at desc",
            [provider, base_url],
        ).fetchall()
        row = rows[0] if rows and len({r[0] for r in rows}) == 1 else None
    return (int(row[0]), str(row[1])) if row else None


def remember_window(db: Database, provider: str, model: str, base_url: str, tokens: int, source: str) -> None:
    """Keep `tokens` as the window of this provider entry, model and endpoint (replacing any earlier one)."""
    if tokens <= 0:
        raise ValueError(f"a context window must be positive, not {tokens}")
    with write_transaction(db):
        db.execute(
            f"insert into {TABLE} (provider, model, base_url, tokens, source, updated_at) values (?, ?, ?, ?, ?, ?) "
            "on conflict (provider, model, base_url) do update set "
            "tokens = excluded.tokens, source = excluded.source, updated_at = excluded.updated_at",
            [provider, model, base_url, int(tokens), source, now_iso()],
        )


def forget_window(db: Database, provider: str, model: str, base_url: str) -> bool:
    """Drop what was learned (e.g. the server was restarted with another window); True if there was a row."""
    with write_transaction(db):
        cursor = db.execute(
            f"delete from {TABLE} where provider = ? and model = ? and base_url = ?", [provider, model, base_url]
        )
        return cursor.rowcount > 0
