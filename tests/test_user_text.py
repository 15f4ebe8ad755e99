"""The one reader of the text files a user supplies (project context, prompt overrides and profiles, skills)."""

from __future__ import annotations

import pytest

from zeph_cli.config.user_text import UnusableText, read_user_text


def test_a_text_file_is_read_whole(tmp_path):
    path = tmp_path / "ZEPH.md"
    path.write_text("héllo\nworld\n", encoding="utf-8")
    assert read_user_text(path, 100) == "héllo\nworld\n"
    assert read_user_text(path, len("héllo\nworld\n".encode())) == "héllo\nworld\n"  # exactly at the limit


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"x" * 101, "larger than 100 bytes"),
        (b"caf\xe9", "not valid UTF-8"),
        (b"text\x00more", "binary (contains NUL bytes)"),
    ],
)
def test_what_cannot_be_used_says_why_after_the_path(tmp_path, content, reason):
    path = tmp_path / "prompt.md"
    path.write_bytes(content)
    with pytest.raises(UnusableText) as caught:
        read_user_text(path, 100)
    assert caught.value.reason == reason


def test_a_missing_file_or_a_directory_cannot_be_read(tmp_path):
    with pytest.raises(UnusableText, match=r"^cannot be read \(No such file or directory\)$"):
        read_user_text(tmp_path / "missing.md", 100)
    with pytest.raises(UnusableText, match=r"^cannot be read \(Is a directory\)$"):
        read_user_text(tmp_path, 100)
