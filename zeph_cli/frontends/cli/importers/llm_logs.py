"""simonw/llm's `logs.db`: every conversation it logged, as zeph sessions.

Invariant: the database is opened read-only and read with plain SQL (the `llm` package is
never imported). Both of llm's layouts are read, as `llm logs` reads them: the
`conversations` and `responses` tables that llm wrote before its message store (each
response is a prompt and a reply), and the message store (`threads`, `turns`, `messages`,
`parts`; each turn is what one model call added: the user's input after the last reply,
and the model's output). A conversation continued across llm's upgrade is one session,
its old responses and new turns in time order, nothing twice. Each turn is imported as
`llm logs` shows it: the text parts the user typed and the model wrote (fragment and
attachment contents, tool calls and results, system prompts are left out and counted).
A message's id is `<response or turn id>:prompt` or `:response`; its time is the
response's start (the reply's: start plus its duration), which llm records in UTC.
"""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, UTC
from pathlib import Path

from ....store.imports import ImportedMessage, ImportedSession
from .common import ImportProblem, Skipped, store_time

SOURCE = "llm"


@dataclass
class LlmHistory:
    sessions: list[ImportedSession]
    skipped: Skipped = field(default_factory=Skipped)
    rows: int = 0  # responses and turns read


@dataclass
class _Exchange:
    """One logged model call: when, its id, what the user typed and what the model replied."""

    started: datetime
    id: str
    prompt: str
    response: str
    duration_ms: int | None


def default_path(env: Mapping[str, str] = os.environ) -> Path:
    """Where llm keeps its log database: $LLM_USER_PATH/logs.db, else its app dir's (as llm finds it)."""
    if env.get("LLM_USER_PATH"):
        return Path(env["LLM_USER_PATH"]) / "logs.db"
    try:
        click = importlib.import_module("typer._click")  # typer's own copy of click
    except ImportError:  # typer releases that use click itself
        click = importlib.import_module("click")
    return Path(click.get_app_dir("io.datasette.llm")) / "logs.db"


def read_llm_logs(path: Path) -> LlmHistory:
    """Every conversation in llm's log database at `path`, oldest first."""
    if not path.is_file():
        raise ImportProblem(f"no llm log database at {path} (`llm logs path` prints where llm keeps it)")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportProblem(f"cannot open {path}: {exc}") from None
    try:
        return _read(conn, path)
    except sqlite3.DatabaseError as exc:
        raise ImportProblem(f"cannot read {path} as llm's log database: {exc}") from None
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, path: Path) -> LlmHistory:
    tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
    if "responses" not in tables and "turns" not in tables:
        raise ImportProblem(f"{path} holds no llm logs (no responses or turns table): is it llm's logs.db?")
    history = LlmHistory([])
    calls: dict[str, list[_Exchange]] = defaultdict(list)
    titles: dict[str, str] = {}
    models: dict[str, str] = {}
    systems: dict[str, set[str]] = defaultdict(set)  # each session's system prompts, whichever layout
    if "responses" in tables:
        history.rows += _legacy(conn, tables, calls, titles, models, systems, history.skipped, path)
    if {"turns", "messages", "parts"} <= tables:
        history.rows += _message_store(conn, tables, calls, titles, models, systems, history.skipped, path)
    history.skipped["system"] += sum(len(texts) for texts in systems.values())
    sessions = []
    for key, exchanges in calls.items():
        exchanges.sort(key=lambda e: (e.started, e.id))
        session = ImportedSession(SOURCE, key, titles.get(key, ""), models.get(key, ""))
        for exchange in exchanges:
            if exchange.prompt.strip():
                session.messages.append(ImportedMessage(
                    "user", exchange.prompt.strip(), store_time(exchange.started), f"{exchange.id}:prompt"))
            else:
                history.skipped["empty"] += 1
            if exchange.response.strip():
                finished = exchange.started + timedelta(milliseconds=max(exchange.duration_ms or 0, 0))
                session.messages.append(ImportedMessage(
                    "assistant", exchange.response, store_time(finished), f"{exchange.id}:response"))
        if session.messages:
            sessions.append((exchanges[0].started, key, session))
    history.sessions = [session for _, _, session in sorted(sessions, key=lambda s: (s[0], s[1]))]
    return history


def _time(value: object, where: str, path: Path) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ImportProblem(f"{path}: {where}: field 'datetime_utc' is {value!r}, not a time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _legacy(
    conn: sqlite3.Connection, tables: set[str], calls: dict[str, list[_Exchange]], titles: dict[str, str],
    models: dict[str, str], systems: dict[str, set[str]], skipped: Skipped, path: Path,
) -> int:
    """Responses logged before llm's message store: a prompt and a response each."""
    if "conversations" in tables:
        for key, name, model in conn.execute("select id, name, model from conversations"):
            titles.setdefault(str(key), name or "")
            models.setdefault(str(key), model or "")
    with_tools: set[str] = set()
    if "tool_calls" in tables:
        with_tools = {str(r[0]) for r in conn.execute("select distinct response_id from tool_calls")}
    count = 0
    rows = conn.execute(
        "select id, conversation_id, prompt, system, response, datetime_utc, duration_ms, model from responses"
    )
    for rid, conversation, prompt, system, response, started, duration, model in rows:
        count += 1
        key = str(conversation if conversation is not None else rid)
        if system and system.strip():
            systems[key].add(system)
        if not (response or "").strip() and str(rid) in with_tools:
            skipped["tool"] += 1
            response = ""
        elif not (response or "").strip():
            skipped["empty"] += 1
        models.setdefault(key, model or "")
        calls[key].append(_Exchange(_time(started, f"responses row {rid}", path), str(rid), prompt or "",
                                    response or "", duration))
    return count


def _message_store(
    conn: sqlite3.Connection, tables: set[str], calls: dict[str, list[_Exchange]], titles: dict[str, str],
    models: dict[str, str], systems: dict[str, set[str]], skipped: Skipped, path: Path,
) -> int:
    """Turns of llm's message store: each model call's own input (the user and tool messages after the
    last reply before it) and output (what it appended)."""
    if "threads" in tables:
        for key, name in conn.execute("select id, name from threads"):
            if name and not titles.get(str(key)):  # a thread continuing a legacy conversation has its id:
                titles[str(key)] = name  # the conversation's own name stays
    parents: dict[str, tuple[str | None, str]] = {
        h: (parent, role) for h, parent, role in conn.execute("select hash, parent_hash, role from messages")
    }
    texts: dict[str, list[str]] = defaultdict(list)
    tool_parts: set[str] = set()
    for message, kind, text, payload in conn.execute(
        "select message_hash, type, text, payload from parts order by message_hash, position"
    ):
        if kind == "text":
            texts[message].append(text if text is not None else _literal(payload))
        elif kind in ("tool_call", "tool_result"):
            tool_parts.add(message)
    roots: dict[str, str] = {}

    def root(h: str) -> str:
        walked = []
        while h in parents and parents[h][0] is not None and h not in roots:
            walked.append(h)
            h = parents[h][0]  # type: ignore[assignment]
        top = roots.get(h, h)
        for seen in walked:
            roots[seen] = top
        return top

    count = 0
    for tid, thread, parent, tip, started, duration, model in conn.execute(
        "select id, thread_id, parent_message_hash, tip_message_hash, datetime_utc, duration_ms, model from turns"
    ):
        count += 1
        key = str(thread if thread is not None else tid)
        output: list[str] = []
        h = tip
        while h is not None and h != parent and h in parents:
            output.append(h)
            h = parents[h][0]
        inputs: list[str] = []
        h = parent
        while h is not None and h in parents and parents[h][1] in ("user", "tool"):
            inputs.append(h)
            h = parents[h][0]
        prompt = "\n\n".join("".join(texts[m]) for m in reversed(inputs) if parents[m][1] == "user" and texts[m])
        skipped["tool"] += sum(1 for m in inputs if parents[m][1] == "tool")
        response = "\n\n".join("".join(texts[m]) for m in reversed(output)
                               if parents[m][1] == "assistant" and "".join(texts[m]).strip())
        if not response.strip():
            skipped["tool" if any(m in tool_parts for m in output) else "empty"] += 1
        top = root(parent or tip) if (parent or tip) else None
        if top is not None and top in parents and parents[top][1] == "system":
            systems[key].add("".join(texts[top]))
        models.setdefault(key, model or "")
        calls[key].append(_Exchange(_time(started, f"turns row {tid}", path), str(tid), prompt, response, duration))
    return count


def _literal(payload: str | None) -> str:
    """A text part that borrows fragments: its literal pieces (what the user typed), not the fragments."""
    try:
        pieces = (json.loads(payload) or {}).get("text_ref") or [] if payload else []
    except (ValueError, AttributeError):
        return ""
    return "".join(piece["literal"] for piece in pieces if isinstance(piece, dict) and isinstance(piece.get("literal"), str))
