"""Debug dump: numbered request/response/compaction files, the probe file shape, failure handling, config and CLI."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.cli_helpers import out, run_zeph
from zeph_cli.config import ProbeConfig, load_config
from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.probe import ProbeResult, run_probe
from zeph_cli.context.report import ContextBlock, ContextReport
from zeph_cli.agent.debug_dump import DebugDump
from zeph_cli.messages import Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec, Usage
from zeph_cli.providers.base import ChatRequest


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def tool_request() -> ChatRequest:
    call = ToolCallPart("call_1", "read_file", {"path": "src/auth.rs"})
    return ChatRequest(
        messages=(
            Message.system("You are zeph."),
            Message.user("Fix the auth bug — ü"),
            Message("assistant", (TextPart("Reading it."), call)),
            Message("tool", (ToolResultPart("call_1", "fn check_token() {}", name="read_file"),)),
        ),
        tools=(ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),),
        max_tokens=1024,
        temperature=0.2,
        stream=True,
    )


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
    assert dump.request(tool_request(), provider="compatible", model="gpt-4o") == 13
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
    first = dump.request(tool_request(), provider="p", model="m")
    dump.response(first, text="hi", tool_calls=[], usage=Usage(10, 2), stop_reason="stop")
    probe_id = dump.probe(real_probe_result())
    compaction_id = dump.compaction({"kind": "hard"})
    second = dump.request(tool_request(), provider="p", model="m")
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


def test_request_file_holds_messages_tools_and_settings(directory):
    report = ContextReport(
        blocks=(ContextBlock("base_prompt", 120), ContextBlock("history", 300, "4 messages")),
        window=8000, budget=8000, reserved_for_response=1600, soft_threshold=0.6, hard_threshold=0.9,
    )
    number = DebugDump(directory).request(tool_request(), provider="compatible", model="gpt-4o", report=report)
    text = (directory / f"{number:04}-request.json").read_text(encoding="utf-8")
    assert "Fix the auth bug — ü" in text  # ensure_ascii=False
    assert '\n  "provider": "compatible",' in text  # indent=2
    data = json.loads(text)
    assert data["provider"] == "compatible" and data["model"] == "gpt-4o"
    assert data["created_at"].startswith("20") and "T" in data["created_at"]
    assert data["messages"] == [
        {"role": "system", "parts": [{"type": "text", "text": "You are zeph."}]},
        {"role": "user", "parts": [{"type": "text", "text": "Fix the auth bug — ü"}]},
        {"role": "assistant", "parts": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_call", "id": "call_1", "name": "read_file", "arguments": {"path": "src/auth.rs"}},
        ]},
        {"role": "tool", "parts": [
            {"type": "tool_result", "tool_call_id": "call_1", "name": "read_file",
             "content": "fn check_token() {}", "is_error": False},
        ]},
    ]
    assert data["tools"] == [{
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }]
    assert (data["max_tokens"], data["temperature"], data["stream"]) == (1024, 0.2, True)
    assert data["context"] == report.to_dict()
    assert data["context"]["used_tokens"] == 420


def test_request_without_report_has_null_context(directory):
    number = DebugDump(directory).request(ChatRequest(messages=(Message.user("hi"),)), provider="p", model="m")
    data = read(directory / f"{number:04}-request.json")
    assert data["context"] is None
    assert data["tools"] == []


def test_response_file(directory):
    dump = DebugDump(directory)
    number = dump.request(tool_request(), provider="p", model="m")
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
    number = dump.request(tool_request(), provider="p", model="m")
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
    number = dump.request(ChatRequest(messages=(Message.user(broken),)), provider="p", model="m")
    assert dump.problem is None
    assert read(directory / f"{number:04}-request.json")["messages"][0]["parts"][0]["text"].startswith("caf")


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
    assert dump.request(tool_request(), provider="p", model="m") is None
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
