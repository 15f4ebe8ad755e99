"""TLS trust for a provider reached over plain http, loaded only if TLS is ever used.

Invariant: a context from `trust_for(base_url, build_default)` verifies certificates and host
names exactly as the SDK's default does, because every handshake is made by that default
context itself (same authorities, same SSL_CERT_FILE / SSL_CERT_DIR rules, the platform
verifier where the SDK uses one); it differs only in when that context is built: on the
first handshake, not when the SDK's client is built. For a server
reached over plain http (llama.cpp, Ollama, LM Studio on this machine or the LAN), that
first handshake normally never comes — TLS is needed only if the server redirects to
https — and reading and parsing the system's CA file took ~30–40 ms of every `zeph ask`.
Should the certificate authorities not load, every handshake fails: never one unverified.
For an https base URL `trust_for` returns None and the SDK builds its own default.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

_loading = threading.Lock()


class TrustOnFirstHandshake(ssl.SSLContext):
    """A client context that hands every handshake to the SDK's own default context (`build_default`,
    the one the SDK would have built: same certificate authorities, SSL_CERT_FILE / SSL_CERT_DIR
    semantics, platform verifier), built before the first handshake instead of with the client."""

    _build_default: Callable[[], ssl.SSLContext]
    _trusted: ssl.SSLContext | None
    _alpn: list[str] | None

    def __new__(cls, build_default: Callable[[], ssl.SSLContext]) -> "TrustOnFirstHandshake":
        self = super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)  # the instance being made: its own members
        self._build_default = build_default
        self._trusted = None
        self._alpn = None
        return self

    def _load_trust(self) -> ssl.SSLContext:
        with _loading:
            if self._trusted is None:
                trusted = self._build_default()
                if self._alpn is not None:
                    trusted.set_alpn_protocols(self._alpn)
                self._trusted = trusted
            return self._trusted

    def set_alpn_protocols(self, alpn_protocols):
        with _loading:
            self._alpn = list(alpn_protocols)
            super().set_alpn_protocols(self._alpn)
            if self._trusted is not None:
                self._trusted.set_alpn_protocols(self._alpn)

    def wrap_socket(self, *args, **kwargs):
        return self._load_trust().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args, **kwargs):
        return self._load_trust().wrap_bio(*args, **kwargs)


def trust_for(base_url: str | None, build_default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext | None:
    """The context for an SDK's http client: the SDK's default (`build_default`), built on first
    handshake, for a plain-http base URL (`host:port` with no scheme is http, as Ollama reads it); None
    (the SDK builds its default now) for anything else."""
    url = (base_url or "").strip()
    if url and (urlsplit(url).scheme.lower() == "http" or "://" not in url):
        return TrustOnFirstHandshake(build_default)
    return None
