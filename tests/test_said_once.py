"""The embedded model's "running without tools" is said on the first run, by `zeph context` and in the
chat app's status, not on every `zeph ask`."""

from __future__ import annotations

from tests.cli_helpers import err, out, run_zeph
from zeph_cli.agent.said_once import SAID_DIR, first_time

LOCAL = {"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MAX_TOKENS": "2"}


def test_a_notice_is_new_once_per_text(tmp_path):
    assert first_time("running without tools: local (a.gguf) has none", tmp_path)
    assert not first_time("running without tools: local (a.gguf) has none", tmp_path)
    assert first_time("running without tools: local (b.gguf) has none", tmp_path)  # another model: said again
    assert len(list((tmp_path / SAID_DIR).iterdir())) == 2


def test_an_unwritable_data_dir_says_it_every_time(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert first_time("x", blocker) and first_time("x", blocker)


def test_zeph_ask_says_it_on_the_first_run_and_zeph_context_always(tmp_path):
    first = run_zeph("ask", "hi", env=LOCAL, cwd=tmp_path, timeout=600)
    assert first.returncode == 0, err(first)
    assert err(first).count("running without tools: local (SmolLM2-135M-Instruct.Q4_1.gguf) has no tool calling") == 1
    second = run_zeph("ask", "hi again", env=LOCAL, cwd=tmp_path, timeout=600)
    assert second.returncode == 0, err(second)
    assert "without tools" not in err(second)
    context = run_zeph("context", env=LOCAL, cwd=tmp_path, timeout=600)
    assert context.returncode == 0, err(context)
    assert "running without tools: local (SmolLM2-135M-Instruct.Q4_1.gguf) has no tool calling" in out(context)


async def test_the_chat_app_status_says_no_tools_every_session(tmp_path):
    import os

    from zeph_cli.agent.chat_session import ChatSession
    from zeph_cli.config import load_config
    from zeph_cli.frontends.tui.app import TuiApprover, ZephApp
    from zeph_cli.frontends.tui.status_bar import StatusBar

    env = {**os.environ, **LOCAL}
    for _ in range(2):
        session = await ChatSession.open(load_config(env=env), env=env, cwd=tmp_path, approver=TuiApprover())
        app = ZephApp(session)
        try:
            async with app.run_test(size=(100, 32)) as pilot:
                await pilot.pause()
                assert "no tools" in app.query_one(StatusBar).line()
        finally:
            await session.aclose()
