"""TLS trust for providers reached over plain http: read on the first handshake, never skipped.

A real TLS server (a certificate from a test authority, trustme) stands behind a plain-http
fake that redirects to it; each SDK client follows the redirect with zeph's context.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess

import httpx
import httpx2

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


# The default context each SDK's client builds: ollama's (httpx), openai's and anthropic's (httpx2).
SDK_DEFAULTS = {"httpx": httpx.create_ssl_context, "httpx2": httpx2.create_ssl_context}


@pytest.fixture
def file_untrusted_dir_trusted(authority, tmp_path, monkeypatch):
    """SSL_CERT_FILE names another authority, SSL_CERT_DIR holds the test one. The SDKs read only the
    file when it is set (their default ignores the directory then), so the test authority is not trusted."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to hash a certificate directory")
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    folder = tmp_path / "certs"
    folder.mkdir()
    authority.cert_pem.write_to_path(str(folder / "test-ca.pem"))
    subprocess.run(["openssl", "rehash", str(folder)], check=True, capture_output=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))


def handshake(context: ssl.SSLContext, url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with context.wrap_socket(sock, server_hostname="127.0.0.1"):
            pass


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:11434", "HTTP://gpu-box.lan:8080/v1", " http://localhost/v1", "gpu-box.lan:11434"]
)
def test_a_plain_http_base_url_gets_a_verifying_context_that_has_read_no_authorities_yet(url):
    built = []
    context = trust_for(url, lambda: built.append(1) or httpx2.create_ssl_context())
    assert isinstance(context, TrustOnFirstHandshake)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0 and built == []


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "https://127.0.0.1:8443", None, ""])
def test_any_other_base_url_keeps_the_sdks_own_context(url):
    assert trust_for(url, httpx2.create_ssl_context) is None


@pytest.mark.parametrize("sdk", sorted(SDK_DEFAULTS))
def test_the_first_handshake_reads_the_platforms_authorities_and_verifies(tls_server, trusted, sdk):
    built = []
    context = trust_for("http://127.0.0.1:1", lambda: built.append(1) or SDK_DEFAULTS[sdk]())
    handshake(context, tls_server.url)
    assert built == [1] and context._trusted.cert_store_stats()["x509_ca"] == 1
    handshake(context, tls_server.url)  # read once; the second handshake verifies as well
    assert built == [1]


@pytest.mark.parametrize("sdk", sorted(SDK_DEFAULTS))
def test_the_authorities_are_the_sdks_own_default_ones(tls_server, file_untrusted_dir_trusted, sdk):
    """SSL_CERT_FILE set: the SDK trusts that file alone, and so does this context (reading the
    platform's defaults would add SSL_CERT_DIR, or OpenSSL's own directory, to it)."""
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(SDK_DEFAULTS[sdk](), tls_server.url)
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(trust_for("http://127.0.0.1:1", SDK_DEFAULTS[sdk]), tls_server.url)


def test_a_certificate_no_trusted_authority_signed_is_refused(tls_server, untrusted):
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(trust_for("http://127.0.0.1:1", httpx2.create_ssl_context), tls_server.url)


def test_a_certificate_for_another_host_is_refused(tls_server, trusted):
    port = int(tls_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with pytest.raises(ssl.SSLCertVerificationError):
            trust_for("http://127.0.0.1:1", httpx2.create_ssl_context).wrap_socket(sock, server_hostname="gpu-box.lan")


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
        return real(self)

    monkeypatch.setattr(TrustOnFirstHandshake, "_load_trust", load)
    return seen


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
async def test_a_redirect_to_https_is_followed_and_verified_with_this_context(kind, redirected, tls_server, trusted, loads):
    make, reply = PROVIDERS[kind]
    tls_server.queue(reply())
    provider = make(redirected.url)
    assert await _reply(provider) == "Hello over TLS"
    assert redirected.requests and tls_server.requests  # it went by way of both
    assert loads and loads[0]._trusted.cert_store_stats()["x509_ca"] == 1  # the SDK's client shook hands with it


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
async def test_a_redirect_to_a_server_no_trusted_authority_vouches_for_fails(kind, redirected, tls_server, untrusted):
    make, _ = PROVIDERS[kind]
    served = len(tls_server.requests)
    with pytest.raises(errors.ProviderError):
        await _reply(make(redirected.url))
    assert len(tls_server.requests) == served  # nothing was sent over the unverified connection


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
async def test_a_redirect_to_a_server_only_ssl_cert_dir_vouches_for_fails_as_with_the_sdks_default(
    kind, redirected, tls_server, file_untrusted_dir_trusted
):
    make, _ = PROVIDERS[kind]
    served = len(tls_server.requests)
    with pytest.raises(errors.ProviderError):
        await _reply(make(redirected.url))
    assert len(tls_server.requests) == served
