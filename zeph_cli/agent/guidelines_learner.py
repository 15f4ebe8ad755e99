"""Failure-driven compression guidelines (ACON) for one agent: record context losses seen
after a compaction, turn enough of them into better preservation rules, and give the
summarizer the active rules.

Invariant: with `[memory.compression_guidelines] enabled = false` nothing is recorded,
nothing is called and `active_text()` is empty, so summary prompts are unchanged; an
update that fails (provider error, unusable answer) changes nothing and is logged; the
user channel never hears of any of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..config import CompressionGuidelinesConfig
from ..errors import ZephError
from ..log import get_logger
from ..store import Conversation, ConversationStore
from ..store.guidelines import GuidelinesStore
from ..tokens import TokenCounter

log = get_logger("guidelines")


@dataclass
class LearnerDeps:
    """What the learner uses: the store, its config section, a plain completion and the tokenizer."""

    store: ConversationStore
    config: CompressionGuidelinesConfig
    summarize: Callable[..., Awaitable[str]]  # (prompt, *, max_tokens) -> text, on the summary provider
    counter: Callable[[], TokenCounter]


class GuidelinesLearner:
    def __init__(self, deps: LearnerDeps) -> None:
        self.deps = deps
        self.store = GuidelinesStore(deps.store.db)

    @property
    def config(self) -> CompressionGuidelinesConfig:
        return self.deps.config

    def after_reply(self, conversation: Conversation, text: str) -> bool:
        """Scan a model reply inside a post-compaction window; True when a loss was recorded."""
        config = self.config
        if not config.enabled or not text:
            return False
        snapshot = self.store.loss_window_snapshot(conversation.id, config.detection_window_turns)
        if snapshot is None:
            return False
        from ..context.compaction.guidelines import FailurePair, detect_context_loss

        reason = detect_context_loss(text)
        if reason is None:
            return False
        self.store.add_failure(conversation.id, FailurePair(snapshot, reason))
        self.store.cleanup(config.max_stored_pairs)
        log.warning("context loss after compaction in session %s: %s", conversation.id, reason)
        return True

    def active_text(self) -> str:
        if not self.config.enabled:
            return ""
        active = self.store.active()
        return active.text if active else ""

    def update_due(self) -> bool:
        return self.config.enabled and self.store.unprocessed_count() >= self.config.update_threshold

    async def maybe_update(self) -> int | None:
        """When enough losses wait, synthesize and store new guidelines; the new version, or None."""
        if not self.update_due():
            return None
        from ..context.compaction.guidelines import sanitize_guidelines, synthesis_prompt

        config = self.config
        taken = self.store.unprocessed(config.max_pairs_per_update)
        active = self.store.active()
        prompt = synthesis_prompt(active.text if active else None, [pair for _, pair in taken],
                                  max_tokens=config.max_guidelines_tokens)
        try:
            reply = await self.deps.summarize(prompt, max_tokens=2 * config.max_guidelines_tokens)
        except ZephError as exc:
            log.warning("compression guidelines update failed, %d losses wait: %s", len(taken), exc)
            return None
        text = sanitize_guidelines(reply, max_tokens=config.max_guidelines_tokens, counter=self.deps.counter())
        if not text:
            log.warning("compression guidelines update gave no usable rules; %d losses wait", len(taken))
            return None
        version = self.store.add_version(text, [row_id for row_id, _ in taken])
        losses = f"{len(taken)} context loss" + ("es" if len(taken) != 1 else "")
        log.info("compression guidelines version %d learned from %s", version, losses)
        return version
