"""`zeph recall`: what semantic recall would add to a new turn for a query, or for each query of a set.

Invariant: the hits come from `MemoryService.prepare`, the call a turn makes before its
request (same embedder, index, ranking and settings; the first turn of a new session, or
with `--session` the next turn of that one, its messages excluded as the turn excludes
them), and each is printed with the entry the turn's recall block renders for it. One
process answers a whole set read from standard input, one JSON line per query, in order.
Progress goes to a terminal only.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from ...errors import UsageError, ZephError
from ...frontends.cli.stderr import eprint, warning_line

if TYPE_CHECKING:
    from .service import MemoryService, TurnMemory
    from ...store import ConversationStore

NEW_SESSION = 0  # no session has this id: every stored message is from another session


def legs(via: str) -> list[str]:
    """The searches that found a hit ("both" = the vector and the keyword search), and "answer" for the
    answer to a repeated question that recall brought in in its question's place."""
    return [leg for part in via.split("+") for leg in (("vector", "keyword") if part == "both" else (part,)) if leg]


def hit_objects(turn: "TurnMemory", store: "ConversationStore") -> list[dict[str, Any]]:
    """One JSON object per recalled message, best first."""
    from ...store.imports import external_ids

    hits = turn.recall.hits if turn.recall is not None else ()
    entries = {entry.message_id: entry.text for entry in turn.entries}
    external = external_ids(store.db, [h.message_id for h in hits])
    return [
        {
            "rank": rank, "session": hit.conversation_id, "session_title": hit.conversation_title,
            "message_id": hit.message_id, "external_id": external.get(hit.message_id), "role": hit.role,
            "time": hit.created_at, "text": hit.content, "score": hit.score, "relevance": hit.relevance,
            "legs": legs(hit.via), "entry": entries.get(hit.message_id, ""),
        }
        for rank, hit in enumerate(hits, start=1)
    ]


async def _recall_all(
    memory: "MemoryService", store: "ConversationStore", queries: Sequence[str], session_id: Optional[int], each
) -> None:
    conversation_id, exclude = NEW_SESSION, frozenset[int]()
    if session_id is not None:
        conversation_id = store.get_conversation(session_id).id
        exclude = frozenset(m.id for m in store.history(conversation_id, agent_visible=True))
    backlog = await memory.backlog()
    if backlog:
        eprint(warning_line(f"{backlog:,} stored message{'s have' if backlog != 1 else ' has'} no vector yet, so "
                            "recall cannot find them by meaning: `zeph memory reindex` embeds them"))
    for query in queries:
        turn = await memory.prepare(conversation_id, query, exclude) if query.strip() else None
        for note in turn.notes if turn is not None else ():
            eprint(warning_line(note))
        each(query, turn)


def run_recall(query: Optional[str], *, json_output: bool, k: Optional[int], session_id: Optional[int]) -> int:
    """Exit status: 1 when a single query recalls nothing (printed as text), else 0."""
    from ...frontends.cli.command_context import load, open_store, read_stdin

    loaded = load({"memory.semantic.recall_limit": (k, "-k")})
    if not loaded.config.memory.semantic.enabled:
        raise ZephError("semantic recall is off (memory.semantic.enabled = false): a turn recalls nothing")
    batch = query is None
    if batch:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("give a QUERY, or pipe queries on standard input, one per line")
        queries = read_stdin().splitlines()
    else:
        queries = [query]  # type: ignore[list-item]
        if not query.strip():  # type: ignore[union-attr]
            raise UsageError("the query is empty")
    from ...agent.factory import memory_service
    from ...providers import resolve_settings
    from ...agent.workspace import current_directory

    store = open_store()
    found: list[int] = []
    try:
        settings = resolve_settings(loaded.config, os.environ, loaded.sources)
        memory = memory_service(loaded, store, settings, current_directory())
        assert memory is not None  # semantic recall is on
        if batch:
            bar = _bar(len(queries))

            def each(text: str, turn) -> None:
                objects = hit_objects(turn, store) if turn is not None else []
                route = turn.recall.route.value if turn is not None and turn.recall is not None else None
                print(json.dumps({"query": text, "route": route, "hits": objects}, ensure_ascii=False), flush=True)
                bar.advance()

            with bar:
                asyncio.run(_recall_all(memory, store, queries, session_id, each))
            return 0

        def one(text: str, turn) -> None:
            objects = hit_objects(turn, store)
            found.append(len(objects))
            if json_output:
                print(json.dumps(objects, indent=2, ensure_ascii=False))
            else:
                _print_hits(text, turn, objects)

        asyncio.run(_recall_all(memory, store, queries, session_id, one))
    finally:
        store.close()
    return 0 if json_output or (found and found[0]) else 1


def _print_hits(query: str, turn: "TurnMemory", objects: list[dict[str, Any]]) -> None:
    result = turn.recall
    route = f"route {result.route.value} ({'+'.join(result.searched) or 'nothing searched'})" if result else ""
    if not objects:
        eprint(f"nothing recalled for {query!r}" + (f": {route}" if route else ""))
        return
    eprint(f"{len(objects)} recalled for {query!r}: {route}")
    for hit in objects:
        external = f" · id {hit['external_id']}" if hit["external_id"] else ""
        print(f"{hit['rank']}. #{hit['message_id']} session {hit['session']}{external} · score {hit['score']:.3f} · "
              f"relevance {hit['relevance']:.2f} · {'+'.join(hit['legs'])}")
        print(f"   {hit['entry']}")


class _Bar:
    """A count of queries answered, on standard error when it is a terminal."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(TextColumn("recall"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty())
        self.task = self.progress.add_task("recall", total=total)

    def advance(self) -> None:
        self.progress.advance(self.task)

    def __enter__(self) -> "_Bar":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)


def _bar(total: int) -> _Bar:
    return _Bar(total)
