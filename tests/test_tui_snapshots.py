"""Snapshots of the chat app: the main screen after an exchange with a tool call, and /context.

The SVG screenshots in tests/snapshots/ are compared byte for byte; on a
difference the new picture is written next to it as `*.received.svg` to look
at. `UPDATE_SNAPSHOTS=1` rewrites them after an intended change.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.scripted_model import ScriptedModel
from tests.fakes import openai_wire
from tests.test_tui_app import open_app, send
from zeph_cli.frontends.tui.screens import ContextScreen

SNAPSHOTS = Path(__file__).parent / "snapshots"
# A fixed working directory: the <environment> block (and so every token figure) names it.
FIXED_WORKSPACE = Path("/tmp/zeph-snapshot-workspace")


@pytest.fixture
def workspace():
    shutil.rmtree(FIXED_WORKSPACE, ignore_errors=True)
    FIXED_WORKSPACE.mkdir()
    (FIXED_WORKSPACE / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    yield FIXED_WORKSPACE
    shutil.rmtree(FIXED_WORKSPACE, ignore_errors=True)


def check(name: str, svg: str) -> None:
    expected = SNAPSHOTS / f"{name}.svg"
    received = SNAPSHOTS / f"{name}.received.svg"
    if os.environ.get("UPDATE_SNAPSHOTS") or not expected.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        expected.write_text(svg, encoding="utf-8")
        received.unlink(missing_ok=True)
        if not os.environ.get("UPDATE_SNAPSHOTS"):
            pytest.fail(f"no snapshot {expected.name} yet: written now, look at it and commit it")
        return
    if svg != expected.read_text(encoding="utf-8"):
        received.write_text(svg, encoding="utf-8")
        pytest.fail(f"{name} changed: compare {received} with {expected}")
    received.unlink(missing_ok=True)


async def scripted_exchange(fake_server, workspace, **options):
    model = ScriptedModel()
    fake_server.respond_with(model)
    model.chat.append(openai_wire.stream_response(
        openai_wire.tool_call_chunks([("call_read", "read_file", ['{"path": "notes.txt"}'])], usage=(1500, 20, 0))))
    model.chat.append(openai_wire.stream_response(openai_wire.text_chunks(
        ["The file says **42**.\n\n```python\nprint(42)\n```\n"], usage=(1600, 30, 0))))
    return await open_app(fake_server, workspace, **options)


async def test_main_screen_snapshot(fake_server, workspace):
    app, session = await scripted_exchange(fake_server, workspace)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            app.prompt.cursor_blink = False
            await send(pilot, app, "What does notes.txt say?")
            await pilot.pause()
            check("main_screen", app.export_screenshot(title="zeph"))
    finally:
        await session.aclose()


async def test_context_screen_snapshot(fake_server, workspace):
    # The sandbox line depends on the machine (Landlock or not), the <time> block's size on the date:
    # off, they read the same everywhere.
    env = {"ZEPH_TOOLS_SANDBOX_ENABLED": "false", "ZEPH_CONTEXT_INJECT_TIME": "false"}
    app, session = await scripted_exchange(fake_server, workspace, env=env)
    try:
        async with app.run_test(size=(110, 34)) as pilot:
            app.prompt.cursor_blink = False
            await send(pilot, app, "What does notes.txt say?")
            await send(pilot, app, "/context")
            await pilot.pause()
            assert isinstance(app.screen, ContextScreen)
            check("context_screen", app.export_screenshot(title="zeph /context"))
    finally:
        await session.aclose()


def screen_text(svg: str) -> str:
    """The characters an SVG screenshot shows (what is on screen, nothing scrolled away)."""
    import html
    import re

    return html.unescape("".join(re.findall(r"<text [^>]*>(.*?)</text>", svg))).replace("\xa0", " ")


async def test_help_fits_a_40_row_terminal(fake_server, workspace):
    # 100×40: every command and key on screen at once, no rules between rows; F1 shows the same.
    env = {"ZEPH_TOOLS_SANDBOX_ENABLED": "false", "ZEPH_CONTEXT_INJECT_TIME": "false"}
    app, session = await open_app(fake_server, workspace, env=env)
    try:
        async with app.run_test(size=(100, 40)) as pilot:
            app.prompt.cursor_blink = False
            await send(pilot, app, "/help")
            await pilot.pause()
            svg = app.export_screenshot(title="zeph /help")
            shown = screen_text(svg)
            for first in ("Commands", "/help", "/compact", "/context"):
                assert first in shown
            assert "/exit" in shown and "F1" in shown
            assert "├" not in shown and "─┼─" not in shown
            check("help_40_rows", svg)
            await pilot.press("f1")
            await pilot.pause()
            assert len(app.query("HelpPanel")) == 2
    finally:
        await session.aclose()


async def test_help_shows_its_first_commands_when_it_is_taller_than_the_screen(fake_server, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=(70, 30)) as pilot:
            await send(pilot, app, "/help")
            await pilot.pause()
            shown = screen_text(app.export_screenshot())
            assert "Commands" in shown and "/help" in shown and "/compact" in shown
    finally:
        await session.aclose()


async def test_help_and_listings_come_back_whole_when_shown_again_after_pruning():
    from textual.app import App

    from zeph_cli.frontends.tui.app import HelpEntry
    from zeph_cli.frontends.tui.help_panel import HelpPanel
    from zeph_cli.frontends.tui.transcript import _replica

    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    app = App()
    async with app.run_test() as pilot:
        shown = HelpEntry(table)
        await app.mount(shown, HelpPanel())
        await pilot.pause()
        assert isinstance(_replica(app.query_one(HelpPanel)), HelpPanel)
        listing = _replica(shown)
        assert isinstance(listing, HelpEntry)
        await app.mount(listing)
        await pilot.pause()
        assert listing.source == table
