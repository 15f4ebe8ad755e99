"""`zeph --help` and each group's help: every command's summary whole, every metavar in one style.

The summaries are read from the real executable's help (tests/cli_helpers.run_zeph), at the usual
80 columns and at a narrow 50, where click would cut a long summary mid-sentence ("..."). The
metavars are read from every option and argument of every command, the lazily added groups included.
"""

from __future__ import annotations

import re

import pytest
import typer

from tests.cli_helpers import out, run_zeph
from zeph_cli.frontends.cli.app import app

GROUPS = ["config", "sessions", "memory", "skills", "mcp", "worldbook", "profile"]
METAVAR = re.compile(r"[A-Z][A-Z0-9_=]*(\.\.\.)?")  # ID, N, PATH, NAME=VALUE...


def summaries(help_text: str) -> dict[str, str]:
    """The Commands section of a help page: each command's summary, its wrapped lines joined."""
    rows: dict[str, str] = {}
    section = help_text.split("\nCommands:\n", 1)[1]
    name = ""
    for line in section.splitlines():
        if not line.strip():
            break
        match = re.match(r"  (\S+)\s+(.*)", line)
        if match and not line.startswith("   "):
            name = match.group(1)
            rows[name] = match.group(2).strip()
        else:
            rows[name] += " " + line.strip()
    return rows


@pytest.mark.parametrize("group", ["", *GROUPS])
def test_every_summary_is_whole(group):
    args = [group, "--help"] if group else ["--help"]
    wide = run_zeph(*args, env={"COLUMNS": "80"})
    assert wide.returncode == 0, wide.stderr.decode()
    at_80 = summaries(out(wide))
    assert at_80, out(wide)
    for name, text in at_80.items():
        assert not text.endswith(("...", "…")), (group, name, text)
        assert text.endswith((".", ")")), (group, name, text)
    # one line each at 80 columns: a summary is a line, the details are in the command's own help
    section = out(wide).split("\nCommands:\n", 1)[1].split("\n\n")[0]
    assert len(section.strip("\n").splitlines()) == len(at_80), section

    narrow = run_zeph(*args, env={"COLUMNS": "50"})
    assert summaries(out(narrow)) == at_80  # wrapped, never cut


def _commands():
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="zeph")
    stack = [(root, ctx, "zeph")]
    while stack:
        command, ctx, path = stack.pop()
        yield command, ctx, path
        for name in getattr(command, "list_commands", lambda _: [])(ctx):
            sub = command.get_command(ctx, name)
            stack.append((sub, sub.context_class(sub, info_name=name, parent=ctx), f"{path} {name}"))


def _metavar(param, ctx) -> str:
    try:
        return param.make_metavar(ctx)
    except TypeError:  # click before 8.2
        return param.make_metavar()


def test_every_metavar_is_upper_case():
    seen, wrong = 0, []
    for command, ctx, path in _commands():
        for param in command.params:
            if getattr(param, "is_flag", False) or getattr(param, "count", False):
                continue
            seen += 1
            metavar = _metavar(param, ctx)
            if not METAVAR.fullmatch(metavar):
                wrong.append(f"{path} {param.name}: {metavar}")
    assert seen > 60
    assert not wrong, wrong


def test_the_help_shows_the_metavars():
    text = out(run_zeph("worldbook", "add", "--help", env={"COLUMNS": "80"}))
    assert "--session ID " in text and "--depth N " in text and "--content-file FILE " in text
    assert "<" not in text.split("Options:")[1].split("--position")[0]
    usage = out(run_zeph("mcp", "prompt", "--help")).splitlines()[0]
    assert re.fullmatch(r"Usage: zeph mcp prompt \[OPTIONS\] \{?SERVER\}? \{?NAME\}? \[NAME=VALUE\.\.\.\]", usage), usage
