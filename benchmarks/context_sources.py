"""What preparing a turn's context sources costs, one after another and at once.

1. Two sources of 1 s each — one awaiting (I/O: asyncio.sleep), one blocking in a thread (CPU or
   SQLite: time.sleep under asyncio.to_thread) — prepared one after the other, then by
   `prepare_sources` (concurrently, each under the deadline): the sum against the slowest.
2. A real turn's preparation on an agent built as `zeph` builds it (the embedded embedder EMBEDDER, semantic
   recall over MESSAGES stored messages with their vectors, long-term memory and a skills folder of 12
   skills; no provider is called): one after another (recall and memories, then skills and MCP
   discovery: `memory.prepare` then `prepare_extras`) beside `prepare_sources`. Warm: the median of
   RUNS turns on one agent, taken in turn. Cold: the first turn of a fresh process (the embedder
   loading), one process per figure, COLD runs each.
3. The same turn with the skills catalog's read made slow (each refresh blocks for SLOW_READ seconds,
   as a folder on a stalled network disk would) and `[context] source_deadline_seconds` = DEADLINE:
   how long `prepare_sources` takes, and what becomes of the skills source.

Run from the repository root with the project installed (`pip install -e '.[local,test]'`):

    python benchmarks/context_sources.py            # RUNS=7 COLD=3 MESSAGES=3000 EMBEDDER=wordllama
    RUNS=15 COLD=5 python benchmarks/context_sources.py
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zeph_cli.agent.sources import prepare_sources  # noqa: E402
from zeph_cli.context.blocks import Block, Source, TurnInput  # noqa: E402

RUNS = int(os.environ.get("RUNS", "7"))
COLD = int(os.environ.get("COLD", "3"))
MESSAGES = int(os.environ.get("MESSAGES", "3000"))
EMBEDDER = os.environ.get("EMBEDDER", "wordllama")  # [memory] embedder: wordllama or minilm
SLOW_READ = 2.0  # seconds a slow skills catalog read blocks
DEADLINE = 0.5  # the deadline of the slow case
PROMPT = "How do I deploy the billing service to staging after the database migration?"


class Sleeper(Source):
    def __init__(self, name: str, blocking: bool) -> None:
        self.name, self.blocking = name, blocking

    async def prepare(self, turn: TurnInput) -> list[Block]:
        if self.blocking:
            await asyncio.to_thread(time.sleep, 1.0)
        else:
            await asyncio.sleep(1.0)
        return []

    def blocks(self, turn: TurnInput) -> list[Block]:
        return []


async def two_sources() -> tuple[float, float]:
    sources = [Sleeper("io", blocking=False), Sleeper("cpu", blocking=True)]
    turn = TurnInput(1, {}, prompt=PROMPT, running=True)
    start = time.perf_counter()
    for source in sources:
        await source.prepare(turn)
    sequential = time.perf_counter() - start
    start = time.perf_counter()
    prepared = await prepare_sources(sources, turn, 30.0)
    concurrent = time.perf_counter() - start
    assert not prepared.left_out
    return sequential, concurrent


def _environment(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ZEPH_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # never contacted: preparation calls no provider
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_MEMORY_EMBEDDER": EMBEDDER,
    }


SERVICES = ("billing", "search", "auth", "checkout", "mailer", "reports", "gateway", "scheduler", "inventory", "ledger")
DOINGS = ("deploy {s} to staging", "migrate the {s} database", "profile the slow {s} endpoint",
          "review the {s} pull request", "write tests for the {s} client", "rotate the {s} secrets",
          "fix the flaky {s} build", "document the {s} API", "upgrade the {s} Docker image",
          "rebase the {s} feature branch")
ANSWERS = ("Run make {v}-{n} first, then check the {s} health endpoint on port {p}.",
           "The {s} service keeps its settings in config/{s}-{n}.toml; restart it after the change.",
           "Thanks! The {s} job {n} finished in {p} seconds.", "Ok, sounds good.")


def _exchanges(count: int) -> list[tuple[str, str]]:
    """`count` (question, answer) pairs of a developer's sessions: deterministic, varied, with small talk."""
    pairs = []
    for n in range(count):
        service, doing = SERVICES[n % len(SERVICES)], DOINGS[(n // len(SERVICES)) % len(DOINGS)]
        verb = doing.split()[0]
        question = f"How do I {doing.format(s=service)}? Attempt {n}." if n % 7 else "Thanks, that worked."
        pairs.append((question, ANSWERS[n % len(ANSWERS)].format(v=verb, n=n, s=service, p=1000 + n % 9000)))
    return pairs


def _seed(home: Path) -> None:
    """A skills folder and a few stored sessions to recall from."""
    import yaml

    from tests.data.skills_set import SKILLS

    root = home / "config" / "zeph" / "skills"
    for name, (description, triggers, body) in SKILLS.items():
        (root / name).mkdir(parents=True)
        front = yaml.safe_dump({"name": name, "description": description, "triggers": triggers}, sort_keys=False)
        (root / name / "SKILL.md").write_text(f"---\n{front}---\n{body}\n")
    (home / "work").mkdir()


async def _agent(home: Path):
    from zeph_cli.agent.factory import build_agent
    from zeph_cli.config import load_config
    from zeph_cli.messages import Message
    from zeph_cli.paths import database_path
    from zeph_cli.store import ConversationStore, open_database

    env = _environment(home)
    loaded = load_config(env=env)
    path = database_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    store = ConversationStore(open_database(path))
    agent, _ = await build_agent(loaded, store=store, env=env, cwd=home / "work")
    if not store.list_conversations():
        for n, (question, answer) in enumerate(_exchanges(MESSAGES // 2)):
            if n % 10 == 0:
                conversation = agent.new_conversation(f"Session {n // 10}")
            store.add_message(conversation.id, Message.user(question))
            store.add_message(conversation.id, Message.assistant(answer))
        agent.memory.index_pending()  # every stored message has its vector, as after a while of use
    conversation = agent.new_conversation("bench")
    store.add_message(conversation.id, Message.user(PROMPT))
    return agent, conversation


async def _before(agent, conversation) -> float:
    history = agent.agent_history(conversation)
    start = time.perf_counter()
    agent.turn_memory = await agent.memory.prepare(conversation.id, PROMPT, {i.id for i in history}, agent.memory_chars())
    await agent.extras.prepare(PROMPT, tools_wanted=not agent.tools_unavailable)
    await agent.offer.rank_extras(PROMPT)
    return time.perf_counter() - start


async def _after(agent, conversation) -> float:
    history = agent.agent_history(conversation)
    start = time.perf_counter()
    await agent.prepare_sources(conversation, history, PROMPT, running=True)
    took = time.perf_counter() - start
    assert not agent.prepared.left_out, agent.prepared.outcomes
    return took


async def _one(home: Path, way: str, runs: int) -> list[float]:
    agent, conversation = await _agent(home)
    try:
        step = _before if way == "before" else _after
        return [await step(agent, conversation) for _ in range(runs)]
    finally:
        await agent.aclose()
        agent.store.close()


async def warm(home: Path) -> tuple[list[float], list[float]]:
    agent, conversation = await _agent(home)
    try:
        await _before(agent, conversation)  # the embedder loaded, the skills embedded, SQLite's pages read
        before, after = [], []
        for _ in range(RUNS):
            before.append(await _before(agent, conversation))
            after.append(await _after(agent, conversation))
        return before, after
    finally:
        await agent.aclose()
        agent.store.close()


async def slow_skills(home: Path) -> tuple[float, dict[str, str]]:
    """The turn's preparation with the skills catalog's every refresh blocking for SLOW_READ seconds."""
    from zeph_cli.features.skills.catalog import SkillCatalog

    agent, conversation = await _agent(home)
    refresh = SkillCatalog.refresh

    def stalled(catalog):
        time.sleep(SLOW_READ)
        return refresh(catalog)

    try:
        await _before(agent, conversation)  # warm: only the stall differs from a warm turn
        agent.config.context.source_deadline_seconds = DEADLINE
        SkillCatalog.refresh = stalled  # type: ignore[method-assign]
        history = agent.agent_history(conversation)
        start = time.perf_counter()
        await agent.prepare_sources(conversation, history, PROMPT, running=True)
        took = time.perf_counter() - start
        return took, {o.name: o.state for o in agent.prepared.outcomes}
    finally:
        SkillCatalog.refresh = refresh  # type: ignore[method-assign]
        await agent.aclose()
        agent.store.close()


def cold(home: Path, way: str) -> float:
    """The first preparation of a fresh process (the embedder loads), in its own process."""
    code = ("import asyncio, json, sys; sys.path.insert(0, '.'); from pathlib import Path; "
            "from benchmarks.context_sources import _one; "
            f"print(json.dumps(asyncio.run(_one(Path({str(home)!r}), {way!r}, 1))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=_environment(home), cwd=Path(__file__).resolve().parents[1], check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])[0]


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.0f} ms (min {min(values) * 1000:.0f})"


def main() -> None:
    sequential, concurrent = asyncio.run(two_sources())
    print("1. Two sources of 1 s each (one awaiting, one blocking in a thread)")
    print(f"   one after another  {sequential:5.2f} s")
    print(f"   prepare_sources    {concurrent:5.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _seed(home)
        start = time.perf_counter()
        asyncio.run(_one(home, "before", 1))  # the store seeded and indexed, not measured
        seeded = time.perf_counter() - start
        before, after = asyncio.run(warm(home))
        cold_before = [cold(home, "before") for _ in range(COLD)]
        cold_after = [cold(home, "after") for _ in range(COLD)]
        slow, states = asyncio.run(slow_skills(home))
    print(f"2. A real turn's preparation: embedder {EMBEDDER}, recall over {MESSAGES} messages, memories, 12 skills")
    print(f"   (median of runs; the store seeded and indexed in {seeded:.1f} s)")
    print(f"   warm, {RUNS} turns   one after another (recall, then skills and MCP)  {ms(before)}")
    print(f"                  prepare_sources (concurrent)                 {ms(after)}")
    print(f"   cold, {COLD} processes one after another                          {ms(cold_before)}")
    print(f"                  prepare_sources (concurrent)                 {ms(cold_after)}")
    print(f"3. The skills catalog's read blocking {SLOW_READ:g} s, deadline {DEADLINE:g} s")
    print(f"   prepare_sources  {slow:5.2f} s; " + ", ".join(f"{name} {state}" for name, state in states.items()))


if __name__ == "__main__":
    main()
