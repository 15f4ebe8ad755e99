"""Slash commands: what counts as a command, parsing, errors with suggestions, completion, /help."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zeph_cli.frontends.tui.slash import (
    ALIASES,
    COMMANDS,
    Completion,
    SlashCommand,
    SlashError,
    command,
    complete,
    HELP_NOTE,
    help_rows,
    parse,
    unescape,
)

ISSUE_COMMANDS = {
    "help", "compact", "context", "clear", "new", "sessions", "model", "provider", "mode", "system", "export", "exit",
    "memory",  # issue 14
    "skills",  # issue 15
    "mcp",  # issue 15
    "enhance", "profile", "worldbook",  # issue 16
    "index",  # the code index
    "tasks",  # the task list beside the transcript
}


def test_the_table_holds_every_command_of_the_issue_and_quit_is_an_alias_of_exit():
    assert {spec.name for spec in COMMANDS} == ISSUE_COMMANDS
    assert ALIASES == {"quit": "exit"}
    assert command("quit") is command("exit")
    assert command("QUIT").name == "exit"


@pytest.mark.parametrize("name", ["help", "compact", "context", "clear", "new", "sessions", "export", "exit"])
def test_commands_without_a_required_argument_parse_bare(name):
    assert parse(f"/{name}") == SlashCommand(name, "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/model claude-haiku-4-5", SlashCommand("model", "claude-haiku-4-5")),
        ("/provider ollama", SlashCommand("provider", "ollama")),
        ("/mode plan", SlashCommand("mode", "plan")),
        ("/mode ask", SlashCommand("mode", "ask")),
        ("/mode agent", SlashCommand("mode", "agent")),
        ("/system Answer in French.", SlashCommand("system", "Answer in French.")),
        ("/sessions parser bug", SlashCommand("sessions", "parser bug")),
        ("/export notes/today.md", SlashCommand("export", "notes/today.md")),
        ("/quit", SlashCommand("exit", "")),
    ],
)
def test_commands_with_arguments_parse(text, expected):
    assert parse(text) == expected


def test_names_are_case_insensitive_and_leading_whitespace_is_ignored():
    assert parse("/HELP") == SlashCommand("help", "")
    assert parse("  /Model  gpt-4o  ") == SlashCommand("model", "gpt-4o")
    assert parse("/mode PLAN") == SlashCommand("mode", "plan")


def test_system_text_is_kept_verbatim_inside_only_the_outer_whitespace_trimmed():
    text = "/system   You review Rust code.\n\n  Be  terse;  quote `fn main()` exactly.  \n"
    assert parse(text) == SlashCommand("system", "You review Rust code.\n\n  Be  terse;  quote `fn main()` exactly.")


def test_a_newline_separates_the_command_from_its_argument():
    assert parse("/system\nline one\nline two") == SlashCommand("system", "line one\nline two")


def test_model_name_keeps_its_case_and_punctuation():
    assert parse("/model Qwen/Qwen2.5-7B:q4_K_M") == SlashCommand("model", "Qwen/Qwen2.5-7B:q4_K_M")


@pytest.mark.parametrize(
    "text",
    ["hello", "", "   ", "what does /help do?", "//literal", "// not a command", "/usr/bin is odd", "/tmp/x",
     "/2 + 2", "/help?", "/_private"],
)
def test_text_that_is_not_a_command_is_a_message(text):
    assert parse(text) is None


def test_a_double_slash_sends_the_text_with_one_slash():
    assert unescape("//literal") == "/literal"
    assert unescape("// comment") == "/ comment"
    assert unescape("/usr/bin is odd") == "/usr/bin is odd"
    assert unescape("plain") == "plain"


def test_a_bare_slash_is_an_error_not_a_message():
    result = parse("/")
    assert isinstance(result, SlashError)
    assert "/help" in result.message


@pytest.mark.parametrize(
    ("typo", "suggested"),
    [("compcat", "/compact"), ("contxt", "/context"), ("sesions", "/sessions"), ("halp", "/help"), ("provder", "/provider")],
)
def test_an_unknown_command_suggests_the_closest(typo, suggested):
    result = parse(f"/{typo} now")
    assert isinstance(result, SlashError)
    assert result.message == f"unknown command /{typo} — did you mean {suggested}? (/help lists them)"


def test_a_typo_close_to_two_commands_suggests_both():
    result = parse("/modle x")
    assert isinstance(result, SlashError)
    assert "did you mean /mode or /model?" in result.message


def test_an_unknown_command_with_nothing_close_points_to_help():
    assert parse("/frobnicate") == SlashError("unknown command /frobnicate (/help lists them)")


def test_a_dashed_name_is_a_command_attempt():
    result = parse("/model-x")
    assert isinstance(result, SlashError)
    assert "did you mean /model or /mode?" in result.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/model", "/model needs NAME: /model claude-haiku-4-5"),
        ("/model   ", "/model needs NAME: /model claude-haiku-4-5"),
        ("/provider", "/provider needs NAME: /provider ollama"),
        ("/mode", "/mode needs agent|ask|plan: /mode plan"),
        ("/system", "/system needs TEXT: /system Answer in French."),
    ],
)
def test_a_missing_required_argument_says_what_to_type(text, message):
    assert parse(text) == SlashError(message)


def test_an_invalid_mode_lists_the_three_modes():
    result = parse("/mode yolo")
    assert isinstance(result, SlashError)
    assert result.message == "/mode takes agent, ask or plan, not 'yolo'"


def test_a_mistyped_mode_is_corrected():
    result = parse("/mode plam")
    assert isinstance(result, SlashError)
    assert result.message == "/mode takes agent, ask or plan, not 'plam' — did you mean plan?"


def test_a_command_that_takes_no_argument_refuses_one():
    result = parse("/clear all of it")
    assert isinstance(result, SlashError)
    assert result.message.startswith("/clear takes no argument")
    assert "//" in result.message


def test_context_takes_text_or_nothing():
    assert parse("/context Text") == SlashCommand("context", "text")
    assert parse("/context") == SlashCommand("context", "")
    result = parse("/context everything")
    assert isinstance(result, SlashError) and result.message.startswith("/context takes no argument, or text")


def test_huge_and_binary_input_never_crashes():
    assert parse("/system " + "x" * 1_000_000) == SlashCommand("system", "x" * 1_000_000)
    assert parse("\x00/help") is None
    assert parse("/help\x00") is None
    assert complete("/\udcff") == []


# ---- completion --------------------------------------------------------------


def labels(completions: list[Completion]) -> list[str]:
    return [c.label for c in completions]


def test_a_bare_slash_offers_every_command_in_table_order():
    assert labels(complete("/")) == [f"/{spec.name}" for spec in COMMANDS]


def test_completion_filters_by_prefix_and_carries_hint_and_help():
    completions = complete("/mo")
    assert labels(completions) == ["/model", "/mode"]
    model = completions[0]
    assert (model.value, model.hint) == ("/model ", "NAME")
    assert model.help == command("model").help
    assert complete("/co") == [
        Completion("/compact", "/compact", "", command("compact").help),
        Completion("/context ", "/context", "[text]", command("context").help),
    ]


def test_a_command_without_argument_completes_without_a_trailing_space():
    assert [c.value for c in complete("/he")] == ["/help"]
    assert [c.value for c in complete("/ses")] == ["/sessions "]


def test_an_alias_is_offered_when_only_it_matches():
    assert labels(complete("/q")) == ["/quit"]
    assert complete("/q")[0].help == command("exit").help
    assert labels(complete("/ex")) == ["/export", "/exit"]


def test_completion_is_case_insensitive():
    assert labels(complete("/MO")) == ["/model", "/mode"]


def test_mode_values_complete_after_the_space():
    assert labels(complete("/mode ")) == ["agent", "ask", "plan"]
    assert [c.value for c in complete("/mode a")] == ["/mode agent", "/mode ask"]
    assert [c.value for c in complete("/MODE P")] == ["/mode plan"]


@pytest.mark.parametrize(
    "text",
    ["", "hello", "//lit", "/usr/bin", "/zz", "/model ", "/model cl", "/system be", "/mode plan now", "/2"],
)
def test_nothing_to_complete(text):
    assert complete(text) == []


# ---- /help and layering ---------------------------------------------------------


def test_help_lists_every_command_with_its_hint_and_the_key_bindings():
    commands, keys = help_rows()
    assert [usage.split()[0] for usage, _ in commands] == [f"/{spec.name}" for spec in COMMANDS]
    assert [does for _, does in commands] == [spec.help for spec in COMMANDS]
    assert ("/mode agent|ask|plan", command("mode").help) in commands
    assert ("/model NAME", command("model").help) in commands
    assert ("/exit (also /quit)", command("exit").help) in commands
    for key in ("Enter", "Shift+Enter or Ctrl+J", "Up / Down", "Esc or Ctrl+C", "Ctrl+C twice or Ctrl+Q", "F1"):
        assert key in dict(keys)
    assert "//" in HELP_NOTE


def test_slash_and_gauge_import_no_textual():
    code = "import sys, zeph_cli.frontends.tui.slash, zeph_cli.frontends.tui.gauge; print(sorted(m for m in sys.modules if m.startswith('textual')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
