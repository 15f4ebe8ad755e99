"""Provider embedders through the real openai and ollama SDKs, against wire-level fakes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fakes import embeddings_wire as wire
from tests.fakes import openai_wire
from tests.fakes.server import FakeResponse, closed_port_url, html_page
from zeph_cli.features.memory.embedders.base import EmbeddingError
from zeph_cli.features.memory.embedders.ollama import OllamaEmbedder
from zeph_cli.features.memory.embedders.openai import OpenAIEmbedder
from zeph_cli.features.memory.embedders.remote import SHORT_CHARS, endpoint_host, stored_model_name
from zeph_cli.providers.base import ProviderSettings

API_KEY = "sk-proj-Zq81secretsecretsecret4wxyz"
TEXTS = ["apple banana", "zebra quiz", "hello world", "abc", "the quick brown fox", "xyz xyz", "mmm"]


def expected(texts: list[str]) -> np.ndarray:
    rows = np.array([wire.letter_vector(t) for t in texts], dtype=np.float64)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def openai_embedder(url: str, *, max_retries: int = 0, timeout: float = 5.0, **kw) -> OpenAIEmbedder:
    settings = ProviderSettings(
        kind="openai", name="openai", model="gpt-4o-mini", base_url=url + "/v1", api_key=API_KEY,
        api_key_env="OPENAI_API_KEY", timeout_secs=timeout, max_retries=max_retries,
    )
    return OpenAIEmbedder(settings, wire.OPENAI_MODEL, **kw)


def ollama_embedder(url: str, *, max_retries: int = 0, timeout: float = 5.0, **kw) -> OllamaEmbedder:
    settings = ProviderSettings(
        kind="ollama", name="ollama", model="llama3.2", base_url=url, timeout_secs=timeout, max_retries=max_retries
    )
    return OllamaEmbedder(settings, wire.OLLAMA_MODEL, retry_base_delay=0.01, **kw)


def one_line_error(call) -> str:
    with pytest.raises(EmbeddingError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# ---- naming -----------------------------------------------------------------------


def test_stored_names_keep_two_endpoints_models_apart():
    assert endpoint_host("https://api.openai.com/v1") == "api.openai.com"
    assert endpoint_host("http://127.0.0.1:11434") == "127.0.0.1:11434"
    assert stored_model_name("openai", "m", "http://LOCALHOST:8080/v1") == "openai/m@localhost:8080"
    assert stored_model_name("ollama", "m", "http://a:1") != stored_model_name("ollama", "m", "http://a:2")


# ---- OpenAI -----------------------------------------------------------------------


def test_openai_embeds_in_batches_in_input_order_as_unit_rows(fake_server):
    fake_server.respond_with(wire.openai_responder(reverse=True))  # `index` says where each row goes
    embedder = openai_embedder(fake_server.url, batch_size=3)
    vectors = embedder.embed(TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert vectors.dtype == np.float32
    requests = fake_server.requests_to("/v1/embeddings")
    assert [r.json["input"] for r in requests] == [TEXTS[0:3], TEXTS[3:6], TEXTS[6:7]]
    assert all(r.json["model"] == wire.OPENAI_MODEL and r.json["encoding_format"] == "float" for r in requests)
    assert requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert embedder.model == f"openai/{wire.OPENAI_MODEL}@{endpoint_host(fake_server.url)}"
    assert embedder.dimensions == wire.DIMENSIONS


def test_loading_a_provider_embedder_sends_nothing(fake_server):
    for embedder in (openai_embedder(fake_server.url), ollama_embedder(fake_server.url)):
        embedder.load()
    assert fake_server.requests == []


def test_openai_reply_with_usage_is_read(fake_server):
    fake_server.queue(wire.openai_reply([[3.0, 4.0], [0.0, 2.0]], prompt_tokens=5))
    vectors = openai_embedder(fake_server.url).embed(["one", "two"])
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)


def test_openai_blank_texts_are_not_sent_and_get_zero_rows(fake_server):
    fake_server.respond_with(wire.openai_responder())
    vectors = openai_embedder(fake_server.url).embed(["", "apple", "   "])
    assert fake_server.requests_to("/v1/embeddings")[0].json["input"] == ["apple"]
    assert np.all(vectors[[0, 2]] == 0) and not np.isnan(vectors).any()
    np.testing.assert_allclose(vectors[1], expected(["apple"])[0], rtol=1e-6)


def test_openai_invalid_key_names_provider_model_and_variable_never_the_key(fake_server):
    fake_server.queue(wire.openai_invalid_key())
    message = one_line_error(lambda: openai_embedder(fake_server.url).embed(["hi"]))
    assert message.startswith(f"openai embeddings ({wire.OPENAI_MODEL} at {fake_server.url}/v1): ")
    assert "HTTP 401" in message and "Incorrect API key provided" in message and "OPENAI_API_KEY" in message
    assert API_KEY not in message and "sk-" not in message and "wxyz" not in message


def test_openai_unknown_model(fake_server):
    fake_server.queue(wire.openai_model_not_found(wire.OPENAI_MODEL))
    message = one_line_error(lambda: openai_embedder(fake_server.url).embed(["hi"]))
    assert f"model {wire.OPENAI_MODEL!r} not found (HTTP 404)" in message and "does not exist" in message


def test_openai_too_long_input_is_sent_again_cut_short(fake_server):
    fake_server.respond_with(wire.openai_responder(max_chars=SHORT_CHARS + 500))
    text = "abc " * 1500  # 6,000 characters: within the 8,000 cap, beyond what the fake model takes
    vectors = openai_embedder(fake_server.url).embed([text, "ok"])
    sent = [r.json["input"] for r in fake_server.requests_to("/v1/embeddings")]
    assert sent == [[text, "ok"], [text[:SHORT_CHARS], "ok"]]
    np.testing.assert_allclose(vectors, expected([text[:SHORT_CHARS], "ok"]), rtol=1e-6)


def test_openai_input_too_long_even_cut_short_is_an_error(fake_server):
    fake_server.respond_with(wire.openai_responder(max_chars=100))
    message = one_line_error(lambda: openai_embedder(fake_server.url).embed(["abc " * 1500]))
    assert "the input is too long for the model (HTTP 400)" in message and "maximum context length is 8192" in message
    assert len(fake_server.requests_to("/v1/embeddings")) == 2


def test_openai_retries_through_the_sdk(fake_server):
    fake_server.queue(openai_wire.overloaded(headers={"retry-after-ms": "10"}))
    fake_server.respond_with(wire.openai_responder())
    vectors = openai_embedder(fake_server.url, max_retries=1).embed(["apple"])
    np.testing.assert_allclose(vectors, expected(["apple"]), rtol=1e-6)
    assert len(fake_server.requests_to("/v1/embeddings")) == 2


def test_openai_server_without_an_embeddings_endpoint(fake_server):
    fake_server.queue(FakeResponse.json({"detail": "Not Found"}, status=404))
    message = one_line_error(lambda: openai_embedder(fake_server.url).embed(["hi"]))
    assert "the server has no embeddings endpoint there (HTTP 404): Not Found" in message


def test_openai_server_error_after_retries(fake_server):
    fake_server.queue(openai_wire.server_error())
    message = one_line_error(lambda: openai_embedder(fake_server.url).embed(["hi"]))
    assert "HTTP 500" in message and "The server had an error" in message


def test_openai_timeout_names_the_setting(fake_server):
    fake_server.queue(FakeResponse(delay=1.5, body=b"{}"))
    message = one_line_error(lambda: openai_embedder(fake_server.url, timeout=0.3).embed(["hi"]))
    assert "no answer within 0.3s (llm.timeout_secs)" in message


def test_openai_unreachable_endpoint():
    url = closed_port_url()
    message = one_line_error(lambda: openai_embedder(url).embed(["hi"]))
    assert message.startswith(f"openai embeddings ({wire.OPENAI_MODEL} at {url}/v1): cannot connect")


def test_openai_html_page_or_wrong_row_count_is_a_bad_reply(fake_server):
    fake_server.queue(html_page())
    assert "an HTML page came instead of an API reply" in one_line_error(lambda: openai_embedder(fake_server.url).embed(["hi"]))
    fake_server.queue(wire.openai_reply([[1.0, 0.0]]))
    message = one_line_error(lambda: openai_embedder(fake_server.url).embed(["one", "two"]))
    assert "1 embeddings for 2 inputs" in message


# ---- Ollama -----------------------------------------------------------------------


def test_ollama_embeds_in_batches_as_unit_rows(fake_server):
    fake_server.respond_with(wire.ollama_responder())
    embedder = ollama_embedder(fake_server.url, batch_size=4)
    vectors = embedder.embed(TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    requests = fake_server.requests_to("/api/embed")
    assert [r.json["input"] for r in requests] == [TEXTS[:4], TEXTS[4:]]
    assert all(r.json["model"] == wire.OLLAMA_MODEL and r.json["truncate"] is True for r in requests)
    assert embedder.model == f"ollama/{wire.OLLAMA_MODEL}@{endpoint_host(fake_server.url)}"


def test_ollama_missing_model_says_so(fake_server):
    fake_server.queue(wire.ollama_model_not_found())
    message = one_line_error(lambda: ollama_embedder(fake_server.url).embed(["hi"]))
    assert message.startswith(f"ollama embeddings ({wire.OLLAMA_MODEL} at {fake_server.url}): ")
    assert f"model {wire.OLLAMA_MODEL!r} not found (HTTP 404)" in message and "try pulling it first" in message


def test_ollama_busy_server_is_retried_then_given_up_on(fake_server):
    fake_server.queue(wire.ollama_busy())
    fake_server.respond_with(wire.ollama_responder())
    vectors = ollama_embedder(fake_server.url, max_retries=1).embed(["apple"])
    np.testing.assert_allclose(vectors, expected(["apple"]), rtol=1e-6)
    assert len(fake_server.requests_to("/api/embed")) == 2

    fake_server.queue(wire.ollama_busy(), wire.ollama_busy())
    message = one_line_error(lambda: ollama_embedder(fake_server.url, max_retries=1).embed(["apple"]))
    assert "HTTP 503" in message and "server busy" in message


def test_ollama_unreachable_and_timeout():
    url = closed_port_url()
    assert "cannot connect" in one_line_error(lambda: ollama_embedder(url).embed(["hi"]))


def test_ollama_timeout(fake_server):
    fake_server.queue(FakeResponse(delay=1.5, body=b"{}"))
    message = one_line_error(lambda: ollama_embedder(fake_server.url, timeout=0.3).embed(["hi"]))
    assert "no answer within 0.3s (llm.timeout_secs)" in message


def test_ollama_rows_of_different_sizes_are_a_bad_reply(fake_server):
    fake_server.queue(wire.ollama_reply([[1.0, 2.0], [1.0]]))
    message = one_line_error(lambda: ollama_embedder(fake_server.url).embed(["one", "two"]))
    assert "embeddings of different sizes" in message
