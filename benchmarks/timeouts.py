"""How soon zeph gives up on a server that is down or silent, and how long it waits when one asks it to.

Invariant: prints figures, asserts nothing (the tests check that each wait happens and ends; how
long it takes is measured here). Each row is the median and the maximum of `--runs` samples, each
a fresh provider or index in a fresh event loop after one run left out (first imports),
against the wire-level fake servers of tests/fakes/ (the real SDK clients over real sockets), a
closed port, or a socket that accepts and never answers; beside it, its baseline: the bound zeph
promises (`llm.timeout_secs`, the discovery timeout, the qdrant client's timeout, the server's
Retry-After) and, for a timed-out request, what the SDK alone waits with the same settings.

  1. a chat server that never answers (every attempt would hang), `llm.timeout_secs` 0.5 and
     `llm.max_retries` 2: zeph gives the whole call, the SDK's own retries included, one timeout;
  2. Retry-After: a 429 (or Ollama's 503) asking for a wait, then the reply;
  3. discovery (what a local server says about its window): nothing listening, one probe hanging;
  4. the qdrant vector index: a closed port (search, add, forget), a server that never answers.

    python benchmarks/timeouts.py [--runs 5] [--section 1,2,3,4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["ZEPH_HOME"] = tempfile.mkdtemp(prefix="zeph-bench-timeouts-")  # no cached server facts are read

from tests.fakes import anthropic_wire, llamacpp_wire, ollama_wire, openai_wire  # noqa: E402
from tests.fakes.server import FakeResponse, FakeServer, closed_port_url  # noqa: E402
from zeph_cli.messages import Message  # noqa: E402
from zeph_cli.providers.anthropic import AnthropicProvider  # noqa: E402
from zeph_cli.providers.base import DISCOVERY_TIMEOUT_SECS, ChatRequest, ProviderSettings  # noqa: E402
from zeph_cli.providers.ollama import OllamaProvider  # noqa: E402
from zeph_cli.providers.openai import OpenAIProvider  # noqa: E402

TIMEOUT = 0.5  # llm.timeout_secs in section 1
RETRIES = 2  # llm.max_retries in sections 1 and 2
HANG = 30.0  # how long a silent server holds each request
MODEL = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o", "ollama": "llama3.1"}


def settings(kind: str, url: str, **overrides: Any) -> ProviderSettings:
    values: dict[str, Any] = dict(kind=kind, name=kind, model=MODEL.get(kind, "m"), api_key="k",
                                  base_url=url + "/v1" if kind in ("openai", "compatible") else url,
                                  timeout_secs=TIMEOUT, max_retries=RETRIES)
    values.update(overrides)
    return ProviderSettings(**values)


def provider(kind: str, url: str, *, retry_base_delay: float | None = None, **overrides: Any) -> Any:
    made = settings(kind, url, **overrides)
    if kind == "anthropic":
        return AnthropicProvider(made)
    if kind == "ollama":
        return OllamaProvider(made, retry_base_delay=retry_base_delay)
    return OpenAIProvider(made)


async def ask(made: Any, *, stream: bool = True) -> None:
    try:
        async for _ in made.stream(ChatRequest(messages=(Message.user("hi"),), stream=stream)):
            pass
    finally:
        await made.aclose()


def sample(runs: int, once: Callable[[], Awaitable[Any]]) -> list[float]:
    """Seconds per run of `once` (each in a fresh event loop), after one run left out (the SDK's and the
    client's first imports); its own exceptions are the point, so they pass."""
    seconds = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        try:
            asyncio.run(once())
        except Exception:  # noqa: BLE001 - the timeout or refusal being measured
            pass
        seconds.append(time.perf_counter() - started)
    return seconds[1:]


def figure(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} / {max(seconds):.2f} s"


def silent_server() -> FakeServer:
    server = FakeServer()
    server.respond_with(lambda request: FakeResponse(delay=HANG, body=b"{}"))
    return server


# ---- 1. a chat server that never answers -----------------------------------------------------


async def sdk_alone(kind: str, url: str, stream: bool) -> None:
    """The same request through the SDK with the same timeout and retries, and nothing of zeph's."""
    prompt = [{"role": "user", "content": "hi"}]
    if kind == "anthropic":
        import anthropic

        client = anthropic.AsyncAnthropic(base_url=url, api_key="k", timeout=TIMEOUT, max_retries=RETRIES)
        try:
            await client.messages.create(model=MODEL[kind], max_tokens=64, messages=prompt, stream=stream)
        finally:
            await client.close()
    elif kind == "openai":
        import openai

        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", timeout=TIMEOUT, max_retries=RETRIES)
        try:
            await client.chat.completions.create(model=MODEL[kind], messages=prompt, stream=stream)
        finally:
            await client.close()
    else:
        import ollama

        reply = await ollama.AsyncClient(host=url, timeout=TIMEOUT).chat(model=MODEL[kind], messages=prompt, stream=stream)
        if stream:
            async for _ in reply:
                pass


def silent_chat(runs: int) -> None:
    print(f"## 1. A chat server that never answers: llm.timeout_secs {TIMEOUT}, llm.max_retries {RETRIES} "
          f"(median / max of {runs})\n")
    print("| provider | request | zeph gives up after | attempts | the SDK alone gives up after | attempts | promised |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for kind in ("anthropic", "openai", "ollama"):
        for stream in (True, False):
            figures = []
            for once in (lambda: ask(provider(kind, server.url), stream=stream),
                         lambda: sdk_alone(kind, server.url, stream)):
                server = silent_server()
                try:
                    seconds = sample(runs, once)
                    figures.append((figure(seconds), len(server.requests) / (runs + 1)))
                finally:
                    server.close()
            (zeph, zeph_attempts), (alone, alone_attempts) = figures
            print(f"| {kind} | {'streamed' if stream else 'whole'} | {zeph} | {zeph_attempts:g} | {alone} | "
                  f"{alone_attempts:g} | {TIMEOUT} s |")
    print("\nThe tests bounded zeph's figure at 1.4 s; they now check the one attempt and that the timeout was "
          "waited. The SDKs retry a timed-out attempt after a backoff, which zeph's one timeout for the whole call "
          "cuts short (Ollama's SDK has no retries, and zeph's own retry loop does not retry a timeout).\n")


# ---- 2. Retry-After ----------------------------------------------------------------------------


def retry_after(runs: int) -> None:
    print(f"## 2. Retry-After: one refusal asking for a wait, then the reply (median / max of {runs})\n")
    print("| provider | refusal | zeph's reply after | asked to wait | without Retry-After |")
    print("|---|---|---:|---:|---:|")
    cases: list[tuple[str, str, Callable[[], list[FakeResponse]], dict[str, Any], str, str]] = [
        ("anthropic", "429, retry-after 1.5",
         lambda: [anthropic_wire.rate_limit_error(retry_after="1.5"),
                  anthropic_wire.sse_response(anthropic_wire.text_events(["ok"]))],
         {}, "1.5 s", "the SDK's backoff, under 1 s"),
        ("openai", "429, retry-after 1.5",
         lambda: [openai_wire.rate_limited(retry_after="1.5"),
                  openai_wire.stream_response(openai_wire.text_chunks(["ok"]))],
         {}, "1.5 s", "the SDK's backoff, under 1 s"),
        ("ollama", "503, Retry-After 0",
         lambda: [ollama_wire.error(503, ollama_wire.SERVER_BUSY, headers={"Retry-After": "0"}),
                  ollama_wire.chat_stream("ok")],
         {"retry_base_delay": 5.0}, "0 s", "5 s (the backoff base here)"),
        ("ollama", "429, Retry-After 0.3",
         lambda: [ollama_wire.error(429, ollama_wire.USAGE_LIMIT, headers={"Retry-After": "0.3"}),
                  ollama_wire.chat_stream("ok")],
         {"retry_base_delay": 0.0}, "0.3 s", "0 s (the backoff base here)"),
    ]
    for kind, refusal, replies, overrides, asked, without in cases:
        server = FakeServer()
        path = "/api/chat" if kind == "ollama" else None

        async def once() -> None:
            server.queue(*replies(), **({"path": path} if path else {}))
            await ask(provider(kind, server.url, timeout_secs=30.0, **overrides))

        try:
            seconds = sample(runs, once)
        finally:
            server.close()
        print(f"| {kind} | {refusal} | {figure(seconds)} | {asked} | {without} |")
    print("\nThe tests keep the lower bounds (it waited as asked); the Ollama 503 row was a test's upper bound "
          "(< 4.5 s against a 5 s backoff).\n")


# ---- 3. discovery --------------------------------------------------------------------------


def discovery(runs: int) -> None:
    print(f"## 3. Discovery: asking a local server about its window, within {DISCOVERY_TIMEOUT_SECS:g} s "
          f"(median / max of {runs})\n")
    print("| server | discovery took | window learnt | bound | the tests' old bound |")
    print("|---|---:|---|---:|---:|")

    async def discover(made: Any) -> Any:
        try:
            return await made.discover()
        finally:
            await made.aclose()

    def row(label: str, make: Callable[[], Any], old: str) -> None:
        learnt: list[Any] = []

        async def once() -> None:
            learnt.append((await discover(make())).window)

        seconds = sample(runs, once)
        windows = sorted({str(w) for w in learnt})
        print(f"| {label} | {figure(seconds)} | {', '.join(windows)} | {DISCOVERY_TIMEOUT_SECS:g} s | {old} |")

    default = {"timeout_secs": 120.0}  # llm.timeout_secs' default: discovery keeps its own bound
    row("compatible, nothing listening", lambda: provider("compatible", closed_port_url(), model="llama3.1", **default),
        "2.5 s")
    server = FakeServer()
    slow = llamacpp_wire.llama_server_props(n_ctx=2048)
    slow.delay = HANG
    server.route("/props", slow)
    server.route("/v1/models", llamacpp_wire.vllm_models(max_model_len=8192, model_id="m"))
    try:
        row("compatible, /props never answers, /v1/models does",
            lambda: provider("compatible", server.url, model="m", **default), "3.0 s")
    finally:
        server.close()
    server = FakeServer()
    hang = ollama_wire.show_reply()
    hang.delay = HANG
    server.route("/api/show", hang)
    try:
        row("ollama, /api/show never answers", lambda: provider("ollama", server.url, **default), "30 s (a hang bound)")
    finally:
        server.close()
    print()


# ---- 4. the qdrant vector index ------------------------------------------------------------------


def qdrant(runs: int) -> None:
    try:
        import qdrant_client  # noqa: F401
    except ImportError:
        print("## 4. qdrant: skipped (qdrant-client is not installed: pip install -e '.[qdrant]')\n")
        return
    from tests.vector_helpers import add_conversation, open_store, rows_for, unit_vectors
    from zeph_cli.features.memory.vectors.qdrant_index import TIMEOUT_S, QdrantVectorIndex, VectorIndexDown

    print(f"## 4. The qdrant vector index: a server that is down (median / max of {runs})\n")
    print("| server | call | fails after | client timeout | the tests' old bound |")
    print("|---|---|---:|---:|---:|")
    store = open_store(Path(tempfile.mkdtemp(prefix="zeph-bench-qdrant-")) / "zeph.db")
    conversation, ids = add_conversation(store, 2)
    vector = unit_vectors(1, 8, seed=1)[0]
    rows = rows_for(conversation, ids, unit_vectors(2, 8, seed=1))

    def row(label: str, call: str, url: str, run: Callable[[Any], Any], old: str) -> None:
        async def once() -> None:
            try:
                run(QdrantVectorIndex(store.db, url))
            except VectorIndexDown:
                pass

        print(f"| {label} | {call} | {figure(sample(runs, once))} | {TIMEOUT_S:g} s | {old} |")

    down = closed_port_url()
    row("nothing listening", "search", down, lambda i: i.search("m", vector, 3), "2.5 s")
    row("nothing listening", "add", down, lambda i: i.add("m", rows), "2.5 s")
    row("nothing listening", "forget_model", down, lambda i: i.forget_model("m"), "2.5 s")
    with socket.socket() as listener:  # accepts connections (the kernel does), never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        silent = f"http://127.0.0.1:{listener.getsockname()[1]}"
        row("accepts, never answers", "search", silent, lambda i: i.search("m", vector, 3), "3.5 s")
    store.close()
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--section", default="1,2,3,4", help="which sections, e.g. 1,3")
    args = parser.parse_args()
    sections = {int(s) for s in args.section.split(",")}
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start\n")
    for number, run in ((1, silent_chat), (2, retry_after), (3, discovery), (4, qdrant)):
        if number in sections:
            run(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
