"""Which tools the model is offered: the mode's tools, within their share of the token budget.

Invariant: the offer is every tool of the mode (skill and MCP tools included), in full
or compact form, unless the schemas cannot fit the budget; then the MCP tools least
relevant to the message are left out first, as few as need be, and only when the
built-in tools alone do not fit is nothing offered. Why tools are missing is said
once (the no-room warning once a session), never on every turn.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..context.budget import more_room
from ..context.tool_fit import ToolForm, fewest_left_out, mcp_trimmed_warning, no_tools_warning, tool_form
from .said_once import first_time
from ..tokens import TokenCounter, count_tools
from ..tools.base import ToolSet
from ..tools.registry import tools_for_mode
from .bounds import settle_bounds
from .events import AgentWarning

if TYPE_CHECKING:
    from ..store import Conversation
    from .agent import Agent

TOOLS_TOKEN_CACHE_SIZE = 512  # tool sets whose schema tokens are kept (per tokenizer, form and names)
TOOLS_DROPPED_SAID = "tools_dropped_warning"  # conversation metadata: the no-room-for-tools warning given


def offered_tools(agent: Agent) -> ToolSet:
    """The tools the model is offered this turn (none when the model cannot call tools);
    compress_context only when there is a budget to compress against."""
    tools, budgeted = mode_tools(agent)
    if not budgeted or not tools.tools:
        return tools
    return fit_tools(agent, tools)


def mode_tools(agent: Agent) -> tuple[ToolSet, bool]:
    """Every tool of the mode (the turn's skill and MCP tools included) before the budget is applied,
    and whether there is a budget to apply."""
    if agent.tools_unavailable:
        return ToolSet(), False
    budgeted = agent.profile is not None and agent.budget().total > 0
    memory = agent.config.memory.long_term.enabled and not agent.turn_worldbook.drops("memory tools")
    tools = tools_for_mode(agent.mode, compression=budgeted, memory=memory)
    extra = {} if agent.turn_worldbook.drops("MCP tools") else agent.extras.tools(agent.mode)
    if extra:
        tools = ToolSet({**tools.tools, **extra})
    return tools, budgeted


async def prepare_extras(agent: Agent, prompt: str) -> list[str]:
    """Skills and MCP tools for `prompt`; the MCP tools are ranked against it only when their schemas
    cannot all fit the budget (ranking embeds the message: not worth it when nothing is left out)."""
    notes = await agent.extras.prepare(prompt, tools_wanted=not agent.tools_unavailable)
    tools, budgeted = mode_tools(agent)
    if budgeted and agent.extras.mcp_tools:
        compact = dataclasses.replace(tools, compact=True)
        capacity = agent.budget().available
        def form() -> str:
            return tool_form(capacity, agent._tools_tokens(tools), agent._tools_tokens(compact))

        settle_bounds(agent.counter, form)
        if form() == "none":
            notes += await agent.extras.rank_mcp(prompt)
    return notes


def fit_tools(agent: Agent, tools: ToolSet) -> ToolSet:
    """The tools in full or compact form, within their share of the budget. When even compact schemas
    exceed it, the MCP tools least relevant to the message are left out first (as few as need be);
    only when the built-in tools alone do not fit are no tools offered."""
    capacity = agent.budget().available
    droppable = agent.extras.mcp_least_wanted(set(tools.tools))

    def without(count: int) -> tuple[ToolSet, ToolSet, ToolForm]:
        gone = set(droppable[:count])
        kept = dataclasses.replace(tools, tools={n: t for n, t in tools.tools.items() if n not in gone})
        compact = dataclasses.replace(kept, compact=True)
        return kept, compact, tool_form(capacity, agent._tools_tokens(kept), agent._tools_tokens(compact))

    left_out = fewest_left_out(len(droppable), lambda count: without(count)[2] != "none")
    if left_out is None:  # the built-in tools alone do not fit
        agent.extras.mcp_left_out = len(droppable)
        assert agent.profile is not None
        room = more_room(agent.budget().total, agent.profile.context_window, agent.profile.window_source,
                         agent.provider.settings.kind)
        agent._tools_dropped = no_tools_warning(capacity, agent._tools_tokens(without(len(droppable))[1]), room)
        return ToolSet()
    agent.extras.mcp_left_out = left_out
    if left_out:
        agent._mcp_trimmed = mcp_trimmed_warning(left_out, len(droppable), capacity)
    kept, compact, form = without(left_out)
    return compact if form == "compact" else kept


def tools_tokens(cache: dict[tuple[str, ...], int], counter: TokenCounter, tools: ToolSet) -> int:
    """Tokens of the tool schemas, counted once per tool set and tokenizer (kept in `cache`)."""
    key = (counter.name, str(tools.compact), *tools.names())
    if key not in cache:
        if len(cache) > TOOLS_TOKEN_CACHE_SIZE:  # subsets tried for small budgets add up
            cache.clear()
        cache[key] = count_tools(counter, list(tools.specs())) if tools.tools else 0
    return cache[key]


def tool_warnings(agent: Agent, conversation: Conversation) -> list[AgentWarning]:
    """Why no tools are offered, once: the model has none, or the budget leaves no room (once a session)."""
    if agent.tools_unavailable and not agent._said_no_tools:
        agent._said_no_tools = True
        if first_time(f"running without tools: {agent.tools_unavailable}"):  # `zeph context` always says it
            return [AgentWarning(f"running without tools: {agent.tools_unavailable}")]
    if not agent.offered_tools().tools and agent._tools_dropped and not agent._said_no_tools:
        agent._said_no_tools = True
        if conversation.metadata.get(TOOLS_DROPPED_SAID) != agent._tools_dropped:  # once per session, not per `ask -c`
            agent.store.update_conversation(
                conversation.id, metadata={**conversation.metadata, TOOLS_DROPPED_SAID: agent._tools_dropped}
            )
            return [AgentWarning(agent._tools_dropped)]
    if agent._mcp_trimmed and not agent._said_mcp_trimmed and agent.extras.mcp_left_out:
        agent._said_mcp_trimmed = True
        return [AgentWarning(agent._mcp_trimmed)]
    return []
