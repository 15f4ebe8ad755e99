"""The context a request sends: the sources' blocks and the counted history, assembled.

Invariant: what `context_for` returns is exactly what the next request sends, with the
report that explains it (blocks, tokens, budget, thresholds, window source); every block
comes from a source the session's policy allows and the turn's preparation did not leave
out (one left out is a report row saying why); history
tokens are counted once per counter and stored (never a lower bound, which is of no use
stored; a message with images is counted afresh, as the session's model takes them); each image the
model does not take is sent as its placeholder text; outside a turn the worldbook is triggered afresh, so `zeph context` and
`/context` show what the next turn would see.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ..context.assembler import History, HistoryItem, assemble
from ..context.blocks import SourcePolicy, TurnInput
from ..context.budget import RequestBudget
from ..errors import StoreError
from ..log import get_logger
from ..images import for_model, newest_images_only
from ..tokens import LOWER, MESSAGE_OVERHEAD, Calibration, TokenCounter, bounded, count_message, counts_as, image_policy
from . import sources

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..messages import Message
    from ..store import Conversation, ConversationStore, StoredMessage
    from ..config import Config
    from ..context.blocks import ContextSource
    from ..context.budget import Budget
    from ..models import ModelProfile
    from ..providers.base import Provider
    from ..tools.base import ToolSet
    from ..features.worldbook.turn import Worldbook, WorldbookTurn
    from .sources import Prepared

log = get_logger("context")


class ContextHost(Protocol):
    """What the context view reads of the session it assembles for (the Agent is one), so this module
    does not import the agent."""

    config: Config
    counter: TokenCounter
    profile: ModelProfile | None
    provider: Provider
    store: ConversationStore
    pinned_id: int | None
    prepared: Prepared
    worldbook: Worldbook
    turn_worldbook: WorldbookTurn

    @property
    def sources(self) -> list[ContextSource]: ...
    @property
    def source_policy(self) -> SourcePolicy: ...
    def agent_history(self, conversation: Conversation) -> list[HistoryItem]: ...
    def budget(self) -> Budget: ...
    def clock(self) -> datetime: ...
    def offered_tools(self) -> ToolSet: ...
    def tools_tokens(self, tools: ToolSet) -> int: ...


def context_for(
    agent: ContextHost, conversation: Conversation, system: str | None = None, tools: ToolSet | None = None
) -> tuple[list[Message], ContextReport, int]:
    """The messages the next request would send, their report, and the raw estimate."""
    history = agent.agent_history(conversation)
    if agent.pinned_id is None:  # outside a turn (zeph context, /context): what the next one would see
        agent.turn_worldbook = agent.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
    tools = agent.offered_tools() if tools is None else tools
    budget = RequestBudget(
        agent.budget(), agent.counter, agent.store.calibration(agent.provider.name, agent.provider.model),
        window=agent.profile.context_window if agent.profile else 0,
        tools_tokens=agent.tools_tokens(tools), tools=frozenset(tools.tools),
    )
    turn = turn_input(agent, conversation, history, system=system, tools=budget.tools,
                      calibration=budget.calibration, running=agent.pinned_id is not None)
    shaping = History(history, agent.pinned_id, agent.config.context.max_chat_history,
                      agent.config.context.time_landmark_gap_minutes, agent.clock().tzinfo)
    messages, report = assemble(sources.request_blocks(agent.sources, turn, agent.source_policy, agent.prepared), shaping, budget)
    messages = [for_model(m, image_policy(agent.counter)) for m in messages]  # as counted: see tokens.count_image
    messages = newest_images_only(messages)  # (fewer tokens than counted, never more)
    if agent.profile is not None:
        report = dataclasses.replace(report, window_source=agent.profile.window_source)
    return messages, report, report.raw_tokens


def turn_input(
    agent: ContextHost,
    conversation: Conversation,
    history: list[HistoryItem],
    *,
    prompt: str = "",
    system: str | None = None,
    tools: frozenset[str] = frozenset(),
    calibration: Calibration | None = None,
    running: bool = False,
) -> TurnInput:
    """What the sources read for a turn's preparation or one request (`running`: within a turn)."""
    counter = agent.counter
    calibration = calibration or agent.store.calibration(agent.provider.name, agent.provider.model)

    def measure(text: str) -> int:
        return calibration.apply(counter.count(text) + MESSAGE_OVERHEAD)

    return TurnInput(
        conversation.id, conversation.metadata, conversation, history, prompt, running, system,
        agent.budget().available if agent.profile is not None else 0, counter, measure, tools, agent.clock(),
    )


def history_items(store: ConversationStore, counter: TokenCounter, stored: list[StoredMessage]) -> list[HistoryItem]:
    """History with token counts, counting (and caching) only what is not cached yet."""
    missing: list[tuple[int, int, str]] = []
    items: list[HistoryItem] = []
    for row in stored:
        count = row.token_count
        if count is None or not counts_as(counter, row.token_counter) or row.message.images:
            count = count_message(counter, row.message)
            missing.append((row.id, count, counter.name))
        items.append(HistoryItem(row.message, count, row.id, row.metadata, row.created_at))
    if not bounded(counter, LOWER):  # a lower bound is of no use stored
        try:
            store.set_token_counts(missing)
        except StoreError as exc:  # a cache: counted again next time
            log.info("token counts not cached: %s", exc)
    return items
