"""Side jobs: the plain completions summaries, probes and compress_context make, each on its provider.

Invariant: a side job is one non-streamed request with no tools, capped by the
configured reply limit and the provider's profile, recorded in the debug dump
like every other request; its failure reaches the caller as the provider's
typed error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ProviderError
from ..messages import Message, ReplyBuilder, normalize_stop_reason
from ..models import ModelProfile, reply_token_cap
from ..providers.base import ChatRequest, Provider
from ..providers.pool import ProviderPool
from ..providers.settings import ProviderSettings

if TYPE_CHECKING:  # annotations only: the dump is imported when `[debug] dump_dir` is set
    from .debug_dump import DebugDump


def record_response(dump: DebugDump | None, dump_id: int | None, builder: ReplyBuilder, error: str | None = None) -> None:
    """The reply (or the error) to a dumped request, when the debug dump is on."""
    if dump is not None and dump_id is not None:
        dump.response(
            dump_id,
            text=builder.content,
            tool_calls=[call for call, _ in builder.parsed_tool_calls()],
            usage=builder.usage,
            stop_reason=normalize_stop_reason(builder.stop_reason),
            error=error,
        )


class SideJobs:
    def __init__(
        self,
        pool: ProviderPool,
        main: Provider,
        main_profile: Callable[[], ModelProfile | None],
        configured_max_tokens: int,
        dump: DebugDump | None,
    ) -> None:
        self.pool = pool
        self.main = main
        self.main_profile = main_profile  # the main provider's profile: its window may be learned at run time
        self.configured_max_tokens = configured_max_tokens
        self.dump = dump

    def embedded_settings(self, purpose: str) -> ProviderSettings | None:
        """The settings of the embedded model `purpose` uses (None when it uses another kind)."""
        settings = self.pool.settings_for(purpose) or self.main.settings
        return settings if settings.kind == "local" else None

    def small_embedded(self, purpose: str) -> str:
        """The file name of the small embedded model when `purpose` runs on it (else "")."""
        from ..providers import is_embedded_model

        settings = self.embedded_settings(purpose)
        return Path(settings.model).name if settings is not None and is_embedded_model(settings.model) else ""

    async def _profile(self, provider: Provider) -> ModelProfile:
        profile = self.main_profile() if provider is self.main else await self.pool.profile(provider)
        assert profile is not None, "start the agent first"
        return profile

    async def complete(self, prompt: str, *, max_tokens: int = 2048, purpose: str = "summary") -> str:
        """One plain completion for `purpose` ("summary", "probe" or "compress"), by default on the main provider."""
        provider = self.pool.get(purpose)
        profile = await self._profile(provider)
        label = getattr(provider, "display_model", provider.model)
        dump_id = self.dump.request(provider=provider.name, model=label) if self.dump else None
        request = ChatRequest(
            messages=(Message.user(prompt),),
            max_tokens=min(max_tokens, reply_token_cap(self.configured_max_tokens, profile)),
            temperature=0.0,
            stream=False,
            context_window=profile.context_window,
            wire_tap=self.dump.tap(dump_id) if self.dump else None,
        )
        builder = ReplyBuilder()
        try:
            async for event in provider.stream(request):
                builder.add(event)
        except ProviderError as exc:
            record_response(self.dump, dump_id, builder, str(exc))
            raise
        record_response(self.dump, dump_id, builder)
        return builder.content

    async def window(self, purpose: str) -> int:
        """The context window of the provider a side job runs on (the main one's may have been learned)."""
        return (await self._profile(self.pool.get(purpose))).context_window

    def label(self, purpose: str) -> str:
        return self.pool.label(purpose)

    async def aclose(self) -> None:
        """Close the side-job providers built for this agent (the main provider is the caller's)."""
        await self.pool.aclose()
