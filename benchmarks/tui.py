"""Chat app figures: does rendering keep up with a fast stream, and what does the idle app cost?

Section 1 streams a 20,000-token reply at 2,000 tokens/s from a fake
OpenAI-compatible server — in its own process, like a real endpoint, pacing
its chunks on a fixed schedule — into the real app (headless, `App.run_test`) and
prints how far the rendered Markdown lags behind what has arrived, during the
stream and after its last token. Section 2 prints the CPU the open app uses
while idle. Section 3 runs the real `zeph` in a pseudo-terminal: idle CPU and
the same stream. Section 4 starts the real `zeph` in a pseudo-terminal, each
run with a fresh scratch HOME, and prints how long until its first screen is
drawn and until a message typed at once is answered. Prints figures; asserts
nothing.

Run from the repository root: `python benchmarks/tui.py [--quick] [--first-paint-only]
[--compare-with OTHER_CHECKOUT]`.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import sqlite3
import struct
import termios
import threading
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.server import FakeServer  # noqa: E402
from zeph_cli.agent.chat_session import ChatSession  # noqa: E402
from zeph_cli.config import load_config  # noqa: E402
from zeph_cli.frontends.tui.app import TuiApprover, ZephApp  # noqa: E402
from zeph_cli.frontends.tui.transcript import MAX_MOUNTED, AssistantEntry, UserEntry  # noqa: E402

TOKENS = 20_000
RATE = 2_000  # tokens per second
TICK = 0.01  # the server sends a chunk every 10 ms: RATE * TICK tokens each
IDLE_SECS = 5.0
SAMPLE_SECS = 0.02
CHARS_PER_TOKEN = len("w12 ")


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


async def open_app(url: str, workspace: Path) -> tuple[ZephApp, ChatSession]:
    env = {
        **os.environ,
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
        "ZEPH_LLM_MAX_TOKENS": "32000",
    }
    approver = TuiApprover()
    session = await ChatSession.open(load_config(env=env), env=env, cwd=workspace, approver=approver)
    app = ZephApp(session)
    approver.app = app
    return app, session


def serve_stream(tokens: int) -> None:
    """The server process: print its URL, stream the reply to the first request, stop when stdin closes."""
    server = FakeServer()
    chunks = reply_chunks(tokens)
    server.queue(openai_wire.stream_response(openai_wire.text_chunks(chunks, usage=None), chunk_delay=TICK))
    print(server.url, flush=True)
    sys.stdin.read()
    server.close()


REPLY = "pong from the fake server"


def serve_replies() -> None:
    """The server process for first paint: print its URL, answer every chat request with REPLY, stop when stdin closes."""
    server = FakeServer()

    def answer(request):
        if request.method != "POST":
            return None
        if (request.json or {}).get("stream"):
            return openai_wire.stream_response(openai_wire.text_chunks([REPLY]))
        return openai_wire.json_response(openai_wire.completion(content=REPLY))

    server.respond_with(answer)
    print(server.url, flush=True)
    sys.stdin.read()
    server.close()


def earlier_entries(count: int) -> list:
    """A transcript already on screen: questions and Markdown answers with a list and a code block."""
    answer = "Some **prose** about it.\n\n- one\n- two\n\n```python\nprint('x')\n```\n\nAnd a last line."
    return [UserEntry(f"question {i}") if i % 2 == 0 else AssistantEntry(answer) for i in range(count)]


async def streaming(workspace: Path, tokens: int, history: int = 0) -> None:
    chunks = reply_chunks(tokens)
    total_text = "".join(chunks)
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(tokens)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        url = process.stdout.readline().strip()
        await streaming_from(url, workspace, chunks, total_text, tokens, history)
    finally:
        process.stdin.close()
        process.wait(timeout=10)


async def streaming_from(
    url: str, workspace: Path, chunks: list[str], total_text: str, tokens: int, history: int
) -> None:
    app, session = await open_app(url, workspace)
    lags: list[int] = []  # characters received but not yet rendered, sampled every SAMPLE_SECS
    times: dict[str, float] = {}  # when the first and the last token had reached the app

    async def sample(started: float) -> None:
        while "done" not in times:
            await asyncio.sleep(SAMPLE_SECS)
            replies = [e for e in app.transcript.entries() if isinstance(e, AssistantEntry)]
            if not replies:
                continue
            received, rendered = len(replies[-1].text), replies[-1].rendered_chars
            lags.append(received - rendered)
            now = time.perf_counter() - started
            times.setdefault("first", now)
            if received >= len(total_text):
                times.setdefault("last", now)
                if rendered >= received and not app.busy:
                    times["done"] = now

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await app.transcript.add(*earlier_entries(history))
            await pilot.pause()
            app.prompt.text = "write a lot"
            started, cpu_started = time.perf_counter(), time.process_time()
            sampler = asyncio.create_task(sample(started))  # before Enter: pilot.press waits for a quiet app
            await pilot.press("enter")
            await asyncio.wait_for(sampler, timeout=10 * len(chunks) * TICK + 30)
            cpu_secs = time.process_time() - cpu_started
            await pilot.pause()
            reply = [e for e in app.transcript.entries() if isinstance(e, AssistantEntry)][-1]
            complete = reply.text == total_text and reply.rendered_chars == len(total_text)
    finally:
        await session.aclose()
    first_secs, last_secs, done_secs = times.get("first"), times.get("last"), times.get("done", 0.0)
    wire_secs = (len(chunks) - 1) * TICK  # from the first chunk sent to the last
    print(f"Streaming {tokens:,} tokens at {RATE:,} tokens/s ({len(chunks):,} chunks, {len(total_text):,} characters) "
          f"below {history} earlier transcript entries")
    print(f"   the server sends from first to last chunk in {wire_secs:6.2f} s")
    if first_secs is None or last_secs is None:
        print(f"   the reply never arrived in full (complete: {complete})")
        return
    intake_secs = last_secs - first_secs
    print(f"   the app received them within               {intake_secs:6.2f} s  "
          f"(first token at {first_secs:.2f} s after Enter, ±{SAMPLE_SECS:.2f} s sampling)")
    print(f"   reply fully rendered                        +{done_secs - last_secs:.2f} s after the last token "
          f"(complete: {complete})")
    print(f"   render lag while streaming: median {statistics.median(lags):,.0f} chars, "
          f"max {max(lags):,} chars (≈ {max(lags) / CHARS_PER_TOKEN / RATE:.2f} s of stream)")
    rate = tokens * wire_secs / (len(chunks) * TICK) / max(intake_secs, TICK)
    print(f"   intake {rate:,.0f} tokens/s ({rate / RATE:.0%} of the {RATE:,} sent); "
          f"the app used {cpu_secs:.2f} s CPU ({cpu_secs / done_secs:.0%} of one core)")
    keeps_up = intake_secs <= wire_secs * 1.05 + 2 * SAMPLE_SECS and done_secs - last_secs < 1.0
    verdict = "met" if keeps_up else "MISSED: the stream is read slower than it is sent"
    print(f"   target: keeps up with {RATE:,} tokens/s — {verdict}")


async def idle(workspace: Path, seconds: float) -> None:
    app, session = await open_app("http://127.0.0.1:9", workspace)
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


def process_cpu_secs(pid: int) -> float | None:
    """User + system CPU of a running process, from /proc (None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Terminal:
    """A pseudo-terminal of 120×40 running a command; what it draws is read and counted, then dropped."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.started = time.monotonic()
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.process = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, start_new_session=True,
            env={**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"},
        )
        os.close(slave)
        self.drawn = 0
        self.seen = bytearray()  # everything drawn since the last wait_for
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.drawn += len(data)
            self.seen += data

    def wait_until(self, text: bytes, timeout: float) -> float | None:
        """Seconds since the process started until `text` had been drawn (None: not within `timeout`)."""
        deadline = time.monotonic() + timeout
        while text not in self.seen and time.monotonic() < deadline:
            time.sleep(0.005)
        if text not in self.seen:
            return None
        return time.monotonic() - self.started

    def wait_for(self, text: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while text not in self.seen and time.monotonic() < deadline:
            time.sleep(0.02)
        found, self.seen = text in self.seen, bytearray()
        return found

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        self.type(b"\x11")  # ctrl+q
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


def stored_replies(database: Path) -> int:
    try:
        with sqlite3.connect(database) as conn:
            return conn.execute("select count(*) from messages where role = 'assistant'").fetchone()[0]
    except sqlite3.Error:
        return 0


def in_a_terminal(workspace: Path, tokens: int, idle_secs: float) -> None:
    zeph = Path(sys.executable).with_name("zeph")
    print(f"3. The real zeph in a 120×40 pseudo-terminal")
    if not zeph.exists() or not Path("/proc/self/stat").exists():
        print(f"   not measured: needs the zeph command next to {sys.executable} and /proc")
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(tokens)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    url = server.stdout.readline().strip()
    env = {**os.environ, "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": url + "/v1",
           "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0", "ZEPH_LLM_MAX_TOKENS": "32000"}
    terminal = Terminal([str(zeph)], env, workspace)
    try:
        if not terminal.wait_for(b"context", 60):  # the gauge: the session behind the first screen is open
            print("   the app did not open within 60 s")
            return
        time.sleep(1.0)
        pid = terminal.process.pid
        cpu0, wall0, drawn0 = process_cpu_secs(pid), time.monotonic(), terminal.drawn
        time.sleep(idle_secs)
        cpu, wall = process_cpu_secs(pid) - cpu0, time.monotonic() - wall0
        print(f"   idle: {cpu * 1000:.0f} ms CPU over {wall:.1f} s = {100 * cpu / wall:.1f}% of one core, "
              f"{terminal.drawn - drawn0:,} bytes drawn")
        terminal.seen = bytearray()
        database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"
        replies_before = stored_replies(database)
        cpu0, wall0, drawn0 = process_cpu_secs(pid), time.monotonic(), terminal.drawn
        terminal.type(b"write a lot\r")
        deadline = wall0 + 10 * tokens / RATE + 30
        while stored_replies(database) == replies_before and time.monotonic() < deadline:
            time.sleep(0.02)
        wall = time.monotonic() - wall0
        cpu = process_cpu_secs(pid) - cpu0
        wire_secs = tokens / RATE
        verdict = "keeps up" if wall <= wire_secs * 1.05 + 0.5 else "falls behind"
        print(f"   {tokens:,} tokens at {RATE:,} tokens/s ({wire_secs:.1f} s on the wire): reply stored "
              f"{wall:.2f} s after Enter — {verdict}; {cpu:.2f} s CPU ({cpu / wall:.0%} of one core), "
              f"{(terminal.drawn - drawn0) / 1e6:.1f} MB drawn")
    finally:
        terminal.close()
        server.stdin.close()
        server.wait(timeout=10)


FIRST_SCREEN = b"new session"  # in the header of the first screen drawn


def zeph_from(checkout: Path) -> list[str]:
    """The command that runs zeph from another checkout (its own sources, this Python's packages)."""
    code = f"import sys; sys.path.insert(0, {str(checkout)!r}); from zeph_cli.frontends.cli.app import main; sys.argv[0] = 'zeph'; main()"
    return [sys.executable, "-c", code]


def one_start(command: list[str], url: str) -> tuple[float | None, float | None]:
    """(seconds until the first screen is drawn, until a message typed right then is answered) for one start
    with a fresh scratch HOME (so the store is created and migrated too)."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        workspace = home / "ws"
        workspace.mkdir()
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ZEPH_", "XDG_"))}
        env.update({
            "HOME": tmp, "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
            "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state"),
            "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o",
            "ZEPH_LLM_MAX_RETRIES": "0",
        })
        terminal = Terminal(command, env, workspace)
        try:
            shown = terminal.wait_until(FIRST_SCREEN, 60)
            if shown is None:
                return None, None
            terminal.type(b"hello\r")
            return shown, terminal.wait_until(REPLY.encode(), 60)
        finally:
            terminal.close()


def first_paint(runs: int, compare_with: Path | None = None) -> None:
    """Start the real zeph in a pty `runs` times (interleaved with another checkout's, if given): the time
    until its first screen is drawn, and until a message typed as soon as it is drawn is answered."""
    zeph = Path(sys.executable).with_name("zeph")
    print(f"4. First paint: the real zeph in a 120×40 pseudo-terminal, {runs} runs, a fresh HOME each")
    if not zeph.exists():
        print(f"   not measured: needs the zeph command next to {sys.executable}")
        return
    commands = {"this checkout": [str(zeph)]}
    if compare_with is not None:
        commands[str(compare_with)] = zeph_from(compare_with)
    server = subprocess.Popen([sys.executable, __file__, "--serve-replies"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    painted: dict[str, list[float]] = {name: [] for name in commands}
    answered: dict[str, list[float]] = {name: [] for name in commands}
    try:
        for _ in range(runs):
            for name, command in commands.items():  # interleaved: the machine's load falls on both alike
                shown, replied = one_start(command, url)
                if shown is None:
                    print(f"   {name}: the first screen was not drawn within 60 s")
                elif replied is None:
                    print(f"   {name}: the message typed at once was not answered within 60 s")
                if shown is not None:
                    painted[name].append(shown)
                if replied is not None:
                    answered[name].append(replied)
    finally:
        server.stdin.close()
        server.wait(timeout=10)

    def figures(values: list[float]) -> str:
        if not values:
            return "no figures"
        return (f"median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f}; "
                + " ".join(f"{v:.2f}" for v in values) + ")")

    for name in commands:
        if len(commands) > 1:
            print(f"   {name}:")
        print(f"   first screen drawn:                       {figures(painted[name])}")
        print(f"   a message typed at once, answered:        {figures(answered[name])}")
    print("   target: first screen within 1.0 s on 2 cores")


async def run(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ZEPH_HOME"] = str(Path(tmp) / "data")
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        os.environ["HOME"] = tmp
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        tokens = 4_000 if quick else TOKENS
        print("1. ", end="")
        await streaming(workspace, tokens)
        print("\n1b. ", end="")
        await streaming(workspace, tokens, history=MAX_MOUNTED - 1)
        print()
        await idle(workspace, 2.0 if quick else IDLE_SECS)
        print()
        in_a_terminal(workspace, 4_000 if quick else TOKENS, 2.0 if quick else IDLE_SECS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4,000 tokens and 2 s idle")
    parser.add_argument("--first-paint-only", action="store_true", help="only section 4 (first paint)")
    parser.add_argument("--runs", type=int, default=7, help="zeph starts for the first-paint figures (default 7)")
    parser.add_argument("--compare-with", type=Path, metavar="CHECKOUT",
                        help="also time the first paint of the zeph in another checkout, interleaved")
    parser.add_argument("--serve", type=int, metavar="TOKENS", help=argparse.SUPPRESS)
    parser.add_argument("--serve-replies", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve_stream(args.serve)
    elif args.serve_replies:
        serve_replies()
    elif args.first_paint_only:
        first_paint(args.runs, args.compare_with)
    else:
        asyncio.run(run(args.quick))
        print()
        first_paint(3 if args.quick else args.runs, args.compare_with)


if __name__ == "__main__":
    main()
