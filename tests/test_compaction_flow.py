"""Hard compaction end to end: `zeph compact` on a real session, through the real
executable and a fake OpenAI-compatible server; dual visibility in the store."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import db_rows, err, out, run_zeph
from tests.conftest import isolate
from tests.fakes import openai_wire
from tests.fakes.server import FakeServer

pytestmark = pytest.mark.xdist_group("compaction_flow")  # one worker runs the module (--dist loadgroup): the six-turn session is built once

PATH = "/v1/chat/completions"


def text_reply(text: str):
    return openai_wire.stream_response(openai_wire.text_chunks([text]))


def build_session(fake_server, compatible, workspace, turns: int = 6) -> None:
    for i in range(turns):
        fake_server.queue(text_reply(f"answer {i}"))
        prompt = f"question {i}" + (": remember the code word PLUM-42" if i == 0 else "")
        assert run_zeph("ask", *(["-c"] if i else []), prompt, env=compatible, cwd=workspace).returncode == 0


@pytest.fixture(scope="module")
def six_turns(tmp_path_factory) -> tuple[Path, Path]:
    """The six-turn session the compactions below start from, built once by the real `zeph ask` against
    a server of its own: its data dir and its project. Each test compacts a copy (`session_copy`)."""
    root = tmp_path_factory.mktemp("six-turns")
    project = root / "project"
    project.mkdir()
    server = FakeServer()
    try:
        with pytest.MonkeyPatch.context() as patch:  # set up before the per-test isolation: isolated here alike
            isolate(patch, root)
            env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": server.url + "/v1",
                   "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0"}
            build_session(server, env, project)
    finally:
        server.close()
    return root / "zeph-home", project


def session_copy(six_turns: tuple[Path, Path]) -> Path:
    """This test's data dir becomes a copy of the six-turn session's; its project, where zeph then runs."""
    home, project = six_turns
    shutil.copytree(home, os.environ["ZEPH_HOME"])
    return project


def test_compact_summarizes_all_but_the_tail_and_keeps_the_users_scroll_back(fake_server, compatible, six_turns):
    project = session_copy(six_turns)
    summary = "User Intent: testing.\nThe code word is PLUM-42."
    fake_server.queue(openai_wire.json_response(openai_wire.completion(content=summary)))
    result = run_zeph("compact", env=compatible, cwd=project)
    assert result.returncode == 0, err(result)
    assert "compacted 8 messages into a summary" in out(result)

    summary_request = fake_server.requests_to(PATH)[-1].json
    prompt = summary_request["messages"][0]["content"]
    assert "PLUM-42" in prompt and "User Intent" in prompt and "question 3" in prompt
    assert "question 4" not in prompt  # the preserved tail (4 messages) is not summarized

    rows = db_rows("select role, content, agent_visible, user_visible, compacted_at, metadata from messages order by position, id")
    hidden = [r for r in rows if not r["agent_visible"]]
    assert len(hidden) == 8 and all(r["user_visible"] and r["compacted_at"] for r in hidden)
    (summary_row,) = [r for r in rows if not r["user_visible"]]
    assert summary_row["agent_visible"] == 1 and summary_row["content"].startswith("[compaction summary]")
    assert json.loads(summary_row["metadata"])["compaction_summary"] is True
    visible = [r for r in rows if r["agent_visible"]]
    assert visible[0] == summary_row and len(visible) == 5  # where the compacted range was, before the tail

    # The user still sees everything; the next turn sends the summary and the tail verbatim.
    shown = out(run_zeph("sessions", "show", "--last", env=compatible))
    assert "question 0: remember the code word PLUM-42" in shown and "[compaction summary]" not in shown
    fake_server.queue(text_reply("PLUM-42"))
    assert run_zeph("ask", "-c", "what was the code word?", env=compatible, cwd=project).returncode == 0
    sent = fake_server.requests_to(PATH)[-1].json["messages"]
    non_system = [m["content"] for m in sent if m["role"] != "system"]
    assert non_system == ["question 4", "answer 4", "question 5", "answer 5", "what was the code word?"]
    assert any(m["role"] == "system" and "The code word is PLUM-42." in m["content"] for m in sent)

    context = json.loads(out(run_zeph("context", "--json", env=compatible, cwd=project)))
    names = [b["name"] for b in context["context"]["blocks"]]
    assert "compaction summary" in names
    assert context["compaction"]["compaction_events"] == 1


def test_a_later_compaction_carries_the_earlier_summary_forward(fake_server, compatible, six_turns):
    project = session_copy(six_turns)
    fake_server.queue(openai_wire.json_response(openai_wire.completion(content="The code word is PLUM-42.")))
    assert run_zeph("compact", env=compatible, cwd=project).returncode == 0
    for i in range(6, 9):
        fake_server.queue(text_reply(f"answer {i}"))
        assert run_zeph("ask", "-c", f"question {i}", env=compatible, cwd=project).returncode == 0
    fake_server.queue(openai_wire.json_response(openai_wire.completion(content="Still: the code word is PLUM-42.")))
    assert run_zeph("compact", env=compatible, cwd=project).returncode == 0
    prompt = fake_server.requests_to(PATH)[-1].json["messages"][0]["content"]
    assert "The code word is PLUM-42." in prompt  # the earlier summary is part of what is summarized
    summaries = db_rows("select agent_visible from messages where user_visible = 0 order by id")
    assert [r["agent_visible"] for r in summaries] == [0, 1]  # the old summary is hidden, the new one shown


def test_a_failing_summarizer_still_compacts_with_the_metadata_summary(fake_server, compatible, six_turns):
    project = session_copy(six_turns)
    fake_server.queue(openai_wire.server_error())
    result = run_zeph("compact", env=compatible, cwd=project)
    assert result.returncode == 0, err(result)
    assert "metadata summary" in out(result)
    (summary,) = db_rows("select content from messages where user_visible = 0")
    assert "[metadata summary — LLM compaction unavailable]" in summary["content"]
    assert "Messages compacted: 8 (4 user, 4 assistant" in summary["content"]


def test_nothing_to_compact_says_so(fake_server, compatible, tmp_path):
    build_session(fake_server, compatible, tmp_path, turns=2)
    result = run_zeph("compact", env=compatible, cwd=tmp_path)
    assert result.returncode == 0 and "nothing to compact" in out(result)
    assert len(fake_server.requests_to(PATH)) == 2  # no summary call
