"""The providers behind the agent's side jobs: summaries, compaction probes, compress_context, sub-agents.

Invariant: a purpose without settings of its own uses the main provider; any
other adapter is built (and its SDK imported) only on first use, once per
distinct settings value, and closed by `aclose` — never the main provider,
which belongs to the caller.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..models import ModelProfile
from .base import Provider, ProviderSettings

PURPOSES = ("summary", "probe", "compress", "subagent")


class ProviderPool:
    def __init__(self, main: Provider, settings: Mapping[str, ProviderSettings | None] | None = None) -> None:
        unknown = set(settings or {}) - set(PURPOSES)
        if unknown:
            raise ValueError(f"unknown provider purpose(s): {', '.join(sorted(unknown))}")
        self.main = main
        self.settings = dict(settings or {})
        self._built: list[tuple[ProviderSettings, Provider]] = []  # settings hold a dict: compared, not hashed
        self._profiles: dict[int, ModelProfile] = {}

    def settings_for(self, purpose: str) -> ProviderSettings | None:
        if purpose not in PURPOSES:
            raise ValueError(f"unknown provider purpose {purpose!r}")
        return self.settings.get(purpose)

    def get(self, purpose: str) -> Provider:
        settings = self.settings_for(purpose)
        if settings is None or settings == self.main.settings:
            return self.main
        for built_settings, provider in self._built:
            if built_settings == settings:
                return provider
        from . import create_provider

        provider = create_provider(settings)
        self._built.append((settings, provider))
        return provider

    def label(self, purpose: str) -> str:
        """The model a purpose uses, as shown to the user."""
        settings = self.settings_for(purpose)
        if settings is None or settings == self.main.settings:
            return getattr(self.main, "display_model", self.main.model)
        return settings.model

    async def profile(self, provider: Provider) -> ModelProfile:
        key = id(provider)
        if key not in self._profiles:
            self._profiles[key] = await provider.profile()
        return self._profiles[key]

    async def aclose(self) -> None:
        built, self._built = self._built, []
        for _, provider in built:
            await provider.aclose()
