"""Which tools the model is offered: the mode's tools, within their share of the token budget.

Invariant: the offer is every tool of the mode (skill and MCP tools included), in full
or compact form, unless the schemas cannot fit the budget; then the MCP tools least
relevant to the message are left out first, as few as need be, and only when the
built-in tools alone do not fit is nothing offered. Why tools are missing is said
once (the no-room warning once a session), never on every turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    from ..context.budget import Budget
    from ..models import ModelProfile
    from ..store import Conversation, ConversationStore
    from ..tools.specs import ToolDeclaration
    from ..features.turn_extras import TurnExtras

TOOLS_TOKEN_CACHE_SIZE = 512  # tool sets whose schema tokens are kept (per tokenizer, form and names)
TOOLS_DROPPED_SAID = "tools_dropped_warning"  # conversation metadata: the no-room-for-tools warning given


@dataclass
class OfferDeps:
    """What the offer is made from: the turn's extra tools, the budget, the mode and what the worldbook drops."""

    extras: TurnExtras  # the turn's MCP tools; `mcp_left_out` is the offer's to set
    store: ConversationStore  # where "no room for tools" is remembered as said, per session
    provider_kind: str  # where the window is set, for the no-room advice
    feature_tools: Callable[[], Sequence[ToolDeclaration]]  # the tools features offer now (memory, load_skill)
    counter: Callable[[], TokenCounter]
    profile: Callable[[], ModelProfile | None]
    budget: Callable[[], Budget]
    mode: Callable[[], str]
    allows_tools: Callable[[str], bool]  # the session's policy: whether a tool group (`Tool.group`) is offered
    wanted: Callable[[str], bool] = lambda name: True  # whether the tool of this name may be offered (by name)


class ToolOffer:
    """The tools the model is offered, and what was said about those left out (see the module's invariant)."""

    def __init__(self, deps: OfferDeps, unavailable: str | None = None) -> None:
        self.deps = deps
        self.unavailable = unavailable  # why the model gets no tools at all (it cannot call them)
        self.said_unavailable = False
        self.mcp_trimmed: str | None = None  # why some MCP tools were left out (said once)
        self.said_mcp_trimmed = False
        self.dropped: str | None = None  # why the budget leaves no room for tool schemas
        self._token_cache: dict[tuple[str, ...], int] = {}

    def offered(self) -> ToolSet:
        """The tools the model is offered this turn (none when the model cannot call tools);
        compress_context only when there is a budget to compress against."""
        tools, budgeted = self.mode_tools()
        if not budgeted or not tools.tools:
            return tools
        return self.fit(tools)

    def mode_tools(self) -> tuple[ToolSet, bool]:
        """Every tool of the mode (the turn's skill and MCP tools included) before the budget is applied,
        and whether there is a budget to apply."""
        if self.unavailable:
            return ToolSet(), False
        deps = self.deps
        budgeted = deps.profile() is not None and deps.budget().total > 0
        tools = tools_for_mode(deps.mode(), deps.feature_tools(), deps.extras.current_mcp_tools(),
                               compression=budgeted, allows=deps.allows_tools)
        wanted = {name: tool for name, tool in tools.tools.items() if deps.wanted(name)}
        if len(wanted) != len(tools.tools):
            tools = dataclasses.replace(tools, tools=wanted)
        return tools, budgeted

    async def rank_extras(self, prompt: str) -> list[str]:
        """The turn's MCP tools ranked against `prompt` when their schemas cannot all fit the budget (ranking
        embeds the message: not worth it when nothing is left out); notes."""
        extras = self.deps.extras
        notes: list[str] = []
        tools, budgeted = self.mode_tools()
        if budgeted and extras.mcp_tools:
            compact = dataclasses.replace(tools, compact=True)
            capacity = self.deps.budget().available

            def form() -> str:
                return tool_form(capacity, self.tokens(tools), self.tokens(compact))

            settle_bounds(self.deps.counter(), form)
            if form() == "none":
                notes += await extras.rank_mcp(prompt)
        return notes

    def fit(self, tools: ToolSet) -> ToolSet:
        """The tools in full or compact form, within their share of the budget. When even compact schemas
        exceed it, the MCP tools least relevant to the message are left out first (as few as need be);
        only when the built-in tools alone do not fit are no tools offered."""
        deps = self.deps
        capacity = deps.budget().available
        droppable = deps.extras.mcp_least_wanted(set(tools.tools))

        def without(count: int) -> tuple[ToolSet, ToolSet, ToolForm]:
            gone = set(droppable[:count])
            kept = dataclasses.replace(tools, tools={n: t for n, t in tools.tools.items() if n not in gone})
            compact = dataclasses.replace(kept, compact=True)
            return kept, compact, tool_form(capacity, self.tokens(kept), self.tokens(compact))

        left_out = fewest_left_out(len(droppable), lambda count: without(count)[2] != "none")
        if left_out is None:  # the built-in tools alone do not fit
            deps.extras.mcp_left_out = len(droppable)
            profile = deps.profile()
            assert profile is not None
            room = more_room(deps.budget().total, profile.context_window, profile.window_source, deps.provider_kind)
            self.dropped = no_tools_warning(capacity, self.tokens(without(len(droppable))[1]), room)
            return ToolSet()
        deps.extras.mcp_left_out = left_out
        if left_out:
            self.mcp_trimmed = mcp_trimmed_warning(left_out, len(droppable), capacity)
        kept, compact, form = without(left_out)
        return compact if form == "compact" else kept

    def settled(self, decide: Callable[[ToolSet], object]) -> ToolSet:
        """The offer, with the counter made exact first if token bounds could change `decide(offer)` (which
        builds the request and says `NEEDS_EXACT` where exact counts are wanted anyway). What the bounds'
        tries set about left-out tools is put back: only the settled offer may say it."""
        said = (self.dropped, self.mcp_trimmed, self.deps.extras.mcp_left_out)
        settle_bounds(self.deps.counter(), lambda: decide(self.offered()))
        self.dropped, self.mcp_trimmed, self.deps.extras.mcp_left_out = said
        return self.offered()

    def tokens(self, tools: ToolSet) -> int:
        """Tokens of the tool schemas, counted once per tool set and tokenizer."""
        return tools_tokens(self._token_cache, self.deps.counter(), tools)

    def go_without(self, reason: str) -> None:
        """No tools from now on (the model cannot take them, or the server leaves them out); the caller says so."""
        self.unavailable = reason
        self.said_unavailable = True

    def warnings(self, conversation: Conversation) -> list[AgentWarning]:
        """Why no tools are offered, once: the model has none, or the budget leaves no room (once a session)."""
        if self.unavailable and not self.said_unavailable:
            self.said_unavailable = True
            if first_time(f"running without tools: {self.unavailable}"):  # `zeph context` always says it
                return [AgentWarning(f"running without tools: {self.unavailable}")]
        if not self.offered().tools and self.dropped and not self.said_unavailable:
            self.said_unavailable = True
            if conversation.metadata.get(TOOLS_DROPPED_SAID) != self.dropped:  # once per session, not per `ask -c`
                self.deps.store.set_metadata(conversation.id, TOOLS_DROPPED_SAID, self.dropped)
                return [AgentWarning(self.dropped)]
        if self.mcp_trimmed and not self.said_mcp_trimmed and self.deps.extras.mcp_left_out:
            self.said_mcp_trimmed = True
            return [AgentWarning(self.mcp_trimmed)]
        return []


def tools_tokens(cache: dict[tuple[str, ...], int], counter: TokenCounter, tools: ToolSet) -> int:
    """Tokens of the tool schemas, counted once per tool set and tokenizer (kept in `cache`)."""
    key = (counter.name, str(tools.compact), *tools.names())
    if key not in cache:
        if len(cache) > TOOLS_TOKEN_CACHE_SIZE:  # subsets tried for small budgets add up
            cache.clear()
        cache[key] = count_tools(counter, list(tools.specs())) if tools.tools else 0
    return cache[key]
