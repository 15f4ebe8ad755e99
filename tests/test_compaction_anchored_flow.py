"""`[memory.compression] summary_format` end to end: `zeph compact` through the real executable against a
fake OpenAI-compatible server; what the store keeps as the summary."""

from __future__ import annotations

import pytest

from tests.cli_helpers import db_rows, err, out, run_zeph
from tests.fakes import openai_wire

pytestmark = pytest.mark.xdist_group("compaction_anchored_flow")

PATH = "/v1/chat/completions"
ANCHORED = (
    "## Session Intent\nTest the compaction of a four-turn session.\n\n## Files Modified\nNone.\n\n"
    "## Decisions Made\n- Keep the code word PLUM-42\n\n## Open Questions\nNone.\n\n## Next Steps\n- Ask question 4"
)


def build_session(fake_server, env, workspace, turns: int = 4) -> None:
    for i in range(turns):
        fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks([f"answer {i}"])))
        prompt = f"question {i}" + (": remember the code word PLUM-42" if i == 0 else "")
        assert run_zeph("ask", *(["-c"] if i else []), prompt, env=env, cwd=workspace).returncode == 0


def summary_reply(text: str):
    return openai_wire.json_response(openai_wire.completion(content=text))


def stored_summary() -> str:
    (row,) = db_rows("select content from messages where user_visible = 0 and agent_visible = 1")
    return row["content"]


def test_an_anchored_summary_is_stored_under_the_compaction_marker(fake_server, compatible, tmp_path):
    env = {**compatible, "ZEPH_MEMORY_COMPRESSION_SUMMARY_FORMAT": "anchored"}
    build_session(fake_server, env, tmp_path)
    fake_server.queue(summary_reply(ANCHORED))
    result = run_zeph("compact", env=env, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    prompt = fake_server.requests_to(PATH)[-1].json["messages"][0]["content"]
    assert "question 0: remember the code word PLUM-42" in prompt and "\n## Next Steps\n" in prompt
    summary = stored_summary()
    assert summary.startswith("[compaction summary]\n[anchored summary]\n\n## Session Intent\nTest the compaction")
    assert "- Keep the code word PLUM-42" in summary and "## Next Steps\n- Ask question 4" in summary


def test_two_unusable_replies_leave_the_nine_section_summary(fake_server, compatible, tmp_path):
    env = {**compatible, "ZEPH_MEMORY_COMPRESSION_SUMMARY_FORMAT": "anchored"}
    build_session(fake_server, env, tmp_path)
    before = len(fake_server.requests_to(PATH))
    fake_server.queue(summary_reply("Sure! The user asked four questions."))
    fake_server.queue(summary_reply("## Session Intent\nFour questions."))
    fake_server.queue(summary_reply("## 1. User Intent\nFour questions; the code word is PLUM-42."))
    result = run_zeph("compact", env=env, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    prompts = [r.json["messages"][0]["content"] for r in fake_server.requests_to(PATH)[before:]]
    assert len(prompts) == 3
    assert "could not be used: the reply has none of the headings" in prompts[1]
    assert "## 9. Next Step" in prompts[2]  # the nine-section prompt
    summary = stored_summary()
    assert summary.startswith("[compaction summary]\n## 1. User Intent") and "[anchored summary]" not in summary


def test_sections_is_the_nine_section_prompt(fake_server, compatible, tmp_path):
    env = {**compatible, "ZEPH_MEMORY_COMPRESSION_SUMMARY_FORMAT": "sections"}
    build_session(fake_server, env, tmp_path)
    fake_server.queue(summary_reply("## 1. User Intent\nThe code word is PLUM-42."))
    assert run_zeph("compact", env=env, cwd=tmp_path).returncode == 0
    prompt = fake_server.requests_to(PATH)[-1].json["messages"][0]["content"]
    assert "## 9. Next Step" in prompt and "## Session Intent" not in prompt
    assert stored_summary() == "[compaction summary]\n## 1. User Intent\nThe code word is PLUM-42."


def test_an_unknown_format_is_refused_naming_the_key(compatible, tmp_path):
    result = run_zeph("compact", env={**compatible, "ZEPH_MEMORY_COMPRESSION_SUMMARY_FORMAT": "json"}, cwd=tmp_path)
    assert result.returncode != 0
    assert "memory.compression.summary_format" in err(result) and "'sections', 'anchored'" in err(result)
    assert "Traceback" not in err(result) + out(result)
    config = tmp_path / "config.toml"
    config.write_text('[memory.compression]\nsummary_format = "nine"\n')
    result = run_zeph("--config", str(config), "compact", env=compatible, cwd=tmp_path)
    assert result.returncode != 0 and "memory.compression.summary_format" in err(result)
    assert "Traceback" not in err(result)
