"""Learning the context window from the server: OpenAIProvider.discover()/profile() through the
real `openai` SDK against the wire shapes of llama.cpp, llama-cpp-python, vLLM and LM Studio."""

from __future__ import annotations

import time

from tests.fakes import llamacpp_wire as local
from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse, closed_port_url
from zeph_cli.messages import Message
from zeph_cli.models import profile_for
from zeph_cli.providers.base import DISCOVERY_TIMEOUT_SECS, ChatRequest, ProviderSettings
from zeph_cli.providers.openai import OpenAIProvider, server_root
from zeph_cli.providers.server_facts import ServerFacts


def compatible(url: str, model: str = "", **overrides) -> OpenAIProvider:
    values = dict(kind="compatible", name="compatible", model=model, base_url=url + "/v1", max_retries=0)
    values.update(overrides)
    return OpenAIProvider(ProviderSettings(**values))


async def ask(provider: OpenAIProvider) -> list:
    return [event async for event in provider.stream(ChatRequest(messages=(Message.user("Hi"),)))]


async def discover(provider: OpenAIProvider) -> tuple[ServerFacts, object]:
    try:
        return await provider.discover(), await provider.profile()
    finally:
        await provider.aclose()


async def test_llama_server_window_comes_from_props_not_the_training_length(fake_server):
    fake_server.route("/props", local.llama_server_props(n_ctx=2048))
    fake_server.route("/v1/models", local.llama_server_models(n_ctx_train=131072))
    provider = compatible(fake_server.url)

    facts, profile = await discover(provider)

    assert facts == ServerFacts(2048, "llama.cpp /props n_ctx", local.LLAMA_SERVER_MODEL)
    assert (profile.context_window, profile.window_source) == (2048, "server: llama.cpp /props n_ctx")
    assert profile.output_limit <= 1024  # a reply never takes more than half the window
    assert provider.model == local.LLAMA_SERVER_MODEL
    assert provider.display_model == "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    [props] = fake_server.requests_to("/props")
    assert props.method == "GET"


async def test_newer_llama_server_top_level_n_ctx_is_read_when_the_slot_has_none(fake_server):
    fake_server.route("/props", FakeResponse.json({"n_ctx": 8192, "total_slots": 1, "build_info": "b6000-abc"}))

    facts, profile = await discover(compatible(fake_server.url, model="qwen"))

    assert facts.window == 8192 and profile.context_window == 8192


async def test_configured_model_is_kept_and_sent(fake_server):
    fake_server.route("/props", local.llama_server_props(n_ctx=4096))
    fake_server.route("/v1/models", local.llama_server_models())
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["ok"])), path="/v1/chat/completions")
    provider = compatible(fake_server.url, model="my-alias")
    try:
        await provider.profile()
        await ask(provider)
    finally:
        await provider.aclose()

    assert provider.model == "my-alias"
    [chat] = fake_server.requests_to("/v1/chat/completions")
    assert chat.json["model"] == "my-alias"


async def test_served_model_id_is_used_when_none_is_configured(fake_server):
    fake_server.route("/v1/models", local.python_server_models())
    fake_server.queue(local.python_server_text_stream(["Hi", "!"]), path="/v1/chat/completions")
    provider = compatible(fake_server.url)
    try:
        facts, profile = await provider.discover(), await provider.profile()
        events = await ask(provider)
    finally:
        await provider.aclose()

    # llama-cpp-python states no window: the name still comes from the server, the window from the table.
    assert facts == ServerFacts(None, "", local.SMOLLM_PATH)
    assert provider.display_model == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert profile == profile_for(local.SMOLLM_PATH)
    assert profile.window_source == "model table"
    [chat] = fake_server.requests_to("/v1/chat/completions")
    assert chat.json["model"] == local.SMOLLM_PATH
    assert [type(e).__name__ for e in events][-1] == "StreamEnd"


async def test_vllm_max_model_len(fake_server):
    fake_server.route("/v1/models", local.vllm_models(max_model_len=32768))

    facts, profile = await discover(compatible(fake_server.url))

    assert facts == ServerFacts(32768, "vLLM /v1/models max_model_len", "Qwen/Qwen2.5-Coder-7B-Instruct")
    assert profile.window_source == "server: vLLM /v1/models max_model_len"
    assert profile.context_window == 32768


async def test_vllm_entry_of_another_model_says_nothing(fake_server):
    fake_server.route("/v1/models", local.vllm_models(max_model_len=32768))

    facts, profile = await discover(compatible(fake_server.url, model="someone-else"))

    assert facts == ServerFacts()
    assert profile == profile_for("someone-else")
    assert profile.window_source == "default guess (unknown model)"


async def test_lm_studio_loaded_context_length_and_loaded_model(fake_server):
    fake_server.route("/api/v0/models", local.lmstudio_v0_models(loaded_context_length=16384))
    fake_server.route("/v1/models", local.lmstudio_openai_models())

    facts, profile = await discover(compatible(fake_server.url))

    assert facts == ServerFacts(16384, "LM Studio /api/v0/models loaded_context_length", "qwen2.5-coder-7b-instruct")
    assert profile.context_window == 16384


async def test_lm_studio_model_not_loaded_states_its_maximum(fake_server):
    fake_server.route("/api/v0/models", local.lmstudio_v0_models(loaded_context_length=None))

    facts, _ = await discover(compatible(fake_server.url, model="qwen2.5-coder-7b-instruct"))

    assert facts.window == 32768
    assert facts.source == "LM Studio /api/v0/models max_context_length (model not loaded yet)"


def test_hosted_openai_is_never_probed_but_any_other_host_is():
    hosted = OpenAIProvider(
        ProviderSettings(kind="openai", name="openai", model="gpt-4o", base_url="https://api.openai.com/v1", api_key="k")
    )
    local_openai = OpenAIProvider(
        ProviderSettings(kind="openai", name="openai", model="gpt-4o", base_url="http://127.0.0.1:8080/v1")
    )
    assert hosted.discovers is False
    assert local_openai.discovers is True
    assert compatible("http://gpu-box:8000").discovers is True


async def test_nothing_listening_is_silent():
    facts, profile = await discover(compatible(closed_port_url(), model="llama3.1"))  # how long: benchmarks/timeouts.py

    assert facts == ServerFacts()
    assert profile == profile_for("llama3.1")


async def test_a_hanging_probe_is_given_up_on_at_the_discovery_timeout(fake_server):
    slow = local.llama_server_props(n_ctx=2048)
    slow.delay = 3 * DISCOVERY_TIMEOUT_SECS  # /props outranks /v1/models: waiting for it would make the window 2048
    fake_server.route("/props", slow)
    fake_server.route("/v1/models", local.vllm_models(max_model_len=8192, model_id="m"))

    facts, _ = await discover(compatible(fake_server.url, model="m"))

    assert facts.window == 8192  # /props was given up on; the answers that came in time still count
    assert facts.source == "vLLM /v1/models max_model_len"


async def test_garbage_answers_are_no_facts(fake_server):
    fake_server.route("/props", FakeResponse(status=200, body=b"<html>hello</html>", content_type="text/html"))
    fake_server.route("/v1/models", FakeResponse.json({"data": [{"id": 7}, "x", {"id": "ok", "max_model_len": "big"}]}))
    fake_server.route("/api/v0/models", FakeResponse.json(["not", "a", "listing"]))

    facts, profile = await discover(compatible(fake_server.url, model="ok"))

    assert facts == ServerFacts()
    assert profile == profile_for("ok")


async def test_discovery_is_asked_once_per_provider(fake_server):
    fake_server.route("/props", local.llama_server_props(n_ctx=2048))
    provider = compatible(fake_server.url, model="m")
    try:
        first = await provider.profile()
        again = await provider.profile()
        await provider.discover()
    finally:
        await provider.aclose()

    assert again is first
    assert len(fake_server.requests_to("/props")) == 1


def test_server_root_drops_the_v1_suffix():
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("http://host:1234") == "http://host:1234"


async def test_what_the_server_said_is_reused_for_a_few_minutes_then_asked_again(fake_server, tmp_path, monkeypatch):
    from zeph_cli.paths import cache_dir
    from zeph_cli.providers import facts_cache

    fake_server.route("/props", local.llama_server_props(n_ctx=2048))
    fake_server.route("/v1/models", local.llama_server_models(n_ctx_train=131072))
    first, _ = await discover(compatible(fake_server.url))
    second, profile = await discover(compatible(fake_server.url))  # a later `zeph ask`: a new provider
    assert first == second and profile.context_window == 2048
    assert len(fake_server.requests_to("/props")) == 1  # the second run did not ask

    later = time.time() + facts_cache.FACTS_TTL_SECS + 1
    monkeypatch.setattr(facts_cache.time, "time", lambda: later)
    await discover(compatible(fake_server.url))
    assert len(fake_server.requests_to("/props")) == 2  # too old: asked again

    provider = compatible(fake_server.url)
    provider.forget_facts()  # a context-length error said otherwise
    await discover(provider)
    assert len(fake_server.requests_to("/props")) == 3

    (cache_dir() / facts_cache.FILE_NAME).write_text("{not json")
    facts, _ = await discover(compatible(fake_server.url))
    assert facts.window == 2048 and len(fake_server.requests_to("/props")) == 4  # a bad file: asked


async def test_a_server_that_answered_nothing_is_not_asked_again_but_one_that_was_down_is(fake_server):
    await discover(compatible(fake_server.url, model="m"))  # 404 on every probe: an answer, with no facts
    facts, profile = await discover(compatible(fake_server.url, model="m"))
    assert facts == ServerFacts() and profile.window_source == profile_for("m").window_source
    assert len(fake_server.requests_to("/props")) == 1
    down = closed_port_url()
    await discover(compatible(down, model="m"))
    facts, _ = await discover(compatible(down, model="m"))
    assert facts == ServerFacts()  # nothing kept for a server that did not answer: asked again each time
    from zeph_cli.paths import cache_dir
    from zeph_cli.providers import facts_cache

    kept = (cache_dir() / facts_cache.FILE_NAME).read_text()
    assert fake_server.url in kept and down not in kept


async def test_a_server_still_loading_its_model_is_asked_again_next_time(fake_server):
    # llama.cpp answers /props with 503 while the model loads: no lasting answer, nothing is kept
    fake_server.queue(FakeResponse.json({"error": {"code": 503, "message": "Loading model"}}, status=503), path="/props")
    fake_server.route("/props", local.llama_server_props(n_ctx=4096))
    loading, _ = await discover(compatible(fake_server.url, model="m"))
    ready, profile = await discover(compatible(fake_server.url, model="m"))
    assert loading.window is None and ready.window == 4096 and profile.context_window == 4096
