"""The worldbook end to end through the real `zeph` and the wire-level fake model: a keyword
triggers its entry at each position, in its place in the request; a message without it sends
none, an entry switched off is never sent, a constant one always is; at_depth lands at its depth
without splitting a tool call from its result; isolation drops long-term memory, semantic recall
and MCP tools while the worldbook, topic and enhancement prompts stay."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.chat_wire import chat_requests, queue_call, queue_reply, tool_names
from tests.cli_helpers import assert_one_line_error, err, out, run_zeph
from tests.fakes import mcp_http, openai_wire
from tests.test_tui_app import SIZE, entries, model, open_app, send, workspace  # noqa: F401  (fixtures)

POSITIONS = ("before", "after", "an_top", "outlet", "an_bottom")


def _messages(request) -> list[dict]:
    return request.json["messages"]


def _index(messages: list[dict], start: str) -> int:
    found = [n for n, m in enumerate(messages) if (m.get("content") or "").startswith(start)]
    assert len(found) == 1, (start, [m.get("content", "")[:40] for m in messages])
    return found[0]


def _add(project: Path, env: dict, *args: str) -> int:
    result = run_zeph("worldbook", "add", *args, env=env, cwd=project)
    assert result.returncode == 0, err(result)
    return int(out(result))


def _store(project: Path, content: str, **kw) -> int:
    """An entry of `project` written straight into the store zeph reads (fewer processes to start)."""
    from zeph_cli.features.memory.long_term_access import project_root_of
    from zeph_cli.paths import database_path
    from zeph_cli.store import open_database
    from zeph_cli.features.worldbook.store import WorldbookStore

    db = open_database(database_path())
    try:
        return WorldbookStore(db).add(content, project_root=project_root_of(project)[0], **kw).id
    finally:
        db.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    (path / ".git").mkdir(parents=True)
    (path / "notes.txt").write_text("a file to read\n")
    return path


def test_each_position_lands_in_its_place_only_when_triggered(fake_server, compatible, project):
    env = {**compatible, "ZEPH_CONTEXT_ENHANCED_PROMPT": "Be terse.", "ZEPH_MEMORY_SEMANTIC_ENABLED": "false"}
    _add(project, env, "-k", "dragon", "--position", "before", "--content", "Dragon lore before.")
    for position in POSITIONS[1:]:
        _store(project, f"Dragon lore {position}.", keywords=["dragon"], position=position)
    _store(project, "Never: wrong case.", keywords=[r"\bDRAG\w+"], regex=True, case_sensitive=True)
    _add(project, env, "-k", "dragon", "--position", "at_depth", "--depth", "0", "--content", "Dragon lore depth 0.")
    _store(project, "Dragon lore depth 3.", keywords=["dragon"], position="at_depth", depth=3)
    _store(project, "Constant lore: the map is of Wilderland.", order=1)
    off = _store(project, "Switched-off lore.", keywords=["dragon"], enabled=False)
    assert run_zeph("memory", "add", "--scope", "project", "The user keeps maps in notes.txt", env=env, cwd=project).returncode == 0

    # a turn without the keyword, with a tool call: only the constant entry is sent
    queue_call(fake_server, "read_file", {"path": "notes.txt"})
    queue_reply(fake_server, "Read it.")
    first = run_zeph("ask", "--topic", "A tale of Wilderland.", "read notes.txt", env=env, cwd=project)
    assert first.returncode == 0, err(first)
    for request in chat_requests(fake_server):
        text = json.dumps(_messages(request))
        assert "Constant lore" in text and "Dragon lore" not in text and "Switched-off" not in text

    # the keyword in the running message triggers every position
    queue_reply(fake_server, "Smaug.")
    second = run_zeph("ask", "-c", "Tell me about the dragon", env=env, cwd=project)
    assert second.returncode == 0, err(second)
    sent = _messages(chat_requests(fake_server)[-1])
    before, after = _index(sent, "<worldbook_before>"), _index(sent, "<worldbook_after>")
    top, outlet, bottom = (_index(sent, f"<worldbook_{p}>") for p in ("an_top", "outlet", "an_bottom"))
    topic, time_, memory = _index(sent, "<topic_prompt>"), _index(sent, "<time>"), _index(sent, "<memory>")
    assert before == 0 and sent[1]["role"] == "system"  # before the base prompt
    assert topic + 1 == after < top  # after the topic prompt, the last system layer here
    assert all(m["role"] == "system" for m in sent[: after + 1])
    assert top + 1 == time_ and memory + 1 == outlet and outlet + 1 == bottom
    assert sent[top]["content"].index("Constant lore") < sent[top]["content"].index("Dragon lore an_top")
    # the history before the running turn sits between the system prompt and the per-turn blocks
    history = sent[after + 1 : top]
    assert history[0] == {"role": "user", "content": "read notes.txt"}
    call, result = history[1], history[2]
    assert call.get("tool_calls") and result["role"] == "tool"  # the pair is not split
    assert history[3]["content"].startswith("<worldbook_at_depth>\nDragon lore depth 3.")  # moved after the result
    assert history[4]["content"] == "Read it." and len(history) == 5
    running = sent[bottom + 1 :]
    assert running[0] == {"role": "user", "content": "Tell me about the dragon"}
    assert running[1]["content"] == "<worldbook_at_depth>\nDragon lore depth 0.\n</worldbook_at_depth>"
    assert running[2]["content"].startswith("<enhanced_prompt>") and len(running) == 3
    text = json.dumps(sent)
    assert "Switched-off" not in text and "wrong case" not in text
    for position in POSITIONS:
        assert text.count(f"Dragon lore {position}.") == 1

    # zeph context shows each block; switching the entry on sends it
    shown = run_zeph("context", "--json", env=env, cwd=project)
    assert shown.returncode == 0, err(shown)
    blocks = {b["name"]: b for b in json.loads(out(shown))["context"]["blocks"]}
    for name in ("worldbook before", "worldbook after", "worldbook an top", "worldbook outlet", "worldbook an bottom",
                 "worldbook at depth 3", "worldbook at depth 0"):
        assert blocks[name]["tokens"] > 0, name
    assert run_zeph("worldbook", "on", str(off), env=env, cwd=project).returncode == 0
    queue_reply(fake_server, "ok")
    assert run_zeph("ask", "-c", "and the dragon's hoard?", env=env, cwd=project).returncode == 0
    assert "Switched-off lore" in json.dumps(_messages(chat_requests(fake_server)[-1]))
    # past the scan depth the keyword no longer triggers
    queue_reply(fake_server, "ok")
    assert run_zeph("ask", "-c", "one", env={**env, "ZEPH_WORLDBOOK_SCAN_DEPTH": "1"}, cwd=project).returncode == 0
    text = json.dumps(_messages(chat_requests(fake_server)[-1]))
    assert "Dragon lore" not in text and "Constant lore" in text


def test_over_its_share_the_highest_order_entries_are_left_out_and_the_report_says_so(fake_server, compatible, project):
    env = {**compatible, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false", "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "8000",
           "ZEPH_WORLDBOOK_MAX_SHARE": "0.03"}
    _store(project, "Kept: " + "lore " * 150, order=1)
    dropped = _store(project, "Left out: " + "lore " * 150, order=500)
    broken = _store(project, "Broken.", keywords=["hello"], regex=True)
    with sqlite3.connect(Path(os.environ["ZEPH_HOME"]) / "zeph.db") as conn:  # stored by some other means
        conn.execute("update worldbook_entries set keywords = '[\"(hel\"]' where id = ?", (broken,))
    queue_reply(fake_server)
    asked = run_zeph("ask", "hello", env=env, cwd=project)
    assert asked.returncode == 0 and "Traceback" not in err(asked)
    assert err(asked).count(f"worldbook entry #{broken} skipped: keyword '(hel' is not a valid regex") == 1, err(asked)
    text = json.dumps(_messages(chat_requests(fake_server)[-1]))
    assert "Kept:" in text and "Left out:" not in text
    report = json.loads(out(run_zeph("context", "--json", env=env, cwd=project)))["context"]
    block = next(b for b in report["blocks"] if b["name"] == "worldbook an top")
    assert "1 left out over the worldbook share" in block["detail"] and f"#{dropped}" in block["detail"]


@pytest.fixture(scope="module")
def http_server():
    server = mcp_http.start()
    yield server
    server.stop()


def test_isolation_drops_memory_recall_and_mcp_tools_and_keeps_the_rest(fake_server, compatible, project, tmp_path, http_server):
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "fake"\nurl = "{http_server.url}"\n'
                      'headers = {{ X-Fake-Token = "${{FAKE_TOKEN}}" }}\ntrusted = true\ntool_allowlist = ["echo"]\n'
                      .replace("{{", "{").replace("}}", "}"))
    env = {**compatible, "ZEPH_CONFIG": str(config), "FAKE_TOKEN": "s3cret-token", "ZEPH_CONTEXT_ENHANCED_PROMPT": "Be terse."}
    assert run_zeph("memory", "add", "--scope", "project", "Deploys go through deploy.sh", env=env, cwd=project).returncode == 0
    queue_reply(fake_server, "Noted.")
    assert run_zeph("ask", "For the record: the staging database listens on port 6543 behind pgbouncer.",
                    env=env, cwd=project).returncode == 0
    queue_reply(fake_server, "6543")
    asked = run_zeph("ask", "--topic", "Ops questions.", "Which port does pgbouncer listen on?", env=env, cwd=project)
    assert asked.returncode == 0, err(asked)
    control = chat_requests(fake_server)[-1]
    text = json.dumps(_messages(control))
    assert "<memory>" in text and "[semantic recall]" in text and "fake__echo" in tool_names(control)

    isolate = run_zeph("worldbook", "isolate", "on", env=env, cwd=project)
    assert isolate.returncode == 0 and "nothing is dropped yet" in err(isolate), err(isolate)  # no entries yet
    _store(project, "This session is set in Middle-earth.")
    queue_reply(fake_server, "6543")
    assert run_zeph("ask", "-c", "pgbouncer port, once more?", env=env, cwd=project).returncode == 0
    isolated = chat_requests(fake_server)[-1]
    sent = _messages(isolated)
    text = json.dumps(sent)
    assert "<memory>" not in text and "[semantic recall]" not in text and "deploy.sh" not in text
    names = tool_names(isolated)
    assert "fake__echo" not in names and "memory_search" not in names and "read_file" in names
    assert "<worldbook_an_top>" in text and any(m["content"].startswith("<topic_prompt>\nOps questions.") for m in sent)
    assert sent[-1]["content"].startswith("<enhanced_prompt>\nBe terse.")

    shown = run_zeph("context", "--json", env=env, cwd=project)
    assert shown.returncode == 0, err(shown)
    blocks = json.loads(out(shown))["context"]["blocks"]
    assert json.loads(out(shown))["memory"] == []
    assert json.loads(out(shown))["extras"] == [  # what the policy denies, in the report's words
        "worldbook isolation: not sent: long-term memory, semantic recall, memory tools, cross-session summaries, "
        "user profile, skills, skill tools, code index, code tools, MCP tools"
    ]
    detail = next(b["detail"] for b in blocks if b["name"] == "worldbook isolation")
    assert detail.startswith("on: not sent: long-term memory, semantic recall, memory tools, cross-session summaries")
    assert not any(b["name"] in ("memory", "semantic recall") for b in blocks)


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("edit", "99", "--order", "1"), 1, "no worldbook entry with id 99"),
        (("add", "--content", "x", "--position", "middle"), 2, "'middle' is not a position"),
        (("add", "--content", "x", "--depth", "2"), 2, "--depth goes with --position at_depth"),
        (("add", "-k", "(x", "--regex", "--content", "x"), 2, "not a valid regex"),
        (("add", "--content", " "), 2, "needs some content"),
        (("add", "--content", "x", "--session", "7"), 2, "--session 7: no session"),
        (("isolate", "maybe"), 2, "isolate takes on or off"),
        (("remove", "5"), 1, "no worldbook entry with id 5"),
    ],
)
def test_bad_input_is_one_clear_line(args, code, needle, project):
    assert_one_line_error(run_zeph("worldbook", *args, cwd=project), code, needle)


async def test_slash_worldbook_lists_marks_the_triggered_and_switches_isolation(fake_server, model, workspace):
    from zeph_cli.features.worldbook.store import WorldbookStore
    from zeph_cli.frontends.tui.app import HelpEntry
    from zeph_cli.frontends.tui.transcript import Notice

    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/worldbook")
            assert "No worldbook entries in force here" in entries(app, HelpEntry)[-1].source
            await send(pilot, app, "/worldbook isolate on")
            assert "send a first message" in entries(app, Notice)[-1].text
            store = WorldbookStore(session.agent.store.db)
            store.add("Smaug sleeps.", keywords=["dragon"], position="outlet", project_root=session.agent.worldbook.project_root)
            store.add("Wilderland.", project_root=session.agent.worldbook.project_root)
            model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(["Done."])))
            await send(pilot, app, "tell me of the dragon")
            await send(pilot, app, "/worldbook")
            listing = entries(app, HelpEntry)[-1].source
            assert "| outlet | dragon | project | triggered | Smaug sleeps. |" in listing
            assert "| an_top | (always) | project | triggered | Wilderland. |" in listing and "Isolation: off" in listing
            await send(pilot, app, "/worldbook isolate on")
            assert "are no longer sent" in entries(app, HelpEntry)[-1].source
            assert session.conversation.metadata.get("worldbook_isolated") is True
            await send(pilot, app, "/worldbook isolate maybe")
            assert entries(app, Notice)[-1].text == "use /worldbook isolate on or /worldbook isolate off"
            report = session.agent.context_for(session.conversation)[1]
            assert report.block("worldbook isolation") is not None and report.block("worldbook outlet") is not None
            await send(pilot, app, "/context")
            from zeph_cli.frontends.tui.screens import ContextScreen
            from textual.widgets import DataTable

            assert isinstance(app.screen, ContextScreen)
            table = app.screen.query_one(DataTable)
            names = [str(table.get_row_at(n)[0]) for n in range(table.row_count)]
            assert "worldbook isolation" in names and "worldbook outlet" in names and "worldbook an top" in names
    finally:
        await session.aclose()


def test_the_commands_add_list_edit_switch_and_remove(project, tmp_path):
    lore = tmp_path / "lore.md"
    lore.write_text("Erebor is the Lonely Mountain.\n")
    first = _add(project, {}, "-k", "Erebor", "-k", "mountain", "--content-file", str(lore), "--position", "at_depth",
                 "--depth", "2", "--order", "7")
    from_stdin = run_zeph("worldbook", "add", "--content", "-", "--off", input="Always: Wilderland.\n", cwd=project)
    assert from_stdin.returncode == 0, err(from_stdin)
    second = int(out(from_stdin))
    listed = out(run_zeph("worldbook", "list", cwd=project)).splitlines()
    assert listed[0].startswith(f"#{first}\ton\tat_depth 2\torder 7\t") and listed[0].endswith("\tErebor, mountain\tErebor is the Lonely Mountain.")
    assert listed[1].startswith(f"#{second}\toff\tan_top\torder 100\t") and "(always)\tAlways: Wilderland." in listed[1]
    # with flags, then in $EDITOR as TOML (a script stands in for the user)
    edited = run_zeph("worldbook", "edit", str(first), "--position", "outlet", "--regex", "-k", r"\bErebor\b", cwd=project)
    assert edited.returncode == 0 and f"updated worldbook entry #{first}" in err(edited), err(edited)
    script = tmp_path / "edit.sh"
    script.write_text('#!/bin/sh\nsed -i -e "s/^order = 7/order = 3/" -e "s/Lonely Mountain/Misty Mountains/" "$1"\n')
    script.chmod(0o755)
    assert run_zeph("worldbook", "edit", str(first), env={"EDITOR": str(script)}, cwd=project).returncode == 0
    assert run_zeph("worldbook", "on", str(second), cwd=project).returncode == 0
    rows = {r["id"]: r for r in json.loads(out(run_zeph("worldbook", "list", "--all", "--json", cwd=project)))}
    assert rows[first]["position"] == "outlet" and rows[first]["depth"] == 0 and rows[first]["order"] == 3
    assert rows[first]["keywords"] == [r"\bErebor\b"] and rows[first]["regex"] is True
    assert rows[first]["content"] == "Erebor is the Misty Mountains." and rows[second]["enabled"] is True
    bad = tmp_path / "bad.sh"
    bad.write_text('#!/bin/sh\nsed -i "s/^position = .*/position = \\"middle\\"/" "$1"\n')
    bad.chmod(0o755)
    assert_one_line_error(run_zeph("worldbook", "edit", str(first), env={"EDITOR": str(bad)}, cwd=project), 2,
                          "'middle' is not a worldbook position")
    assert run_zeph("worldbook", "remove", str(second), cwd=project).returncode == 0
    assert [r["id"] for r in json.loads(out(run_zeph("worldbook", "list", "--json", cwd=project)))] == [first]
    # another project does not see this one's entries, except with --all
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    assert out(run_zeph("worldbook", "list", cwd=elsewhere)) == ""
    assert len(json.loads(out(run_zeph("worldbook", "list", "--all", "--json", cwd=elsewhere)))) == 1
