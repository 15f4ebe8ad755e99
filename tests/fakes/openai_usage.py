"""Prompt tokens the way an OpenAI-compatible server counts them, and the window it enforces.

Invariant: `prompt_tokens` is counted over everything in the request body —
every message's text, tool calls' names and arguments, tool results, the tool
schemas (`tools`) — plus the chat template's per-message framing, with a real
tokenizer. A window check uses that full count whatever the server reports:
a real server's window applies to what it processes, not to what it admits to
in `usage`. The "under-reports" variant leaves the schemas and the template
out of the usage it reports (as some compatible servers do), nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse

# ChatML-style framing: <|im_start|>{role}\n … <|im_end|>\n, and the reply's priming.
TEMPLATE_TOKENS_PER_MESSAGE = 4
TEMPLATE_TOKENS_PER_REQUEST = 3
TEMPLATE_TOKENS_PER_TOOL = 8  # the wrapper a template puts around each rendered schema

HONEST = "honest"
UNDER_REPORTS = "under-reports"  # usage leaves out the tool schemas and the template


def message_text(message: dict[str, Any]) -> str:
    """The text a message carries: a string, or the text of its content parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


@dataclass(frozen=True)
class PromptCount:
    content: int  # message texts, tool calls and tool results
    schemas: int  # the `tools` array as a template renders it
    template: int  # per-message and per-request framing

    @property
    def total(self) -> int:
        return self.content + self.schemas + self.template


def count_prompt(body: dict[str, Any], count: Callable[[str], int]) -> PromptCount:
    """A Chat Completions request body's prompt tokens, by part."""
    content = template = 0
    for message in body.get("messages") or ():
        template += TEMPLATE_TOKENS_PER_MESSAGE + count(str(message.get("role") or ""))
        content += count(message_text(message))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            content += count(str(function.get("name") or "")) + count(str(function.get("arguments") or ""))
            template += count(str(call.get("id") or "")) + 3
        if message.get("tool_call_id"):
            template += count(str(message["tool_call_id"]))
    tools = body.get("tools") or ()
    schemas = sum(count(json.dumps(tool, separators=(",", ":"))) + TEMPLATE_TOKENS_PER_TOOL for tool in tools)
    return PromptCount(content, schemas, template + TEMPLATE_TOKENS_PER_REQUEST)


def reply_cap(body: dict[str, Any]) -> int | None:
    """The reply token limit the request asked for (either spelling)."""
    value = body.get("max_completion_tokens") or body.get("max_tokens")
    return int(value) if value else None


def wants_stream_usage(body: dict[str, Any]) -> bool:
    return bool((body.get("stream_options") or {}).get("include_usage"))


@dataclass
class ContextWindow:
    """A server's window and its usage reporting, for one model.

    `check` answers an oversized request with the real OpenAI
    context_length_exceeded error; `reported` is the prompt_tokens the server
    puts in `usage`.
    """

    tokens: int
    count: Callable[[str], int]
    reporting: str = HONEST

    def measure(self, body: dict[str, Any]) -> PromptCount:
        return count_prompt(body, self.count)

    def reported(self, prompt: PromptCount) -> int:
        return prompt.content if self.reporting == UNDER_REPORTS else prompt.total

    def check(self, prompt: PromptCount) -> FakeResponse | None:
        if prompt.total > self.tokens:
            return openai_wire.context_length_exceeded(self.tokens, prompt.total)
        return None


def truncate_to(text: str, limit: int | None, count: Callable[[str], int]) -> tuple[str, bool]:
    """`text` cut at about `limit` tokens, as a reply stopped by max_tokens is; (text, cut)."""
    if not limit or count(text) <= limit:
        return text, False
    words = text.split(" ")
    keep = len(words)
    while keep > 1 and count(" ".join(words[:keep])) > limit:
        keep = max(1, int(keep * min(0.95, limit / max(count(" ".join(words[:keep])), 1))))
    return " ".join(words[:keep]), True


def text_reply(text: str, *, prompt_tokens: int, count: Callable[[str], int], body: dict[str, Any]) -> FakeResponse:
    """A reply in the form the request asked for (streamed or not), with usage as api.openai.com reports it:
    non-streamed always, streamed in a final chunk when `stream_options.include_usage` asks for it."""
    text, cut = truncate_to(text, reply_cap(body), count)
    finish = "length" if cut else "stop"
    usage = (prompt_tokens, count(text), 0)
    if body.get("stream"):
        events = openai_wire.text_chunks([text], finish_reason=finish, usage=usage if wants_stream_usage(body) else None)
        return openai_wire.stream_response(events)
    return openai_wire.json_response(openai_wire.completion(content=text, finish_reason=finish, usage=usage))


def tool_call_reply(
    calls: list[tuple[str, str, dict[str, Any]]], *, prompt_tokens: int, count: Callable[[str], int], body: dict[str, Any]
) -> FakeResponse:
    """Tool calls, streamed (with the usage chunk when asked for) or as one completion."""
    completion_tokens = sum(count(name) + count(json.dumps(args)) for _, name, args in calls)
    usage = (prompt_tokens, completion_tokens, 0)
    if body.get("stream"):
        wire = [(cid, name, [json.dumps(args)]) for cid, name, args in calls]
        events = openai_wire.tool_call_chunks(wire, usage=usage if wants_stream_usage(body) else None)
        return openai_wire.stream_response(events)
    return openai_wire.json_response(
        openai_wire.completion(content=None, tool_calls=calls, finish_reason="tool_calls", usage=usage)
    )
