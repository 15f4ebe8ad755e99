"""The interactive session behind the TUI: one agent, one store, the conversation on screen.

Invariant: everything the TUI does that is not rendering goes through here, as
plain values and agent events (no widget sees SQL or a provider); a failed
switch of model or provider leaves the working one in place, and the user's
scroll-back is only ever read, never rewritten.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TYPE_CHECKING, Union

from .agent import ENHANCE_KEY, Agent
from .factory import build_agent, close_agent, set_mode
from .sources import Prepared
from ..config import LoadedConfig
from ..context.attachments import Attachment, with_attachments
from ..context.global_prompt import PROFILE_KEY, session_profile
from ..context.report import ContextReport
from ..context.sent_text import SentSection, sent_sections
from ..errors import NotFound, SessionBusy, UsageError, ZephError
from .events import AgentEvent, AgentWarning, TurnStarted
from ..log import get_logger, log_to
from ..messages import Message, ToolResultPart
from ..models import reply_token_cap
from ..paths import database_path
from ..providers import Provider
from ..store.export import conversation_json, conversation_markdown
from ..store import CompactionStore, Conversation, ConversationStore, StoredMessage, open_database
from ..store.conversations import UNSENT_KEY
from ..features import mcp as mcp_feature
from ..features import memory as memory_feature
from ..features.skills.tool_specs import LOAD_SKILL
from ..tokens import count_message
from ..tools.permissions import Approver
from ..tools.elicitation import Elicitor

if TYPE_CHECKING:
    from ..features.tasks.items import TaskItem
    from ..features.memory import LongTermMemory

log = get_logger("chat")

CLEAR_MARKER = "clear"
SEARCH_HITS_PER_SESSION = 5  # message hits fetched per session asked for, before de-duplicating
TITLE_SCAN_LIMIT = 1000  # most recent sessions whose titles a search looks through


# ---- what the TUI renders -----------------------------------------------------------


@dataclass(frozen=True)
class Header:
    provider: str
    model: str
    mode: str
    title: str  # "" until the first prompt creates the session


@dataclass(frozen=True)
class UserItem:
    message_id: int
    text: str
    created_at: str
    unanswered: str = ""  # why no reply answered it (it is not sent again), "" for a prompt that was answered
    kind: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantItem:
    message_id: int
    text: str
    created_at: str
    partial: bool = False  # cut short; `error` says why ("interrupted", the provider's error)
    error: str | None = None
    model: str = ""
    cut: bool = False  # stopped by the length limit (max_tokens)
    notice: str = ""  # what was said under it when it was cut (why, and what to raise)
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolItem:
    """One tool call with its result (`result` None: no result was stored)."""

    message_id: int  # the assistant message that made the call
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: str | None = None
    is_error: bool = False
    decision: str = ""  # auto | allowed | approved | denied | blocked | invalid | interrupted | limit
    summary: str = ""
    exit_code: int | None = None
    duration_ms: int | None = None
    result_message_id: int | None = None
    kind: Literal["tool"] = "tool"


@dataclass(frozen=True)
class DividerItem:
    """A line across the transcript: where a compaction summary took over, or the context was cleared."""

    text: str
    reason: Literal["compaction", "clear"]
    message_id: int  # the summary row or the marker row
    messages: int = 0  # compacted messages (compaction only)
    tokens_saved: int = 0
    kind: Literal["divider"] = "divider"


TranscriptItem = Union[UserItem, AssistantItem, ToolItem, DividerItem]


@dataclass(frozen=True)
class SessionSummary:
    id: int
    title: str
    created_at: str
    updated_at: str
    message_count: int
    provider: str
    model: str
    snippet: str = ""  # the best matching message of a search, matches in [brackets]


def _summary(conversation: Conversation, snippet: str = "") -> SessionSummary:
    c = conversation
    return SessionSummary(c.id, c.title, c.created_at, c.updated_at, c.message_count, c.provider, c.model, snippet)


# ---- the transcript, from stored rows (pure) ------------------------------------------


def _is_compaction_summary(row: StoredMessage) -> bool:
    return not row.user_visible and row.metadata.get("summary_kind") == "compaction" and bool(row.metadata.get("summary_of"))


def _shown_ids(message_id: int, rows: Mapping[int, StoredMessage], seen: set[int] | None = None) -> list[int]:
    """The user-visible messages a row stands for: itself, a pruned copy's original, a summary's range."""
    seen = set() if seen is None else seen
    row = rows.get(message_id)
    if row is None or message_id in seen:
        return []
    seen.add(message_id)
    if row.user_visible:
        return [message_id]
    if "pruned_from" in row.metadata:
        return _shown_ids(int(row.metadata["pruned_from"]), rows, seen)
    return [i for covered in row.metadata.get("summary_of") or [] for i in _shown_ids(int(covered), rows, seen)]


def _compaction_divider(summary: StoredMessage, rows: Mapping[int, StoredMessage], count: Callable[[Message], int]) -> DividerItem:
    def tokens(row: StoredMessage) -> int:
        return row.token_count if row.token_count is not None else count(row.message)

    originals = [rows[int(i)] for i in summary.metadata["summary_of"] if int(i) in rows]
    saved = max(sum(tokens(r) for r in originals) - tokens(summary), 0)
    n = len(summary.metadata["summary_of"])
    text = f"{n} message{'s' * (n != 1)} compacted · ~{saved:,} tokens saved"
    return DividerItem(text, "compaction", summary.id, n, saved)


def _pending_results(shown: list[StoredMessage]) -> dict[str, deque[tuple[int, ToolResultPart, StoredMessage]]]:
    """Tool results by call id, in order, with the index of the row that holds them."""
    results: dict[str, deque[tuple[int, ToolResultPart, StoredMessage]]] = {}
    for index, row in enumerate(shown):
        for part in row.message.tool_results:
            results.setdefault(part.tool_call_id, deque()).append((index, part, row))
    return results


def _tool_item(message_id: int, call_id: str, name: str, arguments: dict[str, Any],
               found: tuple[ToolResultPart, StoredMessage] | None) -> ToolItem:
    if found is None:
        return ToolItem(message_id, call_id, name, arguments)
    part, row = found
    meta = row.metadata
    return ToolItem(
        message_id, call_id, name or part.name, arguments, part.content, part.is_error,
        str(meta.get("decision", "")), str(meta.get("summary", "")), meta.get("exit_code"), meta.get("duration_ms"), row.id,
    )


def build_transcript(history: list[StoredMessage], count: Callable[[Message], int]) -> list[TranscriptItem]:
    """What the user scrolls back through, from a conversation's rows of either visibility (in history order).

    Each tool call is paired with the first result for it stored after it; a
    compaction divider follows the last message its summary covered; `count`
    gives the tokens of a row that has no cached count.
    """
    rows = {row.id: row for row in history}
    shown = [row for row in history if row.user_visible]
    position = {row.id: index for index, row in enumerate(shown)}
    dividers: dict[int, list[DividerItem]] = {}
    for summary in filter(_is_compaction_summary, history):
        covered = [position[i] for i in _shown_ids(summary.id, rows) if i in position]
        if covered:
            dividers.setdefault(max(covered), []).append(_compaction_divider(summary, rows, count))

    results = _pending_results(shown)
    claimed: set[tuple[int, str]] = set()
    items: list[TranscriptItem] = []
    for index, row in enumerate(shown):
        items.extend(_row_items(index, row, results, claimed))
        items.extend(dividers.get(index, []))
    return items


def _row_items(index: int, row: StoredMessage, results: dict[str, deque], claimed: set[tuple[int, str]]) -> list[TranscriptItem]:
    message = row.message
    if row.role == "user":
        return [UserItem(row.id, message.content, row.created_at, str(row.metadata.get(UNSENT_KEY) or ""))]
    if row.role == "assistant":
        items: list[TranscriptItem] = []
        if message.content or not message.tool_calls:
            error = row.metadata.get("error")
            items.append(AssistantItem(row.id, message.content, row.created_at, row.partial,
                                       str(error) if error else None, str(row.metadata.get("model", "")),
                                       row.metadata.get("stop_reason") == "length", str(row.metadata.get("notice") or "")))
        for call in message.tool_calls:
            waiting = results.get(call.id, deque())
            while waiting and waiting[0][0] < index:
                waiting.popleft()  # a result stored before this call answers an earlier call with the same id
            found = waiting.popleft() if waiting else None
            if found is not None:
                claimed.add((found[0], call.id))
            items.append(_tool_item(row.id, call.id, call.name, call.arguments, found[1:] if found else None))
        return items
    if row.role == "tool":
        return [  # a result whose call is not in the transcript still shows
            _tool_item(row.id, part.tool_call_id, part.name, {}, (part, row))
            for part in message.tool_results
            if (index, part.tool_call_id) not in claimed
        ]
    if row.role == "context" and row.metadata.get("marker") == CLEAR_MARKER:
        return [DividerItem("context cleared", "clear", row.id)]
    return []


# ---- the session ------------------------------------------------------------------------


def _with_overrides(loaded: LoadedConfig, overrides: Mapping[str, tuple[str, str]]) -> LoadedConfig:
    """`loaded` with `llm.*` string settings set as if given on the command line (`(value, command)`)."""
    config = copy.deepcopy(loaded.config)
    sources = dict(loaded.sources)
    for path, (value, command) in overrides.items():
        section, key = path.split(".")
        setattr(getattr(config, section), key, value)
        sources[path] = f"flag {command}"
    return LoadedConfig(config, sources, loaded.path, list(loaded.warnings))


def _summaries_by_worker(agent: Agent) -> None:
    """With the embedded model on the CPU summarizing, session summaries are made by a worker process, as
    after `zeph ask`. In the app, the summary's prompt replaced the conversation the model holds (one
    sequence) and the next message read the whole history again (after 12 turns with SmolLM2: 9-10 s
    instead of 2 s). On a GPU that re-reading is quick, and a second copy of the model might not fit."""
    from ..providers.local_loader import gpu_layers

    settings = agent.side_jobs.embedded_settings("summary")
    agent.session_memory.detached = settings is not None and gpu_layers(settings.extra.get("device", "")) == 0


class ChatSession:
    """Use `await ChatSession.open(...)`; close with `await session.aclose()`."""

    def __init__(self, loaded: LoadedConfig, env: Mapping[str, str], cwd: Path, approver: Approver,
                 store: ConversationStore, agent: Agent, conversation: Conversation | None) -> None:
        self.loaded = loaded
        self.env = env
        self.cwd = cwd
        self.approver = approver
        self.store = store
        self.agent = agent
        self.conversation = conversation
        self.warnings: list[str] = []
        self._overrides: dict[str, tuple[str, str]] = {}
        self._pending_system: str | None = None  # a /system given before the first prompt
        self._pending_enhance: str | None = None  # an /enhance given before the first prompt
        self._pending_profile: str | None = None  # a /profile NAME given before the first prompt
        self.staged: dict[str, Attachment] = {}  # files /attach added for the next message: as typed -> as read then
        self.elicitor: Elicitor | None = None  # asks the user for an MCP server's form (None: declined)
        self._closed = False
        self._learning: asyncio.Task | None = None  # the compression-guidelines updater, when enabled

    @classmethod
    async def open(
        cls,
        loaded: LoadedConfig,
        *,
        env: Mapping[str, str],
        cwd: Path,
        approver: Approver,
        session_id: int | None = None,
        continue_last: bool = False,
        mode: str | None = None,
        elicitor: Elicitor | None = None,
    ) -> "ChatSession":
        """Resolve the provider, open the conversation to resume (if any) and start the agent."""
        if continue_last and session_id is not None:
            raise UsageError("continue either the last session or session ID, not both")
        from ..providers import start_for_config

        start_for_config(loaded.config, env, loaded.sources)  # the embedded model loads while the session opens
        log_to(database_path(env).parent)
        store = ConversationStore(open_database(database_path(env)))
        try:
            conversation = _conversation_to_resume(store, session_id, continue_last)
            agent, warnings = await build_agent(loaded, store=store, env=env, cwd=cwd, approver=approver, mode=mode,
                                                elicitor=elicitor)
        except BaseException:
            store.close()
            raise
        _summaries_by_worker(agent)
        if agent.mcp is not None:
            agent.mcp.start_in_background()  # fresh tool lists for the cache; no turn waits for them
        session = cls(loaded, env, cwd, approver, store, agent, conversation)
        session.elicitor = elicitor
        session.warnings = warnings
        session.start_learning()
        session.start_code_index()
        return session

    def start_code_index(self) -> None:
        """Bring the project's code index up to date in the background (with `[index] auto_index`), and
        watch the project's files (with `[index] watch`); a turn never waits for either."""
        index = self.agent.extras.code_index
        if index is None:
            return
        if self.loaded.config.index.auto_index:
            index.build_in_background()
        if self.loaded.config.index.watch:
            index.watch()

    def start_learning(self) -> None:
        """Start the compression-guidelines updater in the background, when `[memory.compression_guidelines]`
        is enabled (once)."""
        if self._learning is None and self.loaded.config.memory.compression_guidelines.enabled:
            self._learning = asyncio.create_task(self._learn_guidelines())

    async def _learn_guidelines(self) -> None:
        """Wake every `update_interval_secs`; update the guidelines when enough losses wait."""
        while True:
            await asyncio.sleep(self.loaded.config.memory.compression_guidelines.update_interval_secs)
            try:
                await self.agent.guidelines.maybe_update()
            except Exception as exc:  # a background job: logged, never in the user's way
                log.error("compression guidelines updater failed", exc_info=exc)

    # ---- what is on screen --------------------------------------------------------------

    @property
    def provider(self) -> Provider:
        return self.agent.provider

    def header(self) -> Header:
        title = self.conversation.title if self.conversation else ""
        return Header(self.provider.name, self.agent.model_label, self.agent.mode, title)

    def transcript(self) -> list[TranscriptItem]:
        if self.conversation is None:
            return []
        history = self.store.history(self.conversation.id)
        return build_transcript(history, lambda message: count_message(self.agent.counter, message))

    def task_items(self) -> list[TaskItem]:
        """The session's task list, as todo_write last wrote it (empty before the first message)."""
        if self.conversation is None:
            return []
        from ..features.tasks.registry import task_items

        return task_items(self.store.db, self.conversation.id)

    def reply_limit(self) -> int:
        """The `max_tokens` a reply is requested with (what a length-cut reply ran into)."""
        assert self.agent.profile is not None, "the agent is started when the session opens"
        return reply_token_cap(self.agent.config.llm.max_tokens, self.agent.profile)

    def context_report(self) -> ContextReport:
        """What the next request would carry (before the first prompt: the prompt layers and tools alone)."""
        return self.agent.context_for(self._session_or_unsaved())[1]

    def context_sections(self) -> list[SentSection]:
        """The next request's messages and tools, block by block (`/context text`)."""
        tools = self.agent.offered_tools()
        messages, report, _ = self.agent.context_for(self._session_or_unsaved(), None, tools)
        return sent_sections(messages, report, tools.specs())

    def _unsaved_conversation(self) -> Conversation:
        """A stand-in for the session the first prompt will create (id 0 holds no messages)."""
        metadata = {"system": self._pending_system} if self._pending_system else {}
        if self._pending_enhance:
            metadata[ENHANCE_KEY] = self._pending_enhance
        if self._pending_profile is not None:
            metadata[PROFILE_KEY] = self._pending_profile
        return Conversation(0, "", "", "", self.provider.name, self.agent.model_label, str(self.cwd), metadata)

    # ---- turns ----------------------------------------------------------------------------

    def stage(self, raw: str) -> Attachment:
        """Attach the file `raw` names to the next message (`AttachmentError` says why it cannot be); it is read
        again when the message is sent."""
        attachment = self.agent.attachment(raw)
        self.agent.attachments([*(name for name in self.staged if name != raw), raw])  # together within the limit
        self.staged[raw] = attachment
        return attachment

    def unstage(self) -> list[Attachment]:
        """Drop the files staged for the next message; return them."""
        dropped, self.staged = list(self.staged.values()), {}
        return dropped

    async def run(self, prompt: str, *, system: str | None = None) -> AsyncGenerator[AgentEvent, None]:
        """One turn; the first prompt creates the session, titled from it. The files staged with `stage`, and the
        MCP resources the prompt mentions (`@server:uri`), go with it (read now; one that cannot be raises
        `AttachmentError` before anything is stored); the staged files are
        unstaged once the prompt is stored (those alone: a file staged while the turn waits for the session
        stays staged for the next message)."""
        sent = dict(self.staged)
        attachments = self.agent.attachments(list(sent))
        from ..features.mcp.mentions import attach_mentions  # @server:uri in the message: MCP resources attached

        mentioned, notes = await attach_mentions(self.agent, prompt, attachments)
        attachments += mentioned
        for note in notes:
            yield AgentWarning(note)
        if self.conversation is None:
            self._create(prompt, system)
        try:
            images = tuple(a.image for a in attachments if a.image is not None)  # an image goes as itself
            async for event in self.agent.run_turn(self.conversation, with_attachments(attachments, prompt), system=system,
                                                   images=images):
                if isinstance(event, TurnStarted):
                    self.conversation = event.conversation
                    self.staged = {raw: a for raw, a in self.staged.items() if sent.get(raw) is not a}
                yield event
        finally:  # also when the reader stops after the reply (a summary due is left to a worker)
            self._start_summary_worker()
            index = self.agent.extras.code_index
            if index is not None and self.loaded.config.index.auto_index:
                index.build_in_background()  # the turn's edits: only changed files are read again

    def _create(self, title: str, system: str | None = None) -> Conversation:
        """The session, created now (by its first prompt), with what /system, /enhance and /profile set before."""
        self.conversation = self.agent.new_conversation(title, system if system is not None else self._pending_system)
        self._pending_system = None
        if self._pending_enhance is not None:
            self.conversation = self.agent.set_enhancement(self.conversation, self._pending_enhance)
            self._pending_enhance = None
        if self._pending_profile is not None:
            self.conversation = self.agent.set_prompt_profile(self.conversation, self._pending_profile)
            self._pending_profile = None
        return self.conversation

    def _start_summary_worker(self) -> None:
        pending, self.agent.session_memory.pending = self.agent.session_memory.pending, None
        if pending is not None:
            from ..features.session_memory.worker import spawn  # the worker's module builds agents

            loaded = _with_overrides(self.loaded, self._overrides)
            spawn(pending, loaded, str(loaded.path) if loaded.path else None, self.cwd, self.env)

    async def compact(self) -> AsyncIterator[AgentEvent]:
        """Compact now (manual); nothing at all before the first prompt."""
        if self.conversation is None:
            return
        async for event in self.agent.compact(self.conversation):
            yield event

    # ---- sessions ---------------------------------------------------------------------------

    def sessions(self, query: str = "", limit: int = 50) -> list[SessionSummary]:
        """Recent sessions, newest first; with a query, those whose title contains it (newest first),
        then those with a matching message (best match first)."""
        limit = max(limit, 1)
        query = query.strip()
        if not query:
            return [_summary(c) for c in self.store.list_conversations(limit)]
        needle = query.casefold()
        found = {c.id: _summary(c) for c in self.store.list_conversations(TITLE_SCAN_LIMIT) if needle in c.title.casefold()}
        for hit in self.store.search(query, limit * SEARCH_HITS_PER_SESSION):
            if len(found) >= limit:
                break
            if hit.conversation_id in found or hit.role == "context":
                continue
            try:
                conversation = self.store.get_conversation(hit.conversation_id)
            except NotFound:  # deleted since
                continue
            found[hit.conversation_id] = _summary(conversation, " ".join(hit.snippet.split()))
        return list(found.values())[:limit]

    def switch(self, session_id: int) -> Conversation:
        """Make session `session_id` the current one (NotFound when there is none)."""
        conversation = self.store.get_conversation(session_id)
        self._forget()
        self.conversation = conversation
        return conversation

    def new(self) -> None:
        """Leave the current session; the next prompt starts a new one."""
        self._forget()

    def clear(self) -> int:
        """A fresh context in the same session: hide every message from the agent (the user keeps
        them, with a "context cleared" divider); return how many were hidden."""
        if self.conversation is None:
            return 0
        lock = self.store.turn_lock(self.conversation.id)
        if not lock.try_acquire():
            raise SessionBusy(f"another zeph is running a turn on session {self.conversation.id}: "
                              "/clear again when it has ended")
        try:
            hidden = CompactionStore(self.store.db).clear_agent_context(self.conversation.id)
        finally:
            lock.release()
        self.agent.compactor.reset()
        self.agent.compactor.forget_exhaustion(self.conversation)  # a fresh context may compact again
        self.conversation = self.store.get_conversation(self.conversation.id)
        return hidden

    def _forget(self) -> None:
        self.conversation = None
        self._pending_system = None
        self._pending_enhance = None
        self.agent.turn_memory = memory_feature.TurnMemory()  # the last session's recall and memories are not this one's
        self.agent.prepared = Prepared()  # nor its sources' outcomes (a source left out is that turn's)
        self.agent.extras.reset()
        self.agent.compactor.reset()  # compaction state is per session

    # ---- settings ----------------------------------------------------------------------------

    def set_mode(self, mode: str) -> None:
        set_mode(self.agent, mode)

    def set_system(self, text: str) -> None:
        """The topic prompt for this and later turns; empty text removes it."""
        text = text.strip()
        if self.conversation is None:
            self._pending_system = text or None
            return
        self.conversation = self.agent.with_metadata(self.conversation, "system", text or None)

    def set_enhancement(self, text: str) -> None:
        """The session's enhancement prompt for this and later turns; empty text goes back to the configured one."""
        if self.conversation is None:
            self._pending_enhance = text.strip()
            return
        self.conversation = self.agent.set_enhancement(self.conversation, text)

    def prompt_profile(self) -> str:
        """The global prompt profile this session uses ("" = none)."""
        return session_profile(self._session_or_unsaved().metadata, self.agent.config.prompt.profile)

    def set_prompt_profile(self, name: str) -> None:
        """The session's global prompt profile from now on ("" or "none" = none); ValueError names an unknown one."""
        name = "" if name.strip().lower() == "none" else name.strip()
        if self.conversation is None:
            self.agent.set_prompt_profile(self._unsaved_conversation(), name)  # validates
            self._pending_profile = name
            return
        self.conversation = self.agent.set_prompt_profile(self.conversation, name)

    def _session_or_unsaved(self) -> Conversation:
        return self.conversation or self._unsaved_conversation()

    async def set_model(self, name: str) -> list[str]:
        """Use model `name` from the next request on; return start-up warnings not shown before."""
        name = name.strip()
        if not name:
            raise UsageError("which model? give its name, e.g. /model gpt-4o")
        return await self._rebuild({**self._overrides, "llm.model": (name, "/model")})

    async def set_provider(self, name: str) -> list[str]:
        """Use provider `name` (a backend or a [[llm.providers]] entry) with its own model."""
        name = name.strip()
        if not name:
            raise UsageError("which provider? e.g. /provider anthropic, or the name of a [[llm.providers]] entry")
        return await self._rebuild({"llm.provider": (name, "/provider"), "llm.model": ("", "/provider")})

    async def _rebuild(self, overrides: dict[str, tuple[str, str]]) -> list[str]:
        """A new provider and agent with these overrides; on any failure the current ones stay."""
        loaded = _with_overrides(self.loaded, overrides)
        agent, warnings = await build_agent(loaded, store=self.store, env=self.env, cwd=self.cwd,
                                            approver=self.approver, mode=self.agent.mode, elicitor=self.elicitor)
        _summaries_by_worker(agent)
        if agent.mcp is not None:
            agent.mcp.start_in_background()
        old = self.agent
        self.agent, self._overrides = agent, overrides
        await close_agent(old)
        self.start_code_index()
        new = [w for w in warnings if w not in self.warnings]
        self.warnings.extend(new)
        return new

    # ---- export and close ---------------------------------------------------------------------

    def export(self, path: Path | None = None, *, overwrite: bool = False) -> Path:
        """Write the session to `path` (relative to the session's directory) or ./zeph-session-ID.md:
        JSON with every stored message when the name ends in .json, else the visible transcript as
        Markdown; a bare "json" or "md" picks the default name with that format. An existing file
        is only replaced with `overwrite`."""
        if self.conversation is None:
            raise ZephError("nothing to export yet: the session starts with the first prompt")
        conversation = self.store.get_conversation(self.conversation.id)
        if path is None or str(path) in ("md", "json"):
            path = Path(f"zeph-session-{conversation.id}.{path or 'md'}")
        target = self.cwd / path.expanduser()
        if target.suffix.lower() == ".json":
            document = conversation_json(conversation, self.store.history(conversation.id))
            text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        else:
            text = conversation_markdown(conversation, self.store.history(conversation.id, user_visible=True))
        try:
            with open(target, "w" if overwrite else "x", encoding="utf-8") as file:
                file.write(text)
        except FileExistsError:
            raise ZephError(f"{target} already exists: export to another file, or overwrite it") from None
        except OSError as exc:
            raise ZephError(f"cannot write {target}: {exc.strerror or exc}") from None
        return target

    def long_term_memory(self) -> LongTermMemory:
        """Long-term memory as this session sees it, for /memory."""
        conversation_id = self.conversation.id if self.conversation else None
        return memory_feature.LongTermMemory.here(memory_feature.MemoryStore(self.store.db), self.cwd, conversation_id=conversation_id)

    async def mcp_prompts(self) -> tuple[list[tuple[str, Any]], list[str]]:
        """The running MCP servers' prompts (servers start now if no turn started them) and start-up notes."""
        mcp = self.agent.mcp
        if mcp is None:
            return [], []
        notes = await self.agent.extras.start_mcp()
        return await mcp.list_prompts(), notes

    async def mcp_prompt(self, server: str, name: str, arguments: Mapping[str, str]) -> list[tuple[str, str]]:
        """One MCP prompt's messages as (role, text); `ZephError` (one line) when it cannot be had."""
        mcp = self.agent.mcp
        if mcp is None:
            raise ZephError("no MCP servers are configured ([[mcp.servers]] in the config)")
        await self.agent.extras.start_mcp()
        try:
            return list(await mcp.get_prompt(server, name, arguments))
        except mcp_feature.PromptError as exc:
            raise ZephError(str(exc)) from None

    def add_messages(self, messages: Sequence[tuple[str, str]], title: str) -> None:
        """Messages ("user" or "assistant", as a prompt's earlier turns) into the session as they are, sent with
        the next prompt; a session with no message yet is created for them, titled `title`."""
        conversation = self.conversation or self._create(title)
        counter = self.agent.counter
        for role, text in messages:
            message = Message.assistant(text) if role == "assistant" else Message.user(text)
            self.store.add_message(conversation.id, message, token_count=count_message(counter, message),
                                   token_counter=counter.name)
        self.conversation = self.store.get_conversation(conversation.id)

    def metrics_lines(self) -> list[str]:
        """The sandbox state, what the last turn recalled, then the session's compaction metrics, one line
        each (none before the first prompt)."""
        sandbox = [self.agent.sandbox.state().line()]
        if self.conversation is None:
            return sandbox
        memory = self.agent.memory
        recalled = memory_feature.memory_lines(self.agent.turn_memory, self.context_report(), memory.embedder_label() if memory else "",
                                echoes=memory_feature.echoing_replies(self.agent.store, self.conversation.id))
        recalled += self.agent.session_memory.status_lines()
        loadable = LOAD_SKILL.name in self.agent.offered_tools().tools
        metrics = CompactionStore(self.agent.store.db).metrics(self.conversation.id)
        return sandbox + recalled + self.agent.extras.lines(loadable=loadable) + metrics.lines()

    async def aclose(self) -> None:
        """Close the side-job providers, the main provider and the store (once)."""
        if self._closed:
            return
        self._closed = True
        if self._learning is not None:
            self._learning.cancel()
            await asyncio.gather(self._learning, return_exceptions=True)
        try:
            await close_agent(self.agent)
        finally:
            self.store.close()


def _conversation_to_resume(store: ConversationStore, session_id: int | None, continue_last: bool) -> Conversation | None:
    if session_id is not None:
        return store.get_conversation(session_id)
    if not continue_last:
        return None
    conversation = store.latest_conversation()
    if conversation is None:
        raise NotFound("no previous session to continue: there are no sessions yet")
    return conversation
