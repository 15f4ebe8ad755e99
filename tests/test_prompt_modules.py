"""Prompt modules: shipped text, user and project overrides, removal, bad files; and end to end,
a project override reaching the model through the real `zeph` with the wire-level fake."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import err, out, run_zeph
from tests.chat_wire import chat_requests, queue_reply, system_text
from zeph_cli.context.prompt_modules import MODULE_NAMES, base_prompt, mode_prompt
from zeph_cli.agent.prompt_files import load_prompt_modules, shipped_text


def _write(directory: Path, name: str, data: str | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def test_every_module_is_shipped_and_composes_in_a_stable_order():
    modules, warnings = load_prompt_modules(None, None)
    assert warnings == [] and set(modules) == set(MODULE_NAMES)
    assert all(shipped_text(name) for name in MODULE_NAMES)
    base = base_prompt(modules)
    assert base.text.startswith("You are Zeph") and base.detail == "core, soul, memory"
    assert mode_prompt(modules, "agent", tools=True).detail == "mode-agent, tools, workflow"
    assert mode_prompt(modules, "ask", tools=True).text.startswith("Mode: ask.")
    assert "numbered list" in mode_prompt(modules, "plan", tools=True).text
    assert mode_prompt(modules, "agent", tools=False).text.startswith("No tools are available")


def test_project_override_wins_over_user_and_an_empty_file_removes(tmp_path):
    user, project = tmp_path / "user", tmp_path / "proj"
    _write(user, "soul", "Answer like a pirate.")
    _write(user, "memory", "User memory text.")
    soul = _write(project / ".zeph" / "prompts", "soul", "Answer in haiku.")
    memory = _write(project / ".zeph" / "prompts", "memory", "   \n")
    modules, warnings = load_prompt_modules(user, project)
    assert warnings == []
    base = base_prompt(modules)
    assert "Answer in haiku." in base.text and "pirate" not in base.text
    assert "User memory text." not in base.text and "Context:" not in base.text
    assert f"soul (project {soul})" in base.detail and f"memory removed (project {memory})" in base.detail
    assert base.detail.startswith("core, ")


def test_a_user_override_applies_without_a_project_one(tmp_path):
    path = _write(tmp_path / "user", "workflow-plan", "End with three steps.")
    modules, _ = load_prompt_modules(tmp_path / "user", tmp_path / "proj")
    plan = mode_prompt(modules, "plan", tools=True)
    assert plan.text.endswith("End with three steps.") and f"workflow-plan (user {path})" in plan.detail


def test_a_binary_or_undecodable_override_is_one_warning_and_the_shipped_text(tmp_path):
    project = tmp_path / "proj"
    _write(project / ".zeph" / "prompts", "core", b"\x00\x01binary")
    _write(project / ".zeph" / "prompts", "tools", b"\xff\xfe\xfa not utf-8")
    modules, warnings = load_prompt_modules(None, project)
    assert len(warnings) == 2 and "core.md: binary" in warnings[0] and "tools.md: not valid UTF-8" in warnings[1]
    assert modules["core"].text == shipped_text("core") and modules["core"].source == "shipped"
    assert modules["tools"].text == shipped_text("tools")


def test_a_project_override_reaches_the_model_and_zeph_context_names_it(fake_server, compatible, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    _write(project / ".zeph" / "prompts", "soul", "Always answer in rhyming couplets.")
    work = project / "src"
    work.mkdir()
    queue_reply(fake_server)
    result = run_zeph("ask", "hello", env=compatible, cwd=work)
    assert result.returncode == 0, err(result)
    system = system_text(chat_requests(fake_server)[-1])
    assert "Always answer in rhyming couplets." in system
    assert "Be direct and accurate" not in system  # the shipped soul module is replaced
    assert shipped_text("core") in system and shipped_text("memory") in system and shipped_text("tools") in system
    shown = run_zeph("context", "--json", env=compatible, cwd=work)
    assert shown.returncode == 0, err(shown)
    blocks = {b["name"]: b for b in json.loads(out(shown))["context"]["blocks"]}
    assert "soul (project " in blocks["base prompt"]["detail"] and "soul.md" in blocks["base prompt"]["detail"]
