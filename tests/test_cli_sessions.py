"""`zeph sessions …` and `zeph ask` over each wire API, through the real executable."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import assert_one_line_error, err, out, run_zeph
from tests.fakes import anthropic_wire, ollama_wire, openai_wire


@pytest.fixture
def two_sessions(fake_server):
    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o"}
    for reply in (["Use ", "a B-tree index."], ["Paris is the capital."], ["It is 42."]):
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(reply)))
    assert run_zeph("ask", "How do I speed up lookups in postgres?", env=env).returncode == 0
    assert run_zeph("ask", "Capital of France?", env=env).returncode == 0
    assert run_zeph("ask", "-c", "And the answer to everything?", env=env).returncode == 0
    return env


def test_list_shows_newest_first_with_counts(two_sessions):
    data = json.loads(out(run_zeph("sessions", "list", "--json")))
    assert [s["id"] for s in data] == [2, 1]
    assert [s["message_count"] for s in data] == [4, 2]
    assert data[1]["title"] == "How do I speed up lookups in postgres?"
    table = out(run_zeph("sessions", "list"))
    assert "Capital of France?" in table and "gpt-4o" in table


def test_show_by_id_and_last(two_sessions):
    shown = out(run_zeph("sessions", "show", "1"))
    assert "How do I speed up lookups in postgres?" in shown and "Use a B-tree index." in shown
    last = out(run_zeph("sessions", "show", "--last"))
    assert "Paris is the capital." in last and "It is 42." in last and "B-tree" not in last


def test_search_finds_messages_across_sessions(two_sessions):
    result = run_zeph("sessions", "search", "B-tree")
    assert result.returncode == 0
    assert out(result).startswith("1\t")  # session 1 holds the match
    assert "Use a [B-tree] index." in out(result)  # the snippet marks the match
    hits = json.loads(out(run_zeph("sessions", "search", "capital", "--json")))
    assert {h["conversation_id"] for h in hits} == {2}
    miss = run_zeph("sessions", "search", "kubernetes")
    assert miss.returncode == 1 and "no messages match" in err(miss)


def test_export_markdown_and_json(two_sessions, tmp_path):
    md = out(run_zeph("sessions", "export", "2", "--format", "md"))
    assert md.startswith("# Capital of France?") and "## Assistant" in md and "It is 42." in md
    target = tmp_path / "s2.json"
    result = run_zeph("sessions", "export", "2", "--format", "json", "-o", str(target))
    assert result.returncode == 0 and "exported" in err(result)
    data = json.loads(target.read_text())
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "user", "assistant"]
    assert data["messages"][1]["metadata"]["usage"]["input_tokens"] == 12
    assert all(m["user_visible"] and m["agent_visible"] for m in data["messages"])


def test_rm_deletes_a_session(two_sessions):
    result = run_zeph("sessions", "rm", "1")
    assert result.returncode == 0 and "deleted session 1 (2 messages)" in err(result)
    assert [s["id"] for s in json.loads(out(run_zeph("sessions", "list", "--json")))] == [2]
    assert run_zeph("sessions", "search", "B-tree").returncode == 1


def test_session_bad_input():
    assert_one_line_error(run_zeph("sessions", "show"), 2, "--last")
    assert_one_line_error(run_zeph("sessions", "show", "--last"), 1, "no sessions")
    assert_one_line_error(run_zeph("sessions", "show", "7"), 1, "7")
    assert_one_line_error(run_zeph("sessions", "rm", "7"), 1, "7")
    assert_one_line_error(run_zeph("sessions", "export", "1", "--format", "xml"), 2, "xml")


def test_export_to_an_unwritable_path(two_sessions, tmp_path):
    assert_one_line_error(run_zeph("sessions", "export", "1", "-o", str(tmp_path / "missing-dir" / "x.md")), 1, "missing-dir")


def test_empty_list_says_how_to_start():
    result = run_zeph("sessions", "list")
    assert result.returncode == 0 and 'zeph ask' in err(result)


# ---- `zeph ask` over the other two wire APIs ----


def test_ask_over_anthropic(fake_server):
    fake_server.queue(anthropic_wire.sse_response(anthropic_wire.text_events(["Bonjour", " !"])))
    env = {"ZEPH_LLM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": fake_server.url, "ANTHROPIC_API_KEY": "sk-ant-test"}
    result = run_zeph("ask", "Say hi in French", "-u", env=env)
    assert result.returncode == 0, err(result)
    assert out(result) == "Bonjour !\n"
    body = fake_server.requests_to("/v1/messages")[0].json
    assert body["model"] == "claude-sonnet-4-6"
    assert all(m["role"] != "system" for m in body["messages"])
    assert "\n---\n" in body["system"][0]["text"] and "<environment>" in body["system"][0]["text"]
    assert "tokens:" in err(result)


def test_ask_over_ollama(fake_server):
    fake_server.route("/api/show", ollama_wire.show_reply(context_length=131072))
    fake_server.queue(ollama_wire.chat_stream("Hallo", " Welt"), path="/api/chat")
    env = {"ZEPH_LLM_PROVIDER": "ollama", "OLLAMA_HOST": fake_server.url, "ZEPH_LLM_MODEL": "llama3.1:8b"}
    result = run_zeph("ask", "Say hi in German", "--json", env=env)
    assert result.returncode == 0, err(result)
    data = json.loads(out(result))
    assert data["content"] == "Hallo Welt" and data["provider"] == "ollama"
    assert data["context"]["budget"] == 8192  # the server's window, capped: Ollama's runtime default is small
    body = fake_server.requests_to("/api/chat")[0].json
    assert body["options"]["num_ctx"] == 8192 and body["model"] == "llama3.1:8b"


def test_ollama_model_not_found_says_how_to_pull(fake_server):
    fake_server.route("/api/show", ollama_wire.error(404, 'model "llama9" not found, try pulling it first'))
    fake_server.queue(ollama_wire.error(404, 'model "llama9" not found, try pulling it first'), path="/api/chat")
    env = {"ZEPH_LLM_PROVIDER": "ollama", "OLLAMA_HOST": fake_server.url, "ZEPH_LLM_MODEL": "llama9"}
    assert_one_line_error(run_zeph("ask", "hi", env=env), 1, "ollama pull llama9")
