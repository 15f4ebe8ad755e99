"""The audit trail of tool calls and the kept full text of truncated outputs.

Invariant: one `tool_runs` row per tool call the model made (run, denied,
blocked or invalid alike), written when the call is decided or finished; rows
are never updated afterwards. Callers pass text already redacted.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from .sqlite import Database

from .conversations import now_iso
from .transactions import write_transaction


@dataclass(frozen=True)
class ToolRun:
    """One logged tool call and its outcome."""
    id: int
    conversation_id: int
    tool_call_id: str
    tool: str
    arguments: dict[str, Any]
    decision: str
    reason: str
    exit_code: int | None
    is_error: bool
    duration_ms: int | None
    output_chars: int | None
    created_at: str


class ToolLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record(
        self,
        conversation_id: int,
        *,
        tool_call_id: str,
        tool: str,
        arguments: dict[str, Any],
        decision: str,
        reason: str = "",
        exit_code: int | None = None,
        is_error: bool = False,
        duration_ms: int | None = None,
        output_chars: int | None = None,
    ) -> int:
        with write_transaction(self.db):
            return self.db.insert(
                "tool_runs",
                {
                    "conversation_id": conversation_id,
                    "tool_call_id": tool_call_id,
                    "tool": tool,
                    "arguments": json.dumps(arguments, ensure_ascii=False),
                    "decision": decision,
                    "reason": reason,
                    "exit_code": exit_code,
                    "is_error": int(is_error),
                    "duration_ms": duration_ms,
                    "output_chars": output_chars,
                    "created_at": now_iso(),
                },
            )

    def runs(self, conversation_id: int | None = None, limit: int = 50) -> list[ToolRun]:
        """The most recent runs (of one conversation, or all), oldest first."""
        where, args = ("where conversation_id = ?", [conversation_id]) if conversation_id is not None else ("", [])
        sql = f"select * from (select * from tool_runs {where} order by id desc limit ?) order by id"
        return [
            ToolRun(
                id=r["id"],
                conversation_id=r["conversation_id"],
                tool_call_id=r["tool_call_id"] or "",
                tool=r["tool"],
                arguments=json.loads(r["arguments"] or "{}"),
                decision=r["decision"],
                reason=r["reason"] or "",
                exit_code=r["exit_code"],
                is_error=bool(r["is_error"]),
                duration_ms=r["duration_ms"],
                output_chars=r["output_chars"],
                created_at=r["created_at"],
            )
            for r in self.db.query(sql, [*args, limit])
        ]

    def save_output(self, conversation_id: int, tool_call_id: str, content: str) -> str:
        """Keep a full output; return the id read_overflow knows it by."""
        output_id = "ov_" + secrets.token_hex(4)
        with write_transaction(self.db):
            self.db.insert(
                "tool_outputs",
                {
                    "id": output_id,
                    "conversation_id": conversation_id,
                    "tool_call_id": tool_call_id,
                    "content": content,
                    "created_at": now_iso(),
                },
            )
        return output_id

    def read_output(self, conversation_id: int, output_id: str) -> str | None:
        rows = list(
            self.db.query(
                "select content from tool_outputs where id = ? and conversation_id = ?", [output_id, conversation_id]
            )
        )
        return rows[0]["content"] if rows else None
