"""`zeph context --text`, through the real `zeph` and the wire-level fake model: each block's text under its
name and tokens, in the order sent, taken from the very messages the next request sends (compared with what
the fake server then receives)."""

from __future__ import annotations

import json
import re

import pytest

from tests.chat_wire import chat_requests, queue_call, queue_reply
from tests.cli_helpers import assert_one_line_error, err, out, run_zeph
from zeph_cli.messages import Message, part_from_dict
from zeph_cli.providers.openai import wire_messages

PROJECT_RULES = "Indent with tabs. Ünïcode stays as written."


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "proj"
    (path / ".git").mkdir(parents=True)
    (path / "notes.txt").write_text("a file to read\n")
    (path / "ZEPH.md").write_text(f"# Rules\n{PROJECT_RULES}\n")
    return path


@pytest.fixture
def env(compatible):
    # No <time> block: the preview and the request after it are made seconds apart.
    return {**compatible, "ZEPH_CONTEXT_INJECT_TIME": "false", "ZEPH_MEMORY_SEMANTIC_ENABLED": "false",
            "ZEPH_CONTEXT_ENHANCED_PROMPT": "Be terse."}


def two_turns(fake_server, env, project) -> None:
    """A session whose history holds a tool call and its result, then a plain exchange."""
    queue_call(fake_server, "read_file", {"path": "notes.txt"})
    queue_reply(fake_server, "It says hi.")
    first = run_zeph("ask", "--topic", "Reading files.", "read my notes", env=env, cwd=project)
    assert first.returncode == 0, err(first)
    queue_reply(fake_server, "Second answer.")
    second = run_zeph("ask", "-c", "second question", env=env, cwd=project)
    assert second.returncode == 0, err(second)


def headed(text: str) -> list[tuple[str, str]]:
    """(block header, the text under it) for each `══` header of `zeph context --text`."""
    parts = re.split(r"^══ (.*)$", text, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2]))


def test_text_shows_each_block_under_its_name_and_tokens_in_the_order_sent(fake_server, env, project):
    two_turns(fake_server, env, project)
    shown = run_zeph("context", "--text", env=env, cwd=project)
    assert shown.returncode == 0, err(shown)
    blocks = json.loads(out(run_zeph("context", "--json", env=env, cwd=project)))["context"]["blocks"]
    tokens = {b["name"]: b["tokens"] for b in blocks}

    sections = headed(out(shown))
    names = [head.split(" · ")[0] for head, _ in sections]
    assert names == ["base prompt", "environment", "project context", "mode prompt", "topic prompt", "tools",
                     "history", "enhancement prompt"]
    for head, _ in sections:  # each header carries the block's tokens as `zeph context` counts them
        name = head.split(" · ")[0]
        assert head.split(" · ")[1] == f"{tokens[name]:,} tokens", head
    body = {head.split(" · ")[0]: text for head, text in sections}
    assert PROJECT_RULES in body["project context"] and "<project_context>" in body["project context"]
    assert PROJECT_RULES not in out(shown).replace(body["project context"], "")
    assert "<topic_prompt>\nReading files.\n</topic_prompt>" in body["topic prompt"]
    assert "── read_file\n" in body["tools"] and "parameters: {" in body["tools"]
    history = body["history"]
    order = ["── user\nread my notes", '→ tool call read_file', '"path": "notes.txt"', "── tool read_file",
             '<tool_output tool="read_file" untrusted="true">', "1\ta file to read", "── assistant\nIt says hi.",
             "── user\nsecond question", "── assistant\nSecond answer."]
    places = [history.index(piece) for piece in order]
    assert places == sorted(places), list(zip(order, places))
    assert "<enhanced_prompt>\nBe terse.\n</enhanced_prompt>" in body["enhancement prompt"]


def test_text_in_json_is_the_next_request_less_its_new_message(fake_server, env, project):
    two_turns(fake_server, env, project)
    shown = run_zeph("context", "--json", "--text", env=env, cwd=project)
    assert shown.returncode == 0, err(shown)
    sections = json.loads(out(shown))["text"]
    assert [s["block"] for s in sections] == ["base prompt", "environment", "project context", "mode prompt",
                                              "topic prompt", "tools", "history", "enhancement prompt"]
    previewed = [Message(m["role"], tuple(part_from_dict(p) for p in m["parts"]))
                 for s in sections for m in s.get("messages", [])]

    queue_reply(fake_server, "Third answer.")
    assert run_zeph("ask", "-c", "third question", env=env, cwd=project).returncode == 0
    request = chat_requests(fake_server)[-1].json
    # the request sent: the previewed messages, with the new one before the closing enhancement prompt
    expected = wire_messages([*previewed[:-1], Message.user("third question"), previewed[-1]])
    assert request["messages"] == expected
    (tools,) = [s["tools"] for s in sections if s["block"] == "tools"]
    assert [{"name": t["function"]["name"], "description": t["function"]["description"],
             "parameters": t["function"]["parameters"]} for t in request["tools"]] == tools


def test_text_for_a_session_that_does_not_exist_is_one_error_line(fake_server, env, project):
    two_turns(fake_server, env, project)
    result = run_zeph("context", "--text", "--session", "99", env=env, cwd=project)
    assert_one_line_error(result, 1, "no session with id 99")
    assert out(result) == ""
