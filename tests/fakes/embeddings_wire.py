"""Embedding endpoints on the wire: OpenAI's `/v1/embeddings` and Ollama's `/api/embed`.

Replies have the real shapes (OpenAI's `object`/`data`/`index`/`usage`, Ollama's
`embeddings` with its durations and `prompt_eval_count`), and the errors the real
servers send for a bad key, an unknown model and an input too long for the model.
Responders answer from the request itself with `letter_vector`, a deterministic,
deliberately unnormalized vector per text, so tests can check order and batching.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes import ollama_wire, openai_wire
from tests.fakes.server import FakeResponse, RecordedRequest

OPENAI_MODEL = "text-embedding-3-small"
OLLAMA_MODEL = "nomic-embed-text"
DIMENSIONS = 27


def letter_vector(text: str) -> list[float]:
    """Counts of a..z in `text`, then 1 + its length: equal texts give equal vectors, and
    texts with the same letters in other proportions point elsewhere."""
    lowered = text.lower()
    return [float(lowered.count(chr(ord("a") + i))) for i in range(26)] + [1.0 + len(text)]


def token_count(texts: list[str]) -> int:
    return sum(max(1, len(text.split())) for text in texts)


# ---- OpenAI /v1/embeddings -----------------------------------------------------


def openai_reply(vectors: list[list[float]], *, model: str = OPENAI_MODEL, prompt_tokens: int = 8) -> FakeResponse:
    body = {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vector} for i, vector in enumerate(vectors)],
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }
    return openai_wire.json_response(body)


def openai_responder(*, model: str = OPENAI_MODEL, reverse: bool = False, max_chars: int | None = None):
    """Answer every `/v1/embeddings` request with `letter_vector` of each input (listed in
    reverse order when `reverse`, as `index` allows); an input longer than `max_chars`
    gets the real context-length error."""

    def respond(request: RecordedRequest) -> FakeResponse | None:
        if not request.path.endswith("/embeddings"):
            return None
        inputs = request.json["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if max_chars is not None and any(len(text) > max_chars for text in inputs):
            return openai_too_long(requested=max(len(text) for text in inputs))
        data = [{"object": "embedding", "index": i, "embedding": letter_vector(text)} for i, text in enumerate(inputs)]
        if reverse:
            data.reverse()
        tokens = token_count(inputs)
        body = {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        return openai_wire.json_response(body)

    return respond


def openai_too_long(limit: int = 8192, requested: int = 9000) -> FakeResponse:
    """What OpenAI answers when an embedding input exceeds the model's window."""
    message = (
        f"This model's maximum context length is {limit} tokens, however you requested {requested} tokens "
        f"({requested} in your prompt; 0 for the completion). Please reduce your prompt; or completion length."
    )
    return openai_wire.json_response(openai_wire.error_body(message, "invalid_request_error"), status=400)


def openai_invalid_key() -> FakeResponse:
    return openai_wire.invalid_api_key()


def openai_model_not_found(model: str = "text-embedding-4") -> FakeResponse:
    return openai_wire.model_not_found(model)


# ---- Ollama /api/embed -----------------------------------------------------------


def ollama_reply(vectors: list[list[float]], *, model: str = OLLAMA_MODEL, prompt_eval_count: int = 8) -> FakeResponse:
    body: dict[str, Any] = {
        "model": model,
        "embeddings": vectors,
        "total_duration": 14143917,
        "load_duration": 1019500,
        "prompt_eval_count": prompt_eval_count,
    }
    return FakeResponse(status=200, body=json.dumps(body, separators=(",", ":")).encode(), content_type=ollama_wire.JSON_TYPE)


def ollama_responder(*, model: str = OLLAMA_MODEL):
    """Answer every `/api/embed` request with `letter_vector` of each input."""

    def respond(request: RecordedRequest) -> FakeResponse | None:
        if request.path != "/api/embed":
            return None
        inputs = request.json["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        return ollama_reply([letter_vector(text) for text in inputs], model=model, prompt_eval_count=token_count(inputs))

    return respond


def ollama_model_not_found(model: str = OLLAMA_MODEL) -> FakeResponse:
    return ollama_wire.error(404, f'model "{model}" not found, try pulling it first')


def ollama_busy() -> FakeResponse:
    return ollama_wire.error(503, ollama_wire.SERVER_BUSY)
