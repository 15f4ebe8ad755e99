"""What building one provider adapter needs, resolved from config and environment.

Invariant: a plain value with no behaviour and no imports beyond the standard library, so choosing a
provider (and starting the embedded model's load early) costs no adapter, SDK or event-loop import.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProviderSettings:
    """Everything needed to build one adapter, resolved from config and environment."""

    kind: str  # anthropic | openai | compatible | ollama | local
    name: str  # what the user calls it (entry name or kind)
    model: str
    base_url: str = ""
    api_key: str = ""
    api_key_env: str = ""
    timeout_secs: float = 120.0
    max_retries: int = 2
    extra: dict = field(default_factory=dict)
