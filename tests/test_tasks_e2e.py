"""The task list end to end: the real `zeph` against the OpenAI wire fake — the model calls todo_write,
the turn's next request carries <todo>, `zeph ask -u` prints the list after the usage, `zeph context`
shows the block, and a later `zeph ask -c` still sends the list (it is kept with the session)."""

from __future__ import annotations

import json
import os

from tests.cli_helpers import db_rows, err, out, run_zeph
from tests.fakes import openai_wire

PATH = "/v1/chat/completions"
ITEMS = [{"id": "1", "text": "read the config loader", "status": "completed"},
         {"id": "2", "text": "add the new key", "status": "in_progress"},
         {"id": "3", "text": "document it", "status": "pending"}]


def todos(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if isinstance(m.get("content"), str) and "<todo>" in m["content"]]


def test_ask_keeps_a_task_list_sends_it_and_prints_it_with_the_usage(fake_server, compatible):
    env = {**compatible, "PYTHONPATH": os.getcwd()}
    fake_server.queue(openai_wire.stream_response(openai_wire.tool_call_chunks(
        [("call_todo", "todo_write", [json.dumps({"items": ITEMS})])])), path=PATH)
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Working on the key."])), path=PATH)
    result = run_zeph("ask", "add a config key: read the loader, add it, document it", "-u", env=env)
    assert result.returncode == 0, err(result)
    assert out(result) == "Working on the key.\n"
    first, second = fake_server.requests_to(PATH)
    assert "todo_write" in [t["function"]["name"] for t in first.json["tools"]] and todos(first.json) == []
    block, = todos(second.json)
    assert "[x] 1. read the config loader\n[>] 2. add the new key\n[ ] 3. document it" in block
    lines = err(result).splitlines()
    at = lines.index("tasks: 3 items, 1 in progress, 1 completed")
    assert at > max(n for n, line in enumerate(lines) if line.startswith("tokens:"))  # after the usage
    assert lines[at + 1: at + 4] == ["  [x] 1. read the config loader", "  [>] 2. add the new key", "  [ ] 3. document it"]
    assert [r["status"] for r in db_rows("select status from task_items order by position")] == \
        ["completed", "in_progress", "pending"]

    context = run_zeph("context", env=env)
    assert context.returncode == 0, err(context)
    row, = [line for line in out(context).splitlines() if line.split()[:1] == ["todo"]]
    assert "3 items, 1 in progress" in row  # the detail as wide as the terminal allows

    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Still on it."])), path=PATH)
    again = run_zeph("ask", "-c", "-u", "how far along are you?", env=env)
    assert again.returncode == 0, err(again)
    assert "[>] 2. add the new key" in todos(fake_server.requests_to(PATH)[-1].json)[0]
    assert "tasks: 3 items, 1 in progress, 1 completed" in err(again)


def test_without_a_list_ask_u_prints_no_task_lines(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Four."])), path=PATH)
    result = run_zeph("ask", "2+2?", "-u", env={**compatible, "PYTHONPATH": os.getcwd()})
    assert result.returncode == 0, err(result)
    assert "tokens:" in err(result) and "tasks:" not in err(result)
    assert todos(fake_server.requests_to(PATH)[0].json) == []
