"""/memory in the chat app: list what this place sees, add one, forget one (a real app and session)."""

from __future__ import annotations

from zeph_cli.frontends.tui.app import HelpEntry
from zeph_cli.frontends.tui.transcript import Notice
from tests.test_tui_app import SIZE, entries, model, open_app, send, workspace  # noqa: F401  (fixtures)


async def test_memory_lists_adds_and_forgets(fake_server, model, workspace):
    app, session = await open_app(fake_server, workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/memory")
            assert "No saved memories here" in entries(app, HelpEntry)[-1].source
            await send(pilot, app, "/memory add The tests run with make test")
            assert entries(app, Notice)[-1].text == "saved memory #1 (user)"  # the workspace is no git tree
            await send(pilot, app, "/memory")
            assert "| 1 | user | 1 | The tests run with make test |" in entries(app, HelpEntry)[-1].source
            await send(pilot, app, "/memory forget 1")
            assert entries(app, Notice)[-1].text == "forgot memory #1"
            await send(pilot, app, "/memory forget 1")
            error = entries(app, Notice)[-1]
            assert error.kind == "error" and "no memory with id 1" in error.text
            assert session.long_term_memory().visible() == []
    finally:
        await session.aclose()
