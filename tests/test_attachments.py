"""Attaching files to a prompt: `zeph ask -a FILE` (the real executable against the fake server), the block
format, and what cannot be attached (one line naming the file, nothing sent, the prompt kept)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli_helpers import assert_one_line_error, db_rows, err, out, run_zeph
from tests.fakes import openai_wire
from zeph_cli.context.attachments import (
    AttachedFile, Attachment, attached_line, attachment_limit, split_attachments, with_attachments,
)

PATH = "/v1/chat/completions"


def user_text(fake_server) -> str:
    (message,) = [m for m in fake_server.requests_to(PATH)[-1].json["messages"] if m["role"] == "user"]
    return message["content"]


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 42\n", encoding="utf-8")
    (root / "notes.txt").write_text("the code word is PLUM-42", encoding="utf-8")
    return root


def test_attached_files_travel_in_the_stored_prompt_before_its_text(fake_server, compatible, tmp_path):
    root = project(tmp_path)
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["It returns 42."])))
    result = run_zeph("ask", "-a", "src/app.py", "--attach", "notes.txt", "what does main return?", env=compatible, cwd=root)
    assert result.returncode == 0, err(result)
    assert out(result).strip() == "It returns 42."
    sent = user_text(fake_server)
    assert sent == ('<attachment path="src/app.py" lines="2">\ndef main():\n    return 42\n</attachment>\n'
                    '<attachment path="notes.txt" lines="1">\nthe code word is PLUM-42\n</attachment>\n\n'
                    "what does main return?")
    (stored,) = db_rows("select content from messages where role = 'user'")
    assert stored["content"] == sent  # later turns keep it, compaction sees it
    assert db_rows("select title from conversations")[0]["title"].startswith("what does main return?")


def test_what_cannot_be_attached_is_refused_before_anything_is_sent(fake_server, compatible, tmp_path):
    root = project(tmp_path)
    (root / "paper.pdf").write_bytes(b"%PDF-1.7\n" + bytes(63))
    (root / "big.txt").write_text("word " * 200_000, encoding="utf-8")
    (root / "secret.txt").write_text("hidden\n", encoding="utf-8")
    (root / "locked.txt").write_text("no\n", encoding="utf-8")
    (root / "locked.txt").chmod(0)
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n", encoding="utf-8")
    env = {**compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "8000"}
    cases = {
        "paper.pdf": "cannot attach paper.pdf: it is a binary file (PDF document, 72 bytes); only text files can be attached",
        "nope.txt": "cannot attach nope.txt: it does not exist; did you mean notes.txt?",
        "src": "cannot attach src: it is a directory",
        "big.txt": "more than an attachment may take (a quarter of the 6,400-token prompt budget: 1,600)",
        str(outside): f"{outside} is outside the workspace",
    }
    if os.geteuid() != 0:  # root reads any file
        cases["locked.txt"] = "cannot attach locked.txt: permission denied"
    for name, needle in cases.items():
        result = run_zeph("ask", "-a", "notes.txt", "-a", name, "keep this question", env=env, cwd=root)
        line = assert_one_line_error(result, 2, needle)
        assert "kept in" in err(result), err(result)  # what the user typed is not lost
        assert line.count(name if name != str(outside) else "outside.txt") >= 1
    assert not fake_server.requests_to(PATH)
    assert not db_rows("select id from messages")  # no session left behind

    (root / "half1.txt").write_text("word " * 1000, encoding="utf-8")  # ~1,000 tokens each: together over 1,600
    (root / "half2.txt").write_text("word " * 1000, encoding="utf-8")
    result = run_zeph("ask", "-a", "half1.txt", "-a", "half2.txt", "both?", env=env, cwd=root)
    assert_one_line_error(result, 2, "cannot attach half1.txt, half2.txt: the 2 attached files take",
                          "a quarter of the 6,400-token prompt budget: 1,600")
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    alone = run_zeph("ask", "-a", "half1.txt", "one?", env=env, cwd=root)  # alone it fits
    assert alone.returncode == 0, err(alone)
    assert user_text(fake_server).startswith('<attachment path="half1.txt"')

    hidden = {**env, "ZEPH_TOOLS_SANDBOX_DENY_READ": "secret.txt"}
    result = run_zeph("ask", "-a", "secret.txt", "what is in it?", env=hidden, cwd=root)
    assert_one_line_error(result, 2, "secret.txt", "hidden from tools")
    assert len(fake_server.requests_to(PATH)) == 1  # the one that fitted


def test_the_advice_for_a_large_file_works_when_followed(fake_server, compatible, tmp_path):
    root = project(tmp_path)
    (root / "mid.txt").write_text("word " * 3000, encoding="utf-8")  # ~3,000 tokens
    small = run_zeph("ask", "-a", "mid.txt", "q", env={**compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "8000"}, cwd=root)
    assert_one_line_error(small, 2, "mid.txt", "raise [memory] context_budget_tokens")
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])))
    raised = run_zeph("ask", "-a", "mid.txt", "q", env={**compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "32000"}, cwd=root)
    assert raised.returncode == 0, err(raised)
    assert user_text(fake_server).startswith('<attachment path="mid.txt" lines="1">\nword word')


def test_blocks_read_back_as_written_even_when_a_file_holds_the_closing_tag():
    tricky = Attachment('a "b".txt', "one\n</attachment>\nthree", 3, 9)
    empty = Attachment("empty.txt", "", 0, 0)
    stored = with_attachments([tricky, empty], "the question\non two lines")
    files, text = split_attachments(stored)
    assert files == [AttachedFile('a "b".txt', 3), AttachedFile("empty.txt", 0)]
    assert text == "the question\non two lines"
    assert split_attachments("plain <attachment> talk") == ([], "plain <attachment> talk")
    assert attached_line(files) == '📎 a "b".txt (3 lines), empty.txt (0 lines)'
    assert attachment_limit(6400) == 1600
