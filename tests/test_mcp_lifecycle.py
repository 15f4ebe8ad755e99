"""MCP servers' life cycle against real stdio servers: a crashed server restarts when next needed (its exit
status and last log line said, 1/2/4 s apart, at most 3 times, `restart()` resets that), and the listing
cache (a later zeph offers a server's tools without starting it; a call starts it; a changed config or
a changed list is noticed) — through the manager and through the real `zeph ask`."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.chat_wire import chat_requests, queue_call, queue_reply, tool_names, tool_results
from tests.cli_helpers import err, run_zeph
from tests.mcp_reference import EVERYTHING, needs_node_servers
from zeph_cli.config.mcp import McpServerEntry
from zeph_cli.features.mcp.connection import ServerError
from zeph_cli.features.mcp.manager import MAX_RESTARTS, McpManager
from zeph_cli.features.turn_extras import TurnExtras

CRASHY = Path(__file__).parent / "fakes" / "mcp_crashy.py"


def _crashy(state: Path, **kw) -> McpServerEntry:
    return McpServerEntry(id="crashy", command=sys.executable, args=(str(CRASHY), str(state)), **kw)


def _manager(tmp_path: Path, *entries: McpServerEntry) -> McpManager:
    return McpManager(entries, env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, log_dir=tmp_path / "mcp",
                      cache=tmp_path / "cache")


def _starts(state: Path) -> int:
    path = state / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _names(manager: McpManager) -> set[str]:
    return {t.name for t in manager.tools()}


# ---- restarts --------------------------------------------------------------------------------------


async def test_a_crashed_server_restarts_when_next_called_at_most_three_times_and_restart_resets(tmp_path):
    state = tmp_path / "state"
    manager = _manager(tmp_path, _crashy(state))
    try:
        assert await manager.prepare_turn() == []
        assert _names(manager) == {"crashy__echo", "crashy__crash"}
        for attempt in range(1, MAX_RESTARTS + 2):
            with pytest.raises(ServerError) as failure:
                await manager.call_tool("crashy", "crash", {"status": 3}, 30)
            said = ("MCP server crashy exited (status 3); its log ends: 'crashy: giving up with status 3'; "
                    + (f"it restarts when next needed (try {attempt} of 3)" if attempt <= MAX_RESTARTS else
                       "it was restarted 3 times and stays stopped (/mcp restart crashy starts it again)"))
            assert str(failure.value) == said + " (during crash)"
            assert manager.take_warnings() == [said]  # the user's notice, once
            assert manager.take_warnings() == []
            assert _starts(state) == attempt
        # each restart waited out its backoff after the crash before it (the server's own clock: a lower bound)
        started = [float(line.split()[2]) for line in (state / "starts").read_text().splitlines()]
        crashed = [float(line.split()[1]) for line in (state / "crashes").read_text().splitlines()]
        assert [started[i + 1] - crashed[i] >= backoff for i, backoff in enumerate((1.0, 2.0, 4.0))] == [True] * 3
        # after the third restart crashed too: stopped for the session, its tools no longer offered
        assert _names(manager) == set()
        with pytest.raises(ServerError, match="stays stopped"):
            await manager.call_tool("crashy", "echo", {"text": "hi"}, 30)
        assert _starts(state) == MAX_RESTARTS + 1
        assert manager.take_warnings() == []
        # /mcp restart: at once, and counted afresh
        assert await manager.restart("crashy") == ["MCP server crashy restarted (2 tools)"]
        assert _starts(state) == MAX_RESTARTS + 2
        assert _names(manager) == {"crashy__echo", "crashy__crash"}
        result = await manager.call_tool("crashy", "echo", {"text": "again"}, 30)
        assert result.content[0].text == "echo: again"
        with pytest.raises(ServerError) as failure:
            await manager.call_tool("crashy", "crash", {"status": 5}, 30)
        assert "exited (status 5)" in str(failure.value) and "(try 1 of 3)" in str(failure.value)
        with pytest.raises(ServerError, match=r"^there is no MCP server 'nope' \(servers: crashy\)$"):
            await manager.restart("nope")
    finally:
        await manager.aclose()
    log = (tmp_path / "mcp" / "crashy.log").read_text()
    assert log.count("crashy: giving up with status 3") == MAX_RESTARTS + 1


async def test_a_server_killed_between_turns_is_said_before_the_next_and_restarts_on_its_next_call(tmp_path):
    import os
    import signal

    state = tmp_path / "state"
    manager = _manager(tmp_path, _crashy(state))
    try:
        await manager.prepare_turn()
        [pid] = [int(line.split()[1]) for line in (state / "starts").read_text().splitlines()]
        os.kill(pid, signal.SIGKILL)
        for _ in range(600):  # 30 s at most: a bound on a hang
            if manager.status()[0].state == "failed":
                break
            await asyncio.sleep(0.05)
        [said] = await manager.prepare_turn()  # (the shell may add its own word on a killed child to the log)
        assert said.startswith("MCP server crashy exited (status 137)")
        assert said.endswith("; it restarts when next needed (try 1 of 3)")
        assert _names(manager) == {"crashy__echo", "crashy__crash"}  # still offered: the next call starts it
        assert _starts(state) == 1
        result = await manager.call_tool("crashy", "echo", {"text": "back"}, 30)
        assert result.content[0].text == "echo: back" and _starts(state) == 2
    finally:
        await manager.aclose()


async def test_closing_during_a_restart_s_backoff_starts_nothing_again(tmp_path):
    state = tmp_path / "state"
    manager = _manager(tmp_path, _crashy(state))
    try:
        await manager.prepare_turn()
        with pytest.raises(ServerError, match=r"exited \(status 3\)"):
            await manager.call_tool("crashy", "crash", {"status": 3}, 30)
        waiting = asyncio.ensure_future(manager.call_tool("crashy", "echo", {"text": "x"}, 30))
        await asyncio.sleep(0.2)  # inside the 1 s backoff
        assert not waiting.done()
    finally:
        await manager.aclose()
    with pytest.raises(ServerError, match="^MCP server crashy"):
        await asyncio.wait_for(waiting, 30)  # a bound on a hang
    assert _starts(state) == 1


# ---- the listing cache ---------------------------------------------------------------------------


async def test_a_cached_listing_is_offered_without_starting_the_server_and_a_call_starts_it(tmp_path):
    state = tmp_path / "state"
    first = _manager(tmp_path, _crashy(state))
    try:
        assert await first.prepare_turn() == []  # never listed: started, and the turn waited
        assert _starts(state) == 1
    finally:
        await first.aclose()
    [cache] = (tmp_path / "cache").glob("crashy.json")
    listing = next(iter(json.loads(cache.read_text())["listings"].values()))
    assert listing["server_info"] == ["crashy", "1.0"]
    assert [t["name"] for t in listing["tools"]] == ["echo", "crash"]

    second = _manager(tmp_path, _crashy(state))
    try:
        assert await second.prepare_turn() == []
        assert _names(second) == {"crashy__echo", "crashy__crash"}
        assert _starts(state) == 1  # offered from the cache, not started
        assert second.status()[0].state == "not started"
        tool = next(t for t in second.tools() if t.name == "crashy__echo")
        result = await tool.run({"text": "cached"}, None)  # type: ignore[arg-type]
        assert result.content == "echo: cached" and _starts(state) == 2
    finally:
        await second.aclose()

    changed = _manager(tmp_path, _crashy(state, env={"SOMETHING": "else"}))  # another config: another key
    try:
        assert await changed.prepare_turn() == [] and _starts(state) == 3
    finally:
        await changed.aclose()


@needs_node_servers
async def test_cached_resources_are_offered_and_listed_without_starting_the_server_and_a_read_starts_it(tmp_path):
    entry = McpServerEntry(id="everything", command=str(EVERYTHING), timeout=60)
    first = _manager(tmp_path, entry)
    try:
        await first.prepare_turn()
        assert first.offers_resources()
        live = await first.list_resources("everything")
    finally:
        await first.aclose()

    second = _manager(tmp_path, entry)
    try:
        await second.prepare_turn()
        assert second.offers_resources()  # the resource tools are offered from the kept listing
        [kept] = await second.list_resources()
        assert kept.server == "everything" and not kept.error
        assert [r.uri for r in kept.resources] == [r.uri for r in live[0].resources]
        assert second.status()[0].state == "not started"  # answered without starting it
        text, _ = await second.read_resource("everything", live[0].resources[0].uri)
        assert text and second.status()[0].state == "running"  # a read starts it, as a tool call does
    finally:
        await second.aclose()


def _processes_in(folder: Path, needle: str) -> list[int]:
    """The processes whose working directory is `folder` and whose command line names `needle` (Linux)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(proc / "cwd").resolve() == folder.resolve() \
                    and needle in (proc / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@needs_node_servers
@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="finds the server's process through /proc (Linux)")
async def test_a_crashed_server_keeps_its_resources_offered_and_a_read_restarts_it(tmp_path):
    import os
    import signal

    manager = _manager(tmp_path, McpServerEntry(id="everything", command=str(EVERYTHING), timeout=60))
    try:
        await manager.prepare_turn()
        [listing] = await manager.list_resources("everything")
        for pid in _processes_in(tmp_path, "mcp-server-everything"):
            os.kill(pid, signal.SIGKILL)
        for _ in range(600):  # 30 s at most: a bound on a hang
            if manager.status()[0].state == "failed":
                break
            await asyncio.sleep(0.05)
        assert manager.status()[0].state == "failed"
        assert manager.offers_resources()  # still offered: the next read starts it again
        text, _ = await manager.read_resource("everything", listing.resources[0].uri)
        assert text and manager.status()[0].state == "running"
    finally:
        await manager.aclose()


async def test_a_cached_tool_the_server_no_longer_has_fails_in_one_line_and_the_list_is_refreshed(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "more_tools").write_text("gone\n")
    first = _manager(tmp_path, _crashy(state))
    try:
        await first.prepare_turn()
        assert "crashy__gone" in _names(first)
    finally:
        await first.aclose()
    (state / "more_tools").unlink()  # the server changed; its configuration did not
    second = _manager(tmp_path, _crashy(state))
    try:
        await second.prepare_turn()
        gone = next(t for t in second.tools() if t.name == "crashy__gone")  # still the cached list
        with pytest.raises(Exception, match=r"^MCP server crashy no longer offers gone \(its tools were listed "
                                            r"again and are offered anew from the next request\)$"):
            await gone.run({}, None)  # type: ignore[arg-type]
        assert _names(second) == {"crashy__echo", "crashy__crash"}
    finally:
        await second.aclose()
    third = _manager(tmp_path, _crashy(state))
    try:
        await third.prepare_turn()
        assert _names(third) == {"crashy__echo", "crashy__crash"} and _starts(state) == 2  # the fresh list was kept
    finally:
        await third.aclose()


async def test_an_edited_server_or_an_old_listing_is_listed_again_and_a_failed_start_keeps_the_listing(tmp_path):
    from zeph_cli.features.mcp.cache import LISTING_MAX_AGE_SECS, ListingCache, cache_key

    state = tmp_path / "state"
    script = tmp_path / "server.py"  # a server run as `python server.py`: the command is the interpreter
    script.write_text(CRASHY.read_text())
    entry = McpServerEntry(id="crashy", command=sys.executable, args=(str(script), str(state)))

    async def one_turn() -> McpManager:
        manager = _manager(tmp_path, entry)
        try:
            await manager.prepare_turn()
        finally:
            await manager.aclose()
        return manager

    await one_turn()
    await one_turn()
    assert _starts(state) == 1  # the second offered the kept listing
    script.write_text(CRASHY.read_text() + "\n# edited\n")
    await one_turn()
    assert _starts(state) == 2  # the edited script is listed again

    [path] = (tmp_path / "cache").glob("crashy.json")
    kept = json.loads(path.read_text())
    for listing in kept["listings"].values():
        listing["listed_at"] -= LISTING_MAX_AGE_SECS + 60
    path.write_text(json.dumps(kept))
    await one_turn()
    assert _starts(state) == 3  # too old: listed again

    cache, key = ListingCache(tmp_path / "cache"), cache_key(entry, {"PATH": "/usr/bin:/bin"}, tmp_path)
    cache.save_failure("crashy", key, "the network was down")
    assert cache.load("crashy", key) is not None and cache.failure("crashy", key) == "the network was down"
    manager = _manager(tmp_path, entry)
    try:
        assert await manager.prepare_turn() == []
        assert _names(manager) == {"crashy__echo", "crashy__crash"} and _starts(state) == 3  # offered, not waited for
    finally:
        await manager.aclose()


async def test_a_list_change_reported_by_the_connection_is_offered_next_and_kept(tmp_path):
    state = tmp_path / "state"
    manager = _manager(tmp_path, _crashy(state))
    try:
        await manager.prepare_turn()
        assert _names(manager) == {"crashy__echo", "crashy__crash"}
        conn = manager.connections["crashy"]
        conn.tools = [t for t in conn.tools if t.name == "echo"]  # as the connection re-lists on list_changed
        assert _names(manager) == {"crashy__echo", "crashy__crash"}  # the tools offered stand until told
        manager.hooks.on_change("crashy", "tools")
        assert _names(manager) == {"crashy__echo"}
        assert [t.name for t in manager.cached_listing("crashy").tools] == ["echo"]
    finally:
        await manager.aclose()


async def test_a_server_that_fails_to_start_is_said_and_the_next_turns_do_not_wait_for_it(tmp_path):
    from zeph_cli.features.mcp.cache import ListingCache, cache_key

    state = tmp_path / "state"
    first = _manager(tmp_path, _crashy(state))
    try:
        await first.prepare_turn()
    finally:
        await first.aclose()
    (state / "starts").unlink()
    (state / "starts").mkdir()  # the server cannot start now (it cannot write down its start)
    second = _manager(tmp_path, _crashy(state))
    try:
        await second.prepare_turn()
        assert "crashy__echo" in _names(second)  # from the kept listing
        with pytest.raises(ServerError, match="^MCP server crashy is not running"):
            await second.call_tool("crashy", "echo", {"text": "x"}, 30)
        [note] = second.take_warnings()
        assert note.startswith("MCP server crashy did not start: ") and "\n" not in note
        assert _names(second) == set()  # not for the rest of this session
        assert second.cached_listing("crashy") is not None  # kept beside the failure: a later session offers it
    finally:
        await second.aclose()

    cache, key = ListingCache(tmp_path / "cache"), cache_key(_crashy(state), {"PATH": "/usr/bin:/bin"}, tmp_path)
    next((tmp_path / "cache").glob("crashy.json")).unlink()
    cache.save_failure("crashy", key, "it could not write down its start")  # a server never listed that failed
    third = _manager(tmp_path, _crashy(state))
    try:
        [note] = await third.prepare_turn()  # the turn goes on: the server starts in the background
        assert note.startswith("MCP server crashy did not start last time (") and "\n" not in note
        assert note.endswith("it is starting in the background, and its tools are offered once it is up (from a later turn)")
        assert _names(third) == set()
        [again] = await third.start()  # /mcp waits for that start
        assert again.startswith("MCP server crashy did not start: ")
    finally:
        await third.aclose()


async def test_a_start_note_is_not_lost_with_a_caller_cancelled_while_waiting(tmp_path):
    """The turn whose MCP source was late is cancelled while the servers start: the start goes on, once, and the
    next caller (the next turn, or /mcp) receives its note; the one after it does not hear it again."""
    starts = tmp_path / "starts"
    silent = McpServerEntry(id="silent", command=sys.executable, timeout=1,
                            args=("-c", f"open({str(starts)!r}, 'a').write('x'); import time; time.sleep(60)"))
    extras = TurnExtras(mcp=_manager(tmp_path, silent))
    try:
        late = asyncio.ensure_future(extras.start_mcp())
        await asyncio.sleep(0.1)  # the start has begun
        late.cancel()
        with pytest.raises(asyncio.CancelledError):
            await late
        assert await extras.start_mcp() == ["MCP server silent did not start: did not answer within 1 s"]
        assert await extras.start_mcp() == [] and starts.read_text() == "x"
    finally:
        await extras.aclose()


# ---- through `zeph ask` ----------------------------------------------------------------------------


def _ask_env(compatible: dict[str, str], tmp_path: Path, state: Path) -> dict[str, str]:
    config = tmp_path / "mcp.toml"
    config.write_text(f'[[mcp.servers]]\nid = "crashy"\ncommand = "{sys.executable}"\n'
                      f'args = ["{CRASHY}", "{state}"]\ntrusted = true\n')
    return {**compatible, "ZEPH_CONFIG": str(config)}


def test_a_second_ask_offers_the_cached_tools_without_starting_the_server_or_importing_the_sdk(
        fake_server, compatible, tmp_path):
    state = tmp_path / "state"
    env = _ask_env(compatible, tmp_path, state)
    queue_reply(fake_server, "Hello.")
    first = run_zeph("ask", "hello", env=env)
    assert first.returncode == 0, err(first)
    assert _starts(state) == 1  # never listed: started once, and its listing kept

    queue_reply(fake_server, "Hello again.")
    second = run_zeph("ask", "hello", env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert second.returncode == 0, err(second)
    assert _starts(state) == 1  # not started
    assert {"crashy__echo", "crashy__crash"} <= set(tool_names(chat_requests(fake_server)[-1]))
    imported = {line.split("|")[-1].strip() for line in err(second).splitlines() if line.startswith("import time:")}
    assert "zeph_cli.features.mcp.cache" in imported  # the manager ran (it imports the cache)
    assert not [n for n in imported if n == "mcp" or n.startswith("mcp.")]  # and no SDK: nothing started

    queue_call(fake_server, "crashy__echo", {"text": "from the cache"})
    queue_reply(fake_server, "Done.")
    third = run_zeph("ask", "echo something", env=env)
    assert third.returncode == 0, err(third)
    assert _starts(state) == 2  # the call started it
    assert "echo: from the cache" in tool_results(chat_requests(fake_server)[-1])[0]


@pytest.mark.skipif(shutil.which("sh") is None, reason="the exit status comes from a POSIX shell")
def test_a_server_that_crashes_during_an_ask_is_named_with_its_status_and_last_words(fake_server, compatible, tmp_path):
    state = tmp_path / "state"
    env = _ask_env(compatible, tmp_path, state)
    queue_call(fake_server, "crashy__crash", {"status": 3})
    queue_reply(fake_server, "It crashed.")
    result = run_zeph("ask", "crash it", env=env)
    assert result.returncode == 0, err(result)
    said = ("MCP server crashy exited (status 3); its log ends: 'crashy: giving up with status 3'; "
            "it restarts when next needed (try 1 of 3)")
    assert said in tool_results(chat_requests(fake_server)[-1])[0]


# ---- the chat app's launch ---------------------------------------------------------------------------


async def test_a_chat_session_refreshes_a_cached_listing_at_launch_without_a_turn(compatible, tmp_path):
    import os

    from zeph_cli.agent.chat_session import ChatSession
    from zeph_cli.config import load_config
    from zeph_cli.tools.permissions import approve_all

    state = tmp_path / "state"
    state.mkdir()
    (state / "more_tools").write_text("old\n")
    env = {**os.environ, **_ask_env(compatible, tmp_path, state)}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approve_all)
    try:
        for _ in range(600):  # 60 s at most: a bound on a hang
            if first.agent.mcp.status()[0].state == "running":
                break
            await asyncio.sleep(0.1)
        assert _starts(state) == 1  # started at launch, no turn asked for it
    finally:
        await first.aclose()
    (state / "more_tools").write_text("new\n")
    second = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approve_all)
    try:
        manager = second.agent.mcp
        assert "crashy__old" in _names(manager) or _starts(state) == 2  # the cache, unless the refresh was quicker
        for _ in range(600):
            if manager.status()[0].state == "running":
                break
            await asyncio.sleep(0.1)
        assert _starts(state) == 2
        assert "crashy__new" in _names(manager) and "crashy__old" not in _names(manager)
        assert [t.name for t in manager.cached_listing("crashy").tools][-1] == "new"
    finally:
        await second.aclose()


async def test_the_first_turn_of_a_chat_waits_for_a_server_never_listed_started_at_launch(fake_server, compatible, tmp_path):
    import os

    from zeph_cli.agent.chat_session import ChatSession
    from zeph_cli.config import load_config
    from zeph_cli.tools.permissions import approve_all

    state = tmp_path / "state"
    env = {**os.environ, **_ask_env(compatible, tmp_path, state)}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approve_all)
    try:
        queue_reply(fake_server, "Hi.")
        [event async for event in session.run("hello")]
        assert {"crashy__echo", "crashy__crash"} <= set(tool_names(chat_requests(fake_server)[-1]))
        assert _starts(state) == 1  # the launch's start, which the turn joined
    finally:
        await session.aclose()
