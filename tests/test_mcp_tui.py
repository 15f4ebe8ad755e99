"""/mcp in the chat app: the prompts listed, one put into the input box with its arguments (a real
app and session, the fake MCP server over streamable HTTP)."""

from __future__ import annotations

import pytest

from zeph_cli.frontends.tui.app import HelpEntry
from zeph_cli.frontends.tui.transcript import Notice
from tests.fakes import mcp_http
from tests.test_tui_app import SIZE, entries, model, send, workspace  # noqa: F401  (fixtures)
from tests.test_tui_app import open_app


@pytest.fixture(scope="module")
def http_server():
    server = mcp_http.start()
    yield server
    server.stop()


async def mcp(pilot, app, text: str) -> None:
    """/mcp runs beside the app (servers may take their timeout to start): wait for it."""
    await send(pilot, app, text, wait=False)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_mcp_lists_prompts_and_inserts_one(fake_server, model, workspace, tmp_path, http_server):
    config = tmp_path / "mcp.toml"
    config.write_text(
        f'[[mcp.servers]]\nid = "fake"\nurl = "{http_server.url}"\nheaders = {{ X-Fake-Token = "${{FAKE_TOKEN}}" }}\n'
    )
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config), "FAKE_TOKEN": "s3cret-token"})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await mcp(pilot, app, "/mcp")
            listing = entries(app, HelpEntry)[-1].source
            assert "| fake | review | path* focus |" in listing
            await mcp(pilot, app, '/mcp fake review path="src/app.py" focus=speed')
            assert app.prompt.text == "Review src/app.py with a focus on speed."
            app.prompt.text = ""
            await mcp(pilot, app, "/mcp fake review")
            error = entries(app, Notice)[-1]
            assert error.kind == "error" and "needs the argument(s) path" in error.text
            assert app.prompt.text == "/mcp fake review"  # what was typed is given back
    finally:
        await session.aclose()


async def test_the_app_stays_usable_while_mcp_waits_for_a_slow_server(fake_server, model, workspace, tmp_path, http_server):
    import sys

    config = tmp_path / "mcp.toml"
    config.write_text(
        f'[[mcp.servers]]\nid = "fake"\nurl = "{http_server.url}"\nheaders = {{ X-Fake-Token = "${{FAKE_TOKEN}}" }}\n'
        f'[[mcp.servers]]\nid = "silent"\ncommand = "{sys.executable}"\nargs = ["-c", "import time; time.sleep(60)"]\n'
        "timeout = 3\n"
    )
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config), "FAKE_TOKEN": "s3cret-token"})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/mcp", wait=False)
            await pilot.press("h", "i")
            await pilot.pause()
            assert app.prompt.text == "hi"  # typed while the silent server is still starting
            assert any(w.group == "mcp" and not w.is_finished for w in app.workers)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert "| fake | review |" in entries(app, HelpEntry)[-1].source
            assert any("MCP server silent did not start: did not answer within 3 s" in n.text for n in entries(app, Notice))
    finally:
        await session.aclose()
