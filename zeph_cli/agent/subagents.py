"""Sub-agents: the `task` tool's jobs, each run by a child agent in a session of its own.

Invariant: a sub-agent starts in a fresh context — a new session whose metadata (`SUBAGENT_KEY`) links
the parent's session and task call; the project context, environment and tools; nothing of the
parent's history, memory, recall, session summaries, worldbook, skills or MCP servers — with
`budget_share` of the parent's budget, the parent's provider (unless `[agent.subagents]` names
another), permission policy, sandbox and approver (its writes and commands ask the same user, one
question at a time), a mode no wider than the parent's, and no tool outside the parent's own subset when it has one
(a subset left out is the parent's). It runs at most `max_turns` tool rounds,
then is asked once to answer; its final answer, cut to `result_tokens`, is the task call's result,
which says when it was cut or stopped early. At most `concurrency` run at once (one on the embedded
local model). Cancelled, it keeps what it stored (its own turn answers every call it made) and the
cancellation goes on to the parent's round. What it does reaches the front ends as `SubagentStarted`,
`SubagentProgress` and `SubagentFinished`.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import Config
from ..config.modes import MODES
from ..context.global_prompt import PROFILE_KEY
from ..errors import ZephError
from ..messages import Usage
from ..store.conversations import SUBAGENT_KEY
from ..tools.base import SubagentRequest, ToolResult
from ..tools.failures import ToolFailure
from ..tools.permissions import ApprovalDecision, ApprovalRequest
from .events import (
    SubagentFinished,
    SubagentProgress,
    SubagentStarted,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from collections.abc import AsyncIterator

    from ..providers.base import Provider
    from ..store import Conversation, ConversationStore
    from ..tokens import TokenCounter
    from ..tools.approval import Approver
    from .turn import TurnDeps

SETTINGS = "agent.subagents"
ASKER_CHARS = 80  # of a sub-agent's description, as an approval question names it
FINAL_PROMPT = (
    "You have used all {turns} tool rounds you may. Answer now, without tools, with what you found; "
    "say what is left undone."
)


def withheld_reason(config: Config, depth: int) -> str | None:
    """Why an agent at `depth` (0 = the user's session) may not start sub-agents, or None when it may."""
    max_depth = config.agent.subagents.max_depth
    if depth < max_depth:
        return None
    if max_depth == 0:
        return f"sub-agents are off ({SETTINGS} max_depth = 0)"
    return f"this sub-agent is at depth {depth} and {SETTINGS} max_depth = {max_depth} lets no deeper one start"


def child_mode(parent_mode: str, asked: str | None) -> str:
    """The sub-agent's mode: the one asked for, never wider than the parent's (a read-only parent starts
    read-only sub-agents); unasked, the parent's own (`ask` for a read-only one)."""
    read_only = MODES[parent_mode].read_only
    if asked is None:
        return "ask" if read_only else "agent"
    if asked not in ("ask", "agent"):
        raise ToolFailure(f"task: mode must be 'ask' or 'agent', got {asked!r}")
    if asked == "agent" and read_only:
        raise ToolFailure(
            f"task: mode 'agent' is not allowed: this session is in {parent_mode} mode (read-only), "
            "so its sub-agents are too; use mode 'ask'"
        )
    return asked


def child_config(config: Config, mode: str, parent_budget: int, call_id: str) -> Config:
    """The parent's configuration as a sub-agent runs with it (see the module's invariant)."""
    settings = config.agent.subagents
    child = copy.deepcopy(config)
    child.agent.mode = mode
    child.agent.max_tool_iterations = settings.max_turns
    child.memory.context_budget_tokens = max(1, int(parent_budget * settings.budget_share)) if parent_budget else 0
    child.memory.semantic.enabled = False  # recall would bring the parent's session back in
    child.memory.long_term.enabled = False
    child.memory.cross_session.enabled = False
    child.memory.profile.enabled = False
    child.memory.compression_guidelines.enabled = False
    child.worldbook.enabled = False
    if config.debug.dump_dir:
        child.debug.dump_dir = str(Path(config.debug.dump_dir).expanduser() / f"task-{call_id or 'call'}")
    return child


def asker_label(description: str, chars: int = ASKER_CHARS) -> str:
    """A sub-agent's description as an approval question names it: one line, at most `chars` characters."""
    text = " ".join(description.split()) or "task"
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def failure(exc: Exception) -> str:
    """What a sub-agent's error says to the model: a ZephError's own message, any other's type too."""
    return str(exc) if isinstance(exc, ZephError) else f"{type(exc).__name__}: {exc}"


def capped(text: str, tokens: int, counter: TokenCounter) -> tuple[str, bool]:
    """`text` cut to at most `tokens` tokens (at a line or word end when one is near), and whether it was cut."""
    total = counter.count(text)
    if total <= tokens:
        return text, False
    cut = int(len(text) * tokens / total)
    while cut > 0 and counter.count(text[:cut]) > tokens:
        cut = int(cut * 0.9)
    head = text[:cut]
    for stop in ("\n", " "):
        at = head.rfind(stop)
        if at > cut * 0.8:
            head = head[:at]
            break
    return head.rstrip(), True


@dataclass
class Run:
    """What one sub-agent did: its answer, how it ended, the tokens it spent, its tool rounds."""

    text: str = ""
    outcome: str = "done"  # done | max_turns | failed | cancelled
    usage: Usage = field(default_factory=Usage)
    rounds: int = 0
    error: str = ""


class Child(Protocol):
    """What running a sub-agent uses of its child agent."""

    config: Config
    store: ConversationStore
    provider: Provider
    cwd: Path
    depth: int
    deps: TurnDeps
    offer: Any  # its ToolOffer
    only_tools: frozenset[str] | None

    @property
    def model_label(self) -> str: ...
    async def start(self) -> list[str]: ...
    async def aclose(self) -> None: ...
    def withheld_tools(self) -> dict[str, str]: ...
    def run_turn(self, conversation: Conversation, prompt: str) -> AsyncIterator[Any]: ...


@dataclass
class SubagentDeps:
    """What the sub-agents use of the agent that starts them (its parent); `spawn` builds a child agent
    (not started) from its configuration, mode and approver, with the parent's store, working directory,
    permission policy and sandbox, one level deeper."""

    config: Config
    depth: int
    mode: Callable[[], str]
    budget: Callable[[], int]  # the parent's whole budget (0: none yet)
    provider: Callable[[], Provider]  # the provider sub-agents use
    approver: Approver
    counter: Callable[[], TokenCounter]  # exact
    spawn: Callable[[Config, str, Approver], Child]
    only_tools: Callable[[], frozenset[str] | None] = lambda: None  # the parent's own subset (None: every tool)


class Subagents:
    """The sub-agents one agent starts (see the module's invariant)."""

    def __init__(self, deps: SubagentDeps) -> None:
        self.deps = deps
        self._slots: asyncio.Semaphore | None = None
        self._asking = asyncio.Lock()  # one approval question at a time, whichever sub-agent asks

    def provider(self) -> Provider:
        """The provider sub-agents use: the parent's, unless `[agent.subagents]` names another."""
        return self.deps.provider()

    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:
            local = self.provider().settings.kind == "local"  # the embedded model serves one request at a time
            self._slots = asyncio.Semaphore(1 if local else self.deps.config.agent.subagents.concurrency)
        return self._slots

    async def approve(self, request: ApprovalRequest, description: str) -> ApprovalDecision:
        """The parent's approver, asked one question at a time, told which sub-agent asks (a sub-agent's own
        sub-agent as `outer › inner`)."""
        said = asker_label(description)
        asked = dataclasses.replace(request, asker=f"{said} › {request.asker}" if request.asker else said)
        async with self._asking:
            return await self.deps.approver(asked)

    async def run(
        self, conversation: Conversation, request: SubagentRequest, progress: Callable[[object], None]
    ) -> ToolResult:
        """Run the sub-agent `request` asks for, from the parent's session `conversation`; its result."""
        deps = self.deps
        reason = withheld_reason(deps.config, deps.depth)
        if reason:
            raise ToolFailure(f"task is not available here: {reason}")
        mode = child_mode(deps.mode(), request.mode)
        allowed = deps.only_tools()
        if allowed is not None and request.tools is not None:
            outside = [name for name in request.tools if name not in allowed]
            if outside:
                raise ToolFailure(
                    f"task: {', '.join(repr(name) for name in outside)} not among this agent's own tools, and a "
                    f"sub-agent gets no tool its parent lacks. Available: {', '.join(sorted(allowed))}"
                )
        child = self.build(mode, request.call_id, request.description)
        try:
            async with self.slots():
                try:
                    await child.start()
                except Exception as exc:  # noqa: BLE001 — its provider unreachable, say: the model reads why
                    raise ToolFailure(f"task: the sub-agent could not start: {failure(exc)}") from None
                if request.tools is not None:
                    self.restrict(child, mode, request.tools, allowed)
                elif allowed is not None:  # left out: the parent's own subset, as far as the child's mode has it
                    child.only_tools = frozenset(child.offer.mode_tools()[0].names()) & allowed
                session = self.new_session(child, conversation, request, mode)
                progress(SubagentStarted(request.call_id, request.description, session.id, mode))
                run = Run()
                try:
                    await self.drive(child, session, request, run, progress)
                except asyncio.CancelledError:
                    run.outcome = "cancelled"
                    raise
                except Exception as exc:  # noqa: BLE001 — its session busy, a reply not stored, a bug: the result says
                    run.outcome, run.error = "failed", failure(exc)
                finally:
                    progress(SubagentFinished(request.call_id, session.id, run.outcome, run.usage, run.rounds))
                return self.result(run, session)
        finally:
            await child.aclose()

    def build(self, mode: str, call_id: str, description: str = "") -> Child:
        """The child agent (not started), asking the parent's approver as this sub-agent."""
        deps = self.deps
        config = child_config(deps.config, mode, deps.budget(), call_id)
        return deps.spawn(config, mode, lambda request: self.approve(request, description or "task"))

    def restrict(
        self, child: Child, mode: str, names: tuple[str, ...], allowed: frozenset[str] | None = None
    ) -> None:
        """Offer the child only the tools `names` (all among `allowed`, the parent's own subset, when it has
        one); an unknown or unavailable one is the model's error."""
        available = [name for name in child.offer.mode_tools()[0].names() if allowed is None or name in allowed]
        missing = [name for name in names if name not in available]
        if missing:
            withheld = child.withheld_tools()
            why = "; ".join(f"{name} is not available: {withheld[name]}" for name in missing if name in withheld)
            raise ToolFailure(
                f"task: no tool {', '.join(repr(m) for m in missing)} for a sub-agent in {mode} mode"
                + (f" ({why})" if why else "") + f". Available: {', '.join(available)}"
            )
        child.only_tools = frozenset(names)

    def new_session(self, child: Child, parent: Conversation, request: SubagentRequest, mode: str) -> Conversation:
        """`session`, or the ToolFailure that says why the store could not make it."""
        try:
            return self.session(child, parent, request, mode)
        except Exception as exc:  # noqa: BLE001 — the store failing, say: the model reads why
            raise ToolFailure(f"task: the sub-agent's session could not be made: {failure(exc)}") from None

    def session(self, child: Child, parent: Conversation, request: SubagentRequest, mode: str) -> Conversation:
        """The sub-agent's own session, linked to the parent's session and task call."""
        link = {"parent": parent.id, "call_id": request.call_id, "description": request.description, "mode": mode,
                "depth": child.depth}
        return child.store.create_conversation(
            provider=child.provider.name, model=child.model_label, cwd=str(child.cwd), title=request.description,
            metadata={SUBAGENT_KEY: link, PROFILE_KEY: parent.metadata.get(PROFILE_KEY, child.config.prompt.profile)},
        )

    async def drive(
        self, child: Child, session: Conversation, request: SubagentRequest, run: Run,
        progress: Callable[[object], None],
    ) -> None:
        """The child's turn on the job, then, when it used all its tool rounds, one turn to answer."""
        await self.turn(child, session, request.prompt, request.call_id, run, progress)
        if run.outcome != "max_turns":
            return
        turns = child.config.agent.max_tool_iterations
        child.deps.max_tool_rounds = 0  # a tool call now is answered "not completed" and ends the turn
        await self.turn(child, session, FINAL_PROMPT.format(turns=turns), request.call_id, run, progress)
        if run.outcome == "done":
            run.outcome = "max_turns"

    async def turn(
        self, child: Child, session: Conversation, prompt: str, call_id: str, run: Run,
        progress: Callable[[object], None],
    ) -> None:
        new_reply = False
        async for event in child.run_turn(session, prompt):
            progress(SubagentProgress(call_id, event))
            if isinstance(event, UsageReported):
                run.usage = run.usage + event.usage
                new_reply = True
            elif isinstance(event, ToolCallStarted) and new_reply:
                run.rounds += 1
                new_reply = False
            elif isinstance(event, TurnFinished):
                run.text = event.text
                run.outcome = "max_turns" if event.stop_reason == "max_tool_iterations" else "done"
            elif isinstance(event, TurnFailed):
                run.outcome, run.error = "failed", str(event.error)

    def result(self, run: Run, session: Conversation) -> ToolResult:
        """The task call's result: the answer, cut to `result_tokens`, with what the parent should know."""
        settings = self.deps.config.agent.subagents
        where = f"session {session.id}"
        spent = run.usage.prompt_tokens + run.usage.output_tokens
        summary = f"{where} · {run.rounds} tool round{'s' if run.rounds != 1 else ''} · {spent:,} tokens"
        if run.outcome == "failed":
            return ToolResult(f"The sub-agent failed: {run.error} (its transcript: {where}).", is_error=True,
                              summary=f"failed: {run.error}"[:200])
        text, cut = capped(run.text.strip(), settings.result_tokens, self.deps.counter())
        notes = []
        if run.outcome == "max_turns":
            notes.append(f"[the sub-agent used all {settings.max_turns} tool rounds ({SETTINGS} max_turns): "
                         "its answer may be incomplete]")
        if cut:
            notes.append(f"[answer cut to {settings.result_tokens:,} tokens ({SETTINGS} result_tokens); "
                         f"the whole answer is in {where}]")
        if not text:
            text = f"(the sub-agent gave no answer; its transcript is {where})"
        return ToolResult("\n".join([text, *notes]), summary=summary)
