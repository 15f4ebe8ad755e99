"""The agent: its state, its start, and the public face of the turn loop.

Invariant: the user's message is stored before the provider is called; every
reply is stored when it completes (a reply cut short keeps its partial text,
marked `partial`); every tool call stored has exactly one stored result — real,
refused, or a synthetic "not completed" one after a cancellation — so the next
turn is valid on every provider. Callers (CLI, TUI) only consume the
`AgentEvent`s `run_turn` yields and answer approval requests. The steps live
beside this module, one job each, and take the turn's state and a `TurnDeps` the
agent builds once (`turn`), never the agent: `turn_loop` (the steps of a turn),
`bounds` (token-bound settling), `tool_offer` (the tools within the budget),
`context_view` (what a request sends), `replies` (storing the reply),
`tool_rounds` (running and storing tool calls), `provider_errors` (what an
error does to the turn); `subagents` runs the task tool's sub-agents, each a
child Agent in a session of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config, SandboxConfig
from ..context.assembler import HistoryItem
from ..context.blocks import ContextSource, Source, SourcePolicy
from ..context.budget import Budget, compute_budget
from ..context.global_prompt import PROFILE_KEY, GlobalPrompt, global_prompt, session_profile
from ..context.environment import SEEN_KEY
from ..context.project import render_project_context
from ..context.prompt_modules import MODE_MODULES
from ..context.report import ContextReport
from ..features import memory as memory_feature
from ..features import session_memory as session_memory_feature
from ..features import worldbook as worldbook_feature
from ..messages import ImagePart, Message, TextPart
from ..models import ModelProfile, prefer_learned_window, with_vision
from ..paths import config_dir, global_project_file
from .prompt_files import load_prompt_modules
from ..providers.base import Provider, ProviderSettings
from ..providers.pool import ProviderPool
from .side_jobs import SideJobs
from ..store import Conversation, ConversationStore
from ..store.windows import remembered_window
from ..images import policy_for as image_policy_for, why_not_sent
from ..tokens import (
    DeferredCounter, TiktokenCounter, TokenCounter, bounded, count_message, default_counter, exact_counter, image_policy,
    set_image_policy,
)
from ..tools.base import ToolSet
from ..tools.confinement import Confinement, workspace_root
from ..tools.specs import TASK_TOOL
from ..tools.approval import Approver, deny_all
from ..features import declared_tools, offered_tools, policy_for
from ..features.turn_extras import TurnExtras
from .workspace import HeadWatch, Workspace, environment_facts, find_project_files
from . import context_view
from .events import AgentEvent, AgentWarning, TurnQueued, TurnStarted
from .sources import Prepared, build_sources, prepare_sources
from .tool_offer import OfferDeps, ToolOffer
from .turn import TurnDeps, TurnState, call_ids, withdraw_unanswered
from .turn_loop import turn_events

if TYPE_CHECKING:  # imported when first used: a plain reply needs neither tools nor compaction
    from .compactor import Compactor
    from .debug_dump import DebugDump
    from .guidelines_learner import GuidelinesLearner
    from .subagents import Subagents
    from .tool_calls import ToolCallRunner
    from ..store.tool_log import ToolLog
    from ..store.turn_lock import TurnLock
    from ..tools.permissions import PermissionPolicy
    from ..tools.sandbox import Sandbox
    from ..tools.sandbox.protected import ToolGuard
    from ..features.memory import LongTermMemory, MemoryService
    from ..context.attachments import Attachment


async def wait_for_session(lock: "TurnLock", conversation_id: int) -> AsyncIterator[AgentEvent]:
    """Take the session's turn lock, first saying `TurnQueued` when another turn holds it (the caller
    releases it, in a `finally` around this and what it guards)."""
    if not lock.try_acquire():
        yield TurnQueued(conversation_id, lock.holder())
        await lock.acquire()


ENHANCE_KEY = "enhance"  # conversation metadata: the session's enhancement prompt
MIN_SUBAGENT_BUDGET = 4_000  # tokens: a sub-agent with less reads a file or two and runs out (the task tool is not offered)
MEMORY_CHARS_PER_TOKEN = 4  # for the <memory> block's cap: English prose runs about four characters a token


def _debug_dump(folder: Path, settings: list[ProviderSettings | None]) -> "DebugDump":
    from .debug_dump import DebugDump

    return DebugDump(folder, secrets=[s.api_key for s in settings if s is not None and s.api_key])


@dataclass
class AgentServices:
    """What an agent may be given beyond its essentials; each has a default that works alone."""

    helper_settings: Mapping[str, ProviderSettings | None] | None = None  # summaries, probes: their own providers
    memory: MemoryService | None = None  # recall and the embedder
    extras: TurnExtras | None = None  # skills and MCP servers
    clock: Callable[[], datetime] | None = None  # the local time (tests give a fixed one)
    # A sub-agent's: its parent's permission policy ("always" answers hold for both) and sandbox.
    policy: PermissionPolicy | None = None
    sandbox: Sandbox | None = None


def _tool_guard(settings: SandboxConfig, roots: Sequence[Path], cwd: Path) -> "ToolGuard":
    from ..tools.sandbox.protected import tool_guard

    return tool_guard(roots, cwd=cwd, allow_read=settings.allow_read, deny_read=settings.deny_read)


class Agent:
    """One session's agent: `start()` once, then `run_turn()` for each prompt (see the module's invariant)."""

    def __init__(
        self,
        *,
        config: Config,
        store: ConversationStore,
        provider: Provider,
        cwd: Path,
        approver: Approver | None = None,
        mode: str | None = None,
        services: AgentServices | None = None,
        one_shot: bool = False,
    ) -> None:
        services = services or AgentServices()
        helper_settings, memory, clock = services.helper_settings, services.memory, services.clock
        self.config = config
        self.helper_settings = helper_settings  # what side jobs (and sub-agents) run on, when not the main provider
        # 0 for the user's session; a sub-agent's is its parent's + 1 (`[agent.subagents] max_depth`).
        self.depth = 0
        self.only_tools: frozenset[str] | None = None  # a sub-agent's tool subset (None = every tool of the mode)
        # One turn in this process (`zeph ask`): exact token counts only where bounds cannot decide.
        self.one_shot = one_shot
        # The local time the <time> block and the landmarks' zone come from (tests give a fixed one).
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now().astimezone())
        self.store = store
        self.provider = provider
        self.cwd = cwd
        self.mode = mode or config.agent.mode
        # With no one to ask, write and exec tools are refused (and the model is told why).
        self.approver = approver or deny_all("no one is present to approve it")
        extra = [Path(p).expanduser() for p in config.tools.allowed_paths]
        self.confinement = Confinement(
            workspace_root(cwd), [p if p.is_absolute() else cwd / p for p in extra], cwd=cwd,
            hidden=lambda: _tool_guard(config.tools.sandbox, self.confinement.allowed, cwd).hidden,
            read_only=lambda: _tool_guard(config.tools.sandbox, self.confinement.allowed, cwd).guarded,
        )
        self.profile: ModelProfile | None = None
        self.counter: TokenCounter = default_counter()
        self.workspace: Workspace | None = None
        # The running turn's user message: it and its tool chain are sent verbatim (never trimmed or compacted).
        self.pinned_id: int | None = None
        self.unanswered_prompt: int | None = None  # the last turn's prompt, when no reply answered it (withdrawn)
        # Recall and long-term memories: looked up once per turn, sent with every request of it.
        self.memory = memory
        self.turn_memory = memory_feature.TurnMemory()
        # Skills matched to the message and MCP servers' tools: prepared once per turn.
        self.extras = services.extras or TurnExtras(prompt_mode=config.skills.prompt_mode)
        # Worldbook entries the recent messages trigger (once per turn), and the session's isolation mode.
        self.worldbook = worldbook_feature.Worldbook(store.db, config.worldbook, str(self.confinement.root))
        self.turn_worldbook = worldbook_feature.WorldbookTurn()
        # The tools offered each turn, within the budget, and what was said about those left out.
        self.offer = ToolOffer(
            OfferDeps(
                self.extras, store, provider.settings.kind, lambda: offered_tools(self),
                counter=lambda: self.counter, profile=lambda: self.profile, budget=self.budget,
                mode=lambda: self.mode, allows_tools=lambda group: self.source_policy.allows_tools(group),
                wanted=self.offers_tool,
            ),
            unavailable=None if provider.supports_tools else (
                f"{provider.name} ({self.model_label}) has no tool calling; "
                "file and shell tools need anthropic, openai, a compatible server or ollama"
            ),
        )
        self.prepared = Prepared()  # the last turn's sources: their outcomes and notes
        dump_dir = config.debug.dump_dir
        keyed = [provider.settings, *(helper_settings or {}).values()]  # their keys are kept out of the dump
        self.dump = _debug_dump(Path(dump_dir).expanduser(), keyed) if dump_dir else None
        self._said_dump_problem = False
        # Summaries, probes and compress_context may use providers of their own.
        self.side_jobs = SideJobs(
            ProviderPool(provider, helper_settings), provider, lambda: self.profile, config.llm.max_tokens, self.dump
        )
        self.session_memory = session_memory_feature.SessionMemory(session_memory_feature.SessionMemoryDeps(
            store, config.memory, self.side_jobs.complete, lambda: self.counter, str(workspace_root(cwd)), self.clock,
            small_summarizer=lambda: self.side_jobs.small_embedded("summary"),
        ))
        self.deps = self._turn_deps()
        if services.policy is not None:  # a sub-agent shares its parent's (the properties would build their own)
            self.__dict__["policy"] = services.policy
        if services.sandbox is not None:
            self.__dict__["sandbox"] = services.sandbox

    def _turn_deps(self) -> TurnDeps:
        """What the turn's steps use, built once: the steps never see the agent."""

        def set_profile(profile: ModelProfile) -> None:
            self.profile = profile

        return TurnDeps(
            store=self.store,
            provider=self.provider,
            model_label=self.model_label,
            llm=self.config.llm,
            memory=self.config.memory,
            max_tool_rounds=self.config.agent.max_tool_iterations,
            counter=lambda: self.counter,
            profile=lambda: self.profile,
            set_profile=set_profile,
            context_for=self.context_for,
            history=self.agent_history,
            tools=self.offer,
            compactor=lambda: self.compactor,
            compactor_built=lambda: "compactor" in self.__dict__,
            runner=self.tool_runner,
            sandbox_notice=lambda: self.sandbox.take_notice(),
            dump=self.dump,
            dump_warning=self.dump_warning,
            learn_from_reply=(lambda conversation, text: self.guidelines.after_reply(conversation, text))
            if self.learns_guidelines else None,
            after_turn=lambda conversation, isolated: self.session_memory.after_reply(conversation, isolated=isolated),
        )

    @cached_property
    def tool_log(self) -> "ToolLog":
        """The audit trail of tool calls and their kept outputs (loaded when a reply first calls a tool)."""
        from ..store.tool_log import ToolLog

        return ToolLog(self.store.db)

    @cached_property
    def guidelines(self) -> "GuidelinesLearner":
        """Compression guidelines learned from context losses, built (and imported) when first used: only
        with `[memory.compression_guidelines] enabled` does a turn use them."""
        from .guidelines_learner import GuidelinesLearner, LearnerDeps

        return GuidelinesLearner(
            LearnerDeps(self.store, self.config.memory.compression_guidelines, self.side_jobs.complete,
                        self.exact_counter)
        )

    @property
    def learns_guidelines(self) -> bool:
        return self.config.memory.compression_guidelines.enabled

    @cached_property
    def compactor(self) -> "Compactor":
        """Pruning and summaries, built (and imported) when a request first needs them."""
        from ..features.tasks import registry
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
                recall_entries=lambda: self.turn_memory.entries,
                subgoals=lambda conversation: registry.subgoals(self.store.db, conversation.id),
            )
        )

    @cached_property
    def subagents(self) -> "Subagents":
        """The sub-agents the task tool starts, built (and imported) when a task call first runs."""
        from .subagents import SubagentDeps, Subagents

        return Subagents(SubagentDeps(
            config=self.config, depth=self.depth, mode=lambda: self.mode,
            budget=lambda: self.budget().total if self.profile is not None else 0,
            provider=lambda: self.side_jobs.pool.get("subagent"), approver=self.approver,
            counter=self.exact_counter, spawn=self._spawn_child, only_tools=lambda: self.only_tools,
        ))

    def _spawn_child(self, config: Config, mode: str, approver: Approver) -> "Agent":
        """A sub-agent's agent (not started): this one's store, directory, policy and sandbox, one level deeper."""
        child = Agent(
            config=config, store=self.store, provider=self.side_jobs.pool.get("subagent"), cwd=self.cwd,
            approver=approver, mode=mode, one_shot=self.one_shot,
            services=AgentServices(helper_settings=self.helper_settings, clock=self.clock, policy=self.policy,
                                   sandbox=self.sandbox),
        )
        child.depth = self.depth + 1
        return child

    def withheld_tools(self) -> dict[str, str]:
        """Tools this agent knows but does not offer, with why: the task tool beyond `[agent.subagents] max_depth`,
        or when a sub-agent's share of the budget would be too small to work in."""
        from .subagents import withheld_reason

        reason = withheld_reason(self.config, self.depth) or self._subagent_budget_problem()
        return {TASK_TOOL: reason} if reason else {}

    def offers_tool(self, name: str) -> bool:
        """Whether the tool `name` may be offered: within a sub-agent's subset, and the task tool within the depth
        and the budget."""
        if self.only_tools is not None and name not in self.only_tools:
            return False
        return name != TASK_TOOL or TASK_TOOL not in self.withheld_tools()

    def _subagent_budget_problem(self) -> str | None:
        """Why a sub-agent's budget (`budget_share` of this agent's) is too small to offer the task tool, or None."""
        if self.profile is None:
            return None
        settings = self.config.agent.subagents
        total = self.budget().total
        share = int(total * settings.budget_share)
        if not total or share >= MIN_SUBAGENT_BUDGET:  # no budget: nothing to share out
            return None
        return (f"a sub-agent would get {share:,} tokens (agent.subagents budget_share = {settings.budget_share:g} of "
                f"this session's {total:,}), below the {MIN_SUBAGENT_BUDGET:,} it needs to work in; "
                "raise [memory] context_budget_tokens or budget_share")

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
        counter = self.provider.token_counter()  # after `profile()`: a local model is loaded by now
        if counter is not None:
            self.counter = counter
        elif self.one_shot and isinstance(self.counter, TiktokenCounter):
            self.counter = DeferredCounter()  # the encoding is built only when bounds cannot decide
        self.profile = with_vision(self.profile, self.config.llm.vision)
        set_image_policy(self.counter, image_policy_for(self.provider.kind, self.provider.model, self.profile.vision))
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
        head = HeadWatch(self.cwd)
        self.workspace = Workspace(environment_facts(self.cwd, self.model_label, head), project, warnings, prompts, head)
        for path in self.confinement.extra:
            if not path.is_dir():
                warnings.append(f"tools.allowed_paths: {path} is not a directory")
        known = list(declared_tools())
        for rule in self.policy.unknown_tools(known) if self.config.tools.allow or self.config.tools.deny else ():
            if "__" in rule.partition(":")[0]:
                continue  # names an MCP tool (ID__TOOL): known only once its server runs
            warnings.append(f"tools.allow/deny rule {rule!r} names no known tool ({', '.join(known)})")
        return warnings

    # ---- tools (tool_offer, tool_rounds) -------------------------------------------

    @property
    def tools_unavailable(self) -> str | None:
        """Why the model is offered no tools at all (it cannot call them), or None."""
        return self.offer.unavailable

    def offered_tools(self) -> ToolSet:
        """The tools the model is offered this turn (none when the model cannot call tools);
        compress_context only when there is a budget to compress against."""
        return self.offer.offered()

    def tools_tokens(self, tools: ToolSet) -> int:
        """What `tools`' schemas take of a request, in tokens."""
        return self.offer.tokens(tools)

    def set_mode(self, mode: str) -> None:
        if mode not in MODE_MODULES:
            raise ValueError(f"unknown mode {mode!r}: use agent, ask or plan")
        self.mode = mode

    def tool_runner(self, conversation: Conversation, tools: ToolSet) -> "ToolCallRunner":
        """The runner for one round's calls, with the agent's tools, policy, approver, sandbox and log."""
        from ..tools.base import ToolContext
        from .tool_calls import CallChecks, ToolCallRunner
        from .tool_rounds import output_chars, provider_key_variables

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
            code_search=self.extras.code_index,
            mcp_resources=self.extras.mcp,
            pass_env=tuple(tools_config.sandbox.pass_env),
            secret_env=provider_key_variables(self.config),
            run_subagent=lambda request, progress: self.subagents.run(conversation, request, progress),
            withheld=self.withheld_tools(),
            conversation_id=conversation.id,
            database=self.store.db,
        )
        return ToolCallRunner(
            tools=tools,
            context=context,
            checks=CallChecks(self.policy, self.approver, tuple(tools_config.blocked_commands)),
            log=self.tool_log,
            conversation_id=conversation.id,
            summarizer=self.side_jobs.complete if tools_config.summarize_output else None,
            output_limit=lambda text: output_chars(
                self.context_for(conversation)[1],
                lambda: self.store.calibration(self.provider.name, self.provider.model).applied_factor,
                self.exact_counter,
                text,
            ),
        )

    def long_term_memory(self, conversation_id: int | None) -> LongTermMemory | None:
        """Long-term memory as this session sees it (None when `[memory.long_term] enabled = false`)."""
        config = self.config.memory.long_term
        if not config.enabled:
            return None
        embedder = self.memory.embedder if self.memory is not None else None
        return memory_feature.LongTermMemory.here(
            memory_feature.MemoryStore(self.store.db), self.cwd, conversation_id=conversation_id, config=config, embedder=embedder
        )

    def memory_chars(self) -> int | None:
        """The `<memory>` block's cap: a tenth of the prompt's budget (in characters, roughly), when there is one."""
        available = self.budget().available if self.profile is not None else 0
        return available * MEMORY_CHARS_PER_TOKEN // 10 if available else None

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

    def dump_warning(self) -> AgentWarning | None:
        """The debug dump's problem (it stopped writing), said once."""
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

    def global_prompt(self, conversation: Conversation) -> GlobalPrompt:
        """The session's global prompt profile (ETOS 1), rendered as `<system_prompt>`."""
        name = session_profile(conversation.metadata, self.config.prompt.profile)
        return global_prompt(name, self.config.prompt.profiles)

    def agent_history(self, conversation: Conversation) -> list[HistoryItem]:
        """What the agent may see of the conversation, with token counts."""
        stored = self.store.history(conversation.id, agent_visible=True)
        return context_view.history_items(self.store, self.counter, stored)

    def context_for(
        self, conversation: Conversation, system: str | None = None, tools: ToolSet | None = None
    ) -> tuple[list[Message], ContextReport, int]:
        """The messages the next request would send, their report, and the raw estimate."""
        return context_view.context_for(self, conversation, system, tools)

    @cached_property
    def sources(self) -> list[ContextSource]:
        """The context sources on for this agent (the core's and the features' registrations), built when first asked."""
        return build_sources(self)

    @property
    def source_policy(self) -> SourcePolicy:
        """Which sources and tool groups the session allows now (isolation mode allows fewer)."""
        return policy_for(self.turn_worldbook.isolated)

    async def prepare_sources(
        self, conversation: Conversation, history: list[HistoryItem], prompt: str, *, running: bool
    ) -> list[str]:
        """The sources the session allows, prepared concurrently for `prompt` (each under
        `[context] source_deadline_seconds`), then the MCP tools ranked when their schemas cannot all fit;
        the notes to say (those of sources left out of the turn included)."""
        assert self.profile is not None, "call start() first"
        turn = context_view.turn_input(self, conversation, history, prompt=prompt, running=running)
        # a source with nothing to gather (its blocks are made for each request) is not prepared twice
        allowed = [source for source in self.sources
                   if self.source_policy.allows(source.name) and type(source).prepare is not Source.prepare]
        self.prepared = await prepare_sources(allowed, turn, self.config.context.source_deadline_seconds)
        notes = self.prepared.notes + [o.note for o in self.prepared.outcomes if o.left_out]
        if prompt and self.source_policy.allows("MCP tools") and "MCP tools" not in self.prepared.left_out:
            notes += await self.offer.rank_extras(prompt)
        return notes

    def source_lines(self, report: ContextReport) -> list[str]:
        """What the sources the session allows say for `zeph context` beyond their blocks' rows."""
        return [line for source in self.sources if self.source_policy.allows(source.name) for line in source.lines(report)]

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

    def attachment(self, raw: str) -> "Attachment":
        """The file `raw` names, read to attach to a prompt (`AttachmentError` says why it cannot be)."""
        return self.attachments([raw])[0]

    def attachments(self, raws: Sequence[str]) -> list["Attachment"]:
        """The files `raws` name, read to attach to one prompt (`AttachmentError` says why they cannot be)."""
        if not raws:
            return []  # a plain prompt imports nothing of the file tools
        from ..context.attachments import over_limit
        from .attachments import AttachmentError, read_attachment

        assert self.profile is not None, "call start() first"
        prompt_budget = self.budget().available or self.profile.context_window
        read = [read_attachment(raw, self.confinement, self.cwd, self.exact_counter(), prompt_budget) for raw in raws]
        read = [self._attached_image(a) if a.image is not None else a for a in read]
        problem = over_limit(read, prompt_budget)
        if problem:
            raise AttachmentError(f"cannot attach {', '.join(a.path for a in read)}: {problem}")
        return read

    def _attached_image(self, attachment: "Attachment") -> "Attachment":
        """An image attachment counted as the model takes it; `AttachmentError` when it takes no images."""
        from .attachments import AttachmentError

        assert attachment.image is not None
        policy = image_policy(self.counter)
        if not policy.takes(attachment.image):
            why = (f"{self.model_label} does not take images (if it does, set [llm] vision = true)" if not policy.vision
                   else why_not_sent(attachment.image, policy))
            raise AttachmentError(f"cannot attach {attachment.path}: {why}")
        return dataclasses.replace(attachment, tokens=policy.tokens(attachment.image))

    def with_metadata(self, conversation: Conversation, key: str, value: object | None) -> Conversation:
        """The conversation with metadata `key` set (None removes it), saved when the session is stored: then
        from the metadata as stored, not as `conversation` (perhaps taken when the turn started) has it."""
        if conversation.id:
            return self.store.set_metadata(conversation.id, key, value)
        metadata = {k: v for k, v in conversation.metadata.items() if k != key}
        if value is not None:
            metadata[key] = value
        return dataclasses.replace(conversation, metadata=metadata)

    def notice_environment(self, conversation: Conversation) -> Conversation:
        """The `<environment>` block made current for a turn on `conversation` (a branch switched or a new
        working directory since its last turn is said in it), and what it saw remembered in the session."""
        if self.workspace is None:
            return conversation
        seen = conversation.metadata.get(SEEN_KEY)
        facts = self.workspace.refresh_environment(seen, conversation.cwd)
        if seen != facts.seen():
            conversation = self.with_metadata(conversation, SEEN_KEY, facts.seen())
        return conversation

    # ---- one turn ---------------------------------------------------------------

    async def run_turn(
        self, conversation: Conversation, prompt: str, *, system: str | None = None, stream: bool = True,
        images: tuple[ImagePart, ...] = (),
    ) -> AsyncGenerator[AgentEvent, None]:
        """One turn on `conversation`. It first waits for a turn another zeph runs on the session (saying
        `TurnQueued`), then stores the prompt; until it ends, no other turn writes into the session."""
        if self.profile is None:
            await self.start()
        lock = self.store.turn_lock(conversation.id)
        try:
            async for event in wait_for_session(lock, conversation.id):
                yield event
            async with contextlib.aclosing(self._turn(conversation, prompt, system, stream, images)) as events:
                async for event in events:
                    yield event
        finally:
            lock.release()

    async def compact(self, conversation: Conversation) -> AsyncIterator[AgentEvent]:
        """Compact the session now (`zeph compact`, `/compact`), after any turn running on it."""
        lock = self.store.turn_lock(conversation.id)
        try:
            async for event in wait_for_session(lock, conversation.id):
                yield event
            async with contextlib.aclosing(self.compactor.compact(conversation, "manual")) as events:
                async for event in events:
                    yield event
        finally:
            lock.release()

    async def _turn(
        self, conversation: Conversation, prompt: str, system: str | None, stream: bool, images: tuple[ImagePart, ...] = ()
    ) -> AsyncGenerator[AgentEvent, None]:
        """The turn, its session's lock held: `TurnStarted` as soon as the prompt is stored; a turn that ends in
        any way before anything of a reply is stored withdraws its prompt (`unanswered_prompt` says which)."""
        conversation = self.store.get_conversation(conversation.id)  # as the turn that held the lock left it
        user = Message("user", (TextPart(prompt), *images)) if images else Message.user(prompt)
        saved = self.store.add_message(
            conversation.id, user, token_count=count_message(self.counter, user), token_counter=self.counter.name
        )
        if system and system != conversation.metadata.get("system"):
            self.store.set_metadata(conversation.id, "system", system)
        conversation = self.notice_environment(self.store.get_conversation(conversation.id))
        turn = TurnState(conversation, system, stream, call_ids(self.store, conversation.id), prompt_id=saved.id)
        self.unanswered_prompt = None
        yield TurnStarted(conversation, saved.id)
        try:
            async with contextlib.aclosing(self._prepared_turn(turn, prompt)) as events:
                async for event in events:
                    yield event
        except BaseException:  # cancelled, interrupted, the reply not storable, a bug: no reply, no prompt
            withdraw_unanswered(self.store, turn, "interrupted before any reply")
            raise
        finally:
            self.unanswered_prompt = saved.id if turn.withdrawn else None

    async def _prepared_turn(self, turn: TurnState, prompt: str) -> AsyncGenerator[AgentEvent, None]:
        """What the turn brings in (worldbook, recall, skills and MCP), then its requests and replies."""
        conversation, saved_id = turn.conversation, turn.prompt_id
        self.pinned_id = saved_id
        history = self.agent_history(conversation)  # read once for the worldbook's triggers and recall
        self.turn_worldbook = self.worldbook.for_turn(conversation.id, conversation.metadata, [i.message for i in history])
        self.turn_memory = memory_feature.TurnMemory()  # nothing of the previous turn's
        try:
            notes = await self.prepare_sources(conversation, history, prompt, running=True)
            turn.notes = [*notes, *self.turn_worldbook.warnings]
            turn.isolated = self.turn_worldbook.isolated
            turn.prompt_problem = self.global_prompt(conversation).problem
            async with contextlib.aclosing(turn_events(self.deps, turn)) as events:  # a caller that stops early
                async for event in events:  # closes the turn's own steps in order
                    yield event
        finally:
            self.pinned_id = None
            if self.memory is not None and self.source_policy.allows("memory"):  # an isolated session stays out of recall
                self.memory.index_in_background(saved_id)  # the turn's messages get vectors after the reply
