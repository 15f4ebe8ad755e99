"""`zeph ask` end to end: the real executable against the embedded model and a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import ZEPH, db_rows, db_rows_safe, assert_one_line_error, err, out, run_zeph
from tests.fakes import openai_wire
from tests.held_imports import held_import_env
from tests.fakes.server import closed_port_url




# ---- the embedded model: the README's first command ----

# Replies are capped so the tests stay quick on a loaded machine.
SHORT = {"ZEPH_LLM_MAX_TOKENS": "48"}


def test_ask_with_no_key_and_no_network_uses_the_embedded_model():
    result = run_zeph("ask", "Why is the sky blue?", "-u", env=SHORT)
    assert result.returncode == 0, err(result)
    assert len(out(result).split()) >= 3
    assert "tokens:" in err(result) and "context:" in err(result)
    rows = db_rows("select role, content, metadata from messages order by id")
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert rows[0]["content"] == "Why is the sky blue?"
    assert rows[1]["content"].strip() == out(result).strip()
    conv = db_rows("select provider, model, title from conversations")[0]
    assert conv["provider"] == "local" and conv["model"].startswith("SmolLM2")


def test_continue_and_json_with_the_embedded_model():
    first = run_zeph("ask", "Name a colour.", "--json", env=SHORT)
    assert first.returncode == 0, err(first)
    data = json.loads(out(first))
    assert data["session"] == 1 and data["provider"] == "local"
    assert data["usage"]["input_tokens"] > 0 and data["usage"]["output_tokens"] > 0
    assert {b["name"] for b in data["context"]["blocks"]} >= {"base prompt", "environment", "history"}
    second = run_zeph("ask", "-c", "--json", input="Name another one.", env=SHORT)
    assert second.returncode == 0, err(second)
    again = json.loads(out(second))
    assert again["session"] == 1
    assert again["usage"]["input_tokens"] > data["usage"]["input_tokens"]  # the history was sent
    assert len(db_rows("select id from messages where conversation_id = 1")) == 4


# ---- against a wire-level fake server ----


def test_prompt_and_piped_stdin_are_sent_together(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["It ", "counts ", "lines."])))
    result = run_zeph("ask", "What does this do?", input="wc -l file.txt\n", env=compatible)
    assert result.returncode == 0, err(result)
    assert out(result) == "It counts lines.\n"
    sent = fake_server.requests_to("/v1/chat/completions")[0].json
    assert sent["messages"][-1] == {"role": "user", "content": "What does this do?\n\nwc -l file.txt"}
    assert sent["stream"] is True and sent["model"] == "gpt-4o"
    system = "\n".join(m["content"] for m in sent["messages"] if m["role"] == "system")
    assert "<environment>" in system and "You are Zeph" in system


def test_no_stream_makes_one_plain_request(fake_server, compatible):
    fake_server.queue(openai_wire.json_response(openai_wire.completion(content="Whole reply.")))
    result = run_zeph("ask", "hi", "--no-stream", env=compatible)
    assert result.returncode == 0, err(result)
    assert out(result) == "Whole reply.\n"
    assert fake_server.requests[-1].json.get("stream") in (None, False)


def test_project_context_and_session_prompt_reach_the_model(fake_server, compatible, tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "ZEPH.md").write_text("Always answer in French.")
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Oui."])))
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Encore."])))
    assert run_zeph("ask", "hello", "-s", "You review Rust code.", env=compatible, cwd=project / "src").returncode == 0
    assert run_zeph("ask", "-c", "again", env=compatible, cwd=project / "src").returncode == 0
    for request in fake_server.requests_to("/v1/chat/completions"):
        system = "\n".join(m["content"] for m in request.json["messages"] if m["role"] == "system")
        assert "<project_context>" in system and "Always answer in French." in system
        assert "You review Rust code." in system  # the topic prompt is kept for later turns


def test_provider_error_keeps_the_prompt_and_no_session_behind(fake_server, compatible):
    fake_server.queue(openai_wire.invalid_api_key())
    result = run_zeph("ask", "my carefully typed question", env={**compatible, "OPENAI_API_KEY": "sk-bad"})
    first = assert_one_line_error(result, 1, "OPENAI_API_KEY")
    assert "rejected" in first
    kept = err(result).splitlines()[1]
    assert kept.startswith("zeph: your prompt is not in the database; it is kept in ")
    assert Path(kept.rsplit(" ", 1)[1]).read_text() == "my carefully typed question\n"
    assert db_rows("select id from conversations") == []  # nothing for -c to continue
    assert_one_line_error(run_zeph("ask", "-c", "next", env=compatible), 1, "no previous session")


def test_provider_error_in_a_continued_session_keeps_the_prompt_unanswered(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Hi."])), openai_wire.server_error())
    assert run_zeph("ask", "hello", env=compatible).returncode == 0
    result = run_zeph("ask", "-c", "a question the server failed", env=compatible)
    assert result.returncode == 1
    assert "session 1's scroll-back, marked unanswered" in err(result)
    rows = db_rows("select content, agent_visible, metadata from messages order by id")
    assert rows[-1]["content"] == "a question the server failed" and rows[-1]["agent_visible"] == 0
    assert "unsent" in json.loads(rows[-1]["metadata"])


def test_stream_broken_midway_keeps_partial_text_marked(fake_server, compatible):
    events = openai_wire.text_chunks(["The answer ", "is forty", " and then some"])
    fake_server.queue(openai_wire.stream_response(events, drop_after=3))
    result = run_zeph("ask", "question", env=compatible)
    assert result.returncode == 1
    assert "Traceback" not in err(result)
    rows = db_rows("select role, content, metadata from messages order by id")
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert rows[1]["content"] == "The answer is forty"
    assert json.loads(rows[1]["metadata"])["partial"] is True
    shown = run_zeph("sessions", "show", "1")
    assert "partial" in out(shown) and "The answer is forty" in out(shown)


def test_ctrl_c_saves_the_partial_reply(fake_server, compatible):
    events = openai_wire.text_chunks(["first words "] + ["more "] * 50)
    fake_server.queue(openai_wire.stream_response(events, chunk_delay=0.1))
    proc = subprocess.Popen(
        [ZEPH, "ask", "tell me a story"], env={**os.environ, **compatible},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    deadline = time.time() + 30
    while time.time() < deadline and not db_rows_safe("select id from messages"):
        time.sleep(0.05)
    time.sleep(0.6)  # a few chunks arrive
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr and b"interrupted" in stderr
    rows = db_rows("select role, content, metadata from messages order by id")
    assert rows[-1]["role"] == "assistant" and rows[-1]["content"].startswith("first words")
    assert json.loads(rows[-1]["metadata"]) ["partial"] is True



@pytest.mark.parametrize("command", [[ZEPH], [sys.executable, "-m", "zeph_cli"]], ids=["zeph", "python -m zeph_cli"])
def test_ctrl_c_while_the_command_line_is_still_loading_ends_quietly(tmp_path, command):
    marker = tmp_path / "importing"
    env = {**os.environ, **held_import_env(tmp_path / "site", "typer", 30, marker=marker)}  # the command line
    proc = subprocess.Popen([*command, "ask", "never mind"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.02)
    assert marker.exists()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert stderr == b"" and stdout == b""  # no traceback


# ---- bad input: one line, non-zero exit, nothing lost ----


def test_empty_prompt_is_a_usage_error():
    assert_one_line_error(run_zeph("ask"), 2, "no prompt")
    assert_one_line_error(run_zeph("ask", "   "), 2, "no prompt")


def test_binary_stdin_is_refused():
    assert_one_line_error(run_zeph("ask", "explain", input=b"\xff\xfe\x00binary"), 2, "standard input", "UTF-8")


def test_continue_without_sessions():
    assert_one_line_error(run_zeph("ask", "-c", "hello"), 1, "no previous session")


def test_unknown_session_id():
    assert_one_line_error(run_zeph("ask", "--session", "42", "hello"), 1, "42")


def test_continue_and_session_together():
    assert_one_line_error(run_zeph("ask", "-c", "--session", "1", "hello"), 2, "--continue", "--session")


def test_unknown_provider_names_the_choices():
    assert_one_line_error(run_zeph("ask", "-p", "gemini", "hello"), 2, "gemini", "anthropic", "ollama")


def test_hosted_provider_without_key_says_which_variable():
    assert_one_line_error(run_zeph("ask", "-p", "anthropic", "hello"), 1, "ANTHROPIC_API_KEY")
    assert_one_line_error(run_zeph("ask", "-p", "openai", "hello"), 1, "OPENAI_API_KEY")


def test_compatible_without_url():
    assert_one_line_error(run_zeph("ask", "-p", "compatible", "hello"), 2, "base_url")


def test_connection_refused_names_the_url():
    url = closed_port_url()
    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": url + "/v1", "ZEPH_LLM_MAX_RETRIES": "0"}
    result = run_zeph("ask", "hello", env=env)
    assert_one_line_error(result, 1, url.removeprefix("http://"))
    assert "it is kept in" in err(result)


def test_bad_option_value_is_a_usage_error():
    result = run_zeph("ask", "--session", "abc", "hello")
    assert result.returncode == 2 and "Traceback" not in err(result)
    assert "--session" in err(result) and "abc" in err(result) and "valid int" in err(result)


def test_ctrl_c_during_embedded_generation_exits_cleanly():
    """Ctrl+C mid-generation: exit 130, the partial reply saved, no crash on the way out."""
    import select

    proc = subprocess.Popen(
        [ZEPH, "ask", "Tell me a long story about a dragon and a knight."],
        env={**os.environ, "ZEPH_LLM_MAX_TOKENS": "400"},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    ready, _, _ = select.select([proc.stdout], [], [], 90)
    assert ready, "no reply text arrived"
    proc.stdout.read1(64)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr and b"Segmentation" not in stderr
    rows = db_rows("select role, metadata from messages order by id")
    assert rows[-1]["role"] == "assistant" and json.loads(rows[-1]["metadata"])["partial"] is True


def test_ask_updates_compression_guidelines_after_the_reply_when_enough_losses_wait(fake_server, compatible):
    from tests.scripted_model import ScriptedModel
    from zeph_cli.context.compaction.guidelines import FailurePair
    from zeph_cli.paths import database_path
    from zeph_cli.store import open_database
    from zeph_cli.store.guidelines import GuidelinesStore

    model = ScriptedModel()
    fake_server.respond_with(model)
    model.say("pong")
    db = open_database(database_path())
    GuidelinesStore(db).add_failure(None, FailurePair("[compaction summary]\nthe gist", 'uncertainty "I don\'t recall"'))
    db.close()
    env = {**compatible, "ZEPH_MEMORY_COMPRESSION_GUIDELINES_ENABLED": "true",
           "ZEPH_MEMORY_COMPRESSION_GUIDELINES_UPDATE_THRESHOLD": "1"}
    result = run_zeph("ask", "ping", env=env)
    assert result.returncode == 0 and out(result) == "pong\n" and err(result) == ""
    assert model.kinds == ["chat", "guidelines"]  # the reply first, then the update
    (row,) = db_rows("select version, text from compression_guidelines")
    assert row["version"] == 1 and row["text"].startswith("1. Keep every FACT- code verbatim.")
    assert db_rows("select processed from compression_failure_pairs") == [{"processed": 1}]
