"""The turn loop: persist the prompt, assemble context, stream, run tools, repeat.

Invariant: the user's message is stored before the provider is called; every
reply is stored when it completes (a reply cut short keeps its partial text,
marked `partial`); every tool call stored has exactly one stored result — real,
refused, or a synthetic "not completed" one after a cancellation — so the next
turn is valid on every provider. Callers (CLI, TUI) only consume the
`AgentEvent`s `run_turn` yields and answer approval requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..context.assembler import HistoryItem, PromptLayer, assemble
from ..context.budget import Budget, compute_budget
from ..context.compaction.provisional import due as provisional_summary_due
from ..context.compaction.tiers import may_compact
from ..context.environment import EnvironmentFacts, render_environment
from ..context.global_prompt import PROFILE_KEY, GlobalPrompt, global_prompt, session_profile
from ..context.invariant import budget_problem, tool_output_allowance
from ..context.project import ProjectContext, render_project_context
from ..context.prompt_modules import MODE_MODULES, PromptModule, base_prompt, mode_prompt
from ..context.report import ContextReport
from ..context.tool_fit import ToolForm, fewest_left_out, mcp_trimmed_warning, no_tools_warning, tool_form
from ..context.turn_blocks import render_enhancement, render_time
from ..errors import (
    ContextBudgetExceeded,
    ContextLengthExceeded,
    ProviderError,
    context_limit_from_message,
    is_context_length_message,
)
from .events import (
    AgentEvent,
    AgentWarning,
    CompactionFinished,
    ContextPrepared,
    ReplyDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    UsageReported,
)
from .guidelines_learner import GuidelinesLearner, LearnerDeps
from ..memory.long_term_access import LongTermMemory
from ..memory.service import MemoryService, TurnMemory
from ..messages import (
    Message,
    ReplyBuilder,
    TextDelta,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    normalize_stop_reason,
)
from ..models import ModelProfile, prefer_learned_window, reply_token_cap, with_window
from ..paths import config_dir, global_project_file
from ..prompt_files import load_prompt_modules
from ..providers.base import ChatRequest, Provider, ProviderSettings
from ..providers.pool import ProviderPool
from ..said_once import first_time
from ..session_memory import SessionMemory, SessionMemoryDeps
from ..side_jobs import SideJobs, record_response
from ..store import Conversation, ConversationStore, StoredMessage, ToolLog
from ..store.memories import MemoryStore
from ..store.windows import remember_window, remembered_window
from ..tokens import (
    LOWER,
    NEEDS_EXACT,
    UPPER,
    DeferredCounter,
    bounded,
    TiktokenCounter,
    TokenCounter,
    count_message,
    count_tools,
    counts_as,
    default_counter,
    exact_counter,
)
from ..tools.base import ToolContext, ToolSet
from ..tools.confinement import Confinement, workspace_root
from ..tools.approval import Approver, deny_all
from ..tools.registry import builtin_tool_names, tools_for_mode
from ..turn_extras import TurnExtras
from ..workspace import environment_facts, find_project_files
from ..worldbook_turn import Worldbook, WorldbookTurn, worldbook_layers

if TYPE_CHECKING:  # imported when first used: a plain reply needs neither tools nor compaction
    from .compactor import Compactor
    from .debug_dump import DebugDump
    from .tool_calls import ToolCallRunner
    from ..tools.permissions import PermissionPolicy
    from ..tools.sandbox import Sandbox

# What servers say when a model cannot take tools (Ollama, llama.cpp, vLLM...).
_NO_TOOL_SUPPORT = re.compile(
    r"does not support tools|tools? (?:are|is) not supported|not support(?:ed)? (?:tool|function)|"
    r"requires --jinja|tool choice requires|function calling is not",
    re.IGNORECASE,
)
_VALID_CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Spec ("Reactive Retry on Context Length Errors"): compact and retry, "max_attempts (default: 2)".
CONTEXT_LENGTH_RETRIES = 2
TOOLS_TOKEN_CACHE_SIZE = 512  # tool sets whose schema tokens are kept (per tokenizer, form and names)
REPLY_MARGIN_TOKENS, REPLY_MARGIN_SHARE = 32, 0.03  # kept free of prompt and reply, for server-side additions
TOOLS_DROPPED_SAID = "tools_dropped_warning"
ENHANCE_KEY = "enhance"  # conversation metadata: the session's enhancement prompt
MEMORY_CHARS_PER_TOKEN = 4  # for the <memory> block's cap: English prose runs about four characters a token  # conversation metadata: the no-room-for-tools warning given


def _as_stored(call: ToolCallPart) -> ToolCallPart:
    from .tool_calls import call_as_stored

    return call_as_stored(call)


def _interrupted(call: ToolCallPart, reason: str) -> ToolResultPart:
    from .tool_calls import interrupted_result

    return interrupted_result(call, reason)


def _debug_dump(folder: Path) -> "DebugDump":
    from .debug_dump import DebugDump

    return DebugDump(folder)


# ---- the agent ------------------------------------------------------------------


@dataclass
class Workspace:
    """Facts about where the agent runs, gathered once per process."""

    environment: EnvironmentFacts
    project: ProjectContext
    warnings: list[str] = field(default_factory=list)
    prompts: dict[str, PromptModule] = field(default_factory=lambda: load_prompt_modules(None, None)[0])


@dataclass
class _TurnState:
    """What one turn carries from step to step."""

    conversation: Conversation
    system: str | None
    stream: bool
    used_ids: set[str]  # tool call ids already in the conversation
    total: Usage = field(default_factory=Usage)
    rounds: int = 0  # tool rounds run
    context_retries: int = 0
    changes: list[str] = field(default_factory=list)  # compaction since the last request, for its report
    messages: list[Message] = field(default_factory=list)
    report: ContextReport | None = None
    raw_estimate: int = 0
    dump_id: int | None = None
    parsed: list[tuple[ToolCallPart, str | None]] = field(default_factory=list)
    retry: bool = False  # send again (after compaction, a learned window or dropping tools)
    ended: bool = False


class Agent:
    def __init__(
        self,
        *,
        config: Config,
        store: ConversationStore,
        provider: Provider,
        cwd: Path,
        approver: Approver | None = None,
        mode: str | None = None,
        helper_settings: Mapping[str, ProviderSettings | None] | None = None,
        memory: MemoryService | None = None,
        extras: TurnExtras | None = None,
        clock: Callable[[], datetime] | None = None,
        one_shot: bool = False,
    ) -> None:
        self.config = config
        # One turn in this process (`zeph ask`): exact token counts only where bounds cannot decide.
        self.one_shot = one_shot
        # The local time the <time> block and the landmarks' zone come from (tests give a fixed one).
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now().astimezone())
        self._turn_time: str | None = None  # the running turn's <time> block: one per turn, its tool rounds share it
        self.store = store
        self.provider = provider
        self.cwd = cwd
        self.mode = mode or config.agent.mode
        # With no one to ask, write and exec tools are refused (and the model is told why).
        self.approver = approver or deny_all("no one is present to approve it")
        self.tool_log = ToolLog(store.db)
        extra = [Path(p).expanduser() for p in config.tools.allowed_paths]
        self.confinement = Confinement(workspace_root(cwd), [p if p.is_absolute() else cwd / p for p in extra], cwd=cwd)
        self.profile: ModelProfile | None = None
        self.counter: TokenCounter = default_counter()
        self.workspace: Workspace | None = None
        self.tools_unavailable: str | None = None if provider.supports_tools else (
            f"{provider.name} ({self.model_label}) has no tool calling; "
            "file and shell tools need anthropic, openai, a compatible server or ollama"
        )
        self._said_no_tools = False
        self._mcp_trimmed: str | None = None  # why some MCP tools were left out (said once)
        self._said_mcp_trimmed = False
        self._tools_dropped: str | None = None  # why the budget leaves no room for tool schemas
        self._tools_token_cache: dict[tuple[str, ...], int] = {}
        # The running turn's user message: it and its tool chain are sent verbatim (never trimmed or compacted).
        self.pinned_id: int | None = None
        # Recall and long-term memories: looked up once per turn, sent with every request of it.
        self.memory = memory
        self.turn_memory = TurnMemory()
        # Skills matched to the message and MCP servers' tools: prepared once per turn.
        self.extras = extras or TurnExtras(prompt_mode=config.skills.prompt_mode)
        # Worldbook entries the recent messages trigger (once per turn), and the session's isolation mode.
        self.worldbook = Worldbook(store.db, config.worldbook, str(self.confinement.root))
        self.turn_worldbook = WorldbookTurn()
        self._turn_notes: list[str] = []
        dump_dir = config.debug.dump_dir
        self.dump = _debug_dump(Path(dump_dir).expanduser()) if dump_dir else None
        self._said_dump_problem = False
        # Summaries, probes and compress_context may use providers of their own.
        self.side_jobs = SideJobs(
            ProviderPool(provider, helper_settings), provider, lambda: self.profile, config.llm.max_tokens, self.dump
        )
        self.guidelines = GuidelinesLearner(
            LearnerDeps(store, config.memory.compression_guidelines, self.side_jobs.complete, self.exact_counter)
        )
        self.session_memory = SessionMemory(SessionMemoryDeps(
            store, config.memory, self.side_jobs.complete, lambda: self.counter, str(workspace_root(cwd)), self.clock
        ))

    @cached_property
    def compactor(self) -> "Compactor":
        """Pruning and summaries, built (and imported) when a request first needs them."""
        from .compactor import CompactionDeps, Compactor

        return Compactor(
            CompactionDeps(
                store=self.store,
                config=self.config,
                counter=self.exact_counter,
                summarize=self.side_jobs.complete,
                history=self.agent_history,
                pinned=lambda: self.pinned_id,
                report=lambda conversation: self.context_for(conversation)[1],
                guidelines=self.guidelines.active_text,
                helper_model=self.side_jobs.label,
                summarizer_window=self.side_jobs.window,
                dump_probe=self.dump_probe,
                dump_compaction=self.dump_compaction,
                ensure_started=self._ensure_started,
            )
        )

    @cached_property
    def policy(self) -> "PermissionPolicy":
        """Which tool calls run, are asked about or are denied (`[tools] allow/deny`), built when first needed."""
        from ..tools.permissions import PermissionPolicy

        return PermissionPolicy.from_config(self.config.tools.allow, self.config.tools.deny)

    @cached_property
    def sandbox(self) -> "Sandbox":
        """The OS sandbox tool commands run in, detected when a tool first needs it."""
        from ..tools.sandbox import Sandbox

        return Sandbox(self.config.tools.sandbox, self.confinement.allowed, cwd=self.cwd)

    async def _ensure_started(self) -> None:
        if self.profile is None:
            await self.start()

    def exact_counter(self) -> TokenCounter:
        """The counter, made exact first if it gives bounds (for compaction, summaries, tool output)."""
        return exact_counter(self.counter)

    @property
    def model_label(self) -> str:
        return getattr(self.provider, "display_model", self.provider.model)

    async def start(self) -> list[str]:
        """Load the model profile, tokenizer and workspace facts; return warnings to show."""
        if self.memory is not None and not self.memory.on_demand:
            self.memory.start_warming()  # the embedder loads while the provider and tokenizer start
        # What the server says now, else a window an earlier context-length error taught, else the table.
        profile = await self.provider.profile()
        learned = remembered_window(self.store.db, self.provider.name, self.provider.model, self.provider.endpoint)
        self.profile = prefer_learned_window(profile, learned)
        counter = await asyncio.to_thread(self.provider.token_counter)
        if counter is not None:
            self.counter = counter
        elif self.one_shot and isinstance(self.counter, TiktokenCounter):
            self.counter = DeferredCounter()  # the encoding is built only when bounds cannot decide
        files, warnings = find_project_files(self.cwd, global_project_file())
        project = render_project_context(files, self.config.context.project_context_max_tokens, self.counter)
        if project.truncated and bounded(self.counter):
            project = render_project_context(files, self.config.context.project_context_max_tokens, self.exact_counter())
        if project.truncated:
            warnings.append(
                "project context cut to fit context.project_context_max_tokens: " + ", ".join(project.truncated)
            )
        prompts, prompt_warnings = load_prompt_modules(config_dir() / "prompts", workspace_root(self.cwd))
        warnings.extend(prompt_warnings)
        self.workspace = Workspace(environment_facts(self.cwd, self.model_label), project, warnings, prompts)
        for path in self.confinement.extra:
            if not path.is_dir():
                warnings.append(f"tools.allowed_paths: {path} is not a directory")
        for rule in self.policy.unknown_tools(builtin_tool_names()) if self.config.tools.allow or self.config.tools.deny else ():
            if "__" in rule.partition(":")[0]:
                continue  # names an MCP tool (ID__TOOL): known only once its server runs
            warnings.append(f"tools.allow/deny rule {rule!r} names no known tool ({', '.join(builtin_tool_names())})")
        return warnings

    # ---- tools ----------------------------------------------------------------

    def offered_tools(self) -> ToolSet:
        """The tools the model is offered this turn (none when the model cannot call tools);
        compress_context only when there is a budget to compress against."""
        tools, budgeted = self._mode_tools()
        if not budgeted or not tools.tools:
            return tools
        return self._fit_tools(tools)

    def _mode_tools(self) -> tuple[ToolSet, bool]:
        """Every tool of the mode (the turn's skill and MCP tools included) before the budget is applied,
        and whether there is a budget to apply."""
        if self.tools_unavailable:
            return ToolSet(), False
        budgeted = self.profile is not None and self.budget().total > 0
        memory = self.config.memory.long_term.enabled and not self.turn_worldbook.drops("memory tools")
        tools = tools_for_mode(self.mode, compression=budgeted, memory=memory)
        extra = {} if self.turn_worldbook.drops("MCP tools") else self.extras.tools(self.mode)
        if extra:
            tools = ToolSet({**tools.tools, **extra})
        return tools, budgeted

    async def prepare_extras(self, prompt: str) -> list[str]:
        """Skills and MCP tools for `prompt`; the MCP tools are ranked against it only when their schemas
        cannot all fit the budget (ranking embeds the message: not worth it when nothing is left out)."""
        notes = await self.extras.prepare(prompt, tools_wanted=not self.tools_unavailable)
        tools, budgeted = self._mode_tools()
        if budgeted and self.extras.mcp_tools:
            compact = dataclasses.replace(tools, compact=True)
            capacity = self.budget().available
            def form() -> str:
                return tool_form(capacity, self._tools_tokens(tools), self._tools_tokens(compact))

            self._settle_bounds(form)
            if form() == "none":
                notes += await self.extras.rank_mcp(prompt)
        return notes

    def _settle_bounds(self, decide: Callable[[], object]) -> None:
        """Make the counter exact where its bounds could decide `decide()` otherwise than exact counts.

        `decide()` runs under a deferred counter's lower and then upper bound; when both give the same
        outcome, exact counts, which lie between them, give it too, and the encoding is never built.
        An outcome of `NEEDS_EXACT` always asks for exact counts."""
        counter = self.counter
        if not bounded(counter):
            return
        outcomes = []
        for mode in (LOWER, UPPER):
            with counter.bounds(mode):
                outcomes.append(decide())
            if outcomes[-1] is NEEDS_EXACT:
                break
        if outcomes[-1] is NEEDS_EXACT or outcomes[0] != outcomes[1]:
            counter.make_exact()

    def _fit_tools(self, tools: ToolSet) -> ToolSet:
        """The tools in full or compact form, within their share of the budget. When even compact schemas
        exceed it, the MCP tools least relevant to the message are left out first (as few as need be);
        only when the built-in tools alone do not fit are no tools offered."""
        capacity = self.budget().available
        droppable = self.extras.mcp_least_wanted(set(tools.tools))

        def without(count: int) -> tuple[ToolSet, ToolSet, ToolForm]:
            gone = set(droppable[:count])
            kept = dataclasses.replace(tools, tools={n: t for n, t in tools.tools.items() if n not in gone})
            compact = dataclasses.replace(kept, compact=True)
            return kept, compact, tool_form(capacity, self._tools_tokens(kept), self._tools_tokens(compact))

        left_out = fewest_left_out(len(droppable), lambda count: without(count)[2] != "none")
        if left_out is None:  # the built-in tools alone do not fit
            self.extras.mcp_left_out = len(droppable)
            self._tools_dropped = no_tools_warning(capacity, self._tools_tokens(without(len(droppable))[1]))
            return ToolSet()
        self.extras.mcp_left_out = left_out
        if left_out:
            self._mcp_trimmed = mcp_trimmed_warning(left_out, len(droppable), capacity)
        kept, compact, form = without(left_out)
        return compact if form == "compact" else kept

    def _tools_tokens(self, tools: ToolSet) -> int:
        """Tokens of the tool schemas, counted once per tool set and tokenizer."""
        key = (self.counter.name, str(tools.compact), *tools.names())
        if key not in self._tools_token_cache:
            if len(self._tools_token_cache) > TOOLS_TOKEN_CACHE_SIZE:  # subsets tried for small budgets add up
                self._tools_token_cache.clear()
            self._tools_token_cache[key] = count_tools(self.counter, list(tools.specs())) if tools.tools else 0
        return self._tools_token_cache[key]

    def set_mode(self, mode: str) -> None:
        if mode not in MODE_MODULES:
            raise ValueError(f"unknown mode {mode!r}: use agent, ask or plan")
        self.mode = mode

    def _runner(self, conversation: Conversation, tools: ToolSet) -> "ToolCallRunner":
        from .tool_calls import ToolCallRunner

        tools_config = self.config.tools
        context = ToolContext(
            confinement=self.confinement,
            cwd=self.cwd,
            read_overflow=lambda output_id: self.tool_log.read_output(conversation.id, output_id),
            default_timeout_secs=float(tools_config.bash_timeout_secs),
            compress=lambda strategy: self.compactor.on_request(conversation, strategy),
            sandbox=self.sandbox,
            memories=self.long_term_memory(conversation.id),
            skills=self.extras.skills,
        )
        return ToolCallRunner(
            tools=tools,
            context=context,
            policy=self.policy,
            approver=self.approver,
            log=self.tool_log,
            conversation_id=conversation.id,
            blocked_patterns=tuple(tools_config.blocked_commands),
            summarizer=self.side_jobs.complete if tools_config.summarize_output else None,
            output_limit=lambda text: self._output_chars(conversation, text),
        )

    def long_term_memory(self, conversation_id: int | None) -> LongTermMemory | None:
        """Long-term memory as this session sees it (None when `[memory.long_term] enabled = false`)."""
        config = self.config.memory.long_term
        if not config.enabled:
            return None
        embedder = self.memory.embedder if self.memory is not None else None
        return LongTermMemory.here(
            MemoryStore(self.store.db), self.cwd, conversation_id=conversation_id, config=config, embedder=embedder
        )

    def memory_chars(self) -> int | None:
        """The `<memory>` block's cap: a tenth of the prompt's budget (in characters, roughly), when there is one."""
        available = self.budget().available if self.profile is not None else 0
        return available * MEMORY_CHARS_PER_TOKEN // 10 if available else None

    def _output_chars(self, conversation: Conversation, text: str) -> int:
        """Characters of `text` that fit the share of the budget a tool output may take now."""
        from ..tools.output import MAX_OUTPUT_CHARS

        tokens = tool_output_allowance(self.context_for(conversation)[1])
        if tokens is None:
            return MAX_OUTPUT_CHARS
        tokens = int(tokens / self.store.calibration(self.provider.name, self.provider.model).applied_factor)
        sample = text[: 4 * MAX_OUTPUT_CHARS]
        chars_per_token = len(sample) / max(self.exact_counter().count(sample), 1)
        return min(MAX_OUTPUT_CHARS, int(tokens * chars_per_token))

    @property
    def mcp(self):
        """The MCP servers this agent uses (None when none are configured)."""
        return self.extras.mcp

    @property
    def skills(self):
        """The skills this agent matches against messages (None when skills are off)."""
        return self.extras.skills

    async def aclose(self) -> None:
        """Close the side-job providers and MCP servers this agent started (the main provider is the caller's)."""
        try:
            await self.session_memory.aclose()
            await self.extras.aclose()
        finally:
            await self.side_jobs.aclose()

    # ---- debug dump -------------------------------------------------------------

    def _dump_warning(self) -> AgentWarning | None:
        if self.dump is None or not self.dump.problem or self._said_dump_problem:
            return None
        self._said_dump_problem = True
        return AgentWarning(self.dump.problem)

    def dump_probe(self, result) -> None:
        if self.dump is not None:
            self.dump.probe(result)

    def dump_compaction(self, record: dict) -> None:
        if self.dump is not None:
            self.dump.compaction(record)

    # ---- conversations -------------------------------------------------------

    def new_conversation(self, title: str, system: str | None = None) -> Conversation:
        metadata = {"system": system} if system else {}
        metadata[PROFILE_KEY] = self.config.prompt.profile  # the session keeps the profile it started with
        return self.store.create_conversation(
            provider=self.provider.name, model=self.model_label, cwd=str(self.cwd), title=title, metadata=metadata
        )

    def budget(self) -> Budget:
        assert self.profile is not None, "call start() first"
        memory = self.config.memory
        configured = memory.context_budget_tokens
        if configured and not self.profile.window_is_guess:
            configured = min(configured, self.profile.context_window)  # a budget above the real window cannot hold
        return compute_budget(
            configured_tokens=configured,
            auto_budget=memory.auto_budget,
            window=self.profile.context_window,
            soft_threshold=memory.soft_compaction_threshold,
            hard_threshold=memory.hard_compaction_threshold,
        )

    def _layers(self, conversation: Conversation, system: str | None, tools: ToolSet) -> list[PromptLayer]:
        assert self.workspace is not None, "call start() first"
        topic = system if system is not None else conversation.metadata.get("system", "")
        base = base_prompt(self.workspace.prompts)
        mode = mode_prompt(self.workspace.prompts, self.mode, tools=bool(tools.tools))
        return [
            PromptLayer("base prompt", base.text, base.detail),
            PromptLayer("environment", render_environment(self.workspace.environment)),
            PromptLayer("project context", self.workspace.project.text),
            PromptLayer("mode prompt", mode.text, mode.detail),
            PromptLayer("global prompt", (chosen := self.global_prompt(conversation)).text, chosen.detail),
            PromptLayer("topic prompt", f"<topic_prompt>\n{topic.strip()}\n</topic_prompt>" if topic and topic.strip() else ""),
        ]

    def global_prompt(self, conversation: Conversation) -> GlobalPrompt:
        """The session's global prompt profile (ETOS 1), rendered as `<system_prompt>`."""
        name = session_profile(conversation.metadata, self.config.prompt.profile)
        return global_prompt(name, self.config.prompt.profiles)

    def _history(self, stored: list[StoredMessage]) -> list[HistoryItem]:
        """History with token counts, counting (and caching) only what is not cached yet."""
        missing: list[tuple[int, int, str]] = []
        items: list[HistoryItem] = []
        for row in stored:
            count = row.token_count
            if count is None or not counts_as(self.counter, row.token_counter):
                count = count_message(self.counter, row.message)
                missing.append((row.id, count, self.counter.name))
            items.append(HistoryItem(row.message, count, row.id, row.metadata, row.created_at))
        if not bounded(self.counter, LOWER):  # a lower bound is of no use stored
            self.store.set_token_counts(missing)
        return items

    def agent_history(self, conversation: Conversation) -> list[HistoryItem]:
        """What the agent may see of the conversation, with token counts."""
        return self._history(self.store.history(conversation.id, agent_visible=True))

    def context_for(
        self, conversation: Conversation, system: str | None = None, tools: ToolSet | None = None
    ) -> tuple[list[Message], ContextReport, int]:
        """The messages the next request would send, their report, and the raw estimate."""
        history = self.agent_history(conversation)
        if self.pinned_id is None:  # outside a turn (zeph context, /context): what the next one would see
            self.turn_worldbook = self.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
        book, wb = self._worldbook_layers(), self.turn_worldbook
        tools = self.offered_tools() if tools is None else tools
        messages, report = assemble(
            [*book.before, *self._layers(conversation, system, tools), *book.after],
            history,
            self.budget(),
            self.counter,
            window=self.profile.context_window if self.profile else 0,
            tools_tokens=self._tools_tokens(tools),
            calibration=self.store.calibration(self.provider.name, self.provider.model),
            pinned_id=self.pinned_id,
            context_layers=[*book.an_top, *self._context_layers(conversation, isolated=wb.isolated), *book.outlet],
            recall=() if wb.drops("semantic recall") else self.turn_memory.entries,
            skills=None if wb.drops("skills") else self.extras.skills_input(),
            late_context_layers=book.an_bottom,
            depth_layers=book.depths,
            closing_layers=[PromptLayer("enhancement prompt", render_enhancement(self.enhancement(conversation)))],
            max_chat_history=self.config.context.max_chat_history,
            landmark_gap_minutes=self.config.context.time_landmark_gap_minutes,
            zone=self.clock().tzinfo,
        )
        if self.profile is not None:
            report = dataclasses.replace(report, window_source=self.profile.window_source)
        return messages, book.annotate(report), report.raw_tokens

    def _worldbook_layers(self):
        """The turn's triggered worldbook entries as layers, within `[worldbook] max_share` of the budget."""
        available = self.budget().available if self.profile is not None else 0
        calibration = self.store.calibration(self.provider.name, self.provider.model)
        return worldbook_layers(self.turn_worldbook, self.worldbook.allowance(available), self.counter, calibration)

    def _context_layers(self, conversation: Conversation, *, isolated: bool = False) -> list[PromptLayer]:
        """The per-turn blocks in ETOS order: time, memory, recent conversations, user profile.
        `isolated` (worldbook isolation) drops all but the time."""
        return [
            PromptLayer("time", self._time_text()),
            PromptLayer("memory", "" if isolated else self.turn_memory.memory_text),
            *self.session_memory.layers(conversation, self.budget().available, isolated=isolated),
        ]

    def _time_text(self) -> str:
        """The <time> block: the running turn's, else rendered now; "" when `[context] inject_time` is off."""
        if not self.config.context.inject_time:
            return ""
        return self._turn_time or render_time(self.clock())

    def enhancement(self, conversation: Conversation) -> str:
        """The enhancement prompt's text: the session's own (`/enhance`, `--enhance`), else the configured one."""
        own = conversation.metadata.get(ENHANCE_KEY)
        return own if isinstance(own, str) and own.strip() else self.config.context.enhanced_prompt

    def set_enhancement(self, conversation: Conversation, text: str) -> Conversation:
        """The session's own enhancement prompt from now on; empty text falls back to the configured one."""
        return self.with_metadata(conversation, ENHANCE_KEY, text.strip() or None)

    def set_prompt_profile(self, conversation: Conversation, name: str) -> Conversation:
        """The session's global prompt profile from now on ("" = none); `name` must be configured."""
        if name and name not in self.config.prompt.profiles:
            known = ", ".join(sorted(self.config.prompt.profiles)) or "none are defined"
            raise ValueError(f"no prompt profile {name!r} in [prompt.profiles] (known: {known})")
        return self.with_metadata(conversation, PROFILE_KEY, name)

    def with_metadata(self, conversation: Conversation, key: str, value: object | None) -> Conversation:
        """The conversation with metadata `key` set (None removes it), saved when the session is stored."""
        metadata = {k: v for k, v in conversation.metadata.items() if k != key}
        if value is not None:
            metadata[key] = value
        if conversation.id:
            self.store.update_conversation(conversation.id, metadata=metadata)
            return self.store.get_conversation(conversation.id)
        return dataclasses.replace(conversation, metadata=metadata)

    # ---- one turn ---------------------------------------------------------------

    async def run_turn(
        self, conversation: Conversation, prompt: str, *, system: str | None = None, stream: bool = True
    ) -> AsyncIterator[AgentEvent]:
        if self.profile is None:
            await self.start()
        user = Message.user(prompt)
        saved = self.store.add_message(
            conversation.id, user, token_count=count_message(self.counter, user), token_counter=self.counter.name
        )
        if system and system != conversation.metadata.get("system"):
            self.store.update_conversation(conversation.id, metadata={**conversation.metadata, "system": system})
        conversation = self.store.get_conversation(conversation.id)
        self.pinned_id = saved.id
        self._turn_time = render_time(self.clock())
        history = self.agent_history(conversation)  # read once for the worldbook's triggers and recall
        self.turn_worldbook = self.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
        self.turn_memory = TurnMemory()  # nothing of the previous turn's
        if self.memory is not None and not self.turn_worldbook.drops("semantic recall"):
            visible = {item.id for item in history}
            self.turn_memory = await self.memory.prepare(conversation.id, prompt, visible, self.memory_chars())
        isolated = self.turn_worldbook.drops("MCP tools")  # no MCP server started, no skill matched for nothing
        self._turn_notes = ([] if isolated else await self.prepare_extras(prompt)) + list(self.turn_worldbook.warnings)
        turn = self._turn(conversation, saved.id, system, stream)
        try:
            async for event in turn:
                yield event
        finally:
            self.pinned_id = None
            self._turn_time = None
            await turn.aclose()  # a caller that stops early cancels the turn's own clean-up in order
            if self.memory is not None and not self.turn_worldbook.isolated:  # an isolated session stays out of recall
                self.memory.index_in_background(saved.id)  # the turn's messages get vectors after the reply

    async def _turn(
        self, conversation: Conversation, user_message_id: int, system: str | None, stream: bool
    ) -> AsyncIterator[AgentEvent]:
        """prepare → send → store the reply → run its tool calls, until the model answers without tools."""
        yield TurnStarted(conversation, user_message_id)
        for note in (*self.turn_memory.notes, *self._turn_notes):
            yield AgentWarning(note)
        turn = _TurnState(conversation, system, stream, self._call_ids(conversation))
        # settled before the tool warnings, which then speak of exact counts where bounds cannot decide
        tools: ToolSet | None = self._settled_tools(turn)
        for warning in self._tool_warnings(conversation):
            yield warning
        if problem := self.global_prompt(conversation).problem:
            yield AgentWarning(problem)
        if "compactor" in self.__dict__:  # one built by an earlier turn: a new turn for it
            self.compactor.start_turn()
        while True:
            turn.retry = False
            tools = tools if tools is not None else self._settled_tools(turn)
            builder = ReplyBuilder()
            # Each step is closed in order when the caller stops early, so its clean-up (a partial reply,
            # "not completed" results for unanswered calls) is written before the turn ends.
            for step in (self._prepare(turn, tools), self._send(turn, tools, builder)):
                async with contextlib.aclosing(step) as events:
                    async for event in events:
                        yield event
                if turn.ended or turn.retry:
                    break
            if turn.ended:
                return
            if turn.retry:
                tools = None  # settled again: the context or the tools changed
                continue
            async with contextlib.aclosing(self._store_reply(turn, builder)) as events:
                async for event in events:
                    yield event
            if turn.ended:
                return
            runner = self._runner(turn.conversation, tools)
            async with contextlib.aclosing(self._run_calls(turn.conversation, runner, turn.parsed)) as events:
                async for event in events:
                    yield event
            await self.compactor.after_tool_round(turn.conversation)
            tools = None

    def _settled_tools(self, turn: _TurnState) -> ToolSet:
        """The tools to offer, with the counter made exact first if token bounds could change the request.

        Each bound builds the request (tools, messages, reply cap); compaction, a budget problem or a
        note (its figures are the user's) always want exact counts. Compaction runs on exact counts."""
        said = (self._tools_dropped, self._mcp_trimmed, self.extras.mcp_left_out)  # what the bounds must not set
        provisional = self._provisional_due(turn.conversation)

        def request() -> object:
            tools = self.offered_tools()
            messages, report, _ = self.context_for(turn.conversation, turn.system, tools)
            if self._compaction_may_act(report, provisional) or budget_problem(report) is not None or report.notes:
                return NEEDS_EXACT
            return tools.names(), tools.compact, messages, self._reply_cap(report)

        self._settle_bounds(request)
        self._tools_dropped, self._mcp_trimmed, self.extras.mcp_left_out = said
        return self.offered_tools()

    def _tool_warnings(self, conversation: Conversation) -> list[AgentWarning]:
        """Why no tools are offered, once: the model has none, or the budget leaves no room (once a session)."""
        if self.tools_unavailable and not self._said_no_tools:
            self._said_no_tools = True
            if first_time(f"running without tools: {self.tools_unavailable}"):  # `zeph context` always says it
                return [AgentWarning(f"running without tools: {self.tools_unavailable}")]
        if not self.offered_tools().tools and self._tools_dropped and not self._said_no_tools:
            self._said_no_tools = True
            if conversation.metadata.get(TOOLS_DROPPED_SAID) != self._tools_dropped:  # once per session, not per `ask -c`
                self.store.update_conversation(
                    conversation.id, metadata={**conversation.metadata, TOOLS_DROPPED_SAID: self._tools_dropped}
                )
                return [AgentWarning(self._tools_dropped)]
        if self._mcp_trimmed and not self._said_mcp_trimmed and self.extras.mcp_left_out:
            self._said_mcp_trimmed = True
            return [AgentWarning(self._mcp_trimmed)]
        return []

    async def _prepare(self, turn: _TurnState, tools: ToolSet) -> AsyncIterator[AgentEvent]:
        """Compaction as the context needs it, then the request's messages and report; ends the turn
        when the request cannot fit the budget (the one check before a request leaves)."""
        conversation = turn.conversation
        turn.messages, turn.report, turn.raw_estimate = self.context_for(conversation, turn.system, tools)
        compacted = False
        if self._compaction_may_act(turn.report, self._provisional_due(conversation)):
            async for event in self.compactor.before_request(conversation, turn.report):
                compacted = True
                if isinstance(event, CompactionFinished):
                    turn.changes.append(event.result.describe())
                yield event
        if compacted:
            turn.messages, turn.report, turn.raw_estimate = self.context_for(conversation, turn.system, tools)
        if turn.changes:
            turn.report, turn.changes = dataclasses.replace(turn.report, compaction=tuple(turn.changes)), []
        yield ContextPrepared(turn.report)
        for note in turn.report.notes:
            yield AgentWarning(note)
        problem = budget_problem(turn.report)
        if problem is not None:
            turn.ended = True
            yield TurnFailed(ContextBudgetExceeded(problem))

    def _provisional_due(self, conversation: Conversation) -> bool:
        """Whether a provisional compaction summary waits for its redo (the compactor's to do)."""
        return provisional_summary_due(self.agent_history(conversation)) is not None

    def _compaction_may_act(self, report: ContextReport, provisional_due: bool) -> bool:
        """Whether the compactor could act before this request; when not, it is not even built (imported)."""
        if "compactor" in self.__dict__:
            return True  # built already: it keeps state across requests, let it decide
        memory = self.config.memory
        proactive = memory.compression.threshold_tokens if memory.compression.strategy == "proactive" else None
        return may_compact(
            report.context_tokens, report.capacity, soft=memory.soft_compaction_threshold,
            hard=memory.hard_compaction_threshold, proactive_threshold=proactive,
            provisional_due=provisional_due,
        )

    async def _send(self, turn: _TurnState, tools: ToolSet, builder: ReplyBuilder) -> AsyncIterator[AgentEvent]:
        """Stream one request into `builder`; a provider error ends the turn or asks for a retry."""
        assert self.profile is not None and turn.report is not None
        request = ChatRequest(
            messages=tuple(turn.messages),
            tools=tools.specs(),
            max_tokens=self._reply_cap(turn.report),
            temperature=self.config.llm.temperature,
            stream=turn.stream,
            context_window=turn.report.budget or self.profile.context_window,
        )
        dump = self.dump
        turn.dump_id = dump.request(request, provider=self.provider.name, model=self.model_label, report=turn.report) if dump else None
        try:
            async for event in self.provider.stream(request):
                builder.add(event)
                if isinstance(event, TextDelta) and event.text:
                    yield ReplyDelta(event.text)
        except ProviderError as exc:
            async for event in self._on_provider_error(turn, request, builder, exc):
                yield event
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._save_partial(turn.conversation, builder, "interrupted")
            raise

    async def _on_provider_error(
        self, turn: _TurnState, request: ChatRequest, builder: ReplyBuilder, exc: ProviderError
    ) -> AsyncIterator[AgentEvent]:
        """A model without tools: again without them. Too long: learn the window, compact, again (twice at
        most). Anything else ends the turn, keeping what arrived."""
        nothing_yet = not builder.content and not builder.calls
        if request.tools and nothing_yet and _NO_TOOL_SUPPORT.search(str(exc)):
            self.tools_unavailable = f"{self.provider.name} model {self.model_label} does not support tools"
            self._said_no_tools = True
            turn.retry = True
            if first_time(f"running without tools: {self.tools_unavailable}"):
                yield AgentWarning(f"running without tools: {self.tools_unavailable}")
            return
        record_response(self.dump, turn.dump_id, builder, str(exc))
        too_long = isinstance(exc, ContextLengthExceeded) or is_context_length_message(str(exc))
        if too_long and nothing_yet and turn.context_retries < CONTEXT_LENGTH_RETRIES:
            turn.context_retries += 1
            learned = self._learn_window(exc)
            if learned:  # the next request is budgeted for the real window: trimmed and compacted to fit it
                yield AgentWarning(learned)
                turn.retry = True
                return
            freed = False
            async for event in self.compactor.compact(turn.conversation, "reactive_retry"):
                if isinstance(event, CompactionFinished):
                    turn.changes.append(event.result.describe())
                    freed = freed or event.result.tokens_saved > 0
                yield event
            if freed:
                turn.retry = True
                return
        elif too_long:
            learned = self._learn_window(exc)
            if learned:
                yield AgentWarning(learned)
        if too_long and nothing_yet:
            attempts = turn.context_retries
            exc = ContextLengthExceeded(
                f"{exc} — the request still does not fit after compacting "
                f"({attempts} attempt{'s' * (attempts != 1)}); start a new session "
                "or lower [memory] context_budget_tokens to the model's real window",
                provider=exc.provider,
                status=exc.status,
            )
        partial_id = self._save_partial(turn.conversation, builder, str(exc))
        turn.ended = True
        yield TurnFailed(exc, partial_id)

    async def _store_reply(self, turn: _TurnState, builder: ReplyBuilder) -> AsyncIterator[AgentEvent]:
        """Store the reply and its usage; end the turn when it calls no tools or the round limit is reached."""
        conversation = turn.conversation
        turn.parsed = [(self._unique_id(call, turn.used_ids), problem) for call, problem in builder.parsed_tool_calls()]
        calls = [call for call, _ in turn.parsed]
        usage = builder.usage
        if usage.prompt_tokens <= 0 and bounded(self.counter):
            # The server reported no usage: the request's own count stands in for it, so count it exactly
            # (before the reply is stored: the same request, which bounds and exact counts build alike).
            self.counter.make_exact()
            exact = self.context_for(conversation, turn.system, self.offered_tools())[1]
            turn.report = dataclasses.replace(exact, compaction=turn.report.compaction if turn.report else ())
        turn.total = turn.total + usage
        stop_reason = normalize_stop_reason(builder.stop_reason)
        stored_calls = [_as_stored(call) for call in calls]  # the calls run with the real arguments
        reply_parts: list = ([TextPart(builder.content)] if builder.content else []) + stored_calls
        message_id = None
        if reply_parts:
            reply = Message("assistant", tuple(reply_parts))
            message_id = self.store.add_message(
                conversation.id,
                reply,
                token_count=count_message(self.counter, reply),
                token_counter=self.counter.name,
                metadata={"usage": usage.to_dict(), "stop_reason": stop_reason, "model": self.model_label},
            ).id
            self.guidelines.after_reply(conversation, builder.content)
        elif not calls:
            yield AgentWarning("the model returned an empty reply")
        self._calibrate(turn.raw_estimate, usage)
        record_response(self.dump, turn.dump_id, builder)
        assert turn.report is not None
        yield UsageReported(usage, turn.report)
        warning = self._dump_warning()
        if warning:
            yield warning

        if not calls:
            turn.ended = True
            self.session_memory.after_reply(conversation, isolated=self.turn_worldbook.isolated)  # in the background: the reply is stored already
            yield TurnFinished(message_id, builder.content, turn.total, stop_reason)
            return
        max_rounds = self.config.agent.max_tool_iterations
        if turn.rounds >= max_rounds:
            for call in calls:
                self._save_result(
                    conversation,
                    _interrupted(call, f"this turn reached its limit of {max_rounds} tool rounds"),
                    {"decision": "limit"},
                )
            yield AgentWarning(
                f"stopped after {max_rounds} tool rounds (agent.max_tool_iterations); "
                "the model wanted more: reply \"continue\" to let it go on, or raise the limit"
            )
            turn.ended = True
            yield TurnFinished(message_id, builder.content, turn.total, "max_tool_iterations")
            return
        turn.rounds += 1

    def _learn_window(self, exc: ProviderError) -> str | None:
        """Remember the window a context-length error states (per provider, model and endpoint), so this
        and every later request is budgeted for it; what to tell the user, or None when nothing was learned."""
        limit = getattr(exc, "limit", None) or context_limit_from_message(str(exc))
        assert self.profile is not None
        if not limit or limit == self.profile.context_window:
            return None
        if limit > self.profile.context_window and not self.profile.window_is_guess:
            return None  # the server or an earlier error stated a smaller window: keep it
        source = "learned: the server's context-length error"
        self.provider.forget_facts()  # what it said before (kept a few minutes) is stale
        remember_window(self.store.db, self.provider.name, self.provider.model, self.provider.endpoint, limit, source)
        previous = self.profile.context_window
        self.profile = with_window(self.profile, limit, source)
        return (
            f"{self.provider.name} says the model's window is {limit:,} tokens (zeph assumed {previous:,}): "
            "remembered, and every request is budgeted for it from now on"
        )

    def _reply_cap(self, report: ContextReport) -> int:
        """`max_tokens` for a request: the configured cap, within what the budget leaves after the prompt."""
        assert self.profile is not None
        cap = reply_token_cap(self.config.llm.max_tokens, self.profile)
        if report.budget:  # prompt + reply within the budget, with a margin for what servers add (templates)
            margin = max(REPLY_MARGIN_TOKENS, int(report.budget * REPLY_MARGIN_SHARE))
            cap = min(cap, max(report.budget - report.used_tokens - margin, 1))
        return cap

    async def _run_calls(
        self, conversation: Conversation, runner: "ToolCallRunner", parsed: list[tuple[ToolCallPart, str | None]]
    ) -> AsyncIterator[AgentEvent]:
        """Run the calls of one reply in order; on cancellation, answer every unanswered call."""
        done: set[str] = set()
        try:
            for call, problem in parsed:
                tool = runner.tools.get(call.name)
                subject = tool.subject(call.arguments) if tool else ""
                yield ToolCallStarted(call, tool.kind if tool else "", subject)
                outcome = await runner.run(call, problem)
                notice = self.sandbox.take_notice()  # once: commands are not confined here
                if notice:
                    yield AgentWarning(notice)
                self._save_result(
                    conversation,
                    outcome.result,
                    {
                        "decision": outcome.decision,
                        "summary": outcome.summary,
                        "duration_ms": outcome.duration_ms,
                        "exit_code": outcome.exit_code,
                        "kept_output_id": outcome.kept_output_id,
                    },
                )
                done.add(call.id)
                yield ToolCallFinished(
                    call, outcome.result, outcome.decision, outcome.summary, outcome.duration_ms, outcome.exit_code
                )
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
            for call, _ in parsed:
                if call.id not in done:
                    self._save_result(conversation, runner.record_interrupted(call), {"decision": "interrupted"})
            raise

    def _save_result(self, conversation: Conversation, result: ToolResultPart, metadata: dict) -> None:
        message = Message("tool", (result,))
        self.store.add_message(
            conversation.id,
            message,
            token_count=count_message(self.counter, message),
            token_counter=self.counter.name,
            metadata={k: v for k, v in metadata.items() if v is not None},
        )

    def _call_ids(self, conversation: Conversation) -> set[str]:
        """Call ids a request may carry: those of agent-visible messages (compacted ones are never sent)."""
        return {
            call.id
            for row in self.store.history(conversation.id, agent_visible=True)
            for call in row.message.tool_calls
        }

    @staticmethod
    def _unique_id(call: ToolCallPart, used: set[str]) -> ToolCallPart:
        """Call ids must be unique in a conversation and acceptable to every provider."""
        call_id = call.id
        if not _VALID_CALL_ID.match(call_id) or call_id in used or re.fullmatch(r"call_\d+", call_id):
            call_id = "call_" + uuid.uuid4().hex[:24]
        used.add(call_id)
        return call if call_id == call.id else ToolCallPart(call_id, call.name, call.arguments)

    def _save_partial(self, conversation: Conversation, builder: ReplyBuilder, reason: str) -> int | None:
        if not builder.content:
            return None
        reply = Message.assistant(builder.content)
        stored = self.store.add_message(
            conversation.id,
            reply,
            token_count=count_message(self.counter, reply),
            token_counter=self.counter.name,
            metadata={"partial": True, "error": reason, "model": self.model_label},
        )
        return stored.id

    def _calibrate(self, raw_estimate: int, usage: Usage) -> None:
        if usage.prompt_tokens <= 0 or bounded(self.counter):
            return  # nothing reported, or the estimate was a bound: nothing to learn from
        current = self.store.calibration(self.provider.name, self.provider.model)
        updated = current.observe(raw_estimate, usage.prompt_tokens)
        if updated is not current:
            self.store.save_calibration(self.provider.name, self.provider.model, updated)
