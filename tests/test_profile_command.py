"""`zeph profile` through the real CLI: show, edit (--text, stdin, $EDITOR), clear, sessions; bad input
is one line and a non-zero exit, and leaves the profile unchanged."""

from __future__ import annotations

import json

from tests.cli_helpers import err, out, run_zeph


def show() -> dict | None:
    result = run_zeph("profile", "show", "--json")
    assert result.returncode == 0, err(result)
    return json.loads(out(result))


def test_edit_show_and_clear_the_profile():
    assert show() is None
    result = run_zeph("profile", "show")
    assert result.returncode == 0 and out(result) == "" and "no user profile yet" in err(result)
    assert run_zeph("profile", "edit", "--text", "- Prefers short answers").returncode == 0
    result = run_zeph("profile", "show")
    assert out(result) == "- Prefers short answers\n" and "by you (user)" in err(result)
    assert run_zeph("profile", "edit", "--text", "-", input="- From stdin\n").returncode == 0
    assert show()["text"] == "- From stdin" and show()["source"] == "user"
    # an editor that changes the text
    result = run_zeph("profile", "edit", env={"EDITOR": "sed -i s/stdin/editor/"})
    assert result.returncode == 0, err(result)
    assert show()["text"] == "- From editor"
    # clearing needs a confirmation when no one can be asked
    result = run_zeph("profile", "clear")
    assert result.returncode == 2 and "--yes" in err(result) and show()["text"] == "- From editor"
    assert run_zeph("profile", "clear", "--yes").returncode == 0
    assert show()["text"] == ""
    assert "already empty" in err(run_zeph("profile", "clear", "--yes"))


def test_a_failing_or_emptying_editor_and_empty_text_leave_the_profile_unchanged():
    assert run_zeph("profile", "edit", "--text", "- Keep me").returncode == 0
    for env, args, code, words in (
        ({"EDITOR": "false"}, (), 1, "the editor exited with status 1; the profile is unchanged"),
        ({"EDITOR": "truncate -s 0"}, (), 2, "the new profile text is empty; the profile is unchanged"),
        ({}, ("--text", "  "), 2, "the new profile text is empty"),
        ({"EDITOR": "true"}, (), 0, "profile unchanged"),
    ):
        result = run_zeph("profile", "edit", *args, env=env)
        assert result.returncode == code, err(result)
        assert words in err(result) and "Traceback" not in err(result)
        assert show()["text"] == "- Keep me"


def test_sessions_without_summaries_says_when_they_come():
    result = run_zeph("profile", "sessions")
    assert result.returncode == 0 and "after 6 user turns" in err(result)
    assert json.loads(out(run_zeph("profile", "sessions", "--json"))) == []
    result = run_zeph("profile", "sessions", env={"ZEPH_MEMORY_CROSS_SESSION_ENABLED": "false"})
    assert "none are made" in err(result)
