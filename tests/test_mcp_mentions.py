"""`@server:uri` in the chat app (Textual's pilot, a real ChatSession, server-everything over stdio): Tab
completes the server, then the URIs it listed; a mentioned resource goes with the message as an
`<attachment>` block; a mention that cannot be attached is one error line and the message stays in the box."""

from __future__ import annotations

import sys
from pathlib import Path

from zeph_cli.context.attachments import AttachedFile
from zeph_cli.features.mcp.mentions import mentions
from zeph_cli.frontends.tui.transcript import Notice, UserEntry
from tests.mcp_reference import EVERYTHING, needs_node_servers
from tests.test_tui_app import SIZE, chat_bodies, entries, model, open_app, send, workspace  # noqa: F401  (fixtures)

DOC = "demo://resource/static/document/architecture.md"
FAKE = Path(__file__).parent / "fakes" / "mcp_resources.py"


def test_what_counts_as_a_mention():
    assert mentions(f"see @everything:{DOC}, and @docs:file:///a/b.md.") == [("everything", DOC), ("docs", "file:///a/b.md")]
    assert mentions(f"(@everything:{DOC}) twice: @everything:{DOC}") == [("everything", DOC)]
    assert mentions("mail ann@example.com:https://x, a bare @everything: or @everything:not-a-uri") == []


def notices(app, kind: str) -> list[str]:
    return [n.text for n in entries(app, Notice) if n.kind == kind]


@needs_node_servers
async def test_a_mentioned_resource_is_completed_and_attached(fake_server, model, workspace, tmp_path):
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "everything"\ncommand = "{EVERYTHING}"\n'
                      f'[[mcp.servers]]\nid = "fake"\ncommand = "{sys.executable}"\nargs = ["{FAKE}"]\n')
    model.say("It is layered.")
    app, session = await open_app(fake_server, workspace, env={"ZEPH_CONFIG": str(config)})
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.prompt.text = "what is in @ev"
            app.prompt.focus()
            await pilot.press("tab")
            assert app.prompt.text == "what is in @everything:"
            await app.workers.wait_for_complete()  # the listing that asking started, if the start at launch had not listed them
            await pilot.pause()
            hints = app.completions("what is in @everything:demo://resource/static/document/arch")
            assert [h.label for h in hints] == [DOC]
            app.prompt.text = "what is in @everything:demo://resource/static/document/arch"
            await pilot.press("tab")
            assert app.prompt.text == f"what is in @everything:{DOC}"

            await send(pilot, app, f"what is in @everything:{DOC}?")
            sent = chat_bodies(fake_server)[-1]["messages"][-1]["content"]
            head, _, rest = sent.partition("\n")
            assert head.startswith(f'<attachment path="everything:{DOC}" lines="') and rest.startswith("# Everything Server")
            assert sent.endswith(f"</attachment>\n\nwhat is in @everything:{DOC}?")
            (entry,) = entries(app, UserEntry)
            assert entry.typed == f"what is in @everything:{DOC}?"

            await send(pilot, app, "and @everything:demo://nope/x")
            assert notices(app, "error")[-1].startswith(
                "cannot attach @everything:demo://nope/x: MCP server everything: cannot read demo://nope/x")
            assert app.prompt.text == "and @everything:demo://nope/x"  # back in the box
            await send(pilot, app, "and @nope:demo://x")
            assert notices(app, "error")[-1].splitlines()[0] == ("cannot attach @nope:demo://x: there is no MCP server "
                                                                 "'nope' (servers: everything, fake)")
            await send(pilot, app, "and @fake:fake://big")
            assert notices(app, "error")[-1].startswith("cannot attach @fake:fake://big: it is 450,000 characters, ")
            assert "more than an attachment may take" in notices(app, "error")[-1]
            assert len(chat_bodies(fake_server)) == 1  # neither was sent
        conversation_id = session.conversation.id
    finally:
        await session.aclose()

    resumed, session2 = await open_app(fake_server, workspace, session_id=conversation_id,
                                       env={"ZEPH_CONFIG": str(config)})
    try:
        async with resumed.run_test(size=SIZE) as pilot:
            await pilot.pause()
            [first] = entries(resumed, UserEntry)
            [attached] = first.attached
            assert isinstance(attached, AttachedFile) and attached.path == f"everything:{DOC}" and attached.lines > 1
    finally:
        await session2.aclose()
