"""/attach in the chat app (Textual's pilot, a real ChatSession against the fake server): staging a file for
the next message, listing and dropping staged files, refusals, Tab completion of paths, and the collapsed
view of an attached file in the transcript (live and when the session is opened again)."""

from __future__ import annotations

from pathlib import Path

from zeph_cli.context.attachments import AttachedFile
from zeph_cli.frontends.tui.status_bar import StatusBar
from zeph_cli.frontends.tui.transcript import Notice, UserEntry
from tests.test_tui_app import SIZE, chat_bodies, entries, model, open_app, send, settle  # noqa: F401  (fixture)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 42\n", encoding="utf-8")
    (root / "src" / "api.py").write_text("x = 1\n", encoding="utf-8")
    (root / "paper.pdf").write_bytes(b"%PDF-1.7\n" + bytes(31))
    return root


def notices(app, kind: str | None = None) -> list[str]:
    return [n.text for n in entries(app, Notice) if kind is None or n.kind == kind]


async def test_attach_stages_a_file_for_the_next_message_only(fake_server, model, tmp_path):
    root = project(tmp_path)
    model.say("It returns 42.")
    model.say("Nothing attached now.")
    app, session = await open_app(fake_server, root)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/attach src/app.py")
            assert notices(app)[-1].startswith("attached src/app.py (2 lines, ")
            assert "📎 1 file for the next message" in app.query_one(StatusBar).line()
            await send(pilot, app, "/attach")
            assert notices(app)[-1] == "attached to your next message: src/app.py (2 lines)"

            await send(pilot, app, "what does main return?")
            sent = chat_bodies(fake_server)[-1]["messages"][-1]["content"]
            assert sent == ('<attachment path="src/app.py" lines="2">\ndef main():\n    return 42\n</attachment>\n\n'
                            "what does main return?")
            (entry,) = entries(app, UserEntry)
            assert entry.typed == "what does main return?" and entry.attached == [AttachedFile("src/app.py", 2)]
            shown = str(entry.render())
            assert "📎 src/app.py (2 lines)" in shown and "return 42" not in shown  # collapsed, not the file
            assert "📎" not in app.query_one(StatusBar).line()  # it went with that message

            await send(pilot, app, "and now?")
            assert chat_bodies(fake_server)[-1]["messages"][-1]["content"] == "and now?"
        conversation_id = session.conversation.id
    finally:
        await session.aclose()

    resumed, session2 = await open_app(fake_server, root, session_id=conversation_id)
    try:
        async with resumed.run_test(size=SIZE) as pilot:
            await pilot.pause()
            first = entries(resumed, UserEntry)[0]
            assert first.attached == [AttachedFile("src/app.py", 2)] and "return 42" not in str(first.render())
    finally:
        await session2.aclose()


async def test_refusals_clear_and_completion(fake_server, model, tmp_path):
    root = project(tmp_path)
    app, session = await open_app(fake_server, root)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, "/attach paper.pdf")
            assert notices(app, "error")[-1] == ("cannot attach paper.pdf: it is a binary file (PDF document, 40 bytes); "
                                                  "only text files can be attached")
            assert app.prompt.text == "/attach paper.pdf"  # back in the box to correct
            await send(pilot, app, "/attach src")
            assert notices(app, "error")[-1].startswith("cannot attach src: it is a directory")
            assert not session.staged

            app.prompt.text = "/attach src/a"
            app.prompt.move_cursor(app.prompt.document.end)
            await pilot.pause()
            assert [c.label for c in app.completions(app.prompt.text)] == ["src/api.py", "src/app.py"]
            app.prompt.text = "/attach src/app"
            app.prompt.focus()
            await pilot.press("tab")
            assert app.prompt.text == "/attach src/app.py"
            await pilot.press("enter")
            await settle(pilot, app)
            assert list(session.staged) == ["src/app.py"]

            await send(pilot, app, "/attach clear")
            assert notices(app)[-1] == "dropped src/app.py" and not session.staged
            assert "📎" not in app.query_one(StatusBar).line()
            assert not chat_bodies(fake_server)  # nothing was sent
    finally:
        await session.aclose()
