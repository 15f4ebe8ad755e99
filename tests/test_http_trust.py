"""TLS trust for providers reached over plain http: read on the first handshake, never skipped.

A real TLS server (a certificate from a test authority, trustme) stands behind a plain-http
fake that redirects to it; each SDK client follows the redirect with zeph's context.
"""

from __future__ import annotations

import socket
import ssl

import pytest
import trustme

from tests.fakes import anthropic_wire, ollama_wire, openai_wire
from tests.fakes.server import FakeResponse, FakeServer
from zeph_cli import errors
from zeph_cli.messages import Message, TextDelta
from zeph_cli.providers.anthropic import AnthropicProvider
from zeph_cli.providers.base import ChatRequest, ProviderSettings
from zeph_cli.providers.http_trust import TrustOnFirstHandshake, trust_for
from zeph_cli.providers.ollama import OllamaProvider
from zeph_cli.providers.openai import OpenAIProvider


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def tls_server(authority):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    server = FakeServer(tls=context)
    yield server
    server.close()


@pytest.fixture
def trusted(authority, tmp_path, monkeypatch):
    """The platform's certificate authorities are the test one (what SSL_CERT_FILE says)."""
    path = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))


@pytest.fixture
def untrusted(tmp_path, monkeypatch):
    """The platform's certificate authorities are another one, which signed nothing served here."""
    path = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))


def handshake(context: ssl.SSLContext, url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with context.wrap_socket(sock, server_hostname="127.0.0.1"):
            pass


@pytest.mark.parametrize("url", ["http://127.0.0.1:11434", "HTTP://gpu-box.lan:8080/v1", " http://localhost/v1"])
def test_a_plain_http_base_url_gets_a_verifying_context_that_has_read_no_authorities_yet(url):
    context = trust_for(url)
    assert isinstance(context, TrustOnFirstHandshake)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "https://127.0.0.1:8443", None, ""])
def test_any_other_base_url_keeps_the_sdks_own_context(url):
    assert trust_for(url) is None


def test_the_first_handshake_reads_the_platforms_authorities_and_verifies(tls_server, trusted):
    context = trust_for("http://127.0.0.1:1")
    handshake(context, tls_server.url)
    assert context.cert_store_stats()["x509_ca"] == 1
    handshake(context, tls_server.url)  # read once; the second handshake verifies as well
    assert context.cert_store_stats()["x509_ca"] == 1


def test_a_certificate_no_trusted_authority_signed_is_refused(tls_server, untrusted):
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(trust_for("http://127.0.0.1:1"), tls_server.url)


def test_a_certificate_for_another_host_is_refused(tls_server, trusted):
    port = int(tls_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with pytest.raises(ssl.SSLCertVerificationError):
            trust_for("http://127.0.0.1:1").wrap_socket(sock, server_hostname="gpu-box.lan")


# ---- each SDK follows a redirect to https with this context --------------------------------------


def _openai(url: str) -> OpenAIProvider:
    return OpenAIProvider(ProviderSettings(
        kind="compatible", name="compatible", model="m", base_url=url + "/v1", timeout_secs=5.0, max_retries=0,
    ))


def _anthropic(url: str) -> AnthropicProvider:
    return AnthropicProvider(ProviderSettings(
        kind="anthropic", name="anthropic", model="claude-sonnet-4-6", base_url=url, api_key="sk-ant-test",
        timeout_secs=5.0, max_retries=0,
    ))


def _ollama(url: str) -> OllamaProvider:
    return OllamaProvider(ProviderSettings(
        kind="ollama", name="ollama", model=ollama_wire.MODEL, base_url=url, timeout_secs=5.0, max_retries=0,
    ))


PROVIDERS = {
    "compatible": (_openai, lambda: openai_wire.stream_response(openai_wire.text_chunks(["Hello", " over TLS"]))),
    "anthropic": (_anthropic, lambda: anthropic_wire.sse_response(anthropic_wire.text_events(["Hello", " over TLS"]))),
    "ollama": (_ollama, lambda: ollama_wire.chat_stream("Hello", " over TLS")),
}


@pytest.fixture
def redirected(fake_server, tls_server):
    """The plain-http fake sends every POST on to the TLS server, path kept."""
    fake_server.respond_with(lambda request: FakeResponse(status=307, headers={"Location": tls_server.url + request.path}))
    return fake_server


async def _reply(provider) -> str:
    try:
        events = [event async for event in provider.stream(ChatRequest(messages=(Message.user("hi"),)))]
    finally:
        await provider.aclose()
    return "".join(event.text for event in events if isinstance(event, TextDelta))


@pytest.fixture
def loads(monkeypatch) -> list[TrustOnFirstHandshake]:
    """Each time a context of this module reads the authorities (the real read still happens)."""
    seen: list[TrustOnFirstHandshake] = []
    real = TrustOnFirstHandshake._load_trust

    def load(self):
        seen.append(self)
        real(self)

    monkeypatch.setattr(TrustOnFirstHandshake, "_load_trust", load)
    return seen


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
async def test_a_redirect_to_https_is_followed_and_verified_with_this_context(kind, redirected, tls_server, trusted, loads):
    make, reply = PROVIDERS[kind]
    tls_server.queue(reply())
    provider = make(redirected.url)
    assert await _reply(provider) == "Hello over TLS"
    assert redirected.requests and tls_server.requests  # it went by way of both
    assert loads and loads[0].cert_store_stats()["x509_ca"] == 1  # the SDK's client shook hands with it


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
async def test_a_redirect_to_a_server_no_trusted_authority_vouches_for_fails(kind, redirected, tls_server, untrusted):
    make, _ = PROVIDERS[kind]
    served = len(tls_server.requests)
    with pytest.raises(errors.ProviderError):
        await _reply(make(redirected.url))
    assert len(tls_server.requests) == served  # nothing was sent over the unverified connection
