"""The floor under any tool that talks to a provider through its SDK: import the SDK, build its async
client, stream one reply and print it. Nothing else: no CLI framework, no store, no context; and the
process economies any tool can have (no cyclic collection while the SDK's classes are made, no
interpreter teardown at exit), so no tool on this SDK can take less.

`benchmarks/startup.py` times it beside `zeph ask` and `llm` on the same fake server, so the
figures show what each tool spends above the SDK it shares. Usage (the benchmark runs it):

    python benchmarks/sdk_floor.py openai BASE_URL MODEL
    python benchmarks/sdk_floor.py anthropic BASE_URL MODEL
"""

from __future__ import annotations

import gc

gc.disable()  # before anything is imported

import asyncio  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

PROMPT = "hello there"


async def openai_reply(base_url: str, model: str) -> str:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-bench")
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": PROMPT}], stream=True
    )
    parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    await client.close()
    return "".join(parts)


async def anthropic_reply(base_url: str, model: str) -> str:
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(base_url=base_url, api_key="sk-ant-bench")
    events = await client.messages.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": PROMPT}], stream=True
    )
    async with events:
        parts = [e.delta.text async for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"]
    await client.close()
    return "".join(parts)


def main() -> None:
    kind, base_url, model = sys.argv[1:4]
    reply = openai_reply if kind == "openai" else anthropic_reply
    print(asyncio.run(reply(base_url, model)), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
