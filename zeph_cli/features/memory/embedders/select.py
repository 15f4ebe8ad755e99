"""Which embedder a config asks for: the main provider's embedding model, or an embedded (offline) one.

Rules, in order:
1. The selected provider is not openai, ollama or compatible (anthropic, local, or none
   resolved) → the embedded embedder `[memory] embedder` names (offline).
2. The selected provider is a `[[llm.providers]]` entry with its own `embedding_model`
   → that model, on that entry's endpoint.
3. `[llm] embedding_model` (env ZEPH_LLM_EMBEDDING_MODEL) is set, from a source at
   least as strong as the one that chose the provider → that model on the provider's
   endpoint. (Like `[llm] model`, it is not inherited by a provider picked with
   `--provider`: its embedding model would be another server's.)
4. Otherwise → the embedded embedder `[memory] embedder` names: minilm (the default,
   all-MiniLM-L6-v2 through onnxruntime) or wordllama.

Invariant: choosing is pure (config and resolved provider settings in, a choice out);
importing this module imports no numpy, SDK, onnxruntime or wordllama — an embedder's
module is imported only when that embedder is built. Each choice's `stored_model` is the
built embedder's `model`, so switching embedders never mixes vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Embedder
from .embedded import MODEL as WORDLLAMA_MODEL  # both modules defer their heavy imports to load()
from .minilm import MODEL as MINILM_MODEL

if TYPE_CHECKING:
    from ....config import Config
    from ....providers.base import ProviderSettings

_WIRES = {"openai": "openai", "compatible": "openai", "ollama": "ollama"}


@dataclass(frozen=True)
class EmbeddingChoice:
    wire: str  # "embedded", "openai" (openai and compatible servers) or "ollama"
    model: str  # the model as the endpoint names it (embedded: "minilm/all-MiniLM-L6-v2-int8", "wordllama/l2_supercat_256")
    base_url: str = ""
    provider: str = ""  # the provider's name (its [[llm.providers]] entry name, or its kind)

    @property
    def stored_model(self) -> str:
        """The name stored with the vectors (= the built embedder's `model`)."""
        if self.wire == "embedded":
            return self.model
        from .remote import stored_model_name

        return stored_model_name(self.wire, self.model, self.base_url)


EMBEDDED_MODELS = {"minilm": MINILM_MODEL, "wordllama": WORDLLAMA_MODEL}  # [memory] embedder -> stored model
EMBEDDED = EmbeddingChoice("embedded", MINILM_MODEL)  # the default


def embedded_choice(config: Config) -> EmbeddingChoice:
    """The embedded embedder `[memory] embedder` names."""
    return EmbeddingChoice("embedded", EMBEDDED_MODELS[config.memory.embedder])


def choose_embedding(
    config: Config, settings: ProviderSettings | None, *, sources: Mapping[str, str] | None = None
) -> EmbeddingChoice:
    """Apply the rules above. `settings` is the resolved main provider (None: none could be
    resolved); `sources` says where each config key came from (see `config.load`)."""
    wire = _WIRES.get(settings.kind) if settings is not None else None
    if settings is None or wire is None:
        return embedded_choice(config)
    entry = config.find_provider_entry(settings.name)
    if entry is not None and entry.backend == settings.kind and entry.embedding_model:
        return EmbeddingChoice(wire, entry.embedding_model, settings.base_url, settings.name)
    if config.llm.embedding_model and _applies_to_provider(sources or {}):
        return EmbeddingChoice(wire, config.llm.embedding_model, settings.base_url, settings.name)
    return embedded_choice(config)


def _applies_to_provider(sources: Mapping[str, str]) -> bool:
    """`[llm] embedding_model` belongs to the `[llm]` provider: not to one chosen by a stronger source."""
    if not sources:
        return True
    from ....providers import source_rank

    return source_rank(sources.get("llm.embedding_model", "default")) >= source_rank(sources.get("llm.provider", "default"))


def embedder_for(
    config: Config, settings: ProviderSettings | None, *, sources: Mapping[str, str] | None = None
) -> Embedder:
    """The embedder `choose_embedding` picks, built (nothing is loaded or sent yet); an
    embedded one is the process's shared instance of it."""
    choice = choose_embedding(config, settings, sources=sources)
    if choice.wire == "embedded" or settings is None:
        return shared_offline(choice.model)
    if choice.wire == "ollama":
        from .ollama import OllamaEmbedder

        return OllamaEmbedder(settings, choice.model)
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder(settings, choice.model)


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def shared_offline(model: str) -> Embedder:
    """The process's one instance of the embedded embedder storing vectors as `model`, so its files are read once."""
    if model == WORDLLAMA_MODEL:
        from .embedded import shared_embedded

        return shared_embedded()
    with _shared_lock:
        if model not in _shared:
            from .minilm import MiniLMEmbedder

            _shared[model] = MiniLMEmbedder()
        return _shared[model]


def describe_choice(choice: EmbeddingChoice) -> str:
    """One line for `zeph context`: which embedder, and where."""
    if choice.wire == "embedded":
        return f"embedded {choice.model} (offline)"
    return f"{choice.provider or choice.wire} {choice.model} at {choice.base_url}"


def describe_embedder(
    config: Config, settings: ProviderSettings | None, *, sources: Mapping[str, str] | None = None
) -> str:
    return describe_choice(choose_embedding(config, settings, sources=sources))
