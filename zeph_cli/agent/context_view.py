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

from ..context.assembler import History, HistoryItem, assemble
from ..context.blocks import Block, Placement
from ..context.budget import RequestBudget
from ..context.environment import render_environment
from ..context.prompt_modules import base_prompt, mode_prompt
from ..context.recall_block import RECALL_BLOCK, recall_block
from ..context.turn_blocks import render_enhancement, render_time
from ..errors import StoreError
from ..log import get_logger
from ..tokens import LOWER, TokenCounter, bounded, count_message, counts_as
from ..tools.registry import LOAD_SKILL
from ..worldbook_turn import WorldbookLayers, worldbook_layers

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..messages import Message
    from ..store import Conversation, ConversationStore, StoredMessage
    from ..tools.base import ToolSet
    from .agent import Agent

log = get_logger("context")


# Where each block goes among those of its placement (lowest first).
SYSTEM_ORDER = {"worldbook before": 0, "base prompt": 10, "environment": 20, "project context": 30, "mode prompt": 40,
                "global prompt": 50, "topic prompt": 60, "worldbook after": 70, "skills": 80}
TURN_ORDER = {"worldbook an_top": 10, "time": 20, "memory": 30, "recent conversations": 40, "user profile": 50,
              "worldbook outlet": 60, "semantic recall": 70, "worldbook an_bottom": 80}
CLOSING_ORDER = {"enhancement prompt": 10}


def context_for(
    agent: Agent, conversation: Conversation, system: str | None = None, tools: ToolSet | None = None
) -> tuple[list[Message], ContextReport, int]:
    """The messages the next request would send, their report, and the raw estimate."""
    history = agent.agent_history(conversation)
    if agent.pinned_id is None:  # outside a turn (zeph context, /context): what the next one would see
        agent.turn_worldbook = agent.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
    wb = agent.turn_worldbook
    tools = agent.offered_tools() if tools is None else tools
    blocks = [
        *worldbook_blocks(turn_worldbook_layers(agent)),
        *layers(agent, conversation, system, tools),
        *context_layers(agent, conversation, isolated=wb.isolated),
        Block("enhancement prompt", render_enhancement(agent.enhancement(conversation)), Placement.CLOSING,
              CLOSING_ORDER["enhancement prompt"], stable=False),
    ]
    if not wb.drops("semantic recall") and agent.turn_memory.entries:
        blocks.append(recall_block(agent.turn_memory.entries, TURN_ORDER[RECALL_BLOCK]))
    skills = None if wb.drops("skills") else agent.extras.skills_input()
    if skills is not None:  # the skills module loads when a turn has skills
        from ..context.skills_block import skills_block

        blocks.append(skills_block(skills, LOAD_SKILL, SYSTEM_ORDER["skills"]))
    budget = RequestBudget(
        agent.budget(), agent.counter, agent.store.calibration(agent.provider.name, agent.provider.model),
        window=agent.profile.context_window if agent.profile else 0,
        tools_tokens=agent._tools_tokens(tools), tools=frozenset(tools.tools),
    )
    shaping = History(history, agent.pinned_id, agent.config.context.max_chat_history,
                      agent.config.context.time_landmark_gap_minutes, agent.clock().tzinfo)
    messages, report = assemble(blocks, shaping, budget)
    if agent.profile is not None:
        report = dataclasses.replace(report, window_source=agent.profile.window_source)
    return messages, report, report.raw_tokens


def layers(agent: Agent, conversation: Conversation, system: str | None, tools: ToolSet) -> list[Block]:
    """The stable layers, in order: base, environment, project context, mode, global and topic prompts."""
    assert agent.workspace is not None, "call start() first"
    topic = system if system is not None else conversation.metadata.get("system", "")
    base = base_prompt(agent.workspace.prompts)
    mode = mode_prompt(agent.workspace.prompts, agent.mode, tools=bool(tools.tools))
    chosen = agent.global_prompt(conversation)
    texts = [
        ("base prompt", base.text, base.detail),
        ("environment", render_environment(agent.workspace.environment), ""),
        ("project context", agent.workspace.project.text, ""),
        ("mode prompt", mode.text, mode.detail),
        ("global prompt", chosen.text, chosen.detail),
        ("topic prompt", f"<topic_prompt>\n{topic.strip()}\n</topic_prompt>" if topic and topic.strip() else "", ""),
    ]
    return [Block(name, text, Placement.SYSTEM, SYSTEM_ORDER[name], detail=detail) for name, text, detail in texts]


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


def turn_worldbook_layers(agent: Agent) -> WorldbookLayers:
    """The turn's triggered worldbook entries as layers, within `[worldbook] max_share` of the budget."""
    available = agent.budget().available if agent.profile is not None else 0
    calibration = agent.store.calibration(agent.provider.name, agent.provider.model)
    return worldbook_layers(agent.turn_worldbook, agent.worldbook.allowance(available), agent.counter, calibration)


def worldbook_blocks(book: WorldbookLayers) -> list[Block]:
    """The worldbook's layers as blocks, by position; its notes (isolation, entries left out) as report rows."""
    placed = [
        *(Block(x.name, x.text, Placement.SYSTEM, SYSTEM_ORDER["worldbook before"], detail=x.detail) for x in book.before),
        *(Block(x.name, x.text, Placement.SYSTEM, SYSTEM_ORDER["worldbook after"], detail=x.detail) for x in book.after),
        *(Block(x.name, x.text, Placement.BEFORE_TURN, TURN_ORDER["worldbook an_top"], stable=False, detail=x.detail)
          for x in book.an_top),
        *(Block(x.name, x.text, Placement.BEFORE_TURN, TURN_ORDER["worldbook outlet"], stable=False, detail=x.detail)
          for x in book.outlet),
        *(Block(x.name, x.text, Placement.BEFORE_TURN, TURN_ORDER["worldbook an_bottom"], stable=False, detail=x.detail)
          for x in book.an_bottom),
        *(Block(x.name, x.text, Placement.DEPTH, depth=depth, stable=False, detail=x.detail) for depth, x in book.depths),
    ]
    return placed + [Block(note.name, placement=Placement.REPORT, detail=note.detail) for note in book.notes]


def context_layers(agent: Agent, conversation: Conversation, *, isolated: bool = False) -> list[Block]:
    """The per-turn blocks in ETOS order: time, memory, recent conversations, user profile.
    `isolated` (worldbook isolation) drops all but the time."""
    texts = [
        ("time", time_text(agent), ""),
        ("memory", "" if isolated else agent.turn_memory.memory_text, ""),
        *((x.name, x.text, x.detail) for x in agent.session_memory.layers(conversation, agent.budget().available, isolated=isolated)),
    ]
    return [Block(name, text, Placement.BEFORE_TURN, TURN_ORDER[name], stable=False, detail=detail) for name, text, detail in texts]


def time_text(agent: Agent) -> str:
    """The <time> block: the running turn's, else rendered now; "" when `[context] inject_time` is off."""
    if not agent.config.context.inject_time:
        return ""
    return agent._turn_time or render_time(agent.clock())
