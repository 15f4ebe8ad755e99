"""Words of code for keyword retrieval: identifiers give their parts, so plain words find them."""

from __future__ import annotations

from zeph_cli.features.code_index.words import words


def test_identifiers_give_the_whole_and_their_parts():
    assert words("read_config") == ["read_config", "read", "config"]
    assert words("parseLine HTTPServer") == ["parseline", "parse", "line", "httpserver", "http", "server"]
    assert words("utf8Decode") == ["utf8decode", "utf", "decode"]  # a lone digit is no word


def test_a_path_gives_its_folders_name_and_extension():
    assert words("zeph_cli/agent/tool_offer.py") == ["zeph_cli", "zeph", "cli", "agent", "tool_offer", "tool", "offer", "py"]


def test_common_words_and_single_letters_are_left_out_but_a_plain_word_stays():
    assert words("The offer of a tool, x and _private") == ["offer", "tool", "private"]


def test_a_question_in_plain_words_meets_the_identifier():
    asked = set(words("where is the tool offer decided"))
    assert {"tool", "offer"} <= asked and {"tool", "offer"} <= set(words("class ToolOffer:"))
