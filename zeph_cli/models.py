"""Model profiles: context window and output limit per known model.

Invariant: `profile_for(name)` always answers; names are matched by the longest
known prefix after dropping vendor prefixes, tags and dates, and an unknown
model gets the 64,000-token default window. Every profile says where its
window came from (`window_source`), and a window a server states or a
provider's error taught wins over the table's. `vision` says whether the model
takes images: true only for model families known to (an unknown model reads text
only unless the `llm.vision` setting says otherwise).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

DEFAULT_CONTEXT_WINDOW = 64_000
DEFAULT_OUTPUT_LIMIT = 4_096
REPLY_CAP_DEFAULT = 8_192

SOURCE_TABLE = "model table"
SOURCE_DEFAULT = "default guess (unknown model)"
SERVER_PREFIX = "server: "
LEARNED_PREFIX = "learned: "


@dataclass(frozen=True)
class ModelProfile:
    """A model's context window and output limit, and where the window came from."""
    name: str
    context_window: int
    output_limit: int
    known: bool = True
    # Where context_window came from, as shown by `zeph context` and /context:
    # "model table", "default guess (unknown model)", "server: llama.cpp /props n_ctx",
    # "learned: <provider's error>"...
    window_source: str = SOURCE_TABLE
    vision: bool = False  # takes images

    @property
    def window_is_guess(self) -> bool:
        """The window comes from the model table or the default, not from the model's
        server or runtime: a window learned from the provider should replace it."""
        return self.window_source.startswith((SOURCE_TABLE, SOURCE_DEFAULT))


# (prefix, context window, output limit). Longest matching prefix wins.
_PROFILES: tuple[tuple[str, int, int], ...] = (
    # Anthropic
    ("claude-opus-4-8", 200_000, 128_000),
    ("claude-opus-4-7", 200_000, 128_000),
    ("claude-opus-4-6", 200_000, 128_000),
    ("claude-opus-4-5", 200_000, 64_000),
    ("claude-opus-4-1", 200_000, 32_000),
    ("claude-opus-4", 200_000, 32_000),
    ("claude-sonnet-4-6", 200_000, 64_000),
    ("claude-sonnet-4-5", 200_000, 64_000),
    ("claude-sonnet-4", 200_000, 64_000),
    ("claude-haiku-4-5", 200_000, 64_000),
    ("claude-3-7-sonnet", 200_000, 64_000),
    ("claude-3-5-sonnet", 200_000, 8_192),
    ("claude-3-5-haiku", 200_000, 8_192),
    ("claude-3-opus", 200_000, 4_096),
    ("claude-3-haiku", 200_000, 4_096),
    # OpenAI
    ("gpt-5", 400_000, 128_000),
    ("gpt-4.1", 1_047_576, 32_768),
    ("gpt-4o", 128_000, 16_384),
    ("gpt-4-turbo", 128_000, 4_096),
    ("gpt-4", 8_192, 8_192),
    ("gpt-3.5-turbo", 16_385, 4_096),
    ("o4-mini", 200_000, 100_000),
    ("o3", 200_000, 100_000),
    ("o1", 200_000, 100_000),
    # Common local models (Ollama / GGUF names)
    ("llama3.3", 131_072, 8_192),
    ("llama3.2", 131_072, 8_192),
    ("llama3.1", 131_072, 8_192),
    ("llama3", 8_192, 4_096),
    ("qwen3", 40_960, 8_192),
    ("qwen2.5-coder", 32_768, 8_192),
    ("qwen2.5", 32_768, 8_192),
    ("mistral-nemo", 131_072, 8_192),
    ("mistral", 32_768, 8_192),
    ("mixtral", 32_768, 8_192),
    ("gemma3", 131_072, 8_192),
    ("gemma2", 8_192, 4_096),
    ("phi4", 16_384, 4_096),
    ("phi3", 4_096, 4_096),
    ("deepseek-r1", 131_072, 8_192),
    ("deepseek-coder-v2", 163_840, 8_192),
    ("codellama", 16_384, 4_096),
    ("gpt-oss", 131_072, 32_768),
    ("smollm2", 8_192, 1_024),
)

# Which models take images: (prefix, takes images); the longest matching prefix wins, no match = text only.
_VISION: tuple[tuple[str, bool], ...] = (
    # Anthropic: every Claude 3 and 4 model
    ("claude-3", True), ("claude-opus-4", True), ("claude-sonnet-4", True), ("claude-haiku-4", True),
    # OpenAI
    ("gpt-5", True), ("gpt-4.1", True), ("gpt-4.5", True), ("gpt-4o", True), ("gpt-4-turbo", True),
    ("gpt-4o-audio", False), ("gpt-4o-realtime", False), ("gpt-4o-search", False),
    ("o1", True), ("o1-mini", False), ("o1-preview", False), ("o3", True), ("o3-mini", False), ("o4-mini", True),
    # Ollama / GGUF vision models
    ("llava", True), ("bakllava", True), ("llama3.2-vision", True), ("llama4", True),
    ("qwen2.5vl", True), ("qwen2.5-vl", True), ("qwen2-vl", True), ("qwen3-vl", True),
    ("gemma3", True), ("gemma3n", False), ("minicpm-v", True), ("moondream", True),
    ("granite3.2-vision", True), ("mistral-small3.1", True), ("mistral-small3.2", True), ("llava-phi3", True),
)
# Sizes of a vision family that read text only (Ollama tags: `gemma3:1b`).
_TEXT_ONLY_TAGS = {"gemma3": ("270m", "1b")}


def takes_images(name: str) -> bool:
    """Whether the model table knows `name` as a model that takes images."""
    base = normalise(name)
    best = max((p for p in _VISION if base.startswith(p[0])), key=lambda p: len(p[0]), default=None)
    if best is None or not best[1]:
        return False
    tag = name.strip().lower().rsplit("/", 1)[-1].partition(":")[2]
    return not any(base.startswith(family) and tag.startswith(tags) for family, tags in _TEXT_ONLY_TAGS.items())


def with_vision(profile: ModelProfile, setting: str) -> ModelProfile:
    """`profile` with the `llm.vision` setting applied: "true" or "false" decide, "auto" keeps the table's."""
    if setting in ("true", "false"):
        return dataclasses.replace(profile, vision=setting == "true")
    return profile


_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def normalise(name: str) -> str:
    """`anthropic/claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`; `llama3.1:8b` → `llama3.1`."""
    base = name.strip().lower().rsplit("/", 1)[-1]
    base = base.split(":", 1)[0]
    if base.endswith(".gguf"):
        base = base[: -len(".gguf")]
    return _DATE_SUFFIX.sub("", base)


def profile_for(name: str) -> ModelProfile:
    base = normalise(name)
    best: tuple[str, int, int] | None = None
    for prefix, window, output in _PROFILES:
        if base.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, window, output)
    vision = takes_images(name)
    if best is None:
        return ModelProfile(
            name, DEFAULT_CONTEXT_WINDOW, DEFAULT_OUTPUT_LIMIT, known=False, window_source=SOURCE_DEFAULT, vision=vision
        )
    return ModelProfile(name, best[1], best[2], vision=vision)


def with_window(profile: ModelProfile, window: int, source: str) -> ModelProfile:
    """`profile` with another context window: the output limit shrinks to fit
    (at most half the window, so a reply never crowds out the prompt)."""
    window = max(int(window), 1)
    output = min(profile.output_limit, max(window // 2, 1))
    return ModelProfile(profile.name, window, output, profile.known, source, profile.vision)


def served_profile(name: str, window: int | None, source: str) -> ModelProfile:
    """The table's profile for `name`, with the window a server reported (when it did)."""
    table = profile_for(name)
    if not window:
        return table
    return with_window(table, window, SERVER_PREFIX + source)


def prefer_learned_window(profile: ModelProfile, learned: tuple[int, str] | None) -> ModelProfile:
    """Precedence of windows: what the server (or the local runtime) says now, then
    what an error taught earlier (`learned` = (tokens, source) as remembered in the
    store), then the table or the default guess."""
    if learned is None or not profile.window_is_guess:
        return profile
    tokens, source = learned
    if tokens <= 0:
        return profile
    return with_window(profile, tokens, source if source.startswith(LEARNED_PREFIX) else LEARNED_PREFIX + source)


def reply_token_cap(configured: int, profile: ModelProfile) -> int:
    """`max_tokens` to request: the configured value, else the model's limit (at most 8192)."""
    if configured > 0:
        return min(configured, profile.output_limit) if profile.known else configured
    return min(profile.output_limit, REPLY_CAP_DEFAULT)
