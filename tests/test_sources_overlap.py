"""The real turn's sources overlap and are bounded: recall's search and the skills catalog's read run off
the event loop, so one that blocks is left out at its deadline while the turn goes on, and recall,
memories and skills embed the turn's prompt once between them (the real agent, store, embedder and skills,
in this process; the provider is the fake server)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
import yaml

from tests.data.skills_set import SKILLS
from tests.fakes import openai_wire
from zeph_cli.features.memory import service as memory_service
from zeph_cli.features.memory.embedders.embedded import EmbeddedEmbedder
from zeph_cli.features.skills.catalog import SkillCatalog

GENEROUS = 30.0  # seconds: a bound on a would-be hang, never a speed check
PROMPT = "How do I deploy the billing service to staging after the database migration?"


def _skills(config_home: Path) -> None:
    for name, (description, triggers, body) in SKILLS.items():
        folder = config_home / "zeph" / "skills" / name
        folder.mkdir(parents=True)
        front = yaml.safe_dump({"name": name, "description": description, "triggers": triggers}, sort_keys=False)
        (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}\n")


async def _agent(env: dict[str, str], cwd: Path):
    from zeph_cli.agent.factory import build_agent
    from zeph_cli.config import load_config
    from zeph_cli.messages import Message
    from zeph_cli.paths import database_path
    from zeph_cli.store import ConversationStore, open_database

    _skills(Path(env["XDG_CONFIG_HOME"]))
    store = ConversationStore(open_database(database_path(env)))
    agent, _ = await build_agent(load_config(env=env), store=store, env=env, cwd=cwd)
    earlier = agent.new_conversation("earlier")
    store.add_message(earlier.id, Message.user("The billing service migrates its database before each deploy."))
    store.add_message(earlier.id, Message.assistant("Run make migrate, then deploy the billing service to staging."))
    return agent


async def _turn(agent, prompt: str):
    conversation = agent.new_conversation("now")
    async for _ in agent.run_turn(conversation, prompt):
        pass
    return conversation


def _blocking(release: threading.Event, work):
    """`work`, after blocking its thread until `release` (at most GENEROUS seconds)."""
    def blocked(*args, **kwargs):
        release.wait(GENEROUS)
        return work(*args, **kwargs)

    return blocked


@pytest.mark.parametrize("slow", ["memory", "skills"])
def test_a_source_blocked_in_its_thread_is_left_out_at_its_deadline_and_the_turn_goes_on(
    slow, fake_server, compatible, tmp_path, monkeypatch
):
    # recall's search (SQLite) or the skills catalog's read (files) blocks: on the event loop it would hold
    # up the whole turn past any deadline and come back "ok"; in its thread it is cut off at the deadline
    env = {**os.environ, **compatible, "ZEPH_MEMORY_EMBEDDER": "wordllama"}
    release = threading.Event()

    async def scenario():
        agent = await _agent(env, tmp_path)
        try:
            fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Warm."])))
            await _turn(agent, PROMPT)  # the embedder loaded, the skills read: only the block differs
            assert not agent.prepared.left_out, agent.prepared.outcomes
            if slow == "memory":
                monkeypatch.setattr(memory_service, "recall", _blocking(release, memory_service.recall))
            else:
                monkeypatch.setattr(SkillCatalog, "refresh", _blocking(release, SkillCatalog.refresh))
            agent.config.context.source_deadline_seconds = 0.2
            fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Went on."])))
            conversation = await asyncio.wait_for(_turn(agent, "Which port does the billing service listen on?"), GENEROUS)
            outcomes = {o.name: o for o in agent.prepared.outcomes}
            assert outcomes[slow].state == "late" and not release.is_set(), outcomes
            sent = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
            assert sent[-1]["content"] == "Which port does the billing service listen on?"
            assert any("<environment>" in m["content"] for m in sent)
            if slow == "memory":
                assert not any("[semantic recall]" in m["content"] for m in sent)
            stored = agent.store.history(conversation.id)
            assert stored[-1].role == "assistant" and stored[-1].message.content == "Went on."

            # released, the search left running ends on its own; the next turn has the source again
            release.set()
            agent.config.context.source_deadline_seconds = GENEROUS
            fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Again."])))
            await _turn(agent, PROMPT)
            assert not agent.prepared.left_out, agent.prepared.outcomes
        finally:
            release.set()
            await agent.aclose()
            agent.store.close()

    asyncio.run(scenario())


def test_recall_memories_and_skills_embed_the_turns_prompt_once(compatible, tmp_path, monkeypatch):
    embedded: list[list[str]] = []
    embed = EmbeddedEmbedder.embed

    def counted(self, texts):  # the real embedder, its calls recorded
        embedded.append(list(texts))
        return embed(self, texts)

    monkeypatch.setattr(EmbeddedEmbedder, "embed", counted)
    env = {**os.environ, **compatible, "ZEPH_MEMORY_EMBEDDER": "wordllama"}

    async def scenario():
        agent = await _agent(env, tmp_path)
        try:
            # prompts no other test asks: the vector of the last prompt is kept (per embedder, for the process)
            for prompt in ("How do I ship the ledger service to staging once its schema migration ran?",
                           "Please review the pull request for the search service's Docker image."):
                # the preparation alone: after the reply, the indexer embeds the stored prompt as a message
                conversation = agent.new_conversation("now")
                await agent.prepare_sources(conversation, agent.agent_history(conversation), prompt, running=True)
                assert not agent.prepared.left_out, agent.prepared.outcomes
                assert agent.memory.last.query == prompt and agent.extras.turn_skills is not None
                assert agent.extras.turn_skills.matched  # skills ranked by the prompt's vector
                assert sum(texts.count(prompt) for texts in embedded) == 1, embedded
                embedded.clear()
        finally:
            await agent.aclose()
            agent.store.close()

    asyncio.run(scenario())


def test_an_idle_reader_does_not_keep_zeph_from_its_quick_exit(compatible, tmp_path):
    # the reader's thread outlives the turn (it keeps its connection); `zeph ask` must still leave without
    # the interpreter's teardown, which it does only when no other thread is running
    from zeph_cli import process_exit

    env = {**os.environ, **compatible, "ZEPH_MEMORY_EMBEDDER": "wordllama"}

    async def scenario():
        agent = await _agent(env, tmp_path)
        try:
            conversation = agent.new_conversation("now")
            await agent.prepare_sources(conversation, agent.agent_history(conversation), PROMPT, running=True)
            assert not agent.prepared.left_out, agent.prepared.outcomes
        finally:
            await agent.aclose()
            agent.store.close()

    asyncio.run(scenario())
    assert any(t.name == "zeph-recall" and t.is_alive() for t in threading.enumerate())
    assert not process_exit._others_running(), [t.name for t in threading.enumerate()]
