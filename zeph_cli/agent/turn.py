"""What a turn's steps share: the turn's state, and the dependencies they use instead of the Agent.

Invariant: a step (prepare, send, store the reply, run the tool calls, handle a provider
error) reads and writes only the `TurnState` it is given and reaches the rest of the
session only through `TurnDeps` — the store, the provider, the counter, the config
slices it needs, the context (`context_for`), the tool offer, the compactor — so each
step runs against plain fakes. The Agent builds its `TurnDeps` once; values that change
during a session (the counter, the model profile) are read through callables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ZephError
from ..messages import Message, ToolCallPart, Usage

if TYPE_CHECKING:
    from ..config import LlmConfig, MemoryConfig
    from ..context.assembler import HistoryItem
    from ..context.report import ContextReport
    from ..models import ModelProfile
    from ..providers.base import Provider
    from ..store import Conversation, ConversationStore
    from ..tokens import TokenCounter
    from ..tools.base import ToolSet
    from .compactor import Compactor
    from .debug_dump import DebugDump
    from .events import AgentWarning
    from .tool_calls import ToolCallRunner
    from .tool_offer import ToolOffer

    ContextFor = Callable[[Conversation, str | None, ToolSet | None], tuple[list[Message], ContextReport, int]]


@dataclass
class TurnState:
    """What one turn carries from step to step."""

    conversation: Conversation
    system: str | None
    stream: bool
    used_ids: set[str]  # tool call ids already in the conversation
    prompt_id: int = 0  # the stored user message this turn answers
    notes: list[str] = field(default_factory=list)  # what preparing the turn has to say (recall, skills, MCP)
    prompt_problem: str | None = None  # what is wrong with the session's global prompt profile, if anything
    isolated: bool = False  # worldbook isolation: the session stays out of summaries and recall
    answered: bool = False  # something of a reply (text, tool calls) was stored this turn
    withdrawn: bool = False  # nothing was: the prompt is hidden from later turns (`withdraw_unanswered`)
    total: Usage = field(default_factory=Usage)
    rounds: int = 0  # tool rounds run
    context_retries: int = 0
    changes: list[str] = field(default_factory=list)  # compaction since the last request, for its report
    messages: list[Message] = field(default_factory=list)
    report: ContextReport | None = None
    raw_estimate: int = 0
    dump_id: int | None = None
    max_tokens: int = 0  # the reply limit the latest request carried
    parsed: list[tuple[ToolCallPart, str | None]] = field(default_factory=list)
    retry: bool = False  # send again (after compaction, a learned window or dropping tools)
    ended: bool = False


@dataclass
class TurnDeps:
    """What the turn's steps use. Built once per Agent; the callables read what may change in a session."""

    store: ConversationStore
    provider: Provider
    model_label: str  # the model as the user knows it (stored with each reply)
    llm: LlmConfig  # max_tokens, temperature
    memory: MemoryConfig  # compaction thresholds
    max_tool_rounds: int  # `agent.max_tool_iterations`
    counter: Callable[[], TokenCounter]
    profile: Callable[[], ModelProfile | None]
    set_profile: Callable[[ModelProfile], None]  # a context-length error taught the real window
    context_for: ContextFor  # the messages the next request sends, their report, the raw estimate
    history: Callable[[Conversation], list[HistoryItem]]  # agent-visible history, counted
    tools: ToolOffer
    compactor: Callable[[], Compactor]  # built (and imported) when first called
    compactor_built: Callable[[], bool]
    runner: Callable[[Conversation, ToolSet], ToolCallRunner]  # one round's tool-call runner
    sandbox_notice: Callable[[], str | None]  # the sandbox's one-time notice, once a command ran
    dump: DebugDump | None = None
    dump_warning: Callable[[], AgentWarning | None] = lambda: None
    learn_from_reply: Callable[[Conversation, str], object] | None = None  # compression guidelines, when on
    after_turn: Callable[[Conversation, bool], None] = lambda conversation, isolated: None  # session summaries


def call_ids(store: ConversationStore, conversation_id: int) -> set[str]:
    """Call ids a request may carry: those of agent-visible messages (compacted ones are never sent)."""
    return {
        call.id
        for row in store.history(conversation_id, agent_visible=True)
        for call in row.message.tool_calls
    }


def withdraw_unanswered(store: ConversationStore, turn: TurnState, reason: str) -> bool:
    """A turn ending on an error before anything of a reply was stored: its prompt is withdrawn from what later
    turns send (sending it again, as the user will, would put it in twice); whether it was."""
    if turn.answered or not turn.prompt_id:
        return False
    if turn.withdrawn:
        return True
    try:
        store.withdraw_prompt(turn.prompt_id, reason)
    except ZephError:  # the store failing too: the prompt stays as it was
        return False
    turn.withdrawn = True
    return True
