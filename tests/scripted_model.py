"""A scripted model behind the fake OpenAI-compatible server, for whole-session tests.

It answers from the request, so a test can run many turns without queueing
replies in the exact order compaction happens to ask for them:
- streamed chat requests get the next scripted reply (a text or tool calls);
- non-streamed requests are side jobs: a tool-pair summary, a compaction
  summary (which keeps every FACT-… token it was shown, like a good summarizer,
  and the short line stating it, `FACT-K7 = blue-12`, verbatim), or the probe's
  questions and answers.
Every request is kept, and how it was classified, so tests can assert on both.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse, RecordedRequest
from tests.fakes.summarizers import fact_lines

FACT = re.compile(r"FACT-[A-Z0-9]+")
CHAT_PATH = "/v1/chat/completions"


def text_reply(text: str) -> FakeResponse:
    return openai_wire.stream_response(openai_wire.text_chunks([text], usage=None))


def tool_reply(calls: list[tuple[str, str, dict[str, Any]]]) -> FakeResponse:
    return openai_wire.stream_response(
        openai_wire.tool_call_chunks([(cid, name, [json.dumps(args)]) for cid, name, args in calls], usage=None)
    )


def completion(text: str) -> FakeResponse:
    return openai_wire.json_response(openai_wire.completion(content=text, usage=None))


def prompt_of(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


@dataclass
class ScriptedModel:
    """Install with `fake_server.respond_with(model)`; queue chat replies with `say` / `call`."""

    chat: deque[FakeResponse] = field(default_factory=deque)
    kinds: list[str] = field(default_factory=list)  # per request: chat | pair | compaction | probe_q | probe_a | guidelines | digest | profile
    summary_failures: int = 0  # answer this many compaction summaries with a server error
    pair_failures: int = 0  # answer this many tool-pair summaries with a server error
    guidelines_reply: str = "1. Keep every FACT- code verbatim.\n2. Keep file paths and the reasons for decisions."
    probe_answers: str | None = None  # JSON array for probe answers; None = answer from the summary

    def say(self, text: str) -> None:
        self.chat.append(text_reply(text))

    def call(self, *calls: tuple[str, str, dict[str, Any]]) -> None:
        self.chat.append(tool_reply(list(calls)))

    def fail(self, response: FakeResponse, times: int = 1) -> None:
        """Answer the next `times` chat requests with `response` (an error), side jobs still answered."""
        self.chat.extend([response] * times)

    def count(self, kind: str) -> int:
        return self.kinds.count(kind)

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        if request.path != CHAT_PATH:
            return None
        body = request.json
        if body.get("stream"):
            self.kinds.append("chat")
            return self.chat.popleft() if self.chat else text_reply("(nothing scripted)")
        prompt = prompt_of(body)
        if prompt.startswith("Summarize the tool call below"):
            self.kinds.append("pair")
            if self.pair_failures > 0:
                self.pair_failures -= 1
                return openai_wire.server_error()
            tool = re.search(r"tool: (\S+)", prompt)
            return completion(f"Called {tool.group(1) if tool else 'a tool'}; it succeeded.")
        if prompt.startswith("Write what the conversation below is about"):
            self.kinds.append("digest")  # a session summary for other sessions
            return completion("The user ran a long test session.")
        if prompt.startswith("You maintain a short profile"):
            self.kinds.append("profile")
            return completion("- Runs long test sessions")
        if prompt.startswith("You maintain the guidelines"):
            self.kinds.append("guidelines")
            return completion(self.guidelines_reply)
        if "factual questions" in prompt:
            self.kinds.append("probe_q")
            facts = sorted(set(FACT.findall(prompt)))[:3]
            questions = [{"question": f"Which code was planted as {fact}?", "expected": fact} for fact in facts]
            return completion(json.dumps(questions))
        if prompt.startswith("Answer each question using ONLY the summary"):
            self.kinds.append("probe_a")
            if self.probe_answers is not None:
                return completion(self.probe_answers)
            summary, _, questions = prompt.partition("<questions>")
            asked = FACT.findall(questions)
            return completion(json.dumps([fact if fact in summary else "UNKNOWN" for fact in asked]))
        self.kinds.append("compaction")
        if self.summary_failures > 0:
            self.summary_failures -= 1
            return openai_wire.server_error()
        facts = fact_lines(prompt)
        return completion(
            "1. User Intent: a long test session.\n"
            "3. Files & Code: notes.txt.\n"
            "6. User Messages: the user planted these facts:"
            + ("".join(f"\n- {fact}" for fact in facts) if facts else " none.")
            + "\n9. Next Step: answer the next question."
        )
