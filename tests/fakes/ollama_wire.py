"""Byte-accurate Ollama wire replies for `FakeServer`.

`/api/chat` streams are NDJSON (`application/x-ndjson`, one JSON object per line,
the last one `"done": true` with the counts); errors are `{"error": "..."}` with
gin's `application/json; charset=utf-8`, exactly as the Ollama server sends them.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes import image_bytes
from tests.fakes.server import FakeResponse

MODEL = "llama3.1:8b"
CREATED_AT = "2025-06-01T12:00:00.123456789Z"
JSON_TYPE = "application/json; charset=utf-8"
NDJSON_TYPE = "application/x-ndjson"

# Real error texts of the Ollama server (server/routes.go, server/sched.go, ollama.com).
MODEL_NOT_FOUND = 'model "llama9" not found, try pulling it first'
SERVER_BUSY = "server busy, please try again.  maximum pending requests exceeded"
USAGE_LIMIT = "you've reached your hourly usage limit, please wait or upgrade to continue"
INPUT_TOO_LONG = "the input length exceeds the context length"
# llama-server's overflow error, which Ollama wraps as a JSON string inside "error".
EXCEEDS_CONTEXT = json.dumps(
    {
        "error": {
            "code": 400,
            "message": "request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 8889,
            "n_ctx": 4096,
        }
    },
    separators=(",", ":"),
)
RUNNER_CRASHED = "llama runner process has terminated: exit status 2"


def tool_call(name: str, arguments: dict[str, Any], *, index: int = 0, id: str | None = None) -> dict[str, Any]:
    """One entry of `message.tool_calls`: arguments arrive as a JSON object, complete."""
    call: dict[str, Any] = {"function": {"index": index, "name": name, "arguments": arguments}}
    if id is not None:
        call = {"id": id, **call}
    return call


def chat_chunk(
    content: str = "",
    *,
    model: str = MODEL,
    tool_calls: list[dict[str, Any]] | None = None,
    done: bool = False,
    done_reason: str = "stop",
    prompt_eval_count: int | None = 26,
    eval_count: int | None = 12,
) -> dict[str, Any]:
    """One `/api/chat` object: a streamed chunk, or with done=True the final one (or a whole reply)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    chunk: dict[str, Any] = {"model": model, "created_at": CREATED_AT, "message": message}
    if not done:
        chunk["done"] = False
        return chunk
    chunk.update({"done_reason": done_reason, "done": True, "total_duration": 4883583458, "load_duration": 1334875})
    if prompt_eval_count is not None:
        chunk.update({"prompt_eval_count": prompt_eval_count, "prompt_eval_duration": 342546000})
    if eval_count is not None:
        chunk.update({"eval_count": eval_count, "eval_duration": 4535599000})
    return chunk


def ndjson_lines(*objects: dict[str, Any]) -> list[str]:
    return [json.dumps(o, separators=(",", ":")) + "\n" for o in objects]


def chat_stream(
    *texts: str,
    tool_calls: list[dict[str, Any]] | None = None,
    done_reason: str = "stop",
    prompt_eval_count: int | None = 26,
    eval_count: int | None = 12,
    drop_after: int | None = None,
    chunk_delay: float = 0.0,
) -> FakeResponse:
    """A streamed reply: one chunk per text, tool calls in their own chunk, then the final chunk."""
    objects = [chat_chunk(t) for t in texts]
    if tool_calls:
        objects.append(chat_chunk(tool_calls=tool_calls))
    objects.append(
        chat_chunk(done=True, done_reason=done_reason, prompt_eval_count=prompt_eval_count, eval_count=eval_count)
    )
    return raw_stream(ndjson_lines(*objects), drop_after=drop_after, chunk_delay=chunk_delay)


def raw_stream(lines: list[str], *, drop_after: int | None = None, chunk_delay: float = 0.0) -> FakeResponse:
    """Send these exact lines as chunked NDJSON (for malformed or truncated streams)."""
    return FakeResponse.stream(lines, NDJSON_TYPE, drop_after=drop_after, chunk_delay=chunk_delay)


def chat_reply(
    content: str = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    done_reason: str = "stop",
    prompt_eval_count: int | None = 26,
    eval_count: int | None = 12,
) -> FakeResponse:
    """A non-streamed reply (`"stream": false`): one JSON object."""
    body = chat_chunk(
        content,
        tool_calls=tool_calls,
        done=True,
        done_reason=done_reason,
        prompt_eval_count=prompt_eval_count,
        eval_count=eval_count,
    )
    return _json(body, 200)


def show_reply(
    *,
    parameters: dict[str, Any] | None = None,
    context_length: int | None = 131072,
    architecture: str = "llama",
) -> FakeResponse:
    """`/api/show`: `parameters` is the server's `%-30s %#v` text, `model_info` the GGUF metadata."""
    params = dict(parameters if parameters is not None else {"stop": ["<|start_header_id|>", "<|eot_id|>"]})
    lines: list[str] = []
    for key, value in params.items():
        for item in value if isinstance(value, list) else [value]:
            lines.append(f"{key:<30} {json.dumps(item) if isinstance(item, str) else item}")
    model_info: dict[str, Any] = {
        "general.architecture": architecture,
        "general.file_type": 15,
        "general.parameter_count": 8030261312,
        "general.quantization_version": 2,
        f"{architecture}.attention.head_count": 32,
        f"{architecture}.attention.head_count_kv": 8,
        f"{architecture}.block_count": 32,
        f"{architecture}.embedding_length": 4096,
        f"{architecture}.rope.freq_base": 500000,
        f"{architecture}.vocab_size": 128256,
        "tokenizer.ggml.model": "gpt2",
    }
    if context_length is not None:
        model_info[f"{architecture}.context_length"] = context_length
    body = {
        "license": "LLAMA 3.1 COMMUNITY LICENSE AGREEMENT",
        "modelfile": f"# Modelfile generated by \"ollama show\"\nFROM {MODEL}\n",
        "parameters": "\n".join(lines),
        "template": "{{ if .System }}<|start_header_id|>system<|end_header_id|>\n\n{{ .System }}<|eot_id|>{{ end }}",
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": architecture,
            "families": [architecture],
            "parameter_size": "8.0B",
            "quantization_level": "Q4_K_M",
        },
        "model_info": model_info,
        "tensors": [],
        "capabilities": ["completion", "tools"],
        "modified_at": "2025-05-30T10:11:12.123456789+02:00",
    }
    return _json(body, 200)


def error(status: int, message: str, *, headers: dict[str, str] | None = None) -> FakeResponse:
    """An Ollama error reply: `{"error": "<message>"}`."""
    return _json({"error": message}, status, headers)


def _json(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> FakeResponse:
    return FakeResponse(
        status=status,
        body=json.dumps(body, separators=(",", ":")).encode(),
        headers=dict(headers or {}),
        content_type=JSON_TYPE,
    )


# ---- images: checked as /api/chat checks them, counted as a LLaVA model counts them ---------------------

# What the server answers when a model without a vision projector is sent images.
NO_VISION = "this model is missing data required for image input"


def check_images(body: dict[str, Any], *, vision: bool = True) -> FakeResponse | None:
    """The error the server answers a request whose `images` it rejects: not base64 (Go's JSON decoding of
    []byte), not an image, or any image for a model that takes none; None when they are all fine."""
    for message in body.get("messages") or []:
        for data in message.get("images") or []:
            raw = image_bytes.decode(data) if isinstance(data, str) else None
            if raw is None:
                return error(400, "illegal base64 data at input byte 0")
            if not vision:
                return error(500, NO_VISION)
            if image_bytes.sniff(raw) is None:
                return error(500, "failed to process inputs: image: unknown format")
    return None


def image_prompt_tokens(body: dict[str, Any]) -> int:
    """What prompt_eval_count grows by for the request's images (a LLaVA model: 576 each)."""
    return image_bytes.LLAVA_IMAGE_TOKENS * sum(len(m.get("images") or []) for m in body.get("messages") or [])


def vision_responder(text: str = "I see it.", text_tokens: int = 26, *, vision: bool = True):
    """A responder answering every /api/chat request as the server does for a vision model (or, with
    vision=False, one that takes no images): an error for images it rejects, else a streamed reply whose
    prompt_eval_count is `text_tokens` plus what the images cost."""

    def respond(request: Any) -> FakeResponse | None:
        if request.path != "/api/chat":
            return None
        body = request.json
        problem = check_images(body, vision=vision)
        if problem is not None:
            return problem
        return chat_stream(text, prompt_eval_count=text_tokens + image_prompt_tokens(body))

    return respond
