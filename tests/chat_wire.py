"""What the wire-level fake OpenAI server was sent, and replies to queue on it: for end-to-end tests
through the real `zeph` that look at the requests a turn makes."""

from __future__ import annotations

import json

from tests.fakes import openai_wire


def queue_reply(server, text: str = "Done.") -> None:
    server.queue(openai_wire.stream_response(openai_wire.text_chunks([text])))


def queue_call(server, name: str, arguments: dict) -> None:
    server.queue(openai_wire.stream_response(openai_wire.tool_call_chunks([("call_1", name, json.dumps(arguments))])))


def chat_requests(server):
    return server.requests_to("/v1/chat/completions")


def system_text(request) -> str:
    return "\n".join(m["content"] for m in request.json["messages"] if m["role"] == "system")


def tool_names(request) -> list[str]:
    return [t["function"]["name"] for t in request.json.get("tools") or []]


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.json["messages"] if m["role"] == "tool"]
