"""Compaction on disk: summaries, deferred tool-pair summaries, pruned tool outputs and metrics.

Invariant: every operation is one write transaction that only re-flags rows and
appends new ones, so the user's scroll-back (`user_visible = 1`, in order) never
changes; an operation that finds a single bad id changes nothing at all.

Order. History reads order by `(position, id)`. Every row gets `position = id`
when inserted, except the rows written here: a summary or a pruned copy takes
the position of the first row it stands in for, which becomes agent-invisible
in the same transaction. So each position holds at most one agent-visible row
and the agent sees the summary exactly where the compacted range was, before
the kept tail (see "Dual-Visibility Compaction" in the spec):

    Message state        agent_visible  user_visible  Appears in
    Normal               1              1             LLM context + UI
    Compacted original   0              1             UI only
    Compaction summary   1              0             LLM context only

Pruning. `prune_tool_outputs` uses the same two-row mechanism instead of a
second content column: the original tool message stays user-visible and
becomes agent-invisible (`compacted_at` set, `metadata.pruned_into` = the copy),
and an agent-only copy carrying the placeholder is inserted at its position
(`compacted_at` set, `metadata.pruned = true`, `metadata.pruned_from` = the
original). Readers need nothing new: agent reads show the placeholder, user
reads show the original. A row that is either half of a prune is skipped, so
nothing is pruned twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .sqlite import Database

from ..errors import NotFound, StoreError
from ..messages import Message
from .conversations import StoredMessage, insert_message, now_iso
from .transactions import write_transaction

HISTORY_ORDER = "position, id"

EVENT_KINDS: tuple[str, ...] = ("soft", "hard", "tool_pair", "proactive", "manual", "reactive_retry", "autonomous", "redo")
# The spec's verdict names (Pass, SoftFail, HardFail, Error), stored in snake case.
PROBE_VERDICTS: dict[str, str] = {"pass": "pass", "softfail": "soft_fail", "hardfail": "hard_fail", "error": "error"}


class CompactionError(StoreError):
    """The rows named for a compaction are not what it needs; nothing was changed."""


@dataclass(frozen=True)
class CompactionMetrics:
    """Per-conversation totals, named as in the spec where it names them.

    `compaction_events` and `compaction_tokens_saved` count every recorded event
    except those a probe HardFail blocked; `compression_*` are the proactive ones.
    """

    compaction_events: int = 0
    compaction_tokens_saved: int = 0
    compression_events: int = 0
    compression_tokens_saved: int = 0
    tool_output_prunes: int = 0
    compaction_probe_passes: int = 0
    compaction_probe_soft_failures: int = 0
    compaction_probe_failures: int = 0
    compaction_probe_errors: int = 0
    last_probe_verdict: str | None = None
    last_probe_score: float | None = None

    def lines(self) -> list[str]:
        """One line each, for `zeph context` and the chat app: events and savings, proactive runs, probe verdicts."""
        lines = [
            f"compaction: {self.compaction_events} event{'s' * (self.compaction_events != 1)}, "
            f"{self.compaction_tokens_saved:,} tokens saved, "
            f"{self.tool_output_prunes} tool output{'s' * (self.tool_output_prunes != 1)} pruned"
        ]
        if self.compression_events:
            lines.append(f"proactive: {self.compression_events} ({self.compression_tokens_saved:,} tokens saved)")
        probes = (self.compaction_probe_passes, self.compaction_probe_soft_failures, self.compaction_probe_failures,
                  self.compaction_probe_errors)
        if any(probes):
            lines.append(
                "probe: {} pass · {} soft fail · {} hard fail · {} error".format(*probes)
                + (f" · last {self.last_probe_verdict} ({self.last_probe_score or 0:.2f})" if self.last_probe_verdict else "")
            )
        return lines


def normalize_verdict(verdict: str | None) -> str | None:
    if verdict is None:
        return None
    key = verdict.strip().lower().replace("_", "").replace("-", "")
    if key not in PROBE_VERDICTS:
        raise ValueError(f"unknown probe verdict {verdict!r}; expected one of Pass, SoftFail, HardFail, Error")
    return PROBE_VERDICTS[key]


def _unique(ids: Sequence[int]) -> list[int]:
    return list(dict.fromkeys(int(i) for i in ids))


def _messages_are(ids: Sequence[int]) -> str:
    """'message 4 is' / 'messages 4, 9 are', to start an error sentence."""
    if len(ids) == 1:
        return f"message {ids[0]} is"
    return f"messages {', '.join(str(i) for i in ids)} are"


def _message(row: dict[str, Any]) -> Message:
    return Message.from_parts_json(row["role"], row["parts"], row["content"] or "")


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(row["metadata"] or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _is_pruned(row: dict[str, Any]) -> bool:
    metadata = _metadata(row)
    return bool(metadata.get("pruned")) or "pruned_into" in metadata


def _is_one_tool_pair(rows: list[dict[str, Any]]) -> bool:
    """An assistant tool-call message followed by tool messages answering exactly its calls."""
    first, rest = _message(rows[0]), [_message(r) for r in rows[1:]]
    calls = {c.id for c in first.tool_calls}
    answered = [part.tool_call_id for m in rest for part in m.tool_results]
    return (
        first.role == "assistant"
        and bool(calls)
        and bool(rest)
        and all(m.role == "tool" for m in rest)
        and sorted(answered) == sorted(calls)
    )


def _result_ids(message: Message) -> list[str]:
    return [part.tool_call_id for part in message.tool_results]


def _check_prunable(conversation_id: int, rows: list[dict[str, Any]], replacements: Mapping[int, Message]) -> None:
    for row in rows:
        replacement = replacements[row["id"]]
        if not row["agent_visible"] or row["role"] != "tool":
            raise CompactionError(
                f"message {row['id']} is not an agent-visible tool message of session {conversation_id}, "
                "so no tool output was pruned"
            )
        if replacement.role != "tool" or _result_ids(replacement) != _result_ids(_message(row)):
            raise CompactionError(
                f"the pruned copy of message {row['id']} does not answer the same tool calls, "
                "so no tool output was pruned"
            )


class CompactionStore:
    """Writes the outcome of compaction; `context/` decides what to write."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- summaries ----------------------------------------------------------------------

    def replace_with_summary(
        self,
        conversation_id: int,
        message_ids: Sequence[int],
        summary: Message,
        *,
        metadata: dict[str, Any] | None = None,
        token_count: int | None = None,
        token_counter: str | None = None,
    ) -> StoredMessage:
        """Hide `message_ids` from the agent and put `summary` (agent-only) where they began."""
        return self._summarize(
            conversation_id,
            message_ids,
            summary,
            kind="compaction",
            metadata=metadata,
            token_count=token_count,
            token_counter=token_counter,
        )

    def apply_tool_summary(
        self,
        conversation_id: int,
        pair_ids: Sequence[int],
        summary: Message,
        *,
        metadata: dict[str, Any] | None = None,
        token_count: int | None = None,
        token_counter: str | None = None,
    ) -> StoredMessage:
        """Replace one tool call and its results, for the agent, by their `[tool summary]` message."""
        return self._summarize(
            conversation_id,
            pair_ids,
            summary,
            kind="tool_pair",
            metadata=metadata,
            token_count=token_count,
            token_counter=token_counter,
        )

    def set_deferred_summary(self, message_id: int, text: str) -> None:
        """Store `metadata.deferred_summary` on a tool response, keeping its other metadata."""
        self.update_metadata(message_id, {"deferred_summary": text}, purpose="attach a deferred summary to")

    def update_metadata(self, message_id: int, fields: Mapping[str, Any], *, purpose: str = "update") -> None:
        """Merge `fields` into a message's metadata, keeping the rest."""
        with write_transaction(self.db):
            rows = list(self.db.query("select metadata from messages where id = ?", [message_id]))
            if not rows:
                raise NotFound(f"no message with id {message_id} to {purpose}")
            metadata = {**_metadata(rows[0]), **fields}
            self.db.execute(
                "update messages set metadata = ? where id = ?", [json.dumps(metadata, ensure_ascii=False), message_id]
            )

    def originals(self, conversation_id: int, summary_id: int) -> list[tuple[int, Message, dict[str, Any]]]:
        """(id, message, metadata) of what a summary stands in for, in history order (empty when unknown)."""
        rows = self._rows(conversation_id, [summary_id])
        ids = _metadata(rows[0]).get("summary_of") if rows else None
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            return []
        return [(row["id"], _message(row), _metadata(row)) for row in self._rows(conversation_id, ids)]

    def _summarize(
        self,
        conversation_id: int,
        message_ids: Sequence[int],
        summary: Message,
        *,
        kind: str,
        metadata: dict[str, Any] | None,
        token_count: int | None,
        token_counter: str | None,
    ) -> StoredMessage:
        ids = _unique(message_ids)
        if not ids:
            raise CompactionError(f"no messages of session {conversation_id} were named, so nothing was compacted")
        stamp = now_iso()
        with write_transaction(self.db):
            rows = self._agent_visible_rows(conversation_id, ids)
            if kind == "tool_pair" and not _is_one_tool_pair(rows):
                raise CompactionError(
                    f"{_messages_are(ids)} not one tool call with its results in session {conversation_id}, "
                    "so nothing was summarized"
                )
            self._hide_from_agent(ids, stamp)
            return insert_message(
                self.db,
                conversation_id,
                summary,
                position=rows[0]["position"],
                stamp=stamp,
                agent_visible=True,
                user_visible=False,
                compacted_at=None,
                metadata={**(metadata or {}), "summary_kind": kind, "summary_of": ids},
                token_count=token_count,
                token_counter=token_counter,
            )

    # ---- pruning ------------------------------------------------------------------------

    def prune_tool_outputs(
        self,
        conversation_id: int,
        replacements: Mapping[int, Message],
        *,
        token_counts: Mapping[int, int] | None = None,
        token_counter: str | None = None,
    ) -> list[StoredMessage]:
        """Give the agent `replacements[id]` (the placeholder) instead of each tool message; return the copies.

        Rows already pruned (either half) are skipped. Any other id must be an
        agent-visible tool message of the conversation, and its replacement must
        answer the same tool calls, or nothing is pruned.
        """
        ids = _unique(list(replacements))
        if not ids:
            return []
        stamp = now_iso()
        with write_transaction(self.db):
            found = self._rows(conversation_id, ids)
            missing = sorted(set(ids) - {r["id"] for r in found})
            if missing:
                raise CompactionError(
                    f"{_messages_are(missing)} not in session {conversation_id}, so no tool output was pruned"
                )
            rows = [r for r in found if not _is_pruned(r)]
            _check_prunable(conversation_id, rows, replacements)
            counts = token_counts or {}
            copies = []
            for row in rows:
                copy = insert_message(
                    self.db,
                    conversation_id,
                    replacements[row["id"]],
                    position=row["position"],
                    stamp=stamp,
                    agent_visible=True,
                    user_visible=False,
                    compacted_at=stamp,
                    metadata={**_metadata(row), "pruned": True, "pruned_from": row["id"]},
                    token_count=counts.get(row["id"]),
                    token_counter=token_counter if row["id"] in counts else None,
                )
                self._mark_pruned_original(row, copy.id, stamp)
                copies.append(copy)
        return copies

    def _mark_pruned_original(self, row: dict[str, Any], copy_id: int, stamp: str) -> None:
        metadata = {**_metadata(row), "pruned_into": copy_id}
        self.db.execute(
            "update messages set agent_visible = 0, compacted_at = ?, metadata = ? where id = ?",
            [stamp, json.dumps(metadata, ensure_ascii=False), row["id"]],
        )

    # ---- a fresh context ------------------------------------------------------------------

    def clear_agent_context(self, conversation_id: int) -> int:
        """Hide every agent-visible message from the agent and store a user-only "context cleared"
        marker after them; return how many were hidden (0: nothing changed, no marker stored)."""
        stamp = now_iso()
        with write_transaction(self.db):
            if not self.db.execute("select 1 from conversations where id = ?", [conversation_id]).fetchone():
                raise NotFound(f"no session with id {conversation_id} (see `zeph sessions list`)")
            hidden = self.db.execute(
                "update messages set agent_visible = 0, compacted_at = coalesce(compacted_at, ?) "
                "where conversation_id = ? and agent_visible = 1",
                [stamp, conversation_id],
            ).rowcount
            if hidden:
                insert_message(
                    self.db,
                    conversation_id,
                    Message.context("context cleared"),
                    stamp=stamp,
                    agent_visible=False,
                    user_visible=True,
                    metadata={"marker": "clear"},
                )
        return hidden

    # ---- metrics ------------------------------------------------------------------------

    def record_event(
        self,
        conversation_id: int,
        kind: str,
        *,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        messages_compacted: int = 0,
        outputs_pruned: int = 0,
        method: str = "",
        probe_verdict: str | None = None,
        probe_score: float | None = None,
    ) -> int:
        """Record one compaction event; return its id."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown compaction kind {kind!r}; expected one of {', '.join(EVENT_KINDS)}")
        record = {
            "conversation_id": conversation_id,
            "kind": kind,
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "messages_compacted": messages_compacted,
            "outputs_pruned": outputs_pruned,
            "method": method,
            "probe_verdict": normalize_verdict(probe_verdict),
            "probe_score": probe_score,
            "created_at": now_iso(),
        }
        with write_transaction(self.db):
            return self.db.insert("compaction_events", record)

    def metrics(self, conversation_id: int) -> CompactionMetrics:
        saved = (
            "case when tokens_before > tokens_after and probe_verdict is not 'hard_fail' "
            "then tokens_before - tokens_after else 0 end"
        )
        totals = next(
            self.db.query(
                f"""
                select
                    coalesce(sum(probe_verdict is not 'hard_fail'), 0) as compaction_events,
                    coalesce(sum({saved}), 0) as compaction_tokens_saved,
                    coalesce(sum(kind = 'proactive' and probe_verdict is not 'hard_fail'), 0) as compression_events,
                    coalesce(sum(case when kind = 'proactive' then {saved} else 0 end), 0) as compression_tokens_saved,
                    coalesce(sum(outputs_pruned), 0) as tool_output_prunes,
                    coalesce(sum(probe_verdict = 'pass'), 0) as compaction_probe_passes,
                    coalesce(sum(probe_verdict = 'soft_fail'), 0) as compaction_probe_soft_failures,
                    coalesce(sum(probe_verdict = 'hard_fail'), 0) as compaction_probe_failures,
                    coalesce(sum(probe_verdict = 'error'), 0) as compaction_probe_errors
                from compaction_events where conversation_id = ?
                """,
                [conversation_id],
            )
        )
        last = list(
            self.db.query(
                "select probe_verdict, probe_score from compaction_events "
                "where conversation_id = ? and probe_verdict is not null order by id desc limit 1",
                [conversation_id],
            )
        )
        return CompactionMetrics(
            **totals,
            last_probe_verdict=last[0]["probe_verdict"] if last else None,
            last_probe_score=last[0]["probe_score"] if last else None,
        )

    # ---- rows ---------------------------------------------------------------------------

    def _rows(self, conversation_id: int, ids: list[int]) -> list[dict[str, Any]]:
        sql = (
            "select id, role, content, parts, metadata, agent_visible, coalesce(position, id) as position "
            "from messages where conversation_id = ? and id in (select value from json_each(?)) "
            f"order by {HISTORY_ORDER}"
        )
        return list(self.db.query(sql, [conversation_id, json.dumps(ids)]))

    def _agent_visible_rows(self, conversation_id: int, ids: list[int]) -> list[dict[str, Any]]:
        rows = [r for r in self._rows(conversation_id, ids) if r["agent_visible"]]
        missing = sorted(set(ids) - {r["id"] for r in rows})
        if missing:
            raise CompactionError(
                f"{_messages_are(missing)} not agent-visible in session {conversation_id}, so nothing was compacted"
            )
        return rows

    def _hide_from_agent(self, ids: list[int], stamp: str) -> None:
        self.db.execute(
            "update messages set agent_visible = 0, compacted_at = ? where id in (select value from json_each(?))",
            [stamp, json.dumps(ids)],
        )
