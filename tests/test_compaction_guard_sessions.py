"""The compaction exhaustion guard belongs to the session: kept across `zeph ask` runs, set per prompt
budget (a raised budget lets compaction try again), reset by `/clear`."""

from __future__ import annotations

import json
import os

from tests.cli_helpers import EMPTY_PROJECT, db_rows, err, run_zeph
from zeph_cli.agent.chat_session import ChatSession
from zeph_cli.agent.events import AgentWarning
from zeph_cli.config import load_config
from zeph_cli.tools.permissions import approve_all
from tests.fakes import openai_wire
from zeph_cli.context.compaction import EXHAUSTED_WARNING
from zeph_cli.context.compaction.guard import GUARD_KEY, NO_NET_REDUCTION, CompactionGuard

WARNING = EXHAUSTED_WARNING.splitlines()[0].removeprefix("Warning: ")
TRIED = "⏺ compacting the context…"


def ask(compatible, budget: int, prompt: str, *flags: str):
    return run_zeph("ask", *flags, prompt, env={**compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(budget),
                                                         "ZEPH_MEMORY_COMPACTION_COOLDOWN_TURNS": "0"})  # only the guard stops it


def kept_guard() -> dict | None:
    (row,) = db_rows("select metadata from conversations where id = 1")
    return json.loads(row["metadata"]).get(GUARD_KEY)


def test_exhaustion_is_kept_across_runs_and_a_raised_budget_tries_again(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["An answer."])))
    assert ask(compatible, 32000, "a roomy start").returncode == 0  # session 1
    first = ask(compatible, 380, "first question", "--session", "1")
    assert WARNING in err(first) and TRIED in err(first), err(first)
    assert kept_guard() == {"reason": NO_NET_REDUCTION, "warned": True, "capacity": 304}

    second = ask(compatible, 380, "second question", "--session", "1")  # a new process on the same session
    assert WARNING not in err(second) and TRIED not in err(second), err(second)

    raised = ask(compatible, 400, "third question", "--session", "1")  # more room: compaction may try again
    assert TRIED in err(raised) and WARNING in err(raised), err(raised)
    assert kept_guard()["capacity"] == 320 and kept_guard()["warned"]
    lowered = ask(compatible, 380, "fourth question", "--session", "1")  # less room than it failed with
    assert TRIED not in err(lowered) and WARNING not in err(lowered), err(lowered)
    prompts = db_rows("select content from messages where role = 'user' order by id")
    assert [r["content"] for r in prompts][1:] == ["first question", "second question", "third question", "fourth question"]


def test_a_kept_guard_holds_at_its_budget_or_below_only():
    guard = CompactionGuard()
    assert guard.check(5, 1000, 1000) == NO_NET_REDUCTION
    guard.capacity = 2000
    kept = guard.to_metadata()
    assert kept == {"reason": NO_NET_REDUCTION, "warned": False, "capacity": 2000}
    assert CompactionGuard.from_metadata(kept, 2000).exhausted and CompactionGuard.from_metadata(kept, 1500).exhausted
    again = CompactionGuard.from_metadata(kept, 2000)
    assert again.warning_once() == EXHAUSTED_WARNING  # not said yet: said once, in whichever run comes first
    assert not CompactionGuard.from_metadata(kept, 32000).exhausted
    assert not CompactionGuard.from_metadata(None, 2000).exhausted
    assert not CompactionGuard.from_metadata({"capacity": "big"}, 2000).exhausted
    assert CompactionGuard().to_metadata() is None


async def test_clear_in_the_chat_app_resets_the_kept_guard(fake_server, compatible, tmp_path):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["An answer."])))
    assert ask(compatible, 32000, "a roomy start").returncode == 0
    assert WARNING in err(ask(compatible, 380, "first question", "--session", "1"))
    assert kept_guard() is not None
    env = {**os.environ, **compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "380",
           "ZEPH_MEMORY_COMPACTION_COOLDOWN_TURNS": "0"}
    session = await ChatSession.open(load_config(env=env), env=env, cwd=EMPTY_PROJECT, approver=approve_all, session_id=1)
    try:
        warned = [e.text for e in [event async for event in session.run("second question")] if isinstance(e, AgentWarning)]
        assert EXHAUSTED_WARNING not in warned  # kept from the `zeph ask` run: not said again
        assert session.clear() > 0
        assert kept_guard() is None
        events = [event async for event in session.run("third question")]
        assert EXHAUSTED_WARNING in [e.text for e in events if isinstance(e, AgentWarning)]  # it tried again
        assert kept_guard() is not None
    finally:
        await session.aclose()


async def test_a_later_metadata_write_keeps_the_guard_a_compaction_saved(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["An answer."])))
    assert ask(compatible, 32000, "a roomy start").returncode == 0
    env = {**os.environ, **compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "380",
           "ZEPH_MEMORY_COMPACTION_COOLDOWN_TURNS": "0"}
    session = await ChatSession.open(load_config(env=env), env=env, cwd=EMPTY_PROJECT, approver=approve_all, session_id=1)
    try:
        stale = session.agent.store.get_conversation(1)  # as the chat app holds it from before the turn
        events = [event async for event in session.run("first question")]
        assert EXHAUSTED_WARNING in [e.text for e in events if isinstance(e, AgentWarning)]
        saved = kept_guard()
        assert saved is not None and GUARD_KEY not in stale.metadata
        updated = session.agent.with_metadata(stale, "system", "Answer briefly.")  # /system, /enhance, /profile
        assert kept_guard() == saved and updated.metadata[GUARD_KEY] == saved
        assert updated.metadata["system"] == "Answer briefly."
        session.conversation = stale
        session.set_system("")
        assert kept_guard() == saved and "system" not in session.conversation.metadata
    finally:
        await session.aclose()
