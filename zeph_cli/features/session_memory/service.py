"""Cross-session summaries and the user profile for one agent: made in the background after
a reply, sent to later turns as the "recent conversations" and "user profile" blocks.

Invariant: nothing here delays a reply — summarizing starts only after the reply is
stored, as a task of its own, one at a time (`detached`, in `zeph ask` and in the chat app with the
embedded model on the CPU: in a worker process (`worker.py`), which delays neither the reply
nor the exit and leaves the conversation the model holds alone); its failure (provider error, a reply the
checks reject) moves only the attempt's clock and is written to the log file, never
shown. Nothing generated goes in unchecked: a summary or profile update that fails
`generated_check` (not about what the user wrote, a copied message, code, a question, assistant
boilerplate, its own instructions) is discarded, its reason kept for `zeph profile`; a stored
automatic text that fails the checks needing no sources is not sent. A session is summarized once it has `min_user_turns` user turns, at most once
per `min_interval_minutes`, and only when turns came since; the profile at most once per
`update_interval_hours`, only when digests came since, starting from the current text
(a user's edit included). Disabled ([memory.cross_session] or
[memory.profile] enabled = false; unset and the summary model the small embedded one) or isolated:
nothing is made or sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, UTC
from pathlib import Path

from ...config import MemoryConfig
from ...context.assembler import PromptLayer
from ...log import get_logger
from ...messages import TextPart
from ...store import Conversation, ConversationStore
from .store import DigestStore, UserProfile
from ...tokens import TokenCounter
from ...tools.confinement import workspace_root

log = get_logger("session_memory")

RECENT_LAYER = "recent conversations"
PROFILE_LAYER = "user profile"
SUMMARY_REPLY_TOKENS = 1024  # room for a small model's reasoning before the few lines kept
PROFILE_SOURCE_DIGESTS = 10  # the newest digests an automatic profile update reads


def _stored_verdict(text: str, what: str):
    """The checks a stored automatic text passes before it is sent (those that need only the text)."""
    from ...context.generated_check import check_stored
    from ...context.session_memory_blocks import instructions

    return check_stored(text, what=what, instructions=instructions())


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _parse(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return _utc(datetime.fromisoformat(stamp))
    except ValueError:
        return None


@dataclass
class SessionMemoryDeps:
    """What the summaries and profile use: the store, the [memory] config, a plain completion on the
    summary provider, the tokenizer, this agent's project (workspace root) and the clock."""

    store: ConversationStore
    config: MemoryConfig
    summarize: Callable[..., Awaitable[str]]  # (prompt, *, max_tokens, purpose) -> text
    counter: Callable[[], TokenCounter]
    project: str
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # The small embedded model's file name when it is the summary model (else ""): what it writes is
    # boilerplate or a copied reply more often than a summary, so summaries and the profile are off unless set.
    small_summarizer: Callable[[], str] = field(default=lambda: "")


class SessionMemory:
    def __init__(self, deps: SessionMemoryDeps) -> None:
        self.deps = deps
        self.digests = DigestStore(deps.store.db)
        self._task: asyncio.Task | None = None
        self.detached = False  # leave the job to a worker process (`worker.py`)
        self.pending: int | None = None  # the session that worker should summarize

    # ---- switches ---------------------------------------------------------------------------

    @property
    def summaries_on(self) -> bool:
        enabled = self.deps.config.cross_session.enabled
        return enabled if enabled is not None else not self.deps.small_summarizer()

    @property
    def profile_on(self) -> bool:
        enabled = self.deps.config.profile.enabled
        return enabled if enabled is not None else not self.deps.small_summarizer()

    def status_lines(self) -> list[str]:
        """What `zeph context` and `/context` say about the two blocks beyond their rows: that they are off
        because the summary model is the small embedded one (and how to turn them on), and a stored text
        that is not sent because it fails the checks."""
        lines: list[str] = []
        off = [name for name, key in (("session summaries", self.deps.config.cross_session.enabled),
                                      ("the user profile", self.deps.config.profile.enabled)) if key is None]
        small = self.deps.small_summarizer() if off else ""
        if small:
            lines.append(
                f"{' and '.join(off)}: off — the summary model is the small embedded one ({small}), whose summaries "
                "are mostly assistant boilerplate or copied replies; to turn them on, configure a summary provider: "
                '[llm] summary_model = "ollama/llama3.2" (any "type/model") or an [llm.summary_provider] table '
                "(enabled = true in [memory.cross_session] / [memory.profile] uses the embedded model anyway)"
            )
        if self.profile_on:
            profile = self.digests.profile()
            if profile is not None and profile.source == "auto" and profile.text.strip():
                verdict = _stored_verdict(profile.text, "profile")
                if not verdict.ok:
                    lines.append(f"user profile: not sent, it fails the checks: {verdict.reason} "
                                 "(zeph profile edit or zeph profile clear)")
        return lines

    def _now(self) -> datetime:
        return _utc(self.deps.clock())

    # ---- what a turn sends ------------------------------------------------------------------

    def layers(self, conversation: Conversation, available_tokens: int, *, isolated: bool = False) -> list[PromptLayer]:
        """The "recent conversations" and "user profile" per-turn blocks, each within its share of
        `available_tokens` (0: no budget); none at all when `isolated` (worldbook isolation)."""
        if isolated:
            return []
        layers: list[PromptLayer] = []
        limit = self.deps.config.cross_session.max_summaries
        if self.summaries_on and limit > 0:
            # a few more than sent: one stored before the checks existed that fails them is not sent
            found = self.digests.recent(project=self.deps.project, exclude=conversation.id or None, limit=limit * 2)
            text = detail = ""
            if found:  # the blocks' module loads when there is something to render
                from ...context.session_memory_blocks import DigestEntry, block_cap, render_recent_conversations

                usable = [d for d in found if _stored_verdict(d.text, "summary").ok]
                failing = len(found) - len(usable)
                usable = usable[:limit]
                entries = [
                    DigestEntry(d.title, d.updated_at[:10], d.text, d.project == self.deps.project) for d in usable
                ]
                block = render_recent_conversations(entries, block_cap(available_tokens), self.deps.counter().count)
                text = block.text
                detail = f"{block.shown} session{'s' * (block.shown != 1)}"
                if block.dropped:
                    detail += f", {block.dropped} left out for room"
                if failing:
                    detail += f", {failing} failing the checks not sent (zeph profile sessions)"
            layers.append(PromptLayer(RECENT_LAYER, text, detail if text else ""))
        if self.profile_on:
            profile = self.digests.profile()
            if profile is not None and profile.text.strip() and (
                profile.source == "user" or _stored_verdict(profile.text, "profile").ok
            ):
                from ...context.session_memory_blocks import block_cap, render_user_profile

                block = render_user_profile(profile.text, block_cap(available_tokens), self.deps.counter().count)
                layers.append(PromptLayer(PROFILE_LAYER, block.text, f"{profile.source}, {profile.updated_at[:10]}"))
        return layers

    # ---- the digest of a session ---------------------------------------------------------------

    def digest_due(self, conversation_id: int) -> int | None:
        """The session's user-turn count when a digest is due now, else None."""
        if not self.summaries_on or not conversation_id:
            return None
        config = self.deps.config.cross_session
        turns = self.digests.user_turns(conversation_id)
        if turns < config.min_user_turns:
            return None
        digest = self.digests.get(conversation_id)
        if digest is None:
            return turns
        if turns <= digest.seen_turns:
            return None  # nothing new since the last one, kept or discarded
        last = _parse(digest.attempted_at)
        if last is not None and self._now() - last < timedelta(minutes=config.min_interval_minutes):
            return None
        return turns

    async def digest(self, conversation: Conversation) -> bool:
        """Summarize the session when due; True when a digest was stored."""
        turns = self.digest_due(conversation.id)
        if turns is None:
            return False
        rows = self.deps.store.history(conversation.id, user_visible=True)
        spoken = [
            (row.message.role, "".join(p.text for p in row.message.parts if isinstance(p, TextPart)))
            for row in rows
        ]
        from ...context.session_memory_blocks import clean_digest, digest_prompt, transcript_excerpt

        excerpt = transcript_excerpt(spoken)
        project = self._project_of(conversation)
        stamp = self._now().isoformat(timespec="microseconds")
        # The attempt counts from here: one cut short (a failure, `zeph ask` exiting) waits the interval too.
        self.digests.attempted(conversation.id, project, stamp)
        try:
            reply = await self.deps.summarize(
                digest_prompt(conversation.title, excerpt), max_tokens=SUMMARY_REPLY_TOKENS, purpose="summary"
            )
        except Exception as exc:  # noqa: BLE001 — a background job: logged, retried after the interval
            log.warning("summarizing session %s for other sessions failed: %s", conversation.id, exc)
            return False
        text = clean_digest(reply, source_chars=len(excerpt), count=self.deps.counter().count)
        if text is None:
            reason = "empty, markup only or no shorter than the session"
        else:
            from ...context.generated_check import Said, check_generated
            from ...context.session_memory_blocks import instructions

            said = Said([t for r, t in spoken if r == "user"], [t for r, t in spoken if r == "assistant"], instructions())
            reason = check_generated(text, said, what="summary").reason
        if reason:
            self.digests.discard(conversation.id, project, reason, turns, stamp)
            log.warning("the summary of session %s was discarded: %s; the reply was %r", conversation.id, reason,
                        reply[:400])
            return False
        assert text is not None
        self.digests.save(conversation.id, project, text, turns, stamp)
        log.info("summarized session %s (%d user turns) for other sessions", conversation.id, turns)
        return True

    def _project_of(self, conversation: Conversation) -> str:
        """The workspace root the session ran in (this agent's, for a session without a directory)."""
        if not conversation.cwd:
            return self.deps.project
        try:
            return str(workspace_root(Path(conversation.cwd)))
        except OSError:
            return conversation.cwd

    # ---- the user profile ----------------------------------------------------------------------

    def profile_due(self) -> bool:
        if not self.profile_on:
            return False
        profile = self.digests.profile()
        attempted = profile.attempted_at if profile is not None else None
        if not self.digests.updated_since(attempted):
            return False  # no digest since the last update
        last = _parse(attempted)
        hours = self.deps.config.profile.update_interval_hours
        return last is None or self._now() - last >= timedelta(hours=hours)

    async def update_profile(self) -> bool:
        """Update the profile from the newest digests when due; True when new text was stored."""
        if not self.profile_due():
            return False
        from ...context.session_memory_blocks import clean_profile, profile_prompt

        profile = self.digests.profile()
        current = profile.text if profile is not None else ""
        if profile is not None and profile.source == "auto" and not _stored_verdict(current, "profile").ok:
            current = ""  # a profile stored before the checks that fails them is no place to start from
        digests = self.digests.all()[:PROFILE_SOURCE_DIGESTS]
        sources = [d.text for d in digests]
        stamp = self._now().isoformat(timespec="microseconds")
        self.digests.profile_attempted(stamp)  # a failed or cut-short update waits the interval too
        try:
            reply = await self.deps.summarize(
                profile_prompt(current, sources), max_tokens=SUMMARY_REPLY_TOKENS, purpose="summary"
            )
        except Exception as exc:  # noqa: BLE001 — a background job: logged, retried after the interval
            log.warning("updating the user profile failed: %s", exc)
            return False
        text = clean_profile(reply, count=self.deps.counter().count)
        if text is None:
            log.info("the user profile update found nothing stable to keep; the profile is unchanged")
            return False
        from ...context.generated_check import check_generated

        verdict = check_generated(text, self._said_in([d.conversation_id for d in digests], current), what="profile")
        if not verdict.ok:
            self.digests.discard_profile(verdict.reason, stamp)
            log.warning("the user profile update was discarded: %s; the reply was %r", verdict.reason, reply[:400])
            return False
        self.digests.set_profile(text, "auto", stamp)
        log.info("updated the user profile from %d session summaries", len(sources))
        return True

    def _said_in(self, conversation_ids: list[int], current: str):
        """What a profile update may draw on: the user's messages and the replies in the summarized sessions,
        and the current profile (the user's text, or an automatic one that passes the checks) as known."""
        from ...context.generated_check import Said
        from ...context.session_memory_blocks import instructions

        user: list[str] = []
        replies: list[str] = []
        for conversation_id in conversation_ids:
            for row in self.deps.store.history(conversation_id, user_visible=True):
                text = "".join(p.text for p in row.message.parts if isinstance(p, TextPart))
                if row.message.role == "user":
                    user.append(text)
                elif row.message.role == "assistant":
                    replies.append(text)
        return Said(user, replies, instructions(), known=[current] if current.strip() else [])

    # ---- in the background ----------------------------------------------------------------------

    def after_reply(self, conversation: Conversation, *, isolated: bool = False) -> None:
        """Start summarizing (and then the profile) in the background when either is due; the reply
        is stored and shown first. One job at a time: a turn while one runs starts none. An `isolated`
        session (worldbook isolation) is not summarized: it stays out of the other sessions. With
        `detached` set, nothing starts here: `pending` names the session for a worker
        process that outlives the command."""
        if isolated or (self._task is not None and not self._task.done()):
            return
        if self.digest_due(conversation.id) is None and not self.profile_due():
            return
        if self.detached:
            self.pending = conversation.id
            return
        self._task = asyncio.get_running_loop().create_task(self.run_due(conversation), name="zeph-session-digest")

    async def run_due(self, conversation: Conversation) -> None:
        """The session's digest, then the profile, each only when due; failures are logged."""
        try:
            await self.digest(conversation)
            await self.update_profile()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never in the user's way
            log.warning("cross-session summary job failed", exc_info=exc)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def aclose(self) -> None:
        """Cancel a running job (it changes nothing it has not finished)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 — the job is being stopped: whatever it ended with no longer matters
                pass

    # ---- for the commands and the chat app -------------------------------------------------------

    def profile(self) -> UserProfile | None:
        return self.digests.profile()

    def set_profile(self, text: str) -> UserProfile:
        """The user's own profile text (an automatic update later starts from it)."""
        return self.digests.set_profile(text.strip(), "user")

    def clear_profile(self) -> bool:
        return self.digests.clear_profile()
