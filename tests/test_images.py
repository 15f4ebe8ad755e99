"""Images end to end: parts, storage, which models take them, token estimates, compaction, and each provider
adapter (the real SDKs) against wire-level fakes that check image parts and count them as the services do."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from tests.fakes import anthropic_wire, image_bytes, llamacpp_wire, ollama_wire, openai_wire
from zeph_cli import errors
from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.compaction.pairs import find_tool_pairs, tool_pair_prompt
from zeph_cli.context.compaction.prompts import render_transcript
from zeph_cli.context.compaction.pruning import plan_prune, pruned_message
from zeph_cli.images import (
    ANTHROPIC, OPENAI, OTHER, TEXT_ONLY, ImagePolicy, anthropic_tokens, as_text, describe, dimensions, for_model,
    openai_tokens, other_tokens, policy_for, tool_image_label,
)
from zeph_cli.messages import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart
from zeph_cli.models import profile_for, with_vision
from zeph_cli.providers.base import ChatRequest, ProviderSettings
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.tokens import TiktokenCounter, count_message, set_image_policy

# server-everything's get-tiny-image: the MCP logo, a 20×20 PNG of 4,033 bytes.
_EVERYTHING_TOOL = (
    Path(__file__).parent / "mcp_servers/node_modules/@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js"
)


def tiny() -> ImagePart:
    return ImagePart("image/png", image_bytes.png_b64(20, 20))


def big() -> ImagePart:
    return ImagePart("image/png", image_bytes.png_b64(1024, 1024))


def conversation(image: ImagePart, result_image: ImagePart) -> tuple[Message, ...]:
    """A user message with an image, a tool call, and its result carrying another image."""
    return (
        Message.system("You are helpful."),
        Message("user", (TextPart("What is in this picture?"), image)),
        Message("assistant", (ToolCallPart("call_shot", "screenshot", {}),)),
        Message("tool", (ToolResultPart("call_shot", "the screen:", name="screenshot", images=(result_image,)),)),
    )


# ---- parts, storage, placeholders --------------------------------------------------------------------------


def test_an_image_part_knows_its_bytes_and_its_size_from_its_header():
    image = tiny()
    assert image.size == len(image_bytes.png(20, 20))
    assert dimensions(image) == (20, 20)
    assert describe(ImagePart("image/png", "not base64 at all!")).startswith("image/png, ")  # no size, no crash


@pytest.mark.skipif(not _EVERYTHING_TOOL.exists(), reason="run `npm ci --prefix tests/mcp_servers`")
def test_the_placeholder_names_type_bytes_and_size():
    data = re.search(r'"(iVBOR[A-Za-z0-9+/=]+)"', _EVERYTHING_TOOL.read_text()).group(1)
    text = for_model(Message("user", (ImagePart("image/png", data),)), TEXT_ONLY).content
    assert text == "[image: image/png, 4,033 bytes, 20×20 — this model does not take images]"


def test_images_survive_the_store_and_messages_without_images_are_stored_as_before(tmp_path):
    store = ConversationStore(open_database(tmp_path / "z.db"))
    try:
        conv = store.create_conversation(provider="anthropic", model="m", cwd="/w", title="")
        sent = conversation(tiny(), big())
        for message in sent[1:]:
            store.add_message(conv.id, message)
        assert tuple(row.message for row in store.history(conv.id)) == sent[1:]
    finally:
        store.close()
    plain = Message("tool", (ToolResultPart("c", "out", name="bash"),))
    assert "images" not in plain.parts_json()


# ---- which models take images ------------------------------------------------------------------------------


@pytest.mark.parametrize("model, vision", [
    ("claude-sonnet-4-6", True), ("claude-3-5-haiku-20241022", True), ("claude-opus-4-1", True),
    ("gpt-4o", True), ("gpt-4o-mini", True), ("gpt-4.1", True), ("gpt-5", True), ("o3", True),
    ("gpt-4", False), ("gpt-3.5-turbo", False), ("o3-mini", False),
    ("llava:13b", True), ("llama3.2-vision:11b", True), ("qwen2.5vl:7b", True), ("gemma3:12b", True),
    ("gemma3:1b", False), ("llama3.1:8b", False), ("qwen2.5-coder:7b", False), ("gpt-oss:20b", False),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", False), ("my-own-finetune", False),
])
def test_the_profile_says_which_models_take_images(model, vision):
    assert profile_for(model).vision is vision


def test_the_vision_setting_overrides_the_table_and_the_embedded_model_never_takes_images():
    assert with_vision(profile_for("my-own-finetune"), "true").vision
    assert not with_vision(profile_for("gpt-4o"), "false").vision
    assert with_vision(profile_for("gpt-4o"), "auto").vision
    assert policy_for("local", "x.gguf", True) is TEXT_ONLY
    assert policy_for("compatible", "my-own-finetune", True).family == OTHER
    assert policy_for("compatible", "anthropic/claude-sonnet-4-6", True).family == ANTHROPIC  # behind a router
    assert policy_for("compatible", "openai/gpt-4o", True).family == OPENAI
    assert policy_for("openai", "gpt-4o", False) is TEXT_ONLY


# ---- token estimates ---------------------------------------------------------------------------------------


def test_the_estimates_match_the_providers_documented_examples():
    # Anthropic's table: 200×200 ≈ 54, 1000×1000 ≈ 1334, 1092×1092 ≈ 1590 tokens.
    assert anthropic_tokens((200, 200)) == 54
    assert anthropic_tokens((1000, 1000)) == 1334
    assert anthropic_tokens((1092, 1092)) == 1590
    assert anthropic_tokens((8000, 8000)) <= 1600
    # OpenAI's examples: 1024×1024 → 765, 2048×4096 → 1105 (gpt-4o); a small image is one tile.
    assert openai_tokens((1024, 1024), "gpt-4o") == 765
    assert openai_tokens((2048, 4096), "gpt-4o") == 1105
    assert openai_tokens((20, 20), "gpt-4o") == 255
    assert openai_tokens((20, 20), "gpt-4o-mini") == 2833 + 5667
    assert openai_tokens((1024, 1024), "o3") == 75 + 150 * 4
    # open models: their own counts where known, else a fixed estimate
    assert other_tokens((1024, 1024), "gemma3:12b") == 256
    assert other_tokens((280, 560), "qwen2.5vl:7b") == 10 * 20 and other_tokens((4000, 4000), "qwen2.5vl") == 1280
    assert other_tokens((20, 20), "llava:7b") == 2880 and other_tokens((20, 20), "my-vlm") == 768


def test_a_vision_model_counts_the_estimate_a_text_only_one_the_placeholder_it_gets():
    counter = TiktokenCounter()
    message = conversation(tiny(), big())[3]
    text_only = count_message(counter, message)
    assert text_only >= count_message(counter, for_model(message, TEXT_ONLY))  # never below what is sent
    assert text_only < 60
    set_image_policy(counter, ImagePolicy(ANTHROPIC, "claude-sonnet-4-6"))
    label = counter.count(tool_image_label("screenshot", "call_shot")) + 4  # OpenAI's extra message
    assert count_message(counter, message) == count_message(counter, Message("tool", (ToolResultPart(
        "call_shot", "the screen:", name="screenshot"),))) + anthropic_tokens((1024, 1024)) + label


def test_an_image_a_model_cannot_take_goes_as_its_placeholder_even_to_a_vision_model():
    svg = ImagePart("image/svg+xml", base64.b64encode(b"<svg/>").decode())
    policy = ImagePolicy(OPENAI, "gpt-4o")
    sent = for_model(Message("user", (TextPart("look"), svg, tiny())), policy)
    assert sent.images == [tiny()]
    assert "not a type models take" in sent.content


# ---- compaction --------------------------------------------------------------------------------------------


def _items(messages: tuple[Message, ...], tokens: list[int]) -> list[HistoryItem]:
    return [HistoryItem(m, t, i + 1, {}) for i, (m, t) in enumerate(zip(messages, tokens))]


def test_old_images_are_pruned_before_the_text_around_them_and_a_pruned_result_names_them():
    messages = conversation(tiny(), big())[1:] + (Message.user("and now?"),)
    # the image result is inside the protected window (1,000 tokens), outside its newest quarter
    history = _items(messages, [300, 20, 400, 400])
    assert plan_prune(history, protect_tokens=1000) == [3]
    without = _items(messages[:2] + (Message("tool", (ToolResultPart("call_shot", "x" * 2000, name="s"),)),)
                     + messages[3:], [300, 20, 400, 400])
    assert plan_prune(without, protect_tokens=1000) == []  # the same text alone is protected
    pruned = pruned_message(messages[2])
    assert pruned.images == []
    assert "[image: image/png, " in pruned.content and "1024×1024 — pruned]" in pruned.content


def test_summarizers_read_images_as_placeholders():
    messages = conversation(tiny(), big())[1:]
    history = _items(messages, [300, 20, 400])
    transcript = render_transcript(history)
    assert "[image: image/png, " in transcript and "20×20]" in transcript and "1024×1024]" in transcript
    assert tiny().data not in transcript
    prompt = tool_pair_prompt(find_tool_pairs(history)[0])
    assert "1024×1024]" in prompt and big().data not in prompt
    assert as_text(messages[0]).images == []


# ---- providers: the real SDKs against the wire-level fakes -------------------------------------------------


def _settings(kind: str, model: str, url: str, **extra) -> ProviderSettings:
    return ProviderSettings(kind=kind, name=kind, model=model, base_url=url, api_key=extra.pop("api_key", "k"),
                            api_key_env="", timeout_secs=5.0, max_retries=0)


async def _usage(provider, messages) -> int:
    total = 0
    try:
        async for event in provider.stream(ChatRequest(messages=tuple(messages))):
            usage = getattr(event, "usage", None)
            if usage is not None:
                total = usage.prompt_tokens or total
    finally:
        await provider.aclose()
    return total


_LABEL = 4 + TiktokenCounter().count(tool_image_label("screenshot", "call_shot"))


def _counted_images(policy: ImagePolicy, messages) -> int:
    counter = TiktokenCounter()
    set_image_policy(counter, policy)
    with_images = sum(count_message(counter, m) for m in messages)
    set_image_policy(counter, ImagePolicy("none"))
    stripped = [Message(m.role, tuple(p if not isinstance(p, ToolResultPart) else ToolResultPart(
        p.tool_call_id, p.content, p.name, p.is_error) for p in m.parts if not isinstance(p, ImagePart))) for m in messages]
    return with_images - sum(count_message(counter, m) for m in stripped)


async def test_anthropic_gets_image_blocks_in_the_user_turn_and_inside_the_tool_result(fake_server):
    from zeph_cli.providers.anthropic import AnthropicProvider

    fake_server.respond_with(anthropic_wire.vision_responder(text_tokens=25))
    messages = conversation(tiny(), big())
    reported = await _usage(AnthropicProvider(_settings("anthropic", "claude-sonnet-4-6", fake_server.url)), messages)
    body = fake_server.requests_to("/v1/messages")[-1].json
    user, assistant, results = body["messages"]
    assert user["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": tiny().data}
    result = results["content"][0]
    assert result["type"] == "tool_result" and result["content"][0] == {"type": "text", "text": "the screen:"}
    assert result["content"][1]["source"]["data"] == big().data
    # the budget counts the images as the service reports them
    counted = _counted_images(policy_for("anthropic", "claude-sonnet-4-6", True), messages)
    assert reported - 25 == counted - _LABEL  # exact (the label OpenAI's wire needs is counted too, for every adapter)


async def test_the_anthropic_fake_rejects_an_image_whose_bytes_are_not_its_type(fake_server):
    from zeph_cli.providers.anthropic import AnthropicProvider

    fake_server.respond_with(anthropic_wire.vision_responder())
    wrong = ImagePart("image/jpeg", tiny().data)
    with pytest.raises(errors.ProviderError, match="does not match the provided media type"):
        await _usage(AnthropicProvider(_settings("anthropic", "claude-sonnet-4-6", fake_server.url)),
                     [Message("user", (TextPart("hi"), wrong))])


async def test_openai_gets_data_urls_and_a_tool_rounds_images_in_a_user_message_after_it(fake_server):
    from zeph_cli.providers.openai import OpenAIProvider

    fake_server.respond_with(openai_wire.vision_responder(text_tokens=12))
    messages = conversation(tiny(), big())
    reported = await _usage(OpenAIProvider(_settings("openai", "gpt-4o", fake_server.url + "/v1")), messages)
    wire = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "user"]
    assert wire[1]["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{tiny().data}"}}
    assert wire[3] == {"role": "tool", "tool_call_id": "call_shot", "content": "the screen:"}
    label, image = wire[4]["content"]
    assert "call_shot" in label["text"] and image["image_url"]["url"].endswith(big().data)
    counted = _counted_images(policy_for("openai", "gpt-4o", True), messages)
    assert reported - 12 == counted - _LABEL  # the fake's text_tokens leave the label's text out


def test_the_openai_fake_rejects_an_image_in_a_tool_message():
    body = {"messages": [{"role": "tool", "tool_call_id": "c", "content": [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{tiny().data}"}}]}]}
    rejected = openai_wire.check_images(body)
    assert rejected is not None and rejected.status == 400 and b"only allowed for messages with role 'user'" in rejected.body


async def test_ollama_gets_images_on_the_messages_that_carry_them(fake_server):
    from zeph_cli.providers.ollama import OllamaProvider

    fake_server.respond_with(ollama_wire.vision_responder(text_tokens=26))
    messages = conversation(tiny(), big())
    reported = await _usage(OllamaProvider(_settings("ollama", "llava:7b", fake_server.url)), messages)
    wire = fake_server.requests_to("/api/chat")[-1].json["messages"]
    assert wire[1]["images"] == [tiny().data] and wire[3]["images"] == [big().data]
    assert "images" not in wire[0] and "images" not in wire[2]
    # the fixed estimate never counts fewer tokens than a LLaVA model reports
    assert _counted_images(policy_for("ollama", "llava:7b", True), messages) >= reported - 26 > 0


async def test_a_text_only_model_behind_llama_server_gets_placeholders_not_image_parts(fake_server):
    from zeph_cli.providers.openai import OpenAIProvider

    def respond(request):
        if request.path != "/v1/chat/completions":
            return None
        return llamacpp_wire.text_only_check(request.json) or openai_wire.stream_response(openai_wire.text_chunks(["ok"]))

    fake_server.respond_with(respond)
    policy = policy_for("compatible", "qwen2.5-coder", profile_for("qwen2.5-coder").vision)
    sent = [for_model(m, policy) for m in conversation(tiny(), big())]
    await _usage(OpenAIProvider(_settings("compatible", "qwen2.5-coder", fake_server.url + "/v1")), sent)
    wire = fake_server.requests_to("/v1/chat/completions")[-1].json["messages"]
    assert "image_url" not in str(wire)
    assert "20×20 — this model does not take images]" in wire[1]["content"]
    assert "1024×1024 — this model does not take images]" in wire[3]["content"]
    # and the same server refuses image parts, as a server without --mmproj does
    with pytest.raises(errors.ProviderError, match="image input is not supported"):
        await _usage(OpenAIProvider(_settings("compatible", "qwen2.5-coder", fake_server.url + "/v1")),
                     conversation(tiny(), big()))


async def test_the_embedded_model_reads_images_as_placeholders():
    from zeph_cli.providers.local import to_local_messages

    chat = to_local_messages(conversation(tiny(), big()))
    text = str(chat)
    assert "20×20 — this model does not take images]" in text and "1024×1024 — this model does not take images]" in text
    assert tiny().data not in text


# ---- a tool's images through the call runner ---------------------------------------------------------------


async def test_a_tools_images_reach_its_result_part_at_most_eight_the_rest_named(tmp_path):
    from zeph_cli.agent.tool_calls import CallChecks, ToolCallRunner
    from zeph_cli.store import ToolLog
    from zeph_cli.tools.base import Tool, ToolContext, ToolResult, ToolSet
    from zeph_cli.tools.confinement import Confinement
    from zeph_cli.tools.permissions import PermissionPolicy, approve_all

    shots = tuple(ImagePart("image/png", image_bytes.png_b64(10 + i, 10)) for i in range(10))

    class Screens(Tool):
        name, kind, description = "screens", "read", "Screenshots."
        parameters = {"type": "object", "properties": {}}

        async def run(self, arguments, context):
            return ToolResult("ten screens", images=shots)

    store = ConversationStore(open_database(tmp_path / "t.db"))
    try:
        conversation = store.create_conversation(provider="p", model="m", cwd=str(tmp_path))
        runner = ToolCallRunner(
            tools=ToolSet({"screens": Screens()}), context=ToolContext(confinement=Confinement(tmp_path), cwd=tmp_path),
            checks=CallChecks(PermissionPolicy(), approve_all), log=ToolLog(store.db), conversation_id=conversation.id,
        )
        result = (await runner.run(ToolCallPart("c1", "screens", {}))).result
    finally:
        store.close()
    assert result.images == shots[:8]
    assert result.content.startswith("ten screens\n[image: image/png, ")
    assert result.content.count("not sent: at most 8 images a result]") == 2 and "18×10" in result.content


def test_an_image_a_server_sends_is_made_fit_to_send_or_kept_from_the_model():
    from zeph_cli.images import TEXT_ONLY, policy_for, received_image

    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\0" * 60).decode()
    mislabelled = received_image("image/png", jpeg)
    assert mislabelled.mime_type == "image/jpeg" and mislabelled.data == jpeg  # its own bytes say what it is
    prefixed = received_image("image/png", "data:image/png;base64," + jpeg[:20] + "\n" + jpeg[20:])
    assert (prefixed.mime_type, prefixed.data) == ("image/jpeg", jpeg)
    vision = policy_for("openai", "gpt-4o", True)
    for bad in ("not base64 at all!", base64.b64encode(b"%PDF-1.7 not an image").decode(), jpeg[:-3] + "*=="):
        image = received_image("image/png", bad)
        assert image.mime_type == "image/png (unreadable)"
        assert not vision.takes(image) and not TEXT_ONLY.takes(image)  # only its placeholder goes
    assert vision.takes(mislabelled)


def test_a_request_carries_the_newest_images_only_the_older_ones_as_placeholders():
    from zeph_cli.images import MAX_IMAGES_PER_REQUEST, OLDER_REASON, newest_images_only

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()
    shots = [Message("tool", (ToolResultPart(f"call_{n}", f"shot {n}", images=(ImagePart("image/png", png),)),))
             for n in range(MAX_IMAGES_PER_REQUEST + 2)]
    sent = newest_images_only([Message.user("look"), *shots])
    assert sum(len(m.images) for m in sent) == MAX_IMAGES_PER_REQUEST
    assert [len(m.images) for m in sent[1:3]] == [0, 0] and all(len(m.images) == 1 for m in sent[3:])
    assert sent[1].tool_results[0].content == f"shot 0\n[image: image/png, 48 bytes — {OLDER_REASON}]"
    assert sent[3:] == shots[2:]  # the newest untouched
