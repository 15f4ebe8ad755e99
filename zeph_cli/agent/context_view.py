"""The context a request sends: the prompt layers, counted history and per-turn blocks, assembled.

Invariant: what `context_for` returns is exactly what the next request sends, with the
report that explains it (blocks, tokens, budget, thresholds, window source); history
tokens are counted once per counter and stored (never a lower bound, which is of no use
stored); outside a turn the worldbook is triggered afresh, so `zeph context` and
`/context` show what the next turn would see.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..context.assembler import HistoryItem, PromptLayer, assemble
from ..context.environment import render_environment
from ..context.prompt_modules import base_prompt, mode_prompt
from ..context.turn_blocks import render_enhancement, render_time
from ..errors import StoreError
from ..log import get_logger
from ..tokens import LOWER, TokenCounter, bounded, count_message, counts_as
from ..tools.registry import LOAD_SKILL
from ..features.worldbook.turn import worldbook_layers

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..messages import Message
    from ..store import Conversation, ConversationStore, StoredMessage
    from ..tools.base import ToolSet
    from .agent import Agent

log = get_logger("context")


def context_for(
    agent: Agent, conversation: Conversation, system: str | None = None, tools: ToolSet | None = None
) -> tuple[list[Message], ContextReport, int]:
    """The messages the next request would send, their report, and the raw estimate."""
    history = agent.agent_history(conversation)
    if agent.pinned_id is None:  # outside a turn (zeph context, /context): what the next one would see
        agent.turn_worldbook = agent.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
    book, wb = turn_worldbook_layers(agent), agent.turn_worldbook
    tools = agent.offered_tools() if tools is None else tools
    messages, report = assemble(
        [*book.before, *layers(agent, conversation, system, tools), *book.after],
        history,
        agent.budget(),
        agent.counter,
        window=agent.profile.context_window if agent.profile else 0,
        tools_tokens=agent._tools_tokens(tools),
        calibration=agent.store.calibration(agent.provider.name, agent.provider.model),
        pinned_id=agent.pinned_id,
        context_layers=[*book.an_top, *context_layers(agent, conversation, isolated=wb.isolated), *book.outlet],
        recall=() if wb.drops("semantic recall") else agent.turn_memory.entries,
        skills=None if wb.drops("skills") else agent.extras.skills_input(loadable=LOAD_SKILL in tools.tools),
        late_context_layers=book.an_bottom,
        depth_layers=book.depths,
        closing_layers=[PromptLayer("enhancement prompt", render_enhancement(agent.enhancement(conversation)))],
        max_chat_history=agent.config.context.max_chat_history,
        landmark_gap_minutes=agent.config.context.time_landmark_gap_minutes,
        zone=agent.clock().tzinfo,
    )
    if agent.profile is not None:
        report = dataclasses.replace(report, window_source=agent.profile.window_source)
    return messages, book.annotate(report), report.raw_tokens


def layers(agent: Agent, conversation: Conversation, system: str | None, tools: ToolSet) -> list[PromptLayer]:
    """The stable layers, in order: base, environment, project context, mode, global and topic prompts."""
    assert agent.workspace is not None, "call start() first"
    topic = system if system is not None else conversation.metadata.get("system", "")
    base = base_prompt(agent.workspace.prompts)
    mode = mode_prompt(agent.workspace.prompts, agent.mode, tools=bool(tools.tools))
    return [
        PromptLayer("base prompt", base.text, base.detail),
        PromptLayer("environment", render_environment(agent.workspace.environment)),
        PromptLayer("project context", agent.workspace.project.text),
        PromptLayer("mode prompt", mode.text, mode.detail),
        PromptLayer("global prompt", (chosen := agent.global_prompt(conversation)).text, chosen.detail),
        PromptLayer("topic prompt", f"<topic_prompt>\n{topic.strip()}\n</topic_prompt>" if topic and topic.strip() else ""),
    ]


def history_items(store: ConversationStore, counter: TokenCounter, stored: list[StoredMessage]) -> list[HistoryItem]:
    """History with token counts, counting (and caching) only what is not cached yet."""
    missing: list[tuple[int, int, str]] = []
    items: list[HistoryItem] = []
    for row in stored:
        count = row.token_count
        if count is None or not counts_as(counter, row.token_counter):
            count = count_message(counter, row.message)
            missing.append((row.id, count, counter.name))
        items.append(HistoryItem(row.message, count, row.id, row.metadata, row.created_at))
    if not bounded(counter, LOWER):  # a lower bound is of no use stored
        try:
            store.set_token_counts(missing)
        except StoreError as exc:  # a cache: counted again next time
            log.info("token counts not cached: %s", exc)
    return items


def turn_worldbook_layers(agent: Agent):
    """The turn's triggered worldbook entries as layers, within `[worldbook] max_share` of the budget."""
    available = agent.budget().available if agent.profile is not None else 0
    calibration = agent.store.calibration(agent.provider.name, agent.provider.model)
    return worldbook_layers(agent.turn_worldbook, agent.worldbook.allowance(available), agent.counter, calibration)


def context_layers(agent: Agent, conversation: Conversation, *, isolated: bool = False) -> list[PromptLayer]:
    """The per-turn blocks in ETOS order: time, memory, recent conversations, user profile.
    `isolated` (worldbook isolation) drops all but the time."""
    return [
        PromptLayer("time", time_text(agent)),
        PromptLayer("memory", "" if isolated else agent.turn_memory.memory_text),
        *agent.session_memory.layers(conversation, agent.budget().available, isolated=isolated),
    ]


def time_text(agent: Agent) -> str:
    """The <time> block: the running turn's, else rendered now; "" when `[context] inject_time` is off."""
    if not agent.config.context.inject_time:
        return ""
    return agent._turn_time or render_time(agent.clock())
