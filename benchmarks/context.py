"""Context engine figures on real SQLite sessions: what one turn costs as a session grows.

Section 1, context assembly time: `Agent.context_for` (history read, token
counts, assembly) per turn for sessions of 1k, 10k and 100k stored messages,
compacted the way the product compacts them, next to uncompacted sessions for
contrast. The cost must follow what is visible, not what is stored; the target
is at most 10 ms per turn at 100k stored messages.

Section 2, tokens sent per turn: a 100-turn session with tool calls, run
through `Agent.run_turn` against a scripted model on a local fake server, under
a 32k budget; each turn's request next to what sending the full history would
take, with the compactions that kept it in budget.

Section 3, the budget matrix (benchmarks/budget_matrix.py): budgets 2k / 4k /
8k / 32k × {100-turn chat, 100 tool-heavy turns with a ~20 KB read every third
turn} × {faithful, barely-compressing, failing summarizer}, through
`Agent.run_turn` against a fake server that counts prompt tokens over
everything sent (tool schemas and template included) and rejects requests over
its window as a small-window server does. Per cell: peak request ÷ budget,
requests over budget, summary calls, prune events, planted facts kept, tool
rounds that still carry their question, failed turns; a Markdown table.

Prints figures; asserts nothing. Run from the repository root with the project
installed: `python benchmarks/context.py [--quick] [--section 3] [--cells 8k/tools,failing] [--jobs 2]`
(--quick: smaller sessions and 30-turn matrix sessions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from zeph_cli.agent import Agent  # noqa: E402
from zeph_cli.config import load_config  # noqa: E402
from zeph_cli.context.assembler import HistoryItem  # noqa: E402
from zeph_cli.context.compaction import COMPACTION_SUMMARY, SUMMARY_MARKER, compaction_range  # noqa: E402
from zeph_cli.context.compaction.anchored import AnchoredSummary, render  # noqa: E402
from zeph_cli.messages import Message, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from zeph_cli.providers import create_provider, resolve_settings  # noqa: E402
from zeph_cli.store import CompactionStore, Conversation, ConversationStore, open_database  # noqa: E402
from zeph_cli.store.conversations import message_record  # noqa: E402
from zeph_cli.store.transactions import write_transaction  # noqa: E402
from zeph_cli.tokens import TokenCounter, count_message  # noqa: E402
from benchmarks.texts import IDENTIFIERS, TOOLS, code, code_line, prose, sentence  # noqa: E402

TURNS = 50  # context_for calls measured per session
TARGET_MS = 10.0
SLOW_MS = 500.0  # a call this slow is its own warm-up and is timed only a few times
# Hard compaction fires when the visible history passes this many tokens: about
# 200 messages of the mix below, about what a 128k-token window holds at its
# compaction threshold.
COMPACT_AT_TOKENS = 80_000
PRESERVE_TAIL = 4  # memory.compaction_preserve_tail default


# ---- realistic messages ---------------------------------------------------------------

@dataclass(frozen=True)
class Pools:
    """Pre-generated texts: many messages share one, so each distinct text is counted once."""

    user: list[str]
    assistant: list[str]
    outputs: list[str]
    summaries: list[str]

    @classmethod
    def make(cls, rng: random.Random, size: int = 300) -> "Pools":
        return cls(
            user=[prose(rng, int(rng.lognormvariate(5.3, 0.8))) for _ in range(size)],  # ~200 chars
            assistant=[prose(rng, int(rng.lognormvariate(6.4, 0.7))) for _ in range(size)],  # ~600 chars
            outputs=[code(rng, int(rng.lognormvariate(7.3, 0.9))) for _ in range(size)],  # ~1.5k chars, long tail
            summaries=[anchored_summary(rng) for _ in range(20)],
        )


def anchored_summary(rng: random.Random) -> str:
    summary = AnchoredSummary(
        session_intent=prose(rng, 300),
        files_modified=tuple(f"zeph_cli/{rng.choice(IDENTIFIERS)}.py: {sentence(rng)}" for _ in range(12)),
        decisions_made=tuple(sentence(rng) + " " + sentence(rng) for _ in range(10)),
        open_questions=tuple(sentence(rng) for _ in range(4)),
        next_steps=tuple(sentence(rng) for _ in range(6)),
    )
    return f"{SUMMARY_MARKER}\n{render(summary)}"


def tool_arguments(rng: random.Random, tool: str) -> dict[str, Any]:
    path = f"zeph_cli/{rng.choice(IDENTIFIERS)}.py"
    if tool == "bash":
        return {"command": f"python -m pytest -q tests/test_{rng.choice(IDENTIFIERS)}.py"}
    if tool == "grep":
        return {"pattern": rng.choice(IDENTIFIERS), "path": "zeph_cli"}
    if tool == "edit_file":
        return {"path": path, "old": code_line(rng), "new": code_line(rng)}
    if tool == "write_file":
        return {"path": path, "content": code(rng, 300)}
    return {"path": path}


@dataclass
class TurnGenerator:
    """One user turn at a time: a prompt, 0-3 tool rounds, a closing reply; each with its metadata."""

    rng: random.Random
    pools: Pools
    model: str
    calls_made: int = 0

    def turn(self) -> Iterator[tuple[Message, dict[str, Any]]]:
        rng = self.rng
        yield Message.user(rng.choice(self.pools.user)), {}
        for _ in range(rng.choices((0, 1, 2, 3), weights=(3, 3, 2, 2))[0]):
            calls = [self._call() for _ in range(rng.choices((1, 2), weights=(4, 1))[0])]
            lead = (TextPart(rng.choice(self.pools.user)),) if rng.random() < 0.4 else ()
            yield Message("assistant", (*lead, *calls)), self._reply_metadata("tool_use")
            for call in calls:
                result = ToolResultPart(call.id, rng.choice(self.pools.outputs), name=call.name)
                yield Message("tool", (result,)), {
                    "decision": "auto",
                    "summary": f"{call.name} done",
                    "duration_ms": rng.randint(3, 900),
                    "exit_code": 0,
                }
        yield Message.assistant(rng.choice(self.pools.assistant)), self._reply_metadata("stop")

    def _call(self) -> ToolCallPart:
        self.calls_made += 1
        tool = self.rng.choice(TOOLS)
        call_id = f"toolu_{self.calls_made:08x}{self.rng.getrandbits(48):012x}"
        return ToolCallPart(call_id, tool, tool_arguments(self.rng, tool))

    def _reply_metadata(self, stop_reason: str) -> dict[str, Any]:
        usage = {"input_tokens": self.rng.randint(2_000, 90_000), "output_tokens": self.rng.randint(20, 900)}
        return {"usage": usage, "stop_reason": stop_reason, "model": self.model}


class TokenCache:
    """`count_message` once per distinct message body (ids do not change a count)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._counts: dict[str, int] = {}

    def count(self, message: Message) -> int:
        key = json.dumps([_body(p) for p in message.parts]) + message.role
        if key not in self._counts:
            self._counts[key] = count_message(self.counter, message)
        return self._counts[key]


def _body(part: Any) -> Any:
    if isinstance(part, ToolCallPart):
        return ["call", part.name, part.arguments]
    if isinstance(part, ToolResultPart):
        return ["result", part.content]
    return ["text", part.text]


# ---- building sessions -------------------------------------------------------------------


@dataclass
class SessionBuilder:
    """Writes a session of `originals` messages, compacting it as the product does when asked to.

    Originals are bulk-inserted as the rows `insert_message` writes (same record,
    position from the same trigger, token counts cached); every hard compaction
    goes through `CompactionStore.replace_with_summary` and summarizes the
    previous summary with the rest of the range, keeping the preserved tail.
    """

    store: ConversationStore
    tokens: TokenCache
    turns: TurnGenerator
    pools: Pools
    clock: datetime = field(default_factory=lambda: datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc))
    compactions: int = 0

    def build(self, title: str, originals: int, *, compact: bool) -> Conversation:
        conversation = self.store.create_conversation(provider="compatible", model="gpt-4o", cwd=str(ROOT), title=title)
        db = self.store.db
        pending: list[dict[str, Any]] = []
        written = 0
        visible_tokens = 0
        with write_transaction(db):
            while written + len(pending) < originals:
                for message, metadata in self.turns.turn():
                    count = self.tokens.count(message)
                    pending.append(self._record(conversation.id, message, metadata, count))
                    visible_tokens += count
                if compact and visible_tokens > COMPACT_AT_TOKENS:
                    written = self._flush(pending, written)
                    visible_tokens = self._compact(conversation.id)
                elif len(pending) >= 1000:
                    written = self._flush(pending, written)
            self._flush(pending, written)
            db.execute("update conversations set updated_at = ? where id = ?", [self._stamp(), conversation.id])
        return self.store.get_conversation(conversation.id)

    def _record(self, conversation_id: int, message: Message, metadata: dict[str, Any], count: int) -> dict[str, Any]:
        return message_record(
            conversation_id,
            message,
            metadata=metadata,
            stamp=self._stamp(),
            token_count=count,
            token_counter=self.tokens.counter.name,
        )

    def _stamp(self) -> str:
        self.clock += timedelta(seconds=7)
        return self.clock.isoformat(timespec="microseconds")

    def _flush(self, pending: list[dict[str, Any]], written: int) -> int:
        if pending:
            self.store.db["messages"].insert_all(pending, batch_size=200)
            written += len(pending)
            pending.clear()
        return written

    def _compact(self, conversation_id: int) -> int:
        """One hard compaction; return the visible tokens it leaves."""
        stored = self.store.history(conversation_id, agent_visible=True)
        history = [HistoryItem(r.message, r.token_count or 0, r.id, r.metadata) for r in stored]
        middle, tail = compaction_range(history, PRESERVE_TAIL)
        summary = Message.context(self.pools.summaries[self.compactions % len(self.pools.summaries)])
        summary_tokens = self.tokens.count(summary)
        compaction = CompactionStore(self.store.db)
        compaction.replace_with_summary(
            conversation_id,
            [item.id for item in middle],
            summary,
            metadata={COMPACTION_SUMMARY: True, "method": "single", "attempts": 1},
            token_count=summary_tokens,
            token_counter=self.tokens.counter.name,
        )
        before = sum(item.tokens for item in history)
        after = summary_tokens + sum(item.tokens for item in tail)
        compaction.record_event(
            conversation_id,
            "hard",
            tokens_before=before,
            tokens_after=after,
            messages_compacted=len(middle),
            method="single",
        )
        self.compactions += 1
        return after


# ---- the bench ------------------------------------------------------------------------------


@dataclass
class Bench:
    """One database file, one agent on a provider that is never called, and a session builder."""

    agent: Agent
    builder: SessionBuilder
    quick: bool

    @classmethod
    async def open(cls, tmp: Path, quick: bool) -> "Bench":
        environ = {
            "ZEPH_LLM_PROVIDER": "compatible",
            "ZEPH_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # never contacted: context_for does no I/O but SQLite
            "ZEPH_LLM_MODEL": "gpt-4o",
            "ZEPH_LLM_MAX_RETRIES": "0",
            "ZEPH_HOME": str(tmp / "data"),
            "XDG_CONFIG_HOME": str(tmp / "config"),
        }
        config = load_config(env=environ).config
        provider = create_provider(resolve_settings(config, environ))
        store = ConversationStore(open_database(tmp / "data" / "zeph.db"))
        workspace = tmp / "workspace"
        workspace.mkdir()
        rng = random.Random(4)
        (workspace / "ZEPH.md").write_text("# Project notes\n\n" + prose(rng, 3000) + "\n", encoding="utf-8")
        agent = Agent(config=config, store=store, provider=provider, cwd=workspace)
        await agent.start()
        pools = Pools.make(rng)
        turns = TurnGenerator(rng, pools, agent.model_label)
        return cls(agent, SessionBuilder(store, TokenCache(agent.counter), turns, pools), quick)

    async def close(self) -> None:
        await self.agent.provider.aclose()
        self.agent.store.close()


def timed_ms(fn: Callable[[], object], runs: int, budget_s: float = 2.0) -> list[float]:
    """Up to `runs` timings after a warm-up call; a slow call stops early (at least 2 samples)."""

    def once() -> float:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1000

    first = once()  # warms SQLite's page cache and the store's parsed messages
    samples = [first] if first > SLOW_MS else []
    deadline = time.perf_counter() + budget_s
    while len(samples) < runs and (len(samples) < 2 or time.perf_counter() < deadline):
        samples.append(once())
    return samples


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def stored_count(bench: Bench, conversation: Conversation, where: str = "") -> int:
    sql = f"select count(*) from messages where conversation_id = ? {where}"
    return bench.agent.store.db.execute(sql, [conversation.id]).fetchone()[0]


# ---- section 1: context assembly time -------------------------------------------------------------


def context_assembly(bench: Bench) -> None:
    sizes = (1_000, 10_000) if bench.quick else (1_000, 10_000, 100_000)
    uncompacted = (1_000,) if bench.quick else (1_000, 10_000)
    agent = bench.agent
    print("1. Context assembly per turn: agent.context_for (history read + token counts + assembly)")
    print(f"   gpt-4o window, up to {TURNS} turns per session; every session lives in one SQLite file\n")
    start = time.perf_counter()
    sessions = [
        (f"compacted, {size // 1000}k", bench.builder.build(f"compacted {size}", size, compact=True)) for size in sizes
    ]
    sessions += [
        (f"UNCOMPACTED, {size // 1000}k (contrast)", bench.builder.build(f"plain {size}", size, compact=False))
        for size in uncompacted
    ]
    print(
        f"   built in {time.perf_counter() - start:.1f} s; {bench.builder.compactions} hard compactions, "
        f"one whenever the visible history passed {COMPACT_AT_TOKENS:,} tokens\n"
    )
    call_ids = getattr(agent, "_call_ids", None)
    header = (
        f"   {'session':<28} {'stored':>8} {'agent-visible':>14} {'median ms':>10} {'p95 ms':>8} "
        f"{'history read ms':>16} {'call-id scan ms':>16}"
    )
    print(header)
    print("   " + "-" * (len(header) - 3))
    medians: dict[str, float] = {}
    for label, conversation in sessions:
        turn = timed_ms(lambda: agent.context_for(conversation), TURNS)
        read = timed_ms(lambda: agent.store.history(conversation.id, agent_visible=True), TURNS)
        scan = f"{statistics.median(timed_ms(lambda: call_ids(conversation), 5)):.2f}" if call_ids else "n/a"
        medians[label] = statistics.median(turn)
        print(
            f"   {label:<28} {stored_count(bench, conversation):>8,} "
            f"{stored_count(bench, conversation, 'and agent_visible = 1'):>14,} "
            f"{medians[label]:>10.2f} {p95(turn):>8.2f} {statistics.median(read):>16.2f} {scan:>16}"
        )
    largest = f"compacted, {sizes[-1] // 1000}k"
    met = "met" if medians[largest] <= TARGET_MS else "MISSED"
    print(f"\n   target ≤ {TARGET_MS:g} ms per turn at {sizes[-1] // 1000}k stored (compacted): {met}")
    print("   stored: every row of the session, compacted originals and summaries included")
    print("   history read: ConversationStore.history(agent_visible=True), included in the median")
    print("   call-id scan: Agent._call_ids, which run_turn also does once per turn (not in the median)")
    print("   agent-visible read plan: " + history_plan(agent.store, dict(sessions)[largest].id))


def history_plan(store: ConversationStore, conversation_id: int) -> str:
    """SQLite's plan for the statement an agent-visible history read runs."""
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        store.history(conversation_id, agent_visible=True)
    finally:
        store.db.conn.set_trace_callback(None)
    query = next(s for s in statements if s.lstrip().lower().startswith("select"))
    return "; ".join(row[-1] for row in store.db.execute("explain query plan " + query))


SESSION_TURNS = 100
SESSION_BUDGET = 32_000


async def tokens_per_turn(bench: Bench) -> None:
    """A 100-turn session under a 32k budget: tokens sent per turn vs sending the full history."""
    from tests.fakes.server import FakeServer
    from tests.scripted_model import ScriptedModel
    from zeph_cli.agent import CompactionFinished, ContextPrepared
    from zeph_cli.tools.permissions import approve_all

    turns = 40 if bench.quick else SESSION_TURNS
    print(f"2. Tokens sent per turn over a {turns}-turn session (budget {SESSION_BUDGET:,}, defaults otherwise)")
    rng = random.Random(7)
    workspace = Path(bench.agent.cwd)
    for n in range(4):
        (workspace / f"module_{n}.py").write_text(code(rng, 6000) + "\n", encoding="utf-8")
    server = FakeServer()
    model = ScriptedModel()
    server.respond_with(model)
    environ = {
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": server.url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
        "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(SESSION_BUDGET),
        "ZEPH_MEMORY_PRUNE_PROTECT_TOKENS": "8000",
    }
    config = load_config(env=environ).config
    provider = create_provider(resolve_settings(config, environ))
    agent = Agent(config=config, store=bench.agent.store, provider=provider, cwd=workspace, approver=approve_all)
    await agent.start()
    conversation = agent.new_conversation("a long working session")
    print(f"   {'turn':>5} {'sent':>8} {'full history':>13} {'sent/full':>10}  compaction this turn")
    sent_total = full_total = 0
    compactions = 0
    try:
        for turn in range(turns):
            if turn % 3 == 1:
                model.call((f"call_{turn}", "read_file", {"path": f"module_{turn % 4}.py"}))
            model.say(prose(rng, 1200))
            sent = full = 0
            done: list[str] = []
            async for event in agent.run_turn(conversation, f"Turn {turn}: " + prose(rng, 300)):
                if isinstance(event, ContextPrepared):  # one per request: each tool round is a request
                    report = event.report
                    history = sum(b.tokens for b in report.blocks if b.name in ("history", "compaction summary"))
                    originals = agent.store.history(conversation.id, user_visible=True)
                    sent += report.used_tokens
                    full += report.used_tokens - history + sum(row.token_count or 0 for row in originals)
                elif isinstance(event, CompactionFinished) and not event.result.skipped:
                    done.append(event.result.kind)
            sent_total += sent
            full_total += full
            compactions += len(done)
            if turn % 10 == 9 or done:
                print(f"   {turn + 1:>5} {sent:>8,} {full:>13,} {sent / full:>10.0%}  {', '.join(done)}")
    finally:
        await agent.aclose()
        await provider.aclose()
        server.close()
    print(f"\n   over {turns} turns: {sent_total:,} tokens sent vs {full_total:,} for the full history "
          f"({sent_total / full_total:.0%}); {compactions} compactions; side-job calls: "
          f"{model.count('compaction')} summary, {model.count('pair')} tool-pair")
    print("   sent: the turn's requests (a tool round is a request of its own); full history: the same requests")
    print("   with every original message instead of summaries and pruned outputs, which is what a client")
    print(f"   without compaction sends, and which a {SESSION_BUDGET // 1000}k model stops accepting once it passes its window")


MATRIX_TURNS = 100
MATRIX_TURNS_QUICK = 30


def budget_matrix(quick: bool, cells: str | None, jobs: int) -> None:
    from benchmarks import budget_matrix as matrix

    chosen = matrix.select_cells(matrix.matrix_cells(), cells)
    turns = MATRIX_TURNS_QUICK if quick else MATRIX_TURNS
    print(f"3. Budget matrix: {len(chosen)} cells of {turns} turns, {jobs} at a time")
    print("   budget = ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS = the fake server's window; tokens counted by the server")
    print("   (cl100k) over everything sent: messages, tool calls and results, tool schemas, chat template")
    print(textwrap.fill("targets: " + matrix.TARGETS, 110, initial_indent="   ", subsequent_indent="   ") + "\n")
    results = matrix.run_matrix(chosen, turns, jobs)
    print()
    print(matrix.markdown_table(results))
    print()
    print(textwrap.fill(matrix.LEGEND, 110, initial_indent="   ", subsequent_indent="   ") + "\n")
    for result in results:
        print("   " + matrix.details(result))


async def run(quick: bool, sections: list[int], cells: str | None, jobs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ZEPH_HOME"] = str(Path(tmp) / "data")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        bench = await Bench.open(Path(tmp), quick) if {1, 2} & set(sections) else None
        try:
            if 1 in sections:
                context_assembly(bench)
                print()
            if 2 in sections:
                await tokens_per_turn(bench)
                print()
            if 3 in sections:
                await asyncio.to_thread(budget_matrix, quick, cells, jobs)
                print()
        finally:
            if bench is not None:
                await bench.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sessions (1k and 10k; 30-turn matrix cells)")
    parser.add_argument(
        "--section", type=int, action="append", choices=(1, 2, 3), help="run only this section (repeatable)"
    )
    parser.add_argument(
        "--cells",
        help="matrix cells to run: comma-separated terms like 8k/tools, failing, 2k/chat/faithful, under",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="matrix cells run at once (processes)")
    args = parser.parse_args(argv)
    sections = sorted(set(args.section or (1, 2, 3)))
    if args.cells and 3 not in sections:
        parser.error("--cells selects matrix cells: use it with --section 3 (or no --section)")
    try:
        from benchmarks import budget_matrix as matrix

        matrix.select_cells(matrix.matrix_cells(), args.cells)
    except ValueError as exc:
        parser.error(str(exc))
    asyncio.run(run(args.quick, sections, args.cells, args.jobs))


if __name__ == "__main__":
    main()
