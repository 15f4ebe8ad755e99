"""Chat app figures: does rendering keep up with a fast stream, and what does the idle app cost?

Section 1 streams a 20,000-token reply at 2,000 tokens/s from a local fake
OpenAI-compatible server into the real app (headless, `App.run_test`) and
prints how far the rendered Markdown lags behind what has arrived, during the
stream and after its last token. Section 2 prints the CPU the open app uses
while idle. Prints figures; asserts nothing.

Run from the repository root: `python benchmarks/tui.py [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.server import FakeServer  # noqa: E402
from zeph_cli.chat_session import ChatSession  # noqa: E402
from zeph_cli.config import load_config  # noqa: E402
from zeph_cli.tui.app import TuiApprover, ZephApp  # noqa: E402
from zeph_cli.tui.transcript import AssistantEntry  # noqa: E402

TOKENS = 20_000
RATE = 2_000  # tokens per second
TICK = 0.01  # the server sends a chunk every 10 ms: RATE * TICK tokens each
IDLE_SECS = 5.0


def reply_chunks(tokens: int) -> list[str]:
    """Markdown-ish text: paragraphs, a list and a code block now and then; one word ≈ one token."""
    words = []
    for i in range(tokens):
        if i % 400 == 399:
            words.append("\n\n```python\nprint('block')\n```\n\n")
        elif i % 60 == 59:
            words.append("\n\n- item ")
        else:
            words.append(f"w{i % 97} ")
    per_chunk = int(RATE * TICK)
    return ["".join(words[i : i + per_chunk]) for i in range(0, len(words), per_chunk)]


async def open_app(server: FakeServer, workspace: Path) -> tuple[ZephApp, ChatSession]:
    env = {
        **os.environ,
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": server.url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
        "ZEPH_LLM_MAX_TOKENS": "32000",
    }
    approver = TuiApprover()
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approver)
    app = ZephApp(session)
    approver.app = app
    return app, session


async def streaming(server: FakeServer, workspace: Path, tokens: int) -> None:
    chunks = reply_chunks(tokens)
    total_text = "".join(chunks)
    server.queue(openai_wire.stream_response(openai_wire.text_chunks(chunks, usage=None), chunk_delay=TICK))
    app, session = await open_app(server, workspace)
    lags: list[int] = []  # characters received but not yet rendered, sampled every 50 ms
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            app.prompt.text = "write a lot"
            started = time.perf_counter()
            await pilot.press("enter")
            stream_secs = None
            while app.busy or app.worker is None:
                await asyncio.sleep(0.05)
                replies = [e for e in app.transcript.entries() if isinstance(e, AssistantEntry)]
                if replies:
                    received = len(replies[-1].text)
                    rendered = replies[-1].rendered_chars
                    lags.append(received - rendered)
                    if received >= len(total_text) and stream_secs is None:
                        stream_secs = time.perf_counter() - started
            done_secs = time.perf_counter() - started
            await pilot.pause()
            reply = [e for e in app.transcript.entries() if isinstance(e, AssistantEntry)][-1]
            complete = reply.text == total_text and reply.rendered_chars == len(total_text)
    finally:
        await session.aclose()
    wire_secs = len(chunks) * TICK
    print(f"1. Streaming {tokens:,} tokens at {RATE:,} tokens/s ({len(chunks):,} chunks, {len(total_text):,} characters)")
    print(f"   server sends for           {wire_secs:6.2f} s (chunk delays alone)")
    if stream_secs is not None:
        print(f"   last token received at     {stream_secs:6.2f} s")
    print(f"   reply fully rendered at    {done_secs:6.2f} s  "
          f"(+{done_secs - (stream_secs or done_secs):.2f} s after the last token; complete: {complete})")
    if lags:
        print(f"   render lag while streaming: median {statistics.median(lags):,.0f} chars, "
              f"max {max(lags):,} chars (≈ {max(lags) / 6 / RATE:.2f} s of stream at ~6 chars/token)")
    if stream_secs is not None:
        rate = tokens / stream_secs
        print(f"   the app took the stream in at {rate:,.0f} tokens/s ({rate / RATE:.0%} of the {RATE:,} sent)")
        keeps_up = stream_secs <= wire_secs * 1.1 and done_secs - stream_secs < 1.0
        print(f"   target: keeps up with {RATE:,} tokens/s — {'met' if keeps_up else 'MISSED'} "
              "(the screen trails what arrived by the lag above; the stream itself is read slower)")


async def idle(server: FakeServer, workspace: Path, seconds: float) -> None:
    app, session = await open_app(server, workspace)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            await asyncio.sleep(seconds)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    finally:
        await session.aclose()
    print(f"2. Idle app: {cpu * 1000:.0f} ms CPU over {wall:.1f} s = {100 * cpu / wall:.1f}% of one core "
          "(headless; the cursor blink and timers are all that run)")


async def run(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ZEPH_HOME"] = str(Path(tmp) / "data")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        os.environ["HOME"] = tmp
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        server = FakeServer()
        try:
            await streaming(server, workspace, 4_000 if quick else TOKENS)
            print()
            await idle(server, workspace, 2.0 if quick else IDLE_SECS)
        finally:
            server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4,000 tokens and 2 s idle")
    asyncio.run(run(parser.parse_args(argv).quick))


if __name__ == "__main__":
    main()
