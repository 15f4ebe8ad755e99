"""Features register; the core names none. A feature that exists only in the tests (`tests/probe_feature`)
reaches the real `zeph` through its one registration: its context source's block and its tool are in the
request and its tool runs, its command group is on the command line, its chat command parses, checks its
argument and runs. And the registries themselves (the source and tool registries, the tool offer, the
chat app's command table and dispatch) name no feature."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import EMPTY_PROJECT
from tests.fakes import openai_wire

ROOT = Path(__file__).resolve().parent.parent
PROBE = "tests.probe_feature"
# The real command line with the probe feature registered before anything reads the features.
RUNNER = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import zeph_cli.features as features; "
          f"features.PACKAGES.append({PROBE!r}); from zeph_cli.frontends.cli.launch import main; "
          "sys.argv[0] = 'zeph'; main()")
PATH = "/v1/chat/completions"


def run_with_probe(*args: str, env: dict[str, str] | None = None, code: str = RUNNER) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, cwd=EMPTY_PROJECT, stdin=subprocess.DEVNULL)


def test_a_registered_feature_s_source_and_tool_reach_the_request_and_its_tool_runs(fake_server, compatible):
    fake_server.queue(openai_wire.stream_response(
        openai_wire.tool_call_chunks([("call_p", "probe_lookup", [json.dumps({"key": "north"})])])))
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["North is 42."])))
    result = run_with_probe("ask", "What is the probe's value for north?", env=compatible)
    assert result.returncode == 0, result.stderr
    first, second = (r.json for r in fake_server.requests_to(PATH))
    assert "<probe>the probe's own block</probe>" in json.dumps(first["messages"])
    assert [t["function"]["name"] for t in first["tools"]][-1] == "probe_lookup"  # after the core's tools
    [result_sent] = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert "\nprobe value of north: 42\n" in result_sent
    shown = run_with_probe("context", env=compatible)
    assert shown.returncode == 0 and "probe" in shown.stdout, shown.stderr


def test_a_registered_feature_s_command_group_is_on_the_command_line():
    listed = run_with_probe("--help")
    assert listed.returncode == 0 and "probe" in listed.stdout and "The probe feature's commands." in listed.stdout
    ran = run_with_probe("probe", "show")
    assert ran.returncode == 0 and ran.stdout == "probe value: 42\n", ran.stderr
    without = subprocess.run([sys.executable, "-m", "zeph_cli", "probe", "show"], capture_output=True, text=True,
                             cwd=EMPTY_PROJECT, timeout=120)
    assert without.returncode != 0  # not registered: no such command


CHAT = """
from asyncio import run
from zeph_cli.frontends.tui.slash import COMMANDS, SlashCommand, SlashError, parse
from zeph_cli.features import chat_commands, chat_handler

assert "probe" in [spec.name for spec in COMMANDS]
assert isinstance(parse("/probe bad"), SlashError) and parse("/probe bad").message == "/probe takes a key, not 'bad'"
assert parse("/probe north") == SlashCommand("probe", "north")

class Host:
    shown = []
    async def show(self, markdown):
        self.shown.append(markdown)

host = Host()
run(chat_handler(chat_commands()["probe"])(host, "north"))
print(host.shown)
"""


def test_a_registered_feature_s_chat_command_is_listed_checked_and_run():
    code = RUNNER.replace("from zeph_cli.frontends.cli.launch import main; sys.argv[0] = 'zeph'; main()", CHAT)
    result = run_with_probe(code=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['probe value of north: 42']"


# Where the core decides what a session gets: none of these may name a feature (its package, its tools,
# its commands), so that a feature is added by its registration alone.
REGISTRIES = ("agent/sources.py", "agent/tool_offer.py", "agent/turn_loop.py", "context/assembler.py",
              "tools/registry.py", "tools/specs.py", "frontends/tui/app.py", "frontends/tui/slash.py")


def test_the_registries_name_no_feature():
    from zeph_cli import features

    names = {package.rsplit(".", 1)[1] for package in features.PACKAGES if package.startswith("zeph_cli.")}
    names |= set(features.declared_tools()) - set(features.BUILTIN) | set(features.chat_commands())
    names |= set(features.command_groups())
    package = ROOT / "zeph_cli"
    found = []
    for relative in REGISTRIES:
        for node in ast.walk(ast.parse((package / relative).read_text())):
            if isinstance(node, ast.ImportFrom):
                imported = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
                if set(imported) & names:
                    found.append(f"{relative}: imports {node.module} {[a.name for a in node.names]}")
            elif isinstance(node, ast.Import) and any(set(a.name.split(".")) & names for a in node.names):
                found.append(f"{relative}: imports {[a.name for a in node.names]}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.append(f"{relative}: names {node.value!r}")
    assert names >= {"memory", "skills", "mcp", "worldbook", "session_memory", "load_skill", "profile"}
    assert found == []


def test_what_features_register_is_imported_only_when_used():
    code = ("import sys; from zeph_cli import features; features.features(); "
            "print(sorted(m for m in sys.modules if m.startswith('zeph_cli.features.') and m.count('.') > 2))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.replace("'", '"')) == ["zeph_cli.features.code_index.tool_specs",
                                                            "zeph_cli.features.mcp.tool_specs",
                                                            "zeph_cli.features.memory.tool_specs",
                                                            "zeph_cli.features.skills.tool_specs",
                                                            "zeph_cli.features.tasks.tool_specs"]




def test_a_feature_says_what_isolation_leaves_out_and_cannot_take_a_name_already_taken(monkeypatch):
    from zeph_cli import features
    from zeph_cli.tools.registry import tools_for_mode

    monkeypatch.setattr(features, "PACKAGES", [*features.PACKAGES, PROBE])
    features.features.cache_clear()
    features.isolation_policy.cache_clear()
    try:
        isolation = features.policy_for(True)
        assert not isolation.allows("probe") and "the probe" in isolation.says
        probe_tools = [t for f in features.features() if f.name == "probe" for t in f.tools]
        assert tools_for_mode("agent", probe_tools, allows=isolation.allows_tools).names()[-1] != "probe_lookup"
        assert tools_for_mode("agent", probe_tools, allows=features.policy_for(False).allows_tools).names()[-1] == "probe_lookup"
        skills = [t for f in features.features() if f.name == "skills" for t in f.tools]
        assert "load_skill" not in tools_for_mode("agent", skills, allows=isolation.allows_tools).names()
        monkeypatch.setattr(features, "PACKAGES", [*features.PACKAGES, PROBE])  # the probe twice: its names taken
        features.features.cache_clear()
        with pytest.raises(ValueError, match="the tool 'probe_lookup' of feature 'probe' is feature 'probe''s already"):
            features.features()
    finally:
        features.features.cache_clear()
        features.isolation_policy.cache_clear()
