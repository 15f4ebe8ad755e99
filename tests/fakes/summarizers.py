"""Summarizers behind a fake OpenAI-compatible server: faithful, barely-compressing, failing.

Invariant: a summarizer answers from what it was sent, never from a script.
`faithful` keeps every FACT-… token it was shown (with the short line stating
it, `FACT-K7 = blue-12`, verbatim, as a summarizer that follows instructions
keeps a key and its value) and compresses its input to about a quarter;
`barely` returns about 90% of its input (as small local models often do);
`failing` answers every summary request with the API's HTTP 500 body.
Replies respect the request's max_tokens (cut and marked `length`, as a real
server does), so only what fits comes back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes import openai_usage, openai_wire
from tests.fakes.server import FakeResponse

FACT = re.compile(r"FACT-[A-Z0-9]+")
_BLOCKS = re.compile(r"<(conversation|partial_summary)\b[^>]*>\n?(.*?)</\1>", re.DOTALL)

FAITHFUL = "faithful"
BARELY = "barely"
FAILING = "failing"
MODES = (FAITHFUL, BARELY, FAILING)


def side_job_kind(prompt: str) -> str:
    """What a non-streamed request asks for: pair | guidelines | probe_q | probe_a | summary."""
    if prompt.startswith("Summarize the tool call below"):
        return "pair"
    if prompt.startswith("You maintain the guidelines"):
        return "guidelines"
    if "factual questions" in prompt:
        return "probe_q"
    if prompt.startswith("Answer each question using ONLY the summary"):
        return "probe_a"
    return "summary"


def material(prompt: str) -> str:
    """What there is to summarize: the delimited conversation or partial summaries, else the whole prompt."""
    blocks = [m.group(2) for m in _BLOCKS.finditer(prompt)]
    return "\n".join(blocks) if blocks else prompt


FACT_LINE_CHARS = 60  # a line this short that carries a FACT- code is the fact itself: kept verbatim


def fact_lines(text: str) -> list[str]:
    """Each FACT- code once, in order: the short line that states it, verbatim, else the code alone."""
    facts: dict[str, str] = {}
    for line in text.splitlines():
        stated = line.strip().lstrip("-*• ").strip()
        for code in FACT.findall(line):
            facts.setdefault(code, stated if len(stated) <= FACT_LINE_CHARS else code)
    return list(dict.fromkeys(facts.values()))


def faithful_summary(text: str, count: Callable[[str], int], share: float = 0.25) -> str:
    """Every FACT- line first, then evenly spaced lines of the input up to `share` of its tokens."""
    facts = fact_lines(text)
    head = (
        "## 1. User Intent\nA long working session.\n"
        "## 6. User Messages\nThe user planted these facts:"
        + ("".join(f"\n- {fact}" for fact in facts) if facts else " none.")
        + "\n## 8. Current Work\n"
    )
    target = max(int(count(text) * share), count(head) + 20)
    lines = [line for line in text.splitlines() if line.strip()]
    step = max(1, round(1 / share))
    kept: list[str] = []
    used = count(head)
    for line in lines[::step]:
        cost = count(line) + 1
        if used + cost > target:
            break
        kept.append(line)
        used += cost
    return head + "\n".join(kept)


def barely_summary(text: str) -> str:
    """The input with every tenth line left out: about 90% of it."""
    lines = text.splitlines()
    return "\n".join(line for n, line in enumerate(lines) if n % 10 != 9)


@dataclass
class Summarizer:
    """Answers the summary side jobs (compaction summaries and tool-pair summaries) in one mode;
    a faithful tool-pair summary is the one sentence the prompt asks for."""

    mode: str
    count: Callable[[str], int]

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown summarizer mode {self.mode!r}: use {', '.join(MODES)}")

    def answer(self, prompt: str, *, prompt_tokens: int, body: dict[str, Any]) -> FakeResponse:
        if self.mode == FAILING:
            return openai_wire.server_error()
        text = material(prompt)
        if self.mode == BARELY:
            reply = barely_summary(text)
        elif side_job_kind(prompt) == "pair":  # "in 1-2 sentences"
            tool = re.search(r"tool: (\S+)\narguments: (.*)", prompt)
            reply = f"Called {tool.group(1)} with {tool.group(2)}; it succeeded." if tool else "A tool call succeeded."
        else:
            reply = faithful_summary(text, self.count)
        return openai_usage.text_reply(reply, prompt_tokens=prompt_tokens, count=self.count, body=body)
