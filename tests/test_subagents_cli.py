"""Sub-agents through the real `zeph` executable: `zeph ask -u` and `--json` report what they spent with the
turn's usage, and `zeph sessions` lists a sub-agent's session under its parent, not on its own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import err, out, run_zeph
from tests.test_subagents import Script, text_reply, tool_reply

JOB = "JOB-CLI: read notes.txt and say what it holds."


def ask(fake_server, project: Path, *flags: str):
    script = Script(
        parent=[tool_reply(("call_task", "task", {"description": "Read the notes", "prompt": JOB})),
                text_reply("The notes hold 42.")],
        children={"JOB-CLI": [tool_reply(("call_read", "read_file", {"path": "notes.txt"}), usage=(300, 20, 0)),
                              text_reply("notes.txt says 42.", usage=(3000, 10, 0))]},
    )
    fake_server.respond_with(script)
    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o",
           "ZEPH_LLM_MAX_RETRIES": "0"}
    return run_zeph("ask", "what do the notes say?", *flags, env=env, cwd=project)


def project_dir(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return project


def test_ask_reports_the_subagents_tokens_with_the_turns_usage(fake_server, tmp_path):
    result = ask(fake_server, project_dir(tmp_path), "-u")
    assert result.returncode == 0, err(result)
    assert out(result).strip() == "The notes hold 42."
    stderr = err(result)
    assert "⏺ task Read the notes" in stderr
    assert "    ⏺ read_file notes.txt" in stderr  # what the sub-agent did, under its task
    assert "sub-agents: 1 run · tokens: 3,300 in · 30 out" in stderr
    assert "warning" not in stderr


def test_ask_json_carries_the_subagents_usage(fake_server, tmp_path):
    result = ask(fake_server, project_dir(tmp_path), "--json")
    assert result.returncode == 0, err(result)
    data = json.loads(out(result))
    (run,) = data["subagents"]
    assert (run["call_id"], run["outcome"], run["tool_rounds"]) == ("call_task", "done", 1)
    assert data["subagent_usage"]["input_tokens"] == 3300 and data["subagent_usage"]["output_tokens"] == 30
    assert run["session"] != data["session"]


def test_sessions_list_hides_subagents_and_show_nests_them(fake_server, tmp_path):
    assert ask(fake_server, project_dir(tmp_path)).returncode == 0
    listed = json.loads(out(run_zeph("sessions", "list", "--json")))
    assert [s["title"] for s in listed] == ["what do the notes say?"]
    parent = listed[0]["id"]
    everything = json.loads(out(run_zeph("sessions", "list", "--json", "--subagents")))
    (child,) = [s for s in everything if s["id"] != parent]
    assert child["metadata"]["subagent"]["parent"] == parent and child["title"] == "Read the notes"

    shown = out(run_zeph("sessions", "show", str(parent)))
    assert f"## Sub-agent session {child['id']}" in shown
    assert "### Read the notes" in shown and "#### Tool call: read_file" in shown
    assert "the answer is 42" in shown  # the sub-agent's tool output, nested
    assert shown.index("## Tool result: task") < shown.index("### Read the notes") < shown.index("## Assistant\n\nThe notes hold 42.")

    exported = out(run_zeph("sessions", "export", str(parent), "--format", "md"))
    assert f"## Sub-agent session {child['id']}" in exported and "notes.txt says 42." in exported

    alone = out(run_zeph("sessions", "show", str(child["id"])))
    assert alone.startswith("# Read the notes") and f"sub-agent of session {parent} (task call call_task" in alone
    assert "notes.txt says 42." in alone

    # `zeph ask -c` continues the user's session, not the sub-agent's.
    last = out(run_zeph("sessions", "show", "--last"))
    assert last.startswith("# what do the notes say?")

    # Deleting the session deletes its sub-agents' sessions with it.
    assert run_zeph("sessions", "rm", str(parent)).returncode == 0
    assert json.loads(out(run_zeph("sessions", "list", "--json", "--subagents"))) == []


def test_an_unknown_subagent_provider_is_one_clear_line(fake_server, tmp_path):
    from tests.cli_helpers import assert_one_line_error

    env = {"ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o",
           "ZEPH_AGENT_SUBAGENTS_PROVIDER": "bogus"}
    result = run_zeph("ask", "hi", env=env, cwd=project_dir(tmp_path))
    assert_one_line_error(result, result.returncode, "agent.subagents.provider", "'bogus'")
    assert result.returncode != 0
