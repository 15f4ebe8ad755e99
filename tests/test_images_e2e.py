"""Images end to end through the real `zeph ask`: server-everything's get-tiny-image result reaches a vision
model's request as an image, and a text-only model's as the placeholder."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.chat_wire import chat_requests, queue_call, queue_reply
from tests.cli_helpers import err, out, run_zeph
from tests.fakes import image_bytes
from tests.mcp_reference import EVERYTHING, needs_node_servers

PLACEHOLDER = "[image: image/png, 4,033 bytes, 20×20 — this model does not take images]"


def _env(compatible: dict[str, str], tmp_path: Path, **extra: str) -> dict[str, str]:
    config = tmp_path / "mcp.toml"
    config.write_text(
        f'[[mcp.servers]]\nid = "everything"\ncommand = "{EVERYTHING}"\ntrusted = true\n'
        'tool_allowlist = ["get-tiny-image"]\n'
    )
    return {**compatible, "ZEPH_CONFIG": str(config), **extra}


def _ask(fake_server, env: dict[str, str], prompt: str = "Show me the tiny image."):
    queue_call(fake_server, "everything__get-tiny-image", {})
    queue_reply(fake_server, "A small logo.")
    result = run_zeph("ask", prompt, env=env)
    assert result.returncode == 0, err(result)
    assert "A small logo." in out(result)
    return chat_requests(fake_server)[-1].json["messages"]


def _images(messages) -> list[bytes]:
    return [
        base64.b64decode(part["image_url"]["url"].partition(",")[2])
        for message in messages if isinstance(message.get("content"), list)
        for part in message["content"] if part.get("type") == "image_url"
    ]


@needs_node_servers
def test_a_vision_model_gets_the_mcp_image_and_a_text_only_model_its_placeholder(fake_server, compatible, tmp_path):
    vision = _ask(fake_server, _env(compatible, tmp_path))  # gpt-4o takes images
    tool = next(m for m in vision if m["role"] == "tool")
    assert PLACEHOLDER not in tool["content"]
    after = vision[vision.index(tool) + 1]
    assert after["role"] == "user" and tool["tool_call_id"] in after["content"][0]["text"]
    (sent,) = _images(vision)
    assert image_bytes.sniff(sent) == "image/png" and image_bytes.size(sent) == (20, 20) and len(sent) == 4033

    text_only = _ask(fake_server, _env(compatible, tmp_path, ZEPH_LLM_MODEL="qwen2.5-coder:7b"))
    assert _images(text_only) == []
    tool = next(m for m in text_only if m["role"] == "tool")
    assert PLACEHOLDER in tool["content"]


@needs_node_servers
def test_the_vision_setting_sends_images_to_a_model_the_table_does_not_know(fake_server, compatible, tmp_path):
    sent = _ask(fake_server, _env(compatible, tmp_path, ZEPH_LLM_MODEL="my-own-vlm", ZEPH_LLM_VISION="true"))
    assert len(_images(sent)) == 1


@needs_node_servers
def test_the_budget_counts_the_image_a_vision_model_would_get(fake_server, compatible, tmp_path):
    """A budget the text-only turn fits with about 100 tokens to spare: the same turn for a vision model
    (gpt-4o: 255 tokens for the 20×20 image, against a 25-token placeholder) needs more, and is stopped
    before the request leaves. (The prompt is long so that
    the budget keeps every tool schema.)"""
    import json

    prompt = "Show me the tiny image. " + "lorem " * 7000
    text_only = _env(compatible, tmp_path, ZEPH_LLM_MODEL="qwen2.5-coder:7b")
    _ask(fake_server, text_only, prompt)
    used = json.loads(out(run_zeph("context", "--json", env=text_only)))["context"]["used_tokens"]
    budget = {"ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": str(int((used + 100) / 0.8))}
    report = json.loads(out(run_zeph("context", "--json", env={**text_only, **budget})))["context"]
    # (blocks with a share of the budget, such as the servers' instructions, may shrink under it: more to spare)
    assert report["used_tokens"] <= used and 50 <= report["capacity"] - report["used_tokens"] <= 200, report
    requests = len(chat_requests(fake_server))
    queue_call(fake_server, "everything__get-tiny-image", {})
    result = run_zeph("ask", prompt, env={**_env(compatible, tmp_path), **budget})
    assert result.returncode != 0
    assert "the request needs" in err(result) and "prompt budget" in err(result), err(result)
    assert len(chat_requests(fake_server)) == requests + 1  # the request with the image never left


def test_an_attached_image_goes_to_a_vision_model_as_an_image_and_is_refused_for_a_text_only_one(
        fake_server, compatible, tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "picture.png").write_bytes(image_bytes.png(64, 48))
    queue_reply(fake_server, "A grey rectangle.")
    result = run_zeph("ask", "-a", "picture.png", "What is this?", env=compatible, cwd=root)
    assert result.returncode == 0, err(result)
    (user,) = [m for m in chat_requests(fake_server)[-1].json["messages"] if m["role"] == "user"]
    assert user["content"][0] == {"type": "text", "text": "What is this?"}
    assert _images([user]) == [image_bytes.png(64, 48)]

    sent = len(chat_requests(fake_server))
    refused = run_zeph("ask", "-a", "picture.png", "What is this?", env={**compatible, "ZEPH_LLM_MODEL": "qwen2.5-coder"},
                       cwd=root)
    assert refused.returncode == 2
    assert "cannot attach picture.png: qwen2.5-coder does not take images (if it does, set [llm] vision = true)" in err(refused)
    assert len(chat_requests(fake_server)) == sent


def test_a_large_screenshot_can_be_attached_whatever_its_bytes(fake_server, compatible, tmp_path):
    """An image's size in bytes says nothing of its tokens: a 400 × 300 PNG of noise (360 KB, far more than a
    text file may be under this budget) goes whole."""
    import os
    import struct
    import zlib

    root = tmp_path / "project"
    root.mkdir()
    rows = b"".join(b"\x00" + os.urandom(3 * 400) for _ in range(300))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    shot = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 400, 300, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    (root / "shot.png").write_bytes(shot)
    queue_reply(fake_server, "Noise.")
    env = {**compatible, "ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS": "24000"}  # a text file over ~77 KB is refused here
    assert len(shot) > 300_000
    result = run_zeph("ask", "-a", "shot.png", "What is this?", env=env, cwd=root)
    assert result.returncode == 0, err(result)
    assert _images(chat_requests(fake_server)[-1].json["messages"]) == [shot]
