"""The turn loop: persist the prompt, assemble context, stream the reply, persist it.

Invariant: the user's message is stored before the provider is called; a reply
is stored when it completes, and a reply cut short by an error or a
cancellation keeps its partial text, marked `partial`. Callers (CLI, TUI) only
consume the `AgentEvent`s `run_turn` yields.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

from .config import Config
from .context.assembler import HistoryItem, PromptLayer, assemble
from .context.budget import Budget, compute_budget
from .context.environment import EnvironmentFacts, render_environment
from .context.project import ProjectContext, render_project_context
from .context.prompts import BASE_PROMPT
from .context.report import ContextReport
from .errors import ProviderError, ZephError
from .messages import Message, ReplyBuilder, TextDelta, Usage
from .models import ModelProfile, reply_token_cap
from .paths import global_project_file
from .providers.base import ChatRequest, Provider
from .store import Conversation, ConversationStore, StoredMessage
from .tokens import TokenCounter, count_message, default_counter
from .workspace import environment_facts, find_project_files

# ---- events -------------------------------------------------------------------


@dataclass(frozen=True)
class TurnStarted:
    conversation: Conversation
    user_message_id: int


@dataclass(frozen=True)
class ContextPrepared:
    report: ContextReport


@dataclass(frozen=True)
class ReplyDelta:
    text: str


@dataclass(frozen=True)
class UsageReported:
    usage: Usage
    report: ContextReport


@dataclass(frozen=True)
class AgentWarning:
    text: str


@dataclass(frozen=True)
class TurnFailed:
    error: ZephError
    partial_message_id: int | None = None


@dataclass(frozen=True)
class TurnFinished:
    message_id: int | None
    text: str
    usage: Usage
    stop_reason: str


AgentEvent = Union[TurnStarted, ContextPrepared, ReplyDelta, UsageReported, AgentWarning, TurnFailed, TurnFinished]


# ---- the agent ------------------------------------------------------------------


@dataclass
class Workspace:
    """Facts about where the agent runs, gathered once per process."""

    environment: EnvironmentFacts
    project: ProjectContext
    warnings: list[str] = field(default_factory=list)


class Agent:
    def __init__(self, *, config: Config, store: ConversationStore, provider: Provider, cwd: Path) -> None:
        self.config = config
        self.store = store
        self.provider = provider
        self.cwd = cwd
        self.profile: ModelProfile | None = None
        self.counter: TokenCounter = default_counter()
        self.workspace: Workspace | None = None

    @property
    def model_label(self) -> str:
        return getattr(self.provider, "display_model", self.provider.model)

    async def start(self) -> list[str]:
        """Load the model profile, tokenizer and workspace facts; return warnings to show."""
        self.profile = await self.provider.profile()
        counter = await asyncio.to_thread(self.provider.token_counter)
        if counter is not None:
            self.counter = counter
        files, warnings = find_project_files(self.cwd, global_project_file())
        project = render_project_context(files, self.config.context.project_context_max_tokens, self.counter)
        if project.truncated:
            warnings.append(
                "project context cut to fit context.project_context_max_tokens: " + ", ".join(project.truncated)
            )
        self.workspace = Workspace(environment_facts(self.cwd, self.model_label), project, warnings)
        return warnings

    # ---- conversations -------------------------------------------------------

    def new_conversation(self, title: str, system: str | None = None) -> Conversation:
        metadata = {"system": system} if system else {}
        return self.store.create_conversation(
            provider=self.provider.name, model=self.model_label, cwd=str(self.cwd), title=title, metadata=metadata
        )

    def budget(self) -> Budget:
        assert self.profile is not None, "call start() first"
        memory = self.config.memory
        return compute_budget(
            configured_tokens=memory.context_budget_tokens,
            auto_budget=memory.auto_budget,
            window=self.profile.context_window,
            soft_threshold=memory.soft_compaction_threshold,
            hard_threshold=memory.hard_compaction_threshold,
        )

    def _layers(self, conversation: Conversation, system: str | None) -> list[PromptLayer]:
        assert self.workspace is not None, "call start() first"
        topic = system if system is not None else conversation.metadata.get("system", "")
        return [
            PromptLayer("base prompt", BASE_PROMPT),
            PromptLayer("environment", render_environment(self.workspace.environment)),
            PromptLayer("project context", self.workspace.project.text),
            PromptLayer("session prompt", topic or ""),
        ]

    def _history(self, stored: list[StoredMessage]) -> list[HistoryItem]:
        """History with token counts, counting (and caching) only what is not cached yet."""
        missing: list[tuple[int, int, str]] = []
        items: list[HistoryItem] = []
        for row in stored:
            count = row.token_count
            if count is None or row.token_counter != self.counter.name:
                count = count_message(self.counter, row.message)
                missing.append((row.id, count, self.counter.name))
            items.append(HistoryItem(row.message, count))
        self.store.set_token_counts(missing)
        return items

    def context_for(self, conversation: Conversation, system: str | None = None) -> tuple[list[Message], ContextReport, int]:
        """The messages the next request would send, their report, and the raw estimate."""
        history = self._history(self.store.history(conversation.id, agent_visible=True))
        messages, report = assemble(
            self._layers(conversation, system),
            history,
            self.budget(),
            self.counter,
            window=self.profile.context_window if self.profile else 0,
            calibration=self.store.calibration(self.provider.name, self.provider.model),
        )
        return messages, report, report.raw_tokens

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
        yield TurnStarted(conversation, saved.id)

        messages, report, raw_estimate = self.context_for(conversation, system)
        yield ContextPrepared(report)
        for note in report.notes:
            yield AgentWarning(note)

        assert self.profile is not None
        request = ChatRequest(
            messages=tuple(messages),
            max_tokens=reply_token_cap(self.config.llm.max_tokens, self.profile),
            temperature=self.config.llm.temperature,
            stream=stream,
            context_window=report.budget or self.profile.context_window,
        )
        builder = ReplyBuilder()
        try:
            async for event in self.provider.stream(request):
                builder.add(event)
                if isinstance(event, TextDelta) and event.text:
                    yield ReplyDelta(event.text)
        except ProviderError as exc:
            partial_id = self._save_partial(conversation, builder, str(exc))
            yield TurnFailed(exc, partial_id)
            return
        except (asyncio.CancelledError, KeyboardInterrupt):
            self._save_partial(conversation, builder, "interrupted")
            raise

        reply = Message.assistant(builder.content)
        usage = builder.usage
        message_id = None
        if builder.content:
            stored = self.store.add_message(
                conversation.id,
                reply,
                token_count=count_message(self.counter, reply),
                token_counter=self.counter.name,
                metadata={"usage": usage.to_dict(), "stop_reason": builder.stop_reason, "model": self.model_label},
            )
            message_id = stored.id
        else:
            yield AgentWarning("the model returned an empty reply")
        self._calibrate(raw_estimate, usage)
        yield UsageReported(usage, report)
        yield TurnFinished(message_id, builder.content, usage, builder.stop_reason or "stop")

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
        if usage.prompt_tokens <= 0:
            return
        current = self.store.calibration(self.provider.name, self.provider.model)
        updated = current.observe(raw_estimate, usage.prompt_tokens)
        if updated is not current:
            self.store.save_calibration(self.provider.name, self.provider.model, updated)
