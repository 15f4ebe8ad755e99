"""What a model server says about itself: the context window it serves and the model id.

Invariant: pure functions from the JSON a server answered (already decoded) to
`ServerFacts`; anything missing, malformed or of the wrong type gives no fact,
never an exception. A model's *training* length (llama.cpp's `n_ctx_train`,
Ollama's `context_length`) is not the window a server runs with and is used
only where the adapter itself sets the window (Ollama's `num_ctx`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Ollama sizes its context per request and defaults low; a model's trained length
# (often 128k+) as num_ctx would exhaust memory, so /api/show's value is capped.
OLLAMA_WINDOW_CAP = 8192
_NUM_CTX_RE = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ServerFacts:
    """`window`: tokens the server serves per request (None: it did not say);
    `source`: where that came from, a short phrase ("llama.cpp /props n_ctx");
    `model`: the model id the server serves, when one was asked for."""

    window: int | None = None
    source: str = ""
    model: str | None = None

    def merged(self, other: "ServerFacts") -> "ServerFacts":
        """These facts, with what they lack taken from `other`."""
        window, source = (self.window, self.source) if self.window else (other.window, other.source)
        return ServerFacts(window, source, self.model or other.model)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value > 0 else None


def _entries(listing: Any) -> list[dict[str, Any]]:
    data = listing.get("data") if isinstance(listing, dict) else None
    return [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)] if isinstance(data, list) else []


def _entry_for(entries: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    """The listing entry of `model`; with no model configured, the first (usually only) one."""
    if not model:
        return entries[0] if entries else None
    return next((e for e in entries if e["id"] == model), None)


def from_llamacpp_props(props: Any) -> ServerFacts:
    """llama.cpp server `GET /props`: the per-slot window in `default_generation_settings.n_ctx`
    (newer builds also put `n_ctx` at the top level)."""
    if not isinstance(props, dict):
        return ServerFacts()
    settings = props.get("default_generation_settings")
    window = _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if window:
        return ServerFacts(window, "llama.cpp /props n_ctx")
    window = _positive_int(props.get("n_ctx"))
    return ServerFacts(window, "llama.cpp /props n_ctx") if window else ServerFacts()


def from_models_listing(listing: Any, model: str) -> ServerFacts:
    """`GET /v1/models` of a compatible server: the served model id (when none is
    configured) and the window where the entry states one: vLLM's `max_model_len`,
    or a `context_length` / `context_window` (OpenRouter, Together and the like).
    llama.cpp's `meta.n_ctx_train` is the training length, not the window: ignored."""
    entry = _entry_for(_entries(listing), model)
    if entry is None:
        return ServerFacts()
    served = entry["id"] if not model else None
    window = _positive_int(entry.get("max_model_len"))
    if window:
        return ServerFacts(window, "vLLM /v1/models max_model_len", served)
    for key in ("context_length", "context_window"):
        window = _positive_int(entry.get(key))
        if window:
            return ServerFacts(window, f"/v1/models {key}", served)
    return ServerFacts(model=served)


def from_lmstudio_models(listing: Any, model: str) -> ServerFacts:
    """LM Studio `GET /api/v0/models`: `loaded_context_length` is the window the model
    is loaded with; a model not loaded yet only states its `max_context_length`."""
    entries = _entries(listing)
    if not model:
        entries = [e for e in entries if e.get("state") == "loaded"] or entries
    entry = _entry_for(entries, model)
    if entry is None:
        return ServerFacts()
    served = entry["id"] if not model else None
    window = _positive_int(entry.get("loaded_context_length"))
    if window:
        return ServerFacts(window, "LM Studio /api/v0/models loaded_context_length", served)
    window = _positive_int(entry.get("max_context_length"))
    if window:
        return ServerFacts(window, "LM Studio /api/v0/models max_context_length (model not loaded yet)", served)
    return ServerFacts(model=served)


def from_ollama_show(parameters: str | None, model_info: Any) -> ServerFacts:
    """Ollama `/api/show`: the Modelfile's `num_ctx` when it sets one, else the model's
    trained `<arch>.context_length` capped at OLLAMA_WINDOW_CAP (zeph sends this
    window as `num_ctx` with every request, so the two agree)."""
    match = _NUM_CTX_RE.search(parameters or "")
    if match and int(match.group(1)) > 0:
        return ServerFacts(int(match.group(1)), "ollama /api/show num_ctx")
    trained = trained_context_length(model_info if isinstance(model_info, dict) else {})
    if trained is None:
        return ServerFacts()
    if trained > OLLAMA_WINDOW_CAP:
        return ServerFacts(OLLAMA_WINDOW_CAP, f"ollama /api/show context_length {trained}, capped at {OLLAMA_WINDOW_CAP}")
    return ServerFacts(trained, "ollama /api/show context_length")


def trained_context_length(model_info: dict[str, Any]) -> int | None:
    """`<arch>.context_length` from /api/show's model_info (any `*.context_length` as a fallback)."""
    arch = model_info.get("general.architecture")
    value = model_info.get(f"{arch}.context_length") if arch else None
    if value is None:
        value = next((v for k, v in model_info.items() if k.endswith(".context_length")), None)
    return _positive_int(value)
