"""The budget matrix: does every request fit the context budget, and keep what matters?

Budgets 2k / 4k / 8k / 32k (`ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS`) × workloads
{chat: 100 plain turns; tools: 100 turns that each read a file, a ~20 KB one
every third turn} × summarizers {faithful, barely-compressing, failing}, plus
rows against a server that under-reports usage (no tool schemas, no template).
Every user turn also states one short distinct fact on a line of its own
(`FACT-K037 = teal-3`) among its filler, and the store holds an earlier
session on the same topics (without the facts), so semantic recall has
something to bring back and must find room beside the summary.
Every turn runs through the real `Agent.run_turn` and the real openai SDK
against a local fake OpenAI-compatible server whose window is the cell's
budget: it counts each request's prompt tokens over everything sent, reports
usage as api.openai.com does, and rejects a request over its window with the
real context_length_exceeded error.

Invariant: figures only, nothing asserted; every figure comes from what the
fake server received (tokens, requests over budget, summary calls, facts in
the final request, fact lines and tokens in the last request answered, the
turn's question in tool rounds) or from the store's
compaction events and the agent's own events (prune events, failed turns),
never from zeph's reports about itself.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import random
import string
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.texts import code, prose  # noqa: E402
from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.openai_usage import (  # noqa: E402
    HONEST,
    UNDER_REPORTS,
    ContextWindow,
    message_text,
    text_reply,
    tool_call_reply,
)
from tests.fakes.server import FakeResponse, FakeServer, RecordedRequest  # noqa: E402
from zeph_cli.context.recall_block import RECALL_PREFIX  # noqa: E402
from zeph_cli.messages import Message  # noqa: E402
from tests.fakes.summarizers import BARELY, FACT, FAILING, FAITHFUL, Summarizer, side_job_kind  # noqa: E402

BUDGETS = (2_000, 4_000, 8_000, 32_000)
CHAT, TOOLS = "chat", "tools"
WORKLOADS = (CHAT, TOOLS)
SUMMARIZERS = (FAITHFUL, BARELY, FAILING)
PLANTED_FACTS = 10
BIG_FILE_BYTES = 20_000
TURN_TIMEOUT_S = 120.0  # a turn that takes longer is counted as failed
MODEL = "gpt-4o"
CHAT_PATH = "/v1/chat/completions"

# Targets from issue 12, for the header and the ✗ marks.
TARGETS = (
    "peak ÷ budget ≤ 1.00 · 0 requests over budget · summary calls per 100 turns ≤ 20 (tools) / ≤ 10 (chat) · "
    "prune events > 0 (tools) · planted facts in the final request 100% (faithful) / ≥ 80% (failing) · "
    "fact lines in the final request 100% (chat) / ≥ 95% (tools), faithful, 8k and up · "
    "tool rounds carrying their question 100%"
)
FACT_LINES_FROM_BUDGET = 8_000  # the fact-line targets hold from this budget up (a faithful summarizer)

LEGEND = (
    f"✗: misses its target. Planted facts: {PLANTED_FACTS} FACT- codes in user messages across the session, "
    "looked for in the last chat request the server answered (none answered: 0%). Fact lines: the turn's "
    "`FACT-K037 = teal-3` line, key and value verbatim, in that same request; beside them the tokens it "
    "took (the server's count) and the prompt budget (the budget minus the 20% reply reserve). Recall: the turns "
    "whose requests carried the semantic recall block, and that block's tokens in the last request. Tool rounds: chat requests "
    "that answer tool results, refused ones included; '–' when there were none. Summary calls: compaction "
    "summaries (single, chunk and merge calls); tool-pair summaries are counted apart below. Over budget: "
    "requests the server refused with context_length_exceeded, summary requests included. Prune events: soft "
    "compactions that pruned tool outputs. Usage 'under-reports': the server's usage leaves out the tool "
    "schemas and the chat template (its window still counts them)."
)


# ---- cells --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    budget: int
    workload: str
    summarizer: str
    reporting: str = HONEST

    @property
    def name(self) -> str:
        under = "/under" if self.reporting == UNDER_REPORTS else ""
        return f"{self.budget // 1000}k/{self.workload}/{self.summarizer}{under}"


def matrix_cells() -> list[Cell]:
    """Every budget × workload × summarizer against an honest server, then the under-reporting rows."""
    cells = [Cell(b, w, s) for w in WORKLOADS for b in BUDGETS for s in SUMMARIZERS]
    cells += [Cell(8_000, TOOLS, FAITHFUL, UNDER_REPORTS), Cell(4_000, CHAT, FAITHFUL, UNDER_REPORTS)]
    return cells


def select_cells(cells: Iterable[Cell], spec: str | None) -> list[Cell]:
    """Cells matching any comma-separated term; a term's `/`-parts must all be parts of the cell's name
    ("8k/tools", "failing", "under", "2k/chat/faithful")."""
    cells = list(cells)
    if not spec:
        return cells
    terms = [set(t.strip().lower().split("/")) for t in spec.split(",") if t.strip()]
    chosen = [c for c in cells if any(term <= set(c.name.split("/")) for term in terms)]
    if not chosen:
        raise ValueError(f"--cells {spec!r} matches no cell; names look like {cells[0].name}, {cells[-1].name}")
    return chosen


# ---- the session's script -----------------------------------------------------------------


@dataclass(frozen=True)
class TurnPlan:
    prompt: str
    call: tuple[str, str, dict[str, Any]] | None  # the tool call the model makes first, if any
    reply: str


def fact_turns(turns: int) -> dict[int, str]:
    """Planted FACT- codes, spread evenly over the session's turns (the same codes for every cell)."""
    rng = random.Random(12)
    alphabet = string.ascii_uppercase + string.digits
    codes = ["FACT-" + "".join(rng.choice(alphabet) for _ in range(4)) for _ in range(PLANTED_FACTS)]
    return {round(k * turns / PLANTED_FACTS): fact for k, fact in enumerate(codes)}


COLOURS = ("red", "blue", "green", "amber", "violet", "teal", "ochre", "slate")


def fact_line(turn: int) -> str:
    """The short distinct fact a turn states on a line of its own: a key and its value."""
    return f"FACT-K{turn:03d} = {COLOURS[turn % len(COLOURS)]}-{(turn * 7919) % 1000}"


def session_plans(workload: str, turns: int) -> list[TurnPlan]:
    rng = random.Random(7)
    facts = fact_turns(turns)
    plans = []
    for turn in range(turns):
        planted = f" Remember this code for later: {facts[turn]}." if turn in facts else ""
        stated = f"\n{fact_line(turn)}\n"
        if workload == CHAT:
            prompt = f"Turn {turn}: " + prose(rng, 160) + stated + prose(rng, 80) + planted
            plans.append(TurnPlan(prompt, None, prose(rng, 900)))
            continue
        path = f"big_{turn % 4}.py" if turn % 3 == 1 else f"small_{turn % 6}.py"
        call = (f"read{turn}", "read_file", {"path": path})
        prompt = f"Turn {turn}: look at {path}. " + prose(rng, 100) + stated + prose(rng, 60) + planted
        plans.append(TurnPlan(prompt, call, prose(rng, 500)))
    return plans


def write_earlier_session(store, cwd: str, workload: str, turns: int) -> None:
    """An earlier session in the store on the topics of this one: half of each turn's text before its fact
    line, and a reply, for semantic recall to bring back (recall never returns the running
    session's own messages, so without one it has nothing to add)."""
    rng = random.Random(11)
    conversation = store.create_conversation(provider="compatible", model=MODEL, cwd=cwd, title="an earlier session")
    for turn, plan in enumerate(session_plans(workload, turns)):
        text = plan.prompt.split(f"\n{fact_line(turn)}\n")[0].removeprefix(f"Turn {turn}: ")
        words = text.split()
        store.add_message(conversation.id, Message.user("Last week: " + " ".join(words[: len(words) // 2])))
        store.add_message(conversation.id, Message.assistant(prose(rng, 300)))


def write_workspace(root: Path) -> None:
    rng = random.Random(3)
    root.mkdir(parents=True, exist_ok=True)
    for n in range(4):
        (root / f"big_{n}.py").write_text(code(rng, BIG_FILE_BYTES) + "\n", encoding="utf-8")
    for n in range(6):
        (root / f"small_{n}.py").write_text(code(rng, 1_500) + "\n", encoding="utf-8")


# ---- the fake model -----------------------------------------------------------------------


@dataclass
class Sent:
    """One chat-completions request as the server saw it."""

    kind: str  # chat | summary | pair | probe_q | probe_a | guidelines
    tokens: int  # the server's own count over everything sent
    over: bool  # rejected: over the window
    turn: int
    tool_round: bool = False  # a chat request answering tool results
    carries_question: bool = False  # ... that still carries the turn's user message


@dataclass
class SessionModel:
    """The fake server's responder: chat requests follow the turn's plan, side jobs go to the summarizer.

    Chat: a request ending in tool results gets the plan's reply; otherwise the
    plan's tool call (once per turn), else its reply. Any request over the
    window is refused before anything else.
    """

    window: ContextWindow
    summarizer: Summarizer
    sent: list[Sent] = field(default_factory=list)
    plan: TurnPlan | None = None
    turn: int = -1
    last_chat_text: str = ""  # every message's text in the latest chat request the server answered
    last_chat_tokens: int = 0  # ... and its prompt tokens, by the server's count
    last_recall_tokens: int = 0  # ... and the tokens of its semantic recall block (0: none sent)
    recall_turns: set[int] = field(default_factory=set)  # turns whose first chat request carried recall
    _called: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start_turn(self, turn: int, plan: TurnPlan) -> None:
        with self._lock:
            self.turn, self.plan, self._called = turn, plan, False

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        if request.method == "GET" and request.path == "/v1/models":
            return openai_wire.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "system"}]})
        if request.path != CHAT_PATH:
            return openai_wire.json_response(
                openai_wire.error_body(f"Invalid URL ({request.method} {request.path})", "invalid_request_error"),
                status=404,
            )
        body = request.json
        messages = body.get("messages") or []
        prompt = self.window.measure(body)
        stream = bool(body.get("stream"))
        kind = "chat" if stream else side_job_kind(message_text(messages[0]) if messages else "")
        rejection = self.window.check(prompt)
        with self._lock:
            record = Sent(kind, prompt.total, rejection is not None, self.turn)
            plan, turn = self.plan, self.turn
            if kind == "chat":
                if rejection is None:
                    self.last_chat_text = "\n".join(message_text(m) for m in messages)
                    self.last_chat_tokens = prompt.total
                    recall = [message_text(m) for m in messages if message_text(m).startswith(RECALL_PREFIX)]
                    self.last_recall_tokens = sum(self.window.count(text) for text in recall)
                    if recall:
                        self.recall_turns.add(self.turn)
                record.tool_round = bool(messages) and messages[-1].get("role") == "tool"
                question = plan.prompt if plan else ""
                record.carries_question = any(
                    m.get("role") == "user" and question and question in message_text(m) for m in messages
                )
            self.sent.append(record)
        if rejection is not None:
            return rejection
        reported = self.window.reported(prompt)
        count = self.window.count
        if kind != "chat":
            if kind in ("summary", "pair"):
                return self.summarizer.answer(message_text(messages[0]), prompt_tokens=reported, body=body)
            return text_reply("[]", prompt_tokens=reported, count=count, body=body)  # probe / guidelines: off by default
        assert plan is not None, f"chat request outside a turn ({turn})"
        if not record.tool_round and plan.call is not None:
            with self._lock:
                first, self._called = not self._called, True
            if first:
                return tool_call_reply([plan.call], prompt_tokens=reported, count=count, body=body)
        return text_reply(plan.reply, prompt_tokens=reported, count=count, body=body)


# ---- one cell -----------------------------------------------------------------------------


@dataclass
class CellResult:
    cell: Cell
    turns: int
    requests: int = 0
    peak_tokens: int = 0
    smallest_chat_tokens: int = 0  # the floor: prompt layers and tool schemas with the least history sent
    over_budget: int = 0
    over_budget_side: int = 0  # of which side jobs (summaries)
    summary_calls: int = 0
    pair_calls: int = 0
    prune_events: int = 0
    facts_planted: int = 0
    facts_kept: int = 0
    fact_lines_kept: int = 0  # the turns' FACT-K… lines, verbatim, in the last request answered
    last_tokens: int = 0  # the prompt tokens of the last request answered
    last_recall_tokens: int = 0  # ... of which its semantic recall block (0: none sent)
    recall_turns: int = 0  # turns that sent a semantic recall block
    tool_rounds: int = 0
    tool_rounds_with_question: int = 0
    turns_failed: int = 0
    errors: list[str] = field(default_factory=list)
    compactions: dict[str, int] = field(default_factory=dict)
    calibration: float | None = None
    wall_s: float = 0.0

    @property
    def peak_ratio(self) -> float:
        return self.peak_tokens / self.cell.budget

    @property
    def summary_per_100(self) -> float:
        return self.summary_calls * 100 / self.turns

    @property
    def facts_pct(self) -> float:
        return 100 * self.facts_kept / self.facts_planted if self.facts_planted else 0.0

    @property
    def fact_lines_pct(self) -> float:
        return 100 * self.fact_lines_kept / self.turns if self.turns else 0.0

    @property
    def capacity(self) -> int:
        """The prompt budget: the budget minus the reply's reserve (20%)."""
        return self.cell.budget - self.cell.budget // 5

    @property
    def question_pct(self) -> float | None:
        return 100 * self.tool_rounds_with_question / self.tool_rounds if self.tool_rounds else None


def build_agent(server_url: str, budget: int, workspace: Path, db_path: Path):
    """The agent as `zeph` builds it for a compatible server, defaults everywhere but the budget."""
    from zeph_cli.agent import Agent
    from zeph_cli.agent.factory import memory_service
    from zeph_cli.config import load_config
    from zeph_cli.providers import create_provider, resolve_settings
    from zeph_cli.providers.summary import side_job_settings
    from zeph_cli.store import ConversationStore, open_database
    from zeph_cli.tools.permissions import approve_all

    environ = {
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": server_url + "/v1",
        "ZEPH_LLM_MODEL": MODEL,
        "ZEPH_LLM_MAX_RETRIES": "0",
        "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(budget),
    }
    loaded = load_config(env=environ)
    config = loaded.config
    settings = resolve_settings(config, environ)
    store = ConversationStore(open_database(db_path))
    return Agent(
        config=config,
        store=store,
        provider=create_provider(settings),
        cwd=workspace,
        approver=approve_all,
        helper_settings=side_job_settings(config, environ, settings),
        memory=memory_service(loaded, store, settings, workspace),  # recall and memories on, as in zeph
    )


def prune_events(agent, conversation_id: int, finished: list) -> int:
    """Soft compactions that pruned tool outputs: from the store's compaction events, else from the events seen."""
    try:
        row = agent.store.db.execute(
            "select count(*) from compaction_events where conversation_id = ? and kind = 'soft' and outputs_pruned > 0",
            [conversation_id],
        ).fetchone()
        return int(row[0])
    except Exception:  # the events table changed shape: count the CompactionFinished events instead
        return sum(1 for r in finished if r.kind == "soft" and getattr(r, "outputs_pruned", 0))


def calibration_factor(agent) -> float | None:
    try:
        return float(agent.store.calibration(agent.provider.name, agent.provider.model).factor)
    except Exception:
        return None


async def run_session(cell: Cell, turns: int, tmp: Path) -> CellResult:
    from zeph_cli.agent.events import CompactionFinished, TurnFailed
    from zeph_cli.tokens import default_counter

    counter = default_counter()
    window = ContextWindow(cell.budget, counter.count, cell.reporting)
    model = SessionModel(window, Summarizer(cell.summarizer, counter.count))
    server = FakeServer()
    server.respond_with(model)
    # A client closing an idle keep-alive connection is not news: no traceback on stderr mid-table.
    server._httpd.handle_error = lambda request, client_address: None
    workspace = tmp / "workspace"
    write_workspace(workspace)
    result = CellResult(cell, turns)
    finished: list = []
    agent = build_agent(server.url, cell.budget, workspace, tmp / "data" / "zeph.db")
    write_earlier_session(agent.store, str(workspace), cell.workload, turns)
    started = time.perf_counter()
    try:
        await agent.start()
        if agent.memory is not None:  # the earlier session's vectors, as `zeph memory reindex` writes them
            from zeph_cli.features.memory.service import index_pending

            await asyncio.to_thread(index_pending, agent.memory)
        conversation = agent.new_conversation(f"budget matrix {cell.name}")

        async def one_turn(prompt: str) -> str | None:
            failure = None
            async for event in agent.run_turn(conversation, prompt):
                if isinstance(event, TurnFailed):
                    failure = str(event.error)
                elif isinstance(event, CompactionFinished):
                    finished.append(event.result)
            return failure

        for turn, plan in enumerate(session_plans(cell.workload, turns)):
            model.start_turn(turn, plan)
            try:
                failure = await asyncio.wait_for(one_turn(plan.prompt), TURN_TIMEOUT_S)
            except asyncio.TimeoutError:
                failure = f"turn {turn} took over {TURN_TIMEOUT_S:g} s"
            except Exception as exc:  # a crash is a failed turn, and the session goes on
                failure = f"{type(exc).__name__}: {exc}"
            if failure:
                result.turns_failed += 1
                result.errors.append(f"turn {turn}: {' '.join(failure.split())[:200]}")
        result.prune_events = prune_events(agent, conversation.id, finished)
        result.calibration = calibration_factor(agent)
    finally:
        result.wall_s = time.perf_counter() - started
        await agent.aclose()
        await agent.provider.aclose()
        agent.store.close()
        server.close()

    sent = model.sent
    result.requests = len(sent)
    result.peak_tokens = max((s.tokens for s in sent), default=0)
    result.smallest_chat_tokens = min((s.tokens for s in sent if s.kind == "chat"), default=0)
    result.over_budget = sum(s.over for s in sent)
    result.over_budget_side = sum(s.over for s in sent if s.kind != "chat")
    result.summary_calls = sum(s.kind == "summary" for s in sent)
    result.pair_calls = sum(s.kind == "pair" for s in sent)
    rounds = [s for s in sent if s.kind == "chat" and s.tool_round]
    result.tool_rounds = len(rounds)
    result.tool_rounds_with_question = sum(s.carries_question for s in rounds)
    planted = set(fact_turns(turns).values())
    result.facts_planted = len(planted)
    result.facts_kept = len(planted & set(FACT.findall(model.last_chat_text)))
    result.fact_lines_kept = sum(fact_line(turn) in model.last_chat_text for turn in range(turns))
    result.last_tokens = model.last_chat_tokens
    result.last_recall_tokens = model.last_recall_tokens
    result.recall_turns = len(model.recall_turns)
    result.compactions = dict(Counter(r.kind for r in finished if not getattr(r, "skipped", "")))
    return result


def run_cell(cell: Cell, turns: int) -> CellResult:
    """One cell in a fresh data directory (safe to call in a worker process)."""
    zeph_log = logging.getLogger("zeph")
    if not zeph_log.handlers:  # warnings meant for zeph.log would otherwise land on stderr, mid-table
        zeph_log.addHandler(logging.NullHandler())
    # a background thread of the session (the embedder warming, the vector index) may still be writing
    # into the folder as it is removed: what is left there is not part of the result
    with tempfile.TemporaryDirectory(prefix="zeph-matrix-", ignore_cleanup_errors=True) as tmp:
        os.environ["ZEPH_HOME"] = str(Path(tmp) / "data")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        for name in [n for n in os.environ if n.startswith("ZEPH_") and n != "ZEPH_HOME"]:
            del os.environ[name]
        return asyncio.run(run_session(cell, turns, Path(tmp)))


def run_matrix(cells: list[Cell], turns: int, jobs: int, progress: Callable[[str], None] = print) -> list[CellResult]:
    """Run the cells, `jobs` at a time in worker processes; results in the order of `cells`."""
    results: dict[Cell, CellResult] = {}
    context = multiprocessing.get_context("spawn")  # workers start clean, with no event loop inherited
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        futures = {pool.submit(run_cell, cell, turns): cell for cell in cells}
        for future in as_completed(futures):
            cell = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # the session could not run at all: every turn failed
                result = CellResult(cell, turns, turns_failed=turns, errors=[f"session: {type(exc).__name__}: {exc}"])
            results[cell] = result
            progress(f"   {len(results):>2}/{len(cells)} {cell.name:<24} {result.wall_s:6.1f} s")
    return [results[c] for c in cells]


# ---- the table ----------------------------------------------------------------------------

MISS = " ✗"


def _mark(text: str, missed: bool) -> str:
    return text + (MISS if missed else "")


def table_row(r: CellResult) -> list[str]:
    cell = r.cell
    tools = cell.workload == TOOLS
    over = f"{r.over_budget}" + (f" ({r.over_budget_side} summary)" if r.over_budget_side else "")
    facts_target = {FAITHFUL: 100.0, FAILING: 80.0}.get(cell.summarizer)
    lines_target = (95.0 if tools else 100.0) if cell.summarizer == FAITHFUL and cell.budget >= FACT_LINES_FROM_BUDGET else None
    question = r.question_pct
    return [
        f"{cell.budget:,}",
        cell.workload,
        cell.summarizer,
        "under-reports" if cell.reporting == UNDER_REPORTS else "full",
        _mark(f"{r.peak_ratio:.2f}", r.peak_ratio > 1.0),
        _mark(over, r.over_budget > 0),
        _mark(f"{r.summary_per_100:.0f}", r.summary_per_100 > (20 if tools else 10)),
        _mark(str(r.prune_events), tools and r.prune_events == 0) if tools else str(r.prune_events),
        _mark(f"{r.facts_pct:.0f}%", facts_target is not None and r.facts_pct < facts_target),
        _mark(f"{r.fact_lines_kept}/{r.turns}", lines_target is not None and r.fact_lines_pct < lines_target),
        f"{r.last_tokens:,} of {r.capacity:,}",
        f"{r.recall_turns}/{r.turns}, {r.last_recall_tokens:,}",
        _mark(f"{question:.0f}%", question < 100) if question is not None else "–",
        _mark(f"{r.turns_failed}/{r.turns}", r.turns_failed > 0),
        f"{r.wall_s:.1f}",
    ]


HEADER = [
    "budget",
    "workload",
    "summarizer",
    "usage",
    "peak ÷ budget",
    "over budget",
    "summary calls /100 turns",
    "prune events",
    "facts kept",
    "fact lines kept",
    "tokens sent (last request)",
    "turns with recall, its tokens (last)",
    "tool rounds with question",
    "failed turns",
    "wall s",
]


def markdown_table(results: list[CellResult]) -> str:
    rows = [HEADER] + [table_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    numeric = [False, False, False, False] + [True] * (len(HEADER) - 4)

    def line(row: list[str]) -> str:
        cells = [c.rjust(w) if n and row is not HEADER else c.ljust(w) for c, w, n in zip(row, widths, numeric)]
        return "| " + " | ".join(cells) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if n else ("-" * (w + 2)) for w, n in zip(widths, numeric)) + "|"
    return "\n".join([line(rows[0]), rule] + [line(r) for r in rows[1:]])


def details(r: CellResult) -> str:
    """One line per cell beyond the table: requests, compactions by kind, tool-pair calls, calibration, first error."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(r.compactions.items())) or "none"
    calibration = f"{r.calibration:.2f}" if r.calibration is not None else "n/a"
    text = (
        f"{r.cell.name}: {r.requests} requests, peak {r.peak_tokens:,} tokens, smallest chat request "
        f"{r.smallest_chat_tokens:,}; compactions: {kinds}; "
        f"tool-pair summary calls {r.pair_calls}; calibration factor {calibration}"
    )
    if r.errors:
        text += f"; first failure: {r.errors[0]}"
    return text
