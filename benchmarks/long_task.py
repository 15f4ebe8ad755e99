"""The long task: a scripted coding session through four task items at a small budget, and what compaction
did with each item's messages.

Sixty turns (`--turns`) at an 8k budget (`--budget`). The scripted model keeps a task list with todo_write:
each quarter of the session belongs to one item, in progress for its first 80% of turns, then closed (item
3 abandoned, the others completed) and reviewed with no item in progress; every turn reads or writes a
file of the workspace. Every turn runs through the real `Agent.run_turn` and the real openai SDK against a
local fake OpenAI-compatible server whose window is the budget: it counts each request's prompt tokens over
everything sent (tool schemas and the chat template included), reports usage as api.openai.com does, and
refuses a request over the window with the real context_length_exceeded error. Summaries come from the
faithful fake summarizer (tests/fakes/summarizers.py).

Invariant: figures only, nothing asserted. Which messages a compaction summarized is read from the store
(the summary's `summary_of`, a pruned copy taken for its original); which items were active, completed or
abandoned then is what the session's registry answered the compaction (recorded as it was read); the
`<todo>` block and the request sizes are what the fake server received.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.texts import code, prose  # noqa: E402
from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.openai_usage import ContextWindow, message_text, text_reply, tool_call_reply  # noqa: E402
from tests.fakes.server import FakeResponse, FakeServer, RecordedRequest  # noqa: E402
from tests.fakes.summarizers import FAITHFUL, Summarizer, side_job_kind  # noqa: E402

MODEL = "gpt-4o"
CHAT_PATH = "/v1/chat/completions"
TURNS = 60
BUDGET = 8_000
TODO_TAG = "<todo>"
ITEMS = (
    ("1", "Read the old parser and list its entry points"),
    ("2", "Write the new tokenizer"),
    ("3", "Port the command-line flags"),
    ("4", "Write the tests"),
)
CLOSING = {"1": "completed", "2": "completed", "3": "abandoned", "4": "completed"}  # how each item ends
FILES = 6  # src/module_N.py in the workspace
FILE_CHARS = 2000  # a file read_file returns
WRITE_CHARS = 200  # what write_file writes
PROMPT_CHARS = 60  # the user's words beyond the item's name
WORK = 0.8  # the share of an item's turns it is in progress for; the rest review it (--work)
REPLY_CHARS = 160  # the model's answer closing a turn
TURN_TIMEOUT_S = 120.0


# ---- the script ---------------------------------------------------------------------------------


Call = tuple[str, str, dict[str, Any]]


@dataclass(frozen=True)
class TurnPlan:
    prompt: str
    calls: tuple[Call, ...]  # one per tool round, in order
    reply: str


def phase_of(turn: int, turns: int) -> tuple[int, int, int]:
    """(item index 0-3, the turn's place in the item's share of the session, that share's length)."""
    share = turns / len(ITEMS)
    index = min(int(turn / share), len(ITEMS) - 1)
    start, end = round(index * share), round((index + 1) * share)
    return index, turn - start, end - start


def in_progress(turn: int, turns: int, work: float = WORK) -> bool:
    """Whether the turn's item is in progress: the first `work` share of its turns; the rest review the
    work with no item in progress (ordinary history)."""
    _, place, length = phase_of(turn, turns)
    return place < max(1, round(length * work))


def todo_items(current: int, *, finished: bool = False) -> list[dict[str, str]]:
    """The whole list with items before `current` closed, `current` in progress (closed when `finished`)."""
    out = []
    for index, (item_id, text) in enumerate(ITEMS):
        if index < current or (finished and index == current):
            status = CLOSING[item_id]
        elif index == current:
            status = "in_progress"
        else:
            status = "pending"
        out.append({"id": item_id, "text": text, "status": status})
    return out


def session_plans(turns: int, work: float = WORK) -> list[TurnPlan]:
    """Each turn's prompt, tool calls and reply: todo_write puts an item in progress at the start of its
    share, a read or a write each turn, todo_write closes the item at the end of its work."""
    rng = random.Random(5)
    plans = []
    for turn in range(turns):
        current, place, _ = phase_of(turn, turns)
        working = in_progress(turn, turns, work)
        calls: list[Call] = []
        if place == 0:
            calls.append((f"todo{turn}", "todo_write", {"items": todo_items(current)}))
        if turn % 3 == 2 and working:
            content = code(rng, WRITE_CHARS) + "\n"
            calls.append((f"write{turn}", "write_file", {"path": f"src/new_{turn % FILES}.py", "content": content}))
        else:
            calls.append((f"read{turn}", "read_file", {"path": f"src/module_{turn % FILES}.py"}))
        if working and (turn == turns - 1 or not in_progress(turn + 1, turns, work) or phase_of(turn + 1, turns)[1] == 0):
            calls.append((f"done{turn}", "todo_write", {"items": todo_items(current, finished=True)}))
        _, text = ITEMS[current]
        ask = f"keep going with '{text}'" if working else f"review what '{text}' changed"
        prompt = f"Turn {turn}: {ask}. " + prose(rng, PROMPT_CHARS)
        plans.append(TurnPlan(prompt, tuple(calls), f"Step {turn} done. " + prose(rng, REPLY_CHARS)))
    return plans


def write_workspace(root: Path) -> None:
    rng = random.Random(3)
    (root / "src").mkdir(parents=True, exist_ok=True)
    for n in range(FILES):
        (root / "src" / f"module_{n}.py").write_text(code(rng, FILE_CHARS) + "\n", encoding="utf-8")


# ---- the fake model -----------------------------------------------------------------------------


@dataclass
class Sent:
    kind: str  # chat | summary | pair | probe_q | probe_a | guidelines
    tokens: int
    over: bool
    todo: bool  # a chat request carrying the <todo> block


@dataclass
class ScriptedModel:
    """Chat requests follow the turn's plan (one tool call per round, then the reply); side jobs go to the
    summarizer. A request over the window is refused before anything else."""

    window: ContextWindow
    summarizer: Summarizer
    sent: list[Sent] = field(default_factory=list)
    plan: TurnPlan | None = None
    round: int = 0
    todo_from: int | None = None  # index in `sent` of the first request after the first todo_write call
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start_turn(self, plan: TurnPlan) -> None:
        with self._lock:
            self.plan, self.round = plan, 0

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        if request.method == "GET" and request.path == "/v1/models":
            return openai_wire.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "system"}]})
        if request.path != CHAT_PATH:
            return openai_wire.json_response(openai_wire.error_body("not found", "invalid_request_error"), status=404)
        body = request.json
        messages = body.get("messages") or []
        prompt = self.window.measure(body)
        kind = "chat" if body.get("stream") else side_job_kind(message_text(messages[0]) if messages else "")
        rejection = self.window.check(prompt)
        todo = kind == "chat" and any(TODO_TAG in message_text(m) for m in messages)
        with self._lock:
            self.sent.append(Sent(kind, prompt.total, rejection is not None, todo))
        if rejection is not None:
            return rejection
        reported, count = self.window.reported(prompt), self.window.count
        if kind != "chat":
            if kind in ("summary", "pair"):
                return self.summarizer.answer(message_text(messages[0]), prompt_tokens=reported, body=body)
            return text_reply("[]", prompt_tokens=reported, count=count, body=body)
        with self._lock:
            plan, index = self.plan, self.round
            if plan is not None and index < len(plan.calls):
                self.round += 1
                if self.todo_from is None and plan.calls[index][1] == "todo_write":
                    self.todo_from = len(self.sent)
        assert plan is not None, "a chat request outside a turn"
        if index < len(plan.calls):
            return tool_call_reply([plan.calls[index]], prompt_tokens=reported, count=count, body=body)
        return text_reply(plan.reply, prompt_tokens=reported, count=count, body=body)


# ---- what compaction did ------------------------------------------------------------------------


@dataclass
class Compaction:
    turn: int
    kind: str
    outcome: dict[str, str]  # item id -> summarized | kept | partly summarized | summarized earlier
    states: dict[str, str]  # item id -> its state when compacted (active | completed | abandoned)
    names_closed: bool = True  # the summary starts by naming each closed item it summarized

    def describe(self) -> str:
        parts = [f"item {i} ({self.states[i]}): {what}" for i, what in sorted(self.outcome.items())]
        return f"turn {self.turn:>2} {self.kind:<9} " + ("; ".join(parts) if parts else "no task item yet")


@dataclass
class Result:
    turns: int
    budget: int
    compactions: list[Compaction] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    first_todo_request: int | None = None  # index in `sent` of the first request after the first todo_write call
    failed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    registry_files: int | None = None  # NNNN-subgoal-registry.txt files dumped (None: no dump asked for)
    wall_s: float = 0.0

    @property
    def chat(self) -> list[Sent]:
        return [s for s in self.sent if s.kind == "chat"]

    @property
    def active_summarized(self) -> int:
        """Compactions that summarized any message of an item active at the time."""
        return sum(1 for c in self.compactions if any(
            c.states[i] == "active" and c.outcome[i] in ("summarized", "partly summarized") for i in c.outcome))

    def closed_summarized(self) -> dict[str, bool]:
        """Per item that was ever completed or abandoned at a compaction: whether one summarized it."""
        out: dict[str, bool] = {}
        for c in self.compactions:
            for i, state in c.states.items():
                if state != "active":
                    out[i] = out.get(i, False) or c.outcome[i] in ("summarized", "partly summarized")
        return out

    @property
    def todo_requests(self) -> tuple[int, int]:
        """(chat requests carrying <todo>, chat requests sent since the list was first written)."""
        if self.first_todo_request is None:
            return 0, 0
        later = [s for s in self.sent[self.first_todo_request:] if s.kind == "chat"]
        return sum(s.todo for s in later), len(later)

    @property
    def peak(self) -> int:
        return max((s.tokens for s in self.sent), default=0)

    @property
    def over_budget(self) -> int:
        return sum(s.over for s in self.sent)


def build_agent(server_url: str, budget: int, workspace: Path, db_path: Path, dump_dir: Path | None = None):
    """The agent as `zeph` builds it for a compatible server, defaults everywhere but the budget (no
    semantic memory: the session's own history is what is measured)."""
    from zeph_cli.agent import Agent
    from zeph_cli.agent.agent import AgentServices
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
        **({"ZEPH_DEBUG_DUMP_DIR": str(dump_dir)} if dump_dir else {}),
    }
    loaded = load_config(env=environ)
    settings = resolve_settings(loaded.config, environ)
    return Agent(
        config=loaded.config,
        store=ConversationStore(open_database(db_path)),
        provider=create_provider(settings),
        cwd=workspace,
        approver=approve_all,
        services=AgentServices(helper_settings=side_job_settings(loaded.config, environ, settings)),
    )


def summarized_originals(store, conversation_id: int, summary_id: int) -> set[int]:
    """The original messages a compaction summary took in: a pruned copy counted as the message it was
    pruned from, a tool-pair summary as the pair; an earlier compaction summary carried forward adds
    nothing (its originals were counted when it was made)."""
    rows = {row.id: row for row in store.history(conversation_id)}

    def originals(message_id: int) -> set[int]:
        row = rows.get(message_id)
        if row is None:
            return {message_id}
        if "pruned_from" in row.metadata:
            return {row.metadata["pruned_from"]}
        if row.metadata.get("summary_kind") == "compaction":
            return set()
        if "summary_of" in row.metadata:
            return {o for i in row.metadata["summary_of"] for o in originals(i)}
        return {message_id}

    return {o for i in rows[summary_id].metadata.get("summary_of") or [] for o in originals(i)}


def visible_originals(store, conversation_id: int) -> set[int]:
    """The original messages the agent still sees verbatim (a pruned copy counted as its original; a
    tool-pair summary as its pair); compaction summaries are not counted."""
    rows = store.history(conversation_id, agent_visible=True)
    out: set[int] = set()
    for row in rows:
        if "pruned_from" in row.metadata:
            out.add(row.metadata["pruned_from"])
        elif row.metadata.get("summary_kind") == "tool_pair":
            out.update(row.metadata.get("summary_of") or [])
        elif row.metadata.get("summary_kind") != "compaction":
            out.add(row.id)
    return out


async def run_session(
    turns: int,
    budget: int,
    tmp: Path,
    progress: Callable[[str], None] | None = None,
    dump_dir: Path | None = None,
    subgoals: bool = True,
    work: float = WORK,
) -> Result:
    """One session; `subgoals` False: compaction is not told the task items (as before subgoal-aware
    compaction), while the figures still read them."""
    from zeph_cli.agent.events import AgentWarning, CompactionFinished, TurnFailed
    from zeph_cli.context.compaction.subgoals import Subgoal
    from zeph_cli.tokens import default_counter

    counter = default_counter()
    model = ScriptedModel(ContextWindow(budget, counter.count), Summarizer(FAITHFUL, counter.count))
    server = FakeServer()
    server.respond_with(model)
    server._httpd.handle_error = lambda request, client_address: None  # an idle keep-alive closing is not news
    workspace = tmp / "workspace"
    write_workspace(workspace)
    result = Result(turns, budget)
    agent = build_agent(server.url, budget, workspace, tmp / "data" / "zeph.db", dump_dir)
    seen: list[Sequence[Subgoal]] = [()]  # what the registry answered the latest compaction
    read = agent.compactor.deps.subgoals

    def recorded(conversation) -> Sequence[Subgoal]:
        seen[0] = list(read(conversation))
        return seen[0] if subgoals else ()

    agent.compactor.deps.subgoals = recorded
    started = time.perf_counter()
    try:
        await agent.start()
        conversation = agent.new_conversation("long task")
        for turn, plan in enumerate(session_plans(turns, work)):
            model.start_turn(plan)

            async def one_turn(turn: int = turn, plan: TurnPlan = plan) -> str | None:
                failure = None
                async for event in agent.run_turn(conversation, plan.prompt):
                    if isinstance(event, TurnFailed):
                        failure = str(event.error)
                    elif isinstance(event, AgentWarning):
                        result.warnings.append(event.text)
                    elif isinstance(event, CompactionFinished) and event.result.summary_id and event.result.kind != "soft":
                        gone = summarized_originals(agent.store, conversation.id, event.result.summary_id)
                        left = visible_originals(agent.store, conversation.id)
                        outcome: dict[str, str] = {}
                        states: dict[str, str] = {}
                        for goal in seen[0]:
                            hit = any(goal.holds(i) for i in gone)
                            what = "summarized" if hit else "kept" if any(goal.holds(i) for i in left) else "summarized earlier"
                            before = outcome.get(goal.item_id)
                            outcome[goal.item_id] = what if before in (None, what) else "partly summarized"
                            states[goal.item_id] = goal.state
                        text = next(r.message.content for r in agent.store.history(conversation.id)
                                    if r.id == event.result.summary_id)
                        head = text.split("\n\n", 1)[0]
                        named = all(f"Task {g.item_id} '{g.text}' {g.state}" in head for g in seen[0]
                                    if g.state != "active" and outcome[g.item_id] in ("summarized", "partly summarized"))
                        result.compactions.append(Compaction(turn, event.result.kind, outcome, states, named))
                return failure

            try:
                failure = await asyncio.wait_for(one_turn(), TURN_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 — a crash is a failed turn, and the session goes on
                failure = f"{type(exc).__name__}: {exc}"
            if failure:
                result.failed.append(f"turn {turn}: {' '.join(failure.split())[:200]}")
            if progress and turn % 10 == 9:
                progress(f"  turn {turn + 1}/{turns}: {len(result.compactions)} compactions")
    finally:
        result.wall_s = time.perf_counter() - started
        await agent.aclose()
        await agent.provider.aclose()
        agent.store.close()
        server.close()
    result.sent = list(model.sent)
    result.first_todo_request = model.todo_from
    return result


def run(
    turns: int = TURNS,
    budget: int = BUDGET,
    progress: Callable[[str], None] | None = None,
    dump_dir: Path | None = None,
    subgoals: bool = True,
    work: float = WORK,
) -> Result:
    """One session in a fresh data directory."""
    zeph_log = logging.getLogger("zeph")
    if not zeph_log.handlers:
        zeph_log.addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory(prefix="zeph-long-task-", ignore_cleanup_errors=True) as tmp:
        os.environ["ZEPH_HOME"] = str(Path(tmp) / "data")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        for name in [n for n in os.environ if n.startswith("ZEPH_") and n != "ZEPH_HOME"]:
            del os.environ[name]
        result = asyncio.run(run_session(turns, budget, Path(tmp), progress, dump_dir, subgoals, work))
    if dump_dir is not None:
        result.registry_files = len(list(dump_dir.glob("*-subgoal-registry.txt")))
    return result


def report(r: Result, subgoals: bool = True) -> str:
    carrying, chats = r.todo_requests
    closed = r.closed_summarized()
    lines = [
        ("" if subgoals else "WITHOUT subgoal-aware compaction: ") + f"long task: {r.turns} turns at a {r.budget:,}-token budget, {len(ITEMS)} task items, "
        f"{len(r.compactions)} LLM compactions, {len(r.sent)} requests ({len(r.chat)} chat), {r.wall_s:.1f} s",
        "",
        "per compaction (each item's state then, and what happened to its messages):",
        *(f"  {c.describe()}" for c in r.compactions),
        "",
        f"active item's messages ever summarized: {'yes' if r.active_summarized else 'never'}"
        f" ({r.active_summarized} of {len(r.compactions)} compactions)",
        f"summaries naming the closed items they took in: {sum(c.names_closed for c in r.compactions)} of "
        f"{len(r.compactions)}",
        "closed items summarized: " + (", ".join(f"item {i} {'yes' if hit else 'no'}" for i, hit in sorted(closed.items()))
                                       or "none closed before a compaction"),
        f"<todo> in every chat request since the list was written: {'yes' if chats and carrying == chats else 'no'}"
        f" ({carrying} of {chats})",
        f"every request within budget: {'yes' if r.over_budget == 0 and r.peak <= r.budget else 'no'}"
        f" (peak {r.peak:,} ÷ {r.budget:,} = {r.peak / r.budget:.2f}; {r.over_budget} over budget)",
        f"failed turns: {len(r.failed)}" + (f" (first: {r.failed[0]})" if r.failed else ""),
    ]
    if r.registry_files is not None:
        lines.append(f"subgoal registry files dumped: {r.registry_files} (for {len(r.compactions)} compactions)")
    if r.warnings:
        lines.append(f"warnings: {len(r.warnings)} (first: {' '.join(r.warnings[0].split())[:160]})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--dump", type=Path, help="[debug] dump_dir for the session (requests, compactions, registries)")
    parser.add_argument("--without-subgoals", action="store_true",
                        help="compaction is not told the task items (the figures still read them), for comparison")
    parser.add_argument("--work", type=float, default=WORK,
                        help=f"the share of an item's turns it is in progress for (default {WORK}; 1.0: no review turns)")
    args = parser.parse_args(argv)
    if not 0 < args.work <= 1:
        print("--work must be above 0 and at most 1", file=sys.stderr)
        return 2
    if args.turns < len(ITEMS) or args.budget < 1_000:
        print(f"--turns must be at least {len(ITEMS)} and --budget at least 1000", file=sys.stderr)
        return 2
    progress = lambda line: print(line, file=sys.stderr)  # noqa: E731
    result = run(args.turns, args.budget, progress, args.dump.resolve() if args.dump else None,
                 not args.without_subgoals, args.work)
    print(report(result, subgoals=not args.without_subgoals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
