"""What recall and long-term memory contributed to a request, as lines for `zeph context` and `/context`.

Invariant: pure; reads only the turn's memory and the report, so the lines say
exactly what was sent (recalled ids that did not fit the block are not listed).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...context.report import ContextReport
from .service import CATCH_UP_MESSAGES, TurnMemory

ECHOES_SHOWN = 3  # the newest echoing replies listed; older ones are counted


def memory_lines(
    turn: TurnMemory, report: ContextReport, embedder: str = "", backlog: int = 0,
    echoes: Sequence[tuple[int, Sequence[str]]] = (),
) -> list[str]:
    """`echoes`: the session's replies (id, blocks) that repeated an injected block verbatim."""
    lines: list[str] = []
    if backlog:
        lines.append(f"recall index: {backlog:,} stored message{'s have' if backlog != 1 else ' has'} no vector yet; "
                     f"`zeph memory reindex` embeds them (the next question routed to vectors embeds the newest "
                     f"{CATCH_UP_MESSAGES})")
    result = turn.recall
    if result is not None:
        sent = set(report.recalled_ids)
        hits = [h for h in result.hits if h.message_id in sent]
        backends = "+".join(result.searched) or "nothing searched"
        head = f"recall: route {result.route.value} ({backends})"
        if embedder:
            head += f", embedder {embedder}"
        found = len(result.hits)
        if found and len(hits) < found:
            head += f", {found} found, {len(hits)} fit the block"
        lines.append(head if hits else head + ", nothing recalled")
        for hit in hits:
            text = " ".join(hit.content.split())
            text = text if len(text) <= 70 else text[:69] + "…"
            lines.append(f"  #{hit.message_id} session {hit.conversation_id} ({hit.role}, relevance {hit.relevance:.2f}, {hit.via}): {text}")
    for message_id, blocks in echoes[-ECHOES_SHOWN:]:
        lines.append(f"echo: reply #{message_id} {_echo_phrase(blocks)}; it is kept out of recall")
    if len(echoes) > ECHOES_SHOWN:
        lines.append(f"  ({len(echoes) - ECHOES_SHOWN} earlier echoing repl{'y' if len(echoes) - ECHOES_SHOWN == 1 else 'ies'} "
                     "not listed)")
    if turn.memory_ids:
        lines.append(f"memory: {len(turn.memory_ids)} saved memor{'y' if len(turn.memory_ids) == 1 else 'ies'} sent "
                     f"(ids {', '.join(map(str, turn.memory_ids))})")
    return lines


def _echo_phrase(blocks: Sequence[str]) -> str:
    """What an echoing reply did: "repeats the memory block verbatim", "is written as recall entries", or both."""
    from ...context.echo import RECALL_FORMAT

    verbatim = [b for b in blocks if b != RECALL_FORMAT]
    parts = [f"repeats the {' and '.join(verbatim)} block verbatim"] if verbatim else []
    if RECALL_FORMAT in blocks:
        parts.append("is written as recall entries (copied or made up)")
    return " and ".join(parts)
