"""/mcp in the chat app: the prompts listed, one put into the input box with its arguments (a real
app and session, the fake MCP server over streamable HTTP)."""

from __future__ import annotations

import pytest

from zeph_cli.tui.app import HelpEntry
from zeph_cli.tui.transcript import Notice
from tests.fakes import mcp_http
from tests.test_tui_app import SIZE, entries, model, send, workspace  # noqa: F401  (fixtures)
from tests.test_tui_app import open_app


@pytest.fixture(scope="module")
def http_server():
    server = mcp_http.start()
    yield server
    server.stop()


async def test_mcp_lists_prompts_and_inserts_one(fake_server, model, workspace, tmp_path, http_server):
    config = tmp_path / "mcp.toml"
    config.write_text(
        f'[[mcp.servers]]\nid = "fake"\nurl = "{http_server.url}"\nheaders = {{ X-Fake-Token = "${{FAKE_TOKEN}}" }}\n'
    )
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config), "FAKE_TOKEN": "s3cret-token"})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/mcp")
            listing = entries(app, HelpEntry)[-1].source
            assert "| fake | review | path* focus |" in listing
            await send(pilot, app, '/mcp fake review path="src/app.py" focus=speed')
            assert app.prompt.text == "Review src/app.py with a focus on speed."
            app.prompt.text = ""
            await send(pilot, app, "/mcp fake review")
            error = entries(app, Notice)[-1]
            assert error.kind == "error" and "needs the argument(s) path" in error.text
            assert app.prompt.text == "/mcp fake review"  # what was typed is given back
    finally:
        await session.aclose()
