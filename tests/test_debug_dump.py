"""Debug dump: numbered request/response/compaction files, the wire body each provider sent (the real `zeph`
against the wire-level fakes), no secret in any file, the probe file shape, failure handling, config and CLI."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.chat_wire import chat_requests, queue_call, queue_reply
from tests.cli_helpers import err, out, run_zeph
from tests.fakes import anthropic_wire, ollama_wire
from zeph_cli.config import ProbeConfig, load_config
from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.probe import ProbeResult, run_probe
from zeph_cli.context.report import ContextBlock, ContextReport
from zeph_cli.agent.debug_dump import DebugDump
from zeph_cli.messages import Message, ToolCallPart, Usage


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


URL = "POST http://127.0.0.1:8080/v1/chat/completions"
BODY = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are zeph."},
        {"role": "user", "content": "Fix the auth bug — ü"},
        {"role": "assistant", "content": "Reading it.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "src/auth.rs"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "fn check_token() {}"},
    ],
    "max_tokens": 1024,
    "stream": True,
}


def sent(body: dict) -> bytes:
    """A body as an HTTP client puts it on the wire: compact JSON bytes."""
    return json.dumps(body, separators=(",", ":")).encode()


def real_probe_result() -> ProbeResult:
    replies = iter([
        json.dumps([
            {"question": "What file was modified to fix the auth bug?", "expected": "crates/zeph-core/src/auth.rs"},
            {"question": "Which function changed?", "expected": "check_token"},
        ]),
        json.dumps(["The file crates/zeph-core/src/auth.rs was modified", "UNKNOWN"]),
    ])

    async def ask(prompt: str) -> str:
        return next(replies)

    items = [HistoryItem(Message.user("Fix the auth bug in crates/zeph-core/src/auth.rs"), tokens=12)]
    return asyncio.run(run_probe(items, "Fixed check_token in auth.rs", ask, ProbeConfig(), model="claude-haiku-4-5"))


@pytest.fixture
def directory(tmp_path) -> Path:
    """A dump directory of its own (tmp_path also holds the test's home)."""
    return tmp_path / "dump"


# ---- numbering --------------------------------------------------------------------------------


def test_directory_is_created_on_first_write_with_parents(tmp_path):
    directory = tmp_path / "a" / "b" / "dump"
    dump = DebugDump(directory)
    assert not directory.exists()
    assert dump.compaction({"kind": "hard"}) == 1
    assert names(directory) == ["0001-compaction.json"]


def test_numbering_continues_after_the_highest_existing_file(tmp_path):
    directory = tmp_path / "dump"
    directory.mkdir()
    (directory / "0003-request.json").write_text("{}", encoding="utf-8")
    (directory / "0012-compaction-probe.json").write_text('{"old": true}', encoding="utf-8")
    (directory / "notes.txt").write_text("not numbered", encoding="utf-8")

    dump = DebugDump(directory)
    assert dump.request(provider="compatible", model="gpt-4o") == 13
    assert read(directory / "0012-compaction-probe.json") == {"old": True}  # never overwritten
    assert "0013-request.json" in names(directory)


def test_a_second_run_never_overwrites_the_first(directory):
    first = DebugDump(directory)
    first.compaction({"run": 1})
    first.compaction({"run": 1})
    second = DebugDump(directory)
    assert second.compaction({"run": 2}) == 3
    assert [read(directory / f"000{i}-compaction.json")["run"] for i in (1, 2, 3)] == [1, 1, 2]


def test_all_kinds_share_one_counter_and_a_response_takes_its_requests_number(directory):
    dump = DebugDump(directory)
    first = dump.request(provider="p", model="m")
    dump.response(first, text="hi", tool_calls=[], usage=Usage(10, 2), stop_reason="stop")
    probe_id = dump.probe(real_probe_result())
    compaction_id = dump.compaction({"kind": "hard"})
    second = dump.request(provider="p", model="m")
    assert (first, probe_id, compaction_id, second) == (1, 2, 3, 4)
    assert names(directory) == [
        "0001-request.json",
        "0001-response.json",
        "0002-compaction-probe.json",
        "0003-compaction.json",
        "0004-request.json",
    ]


# ---- file contents ----------------------------------------------------------------------------


def test_probe_file_is_exactly_the_probe_result_dict(directory):
    # Spec: "each probe writes a {id:04}-compaction-probe.json file with the full probe result"
    result = real_probe_result()
    assert result.verdict in ("Pass", "SoftFail", "HardFail")
    number = DebugDump(directory).probe(result)
    data = read(directory / f"{number:04}-compaction-probe.json")
    assert data == result.to_dict()
    assert list(data) == ["score", "threshold", "hard_fail_threshold", "verdict", "model", "duration_ms", "questions"]
    assert data["questions"][0] == {
        "question": "What file was modified to fix the auth bug?",
        "expected": "crates/zeph-core/src/auth.rs",
        "actual": "The file crates/zeph-core/src/auth.rs was modified",
        "score": result.questions[0].score,
    }


def test_request_file_holds_the_wire_body_apart_from_the_context_report(directory):
    report = ContextReport(
        blocks=(ContextBlock("base_prompt", 120), ContextBlock("history", 300, "4 messages")),
        window=8000, budget=8000, reserved_for_response=1600, soft_threshold=0.6, hard_threshold=0.9,
    )
    dump = DebugDump(directory)
    number = dump.request(provider="compatible", model="gpt-4o", report=report)
    before = read(directory / f"{number:04}-request.json")
    assert before["wire"] is None  # written at once; the body comes when it goes out
    assert before["context"] == report.to_dict()

    dump.tap(number)(URL, sent(BODY))
    text = (directory / f"{number:04}-request.json").read_text(encoding="utf-8")
    assert "Fix the auth bug — ü" in text  # ensure_ascii=False
    assert '\n  "provider": "compatible",' in text  # indent=2
    data = json.loads(text)
    assert list(data) == ["provider", "model", "created_at", "wire", "context"]
    assert data["provider"] == "compatible" and data["model"] == "gpt-4o"
    assert data["created_at"].startswith("20") and "T" in data["created_at"]
    assert data["wire"] == {"to": URL, "body": BODY}
    assert data["context"] == report.to_dict()
    assert data["context"]["used_tokens"] == 420


def test_the_first_body_told_is_kept_and_a_body_that_is_not_json_is_kept_as_text(directory):
    dump = DebugDump(directory)
    first = dump.request(provider="p", model="m")
    tap = dump.tap(first)
    tap(URL, sent(BODY))
    tap(URL, sent({**BODY, "max_tokens": 1}))  # a retry sends the same body; anything later is not this request
    assert read(directory / f"{first:04}-request.json")["wire"]["body"] == BODY
    second = dump.request(provider="p", model="m")
    dump.tap(second)(URL, b"not json \xff")
    assert read(directory / f"{second:04}-request.json")["wire"]["body"] == "not json \ufffd"
    assert dump.tap(None) is None


def test_the_arguments_handed_to_the_embedded_model_are_its_body(directory):
    dump = DebugDump(directory)
    number = dump.request(provider="local", model="m.gguf")
    arguments = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True}
    dump.tap(number)("llama_cpp create_chat_completion /models/m.gguf", arguments)
    assert read(directory / f"{number:04}-request.json")["wire"] == {
        "to": "llama_cpp create_chat_completion /models/m.gguf", "body": arguments,
    }


def test_a_request_that_never_went_out_keeps_a_null_wire(directory):
    dump = DebugDump(directory)
    number = dump.request(provider="p", model="m")
    dump.response(number, text="", tool_calls=[], usage=Usage(), stop_reason="stop", error="cannot connect")
    dump.tap(number)(URL, sent(BODY))  # too late: the request was answered without going out
    assert read(directory / f"{number:04}-request.json")["wire"] is None


def test_no_file_holds_a_configured_key_or_a_secret_in_any_string(directory):
    key = "zeph-test-key-0123456789"  # no known shape: replaced because it is configured
    token = "ghp_" + "A1b2C3d4E5" * 3 + "abcdef"  # a GitHub token's shape
    dump = DebugDump(directory, secrets=[key, "short"])
    number = dump.request(provider="p", model="m")
    body = {**BODY, "messages": [{"role": "user", "content": f"my key is {key} and my token {token}"}]}
    dump.tap(number)(f"POST http://127.0.0.1/v1/chat/completions?key={key}", sent(body))
    call = ToolCallPart("c", "bash", {"command": f"echo {token}"})
    dump.response(number, text=f"Your key {key}.", tool_calls=[call], usage=Usage(), stop_reason="stop")
    dump.compaction({"summary": f"the user shared {key}"})
    everything = "".join(p.read_text(encoding="utf-8") for p in directory.iterdir())
    assert key not in everything and token not in everything
    data = read(directory / f"{number:04}-request.json")
    assert data["wire"]["body"]["messages"][0]["content"] == "my key is [REDACTED] and my token [REDACTED]"
    assert data["wire"]["body"]["model"] == "gpt-4o"  # the rest as sent
    assert read(directory / "0002-compaction.json") == {"summary": "the user shared [REDACTED]"}
    other = DebugDump(directory / "other", secrets=["words"])  # too short to be a key: words stay whole
    other.compaction({"summary": "words stay"})
    assert read(directory / "other" / "0001-compaction.json") == {"summary": "words stay"}


def test_request_without_report_has_null_context(directory):
    number = DebugDump(directory).request(provider="p", model="m")
    assert read(directory / f"{number:04}-request.json")["context"] is None


def test_response_file(directory):
    dump = DebugDump(directory)
    number = dump.request(provider="p", model="m")
    call = ToolCallPart("call_2", "bash", {"command": "pytest -q"})
    dump.response(number, text="Running tests.", tool_calls=[call], usage=Usage(100, 20, 5, 0), stop_reason="tool_calls")
    data = read(directory / f"{number:04}-response.json")
    assert data["text"] == "Running tests."
    assert data["tool_calls"] == [{"type": "tool_call", "id": "call_2", "name": "bash", "arguments": {"command": "pytest -q"}}]
    assert data["usage"] == {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 5, "cache_write_tokens": 0}
    assert data["stop_reason"] == "tool_calls"
    assert data["error"] is None


def test_response_with_error_and_response_without_a_dumped_request(directory):
    dump = DebugDump(directory)
    number = dump.request(provider="p", model="m")
    dump.response(number, text="", tool_calls=[], usage=Usage(), stop_reason="stop", error="rate limited by the provider")
    assert read(directory / "0001-response.json")["error"] == "rate limited by the provider"
    dump.response(None, text="x", tool_calls=[], usage=Usage(), stop_reason="stop")
    assert names(directory) == ["0001-request.json", "0001-response.json"]


def test_compaction_file_is_the_callers_record(directory):
    record = {"kind": "hard", "tokens_before": 9000, "tokens_after": 1200, "method": "llm", "summary": "Fixed auth.rs"}
    number = DebugDump(directory).compaction(record)
    assert read(directory / f"{number:04}-compaction.json") == record


def test_undecodable_text_is_still_written(directory):
    broken = b"caf\xff".decode("utf-8", errors="surrogateescape")
    dump = DebugDump(directory)
    number = dump.request(provider="p", model="m")
    dump.tap(number)("llama_cpp create_chat_completion m.gguf", {"messages": [Message.user(broken).content]})
    assert dump.problem is None
    assert read(directory / f"{number:04}-request.json")["wire"]["body"]["messages"][0].startswith("caf")


def test_no_temporary_files_are_left_behind(directory):
    dump = DebugDump(directory)
    for _ in range(3):
        dump.compaction({"kind": "soft"})
    assert names(directory) == ["0001-compaction.json", "0002-compaction.json", "0003-compaction.json"]


# ---- failures ---------------------------------------------------------------------------------


def test_a_file_in_place_of_the_directory_sets_one_problem_and_stops(tmp_path):
    blocker = tmp_path / "dump"
    blocker.write_text("I am a file", encoding="utf-8")
    dump = DebugDump(blocker)
    assert dump.request(provider="p", model="m") is None
    problem = dump.problem
    assert problem is not None and str(blocker) in problem
    assert len(problem.splitlines()) == 1
    assert dump.probe(real_probe_result()) is None
    assert dump.compaction({"kind": "hard"}) is None
    dump.response(1, text="", tool_calls=[], usage=Usage(), stop_reason="stop")
    assert dump.problem == problem  # recorded once, never replaced
    assert blocker.read_text(encoding="utf-8") == "I am a file"


def test_a_parent_that_is_a_file_sets_a_problem(tmp_path):
    (tmp_path / "plain").write_text("x", encoding="utf-8")
    dump = DebugDump(tmp_path / "plain" / "dump")
    assert dump.compaction({"kind": "hard"}) is None
    assert str(tmp_path / "plain" / "dump") in dump.problem


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_a_read_only_directory_sets_a_problem(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    directory.chmod(0o500)
    try:
        dump = DebugDump(directory)
        assert dump.compaction({"kind": "hard"}) is None
        assert "permission denied" in dump.problem.lower()
    finally:
        directory.chmod(0o700)


# ---- config and CLI ---------------------------------------------------------------------------


def test_dump_dir_defaults_to_off(tmp_path):
    loaded = load_config(config_path=None, env={})
    assert loaded.config.debug.dump_dir == ""


def test_dump_dir_from_the_config_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[debug]\ndump_dir = "/tmp/zeph-dump"\n', encoding="utf-8")
    loaded = load_config(config_path=str(path), env={})
    assert loaded.warnings == []
    assert loaded.config.debug.dump_dir == "/tmp/zeph-dump"
    assert loaded.source("debug.dump_dir") == "file"


def test_dump_dir_from_the_environment_beats_the_file_and_the_flag_beats_both(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[debug]\ndump_dir = "from-file"\n', encoding="utf-8")
    env = {"ZEPH_DEBUG_DUMP_DIR": "from-env"}
    from_env = load_config(config_path=str(path), env=env)
    assert from_env.config.debug.dump_dir == "from-env"
    assert from_env.source("debug.dump_dir") == "env ZEPH_DEBUG_DUMP_DIR"
    from_flag = load_config(config_path=str(path), env=env, overrides={"debug.dump_dir": ("from-flag", "--debug-dump")})
    assert from_flag.config.debug.dump_dir == "from-flag"
    assert from_flag.source("debug.dump_dir") == "flag --debug-dump"


def test_ask_help_lists_debug_dump():
    result = run_zeph("ask", "--help")
    assert result.returncode == 0
    assert "--debug-dump DIR" in out(result)


def test_config_show_lists_dump_dir_with_its_source(tmp_path):
    result = run_zeph("config", "show", env={"ZEPH_DEBUG_DUMP_DIR": str(tmp_path / "d")})
    assert result.returncode == 0
    line = next(l for l in out(result).splitlines() if l.startswith("debug.dump_dir "))
    assert json.dumps(str(tmp_path / "d")) in line
    assert line.endswith("# env ZEPH_DEBUG_DUMP_DIR")


# ---- the wire, through the real zeph -------------------------------------------------------------

ANTHROPIC_KEY = "sk-ant-api03-" + "x7Kq2LmN9pR4sT6v" * 6 + "-AbCdEfGh"
GITHUB_TOKEN = "ghp_" + "Z9y8X7w6V5" * 3 + "u4T3s2"


def dumped(directory: Path, kind: str) -> list[dict]:
    return [read(p) for p in sorted(directory.glob(f"*-{kind}.json"))]


def everything_in(directory: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(directory.iterdir()))


def test_compatible_requests_are_dumped_as_the_server_received_them(fake_server, compatible, tmp_path):
    queue_call(fake_server, "read_file", {"path": "notes.txt"})
    queue_reply(fake_server, "It says hi.")
    (tmp_path / "notes.txt").write_text("hi\n")
    dump = tmp_path / "dump"
    result = run_zeph("ask", "--debug-dump", str(dump), "read notes.txt", env=compatible, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    received = chat_requests(fake_server)
    requests = dumped(dump, "request")
    assert len(requests) == len(received) == 2  # the question, then the tool round
    for request, server_got in zip(requests, received):
        assert request["wire"] == {"to": f"POST {fake_server.url}/v1/chat/completions", "body": server_got.json}
        assert "Authorization" not in json.dumps(request) and "Bearer" not in json.dumps(request)
    assert received[1].json["messages"][-1]["role"] == "tool"  # the second body carries the tool round
    blocks = [b["name"] for b in requests[0]["context"]["blocks"]]
    assert blocks[0] == "base prompt" and "history" in blocks and "tools" in blocks


def test_anthropic_requests_are_dumped_as_the_server_received_them_without_the_key(fake_server, tmp_path):
    fake_server.queue(anthropic_wire.sse_response(anthropic_wire.text_events(["Hello."])))
    env = {"ZEPH_LLM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": fake_server.url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
           "ZEPH_LLM_MAX_RETRIES": "0"}
    dump = tmp_path / "dump"
    result = run_zeph("ask", "--debug-dump", str(dump), "Hi there", env=env, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    (server_got,) = fake_server.requests_to("/v1/messages")
    assert ANTHROPIC_KEY in json.dumps(server_got.headers)  # sent in a header, never dumped
    (request,) = dumped(dump, "request")
    assert request["wire"] == {"to": f"POST {fake_server.url}/v1/messages", "body": server_got.json}
    assert request["wire"]["body"]["system"][0]["cache_control"] == {"type": "ephemeral"}  # Anthropic's own shape
    assert ANTHROPIC_KEY not in everything_in(dump)


def test_secrets_in_what_is_sent_are_redacted_in_the_dump_and_only_there(fake_server, tmp_path):
    fake_server.queue(anthropic_wire.sse_response(anthropic_wire.text_events([f"Noted: {ANTHROPIC_KEY}"])))
    env = {"ZEPH_LLM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": fake_server.url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
           "ZEPH_LLM_MAX_RETRIES": "0"}
    dump = tmp_path / "dump"
    prompt = f"My key is {ANTHROPIC_KEY} and my token {GITHUB_TOKEN}"
    result = run_zeph("ask", "--debug-dump", str(dump), prompt, env=env, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    (server_got,) = fake_server.requests_to("/v1/messages")
    assert prompt in server_got.body.decode()  # the model got what was typed
    text = everything_in(dump)
    assert ANTHROPIC_KEY not in text and GITHUB_TOKEN not in text
    (request,) = dumped(dump, "request")
    redacted = server_got.body.decode().replace(ANTHROPIC_KEY, "[REDACTED]").replace(GITHUB_TOKEN, "[REDACTED]")
    assert request["wire"]["body"] == json.loads(redacted)  # everything else exactly as sent
    assert dumped(dump, "response")[0]["text"] == "Noted: [REDACTED]"


def test_ollama_requests_are_dumped_as_the_server_received_them(fake_server, tmp_path):
    fake_server.route("/api/show", ollama_wire.show_reply(context_length=131072))
    fake_server.queue(ollama_wire.chat_stream("Hallo", " Welt"), path="/api/chat")
    env = {"ZEPH_LLM_PROVIDER": "ollama", "OLLAMA_HOST": fake_server.url, "ZEPH_LLM_MODEL": "llama3.1:8b"}
    dump = tmp_path / "dump"
    result = run_zeph("ask", "--debug-dump", str(dump), "Hallo?", env=env, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    (server_got,) = fake_server.requests_to("/api/chat")
    (request,) = dumped(dump, "request")
    assert request["wire"] == {"to": f"POST {fake_server.url}/api/chat", "body": server_got.json}
    assert request["wire"]["body"]["options"]["num_ctx"] == request["context"]["budget"]
    assert fake_server.requests_to("/api/show")  # asked about the model, and that is not a chat request

