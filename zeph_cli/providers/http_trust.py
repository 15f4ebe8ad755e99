"""TLS trust for a provider reached over plain http, loaded only if TLS is ever used.

Invariant: a context from `trust_for(base_url)` verifies certificates and host names exactly
as a default one does; it differs only in when it reads the platform's certificate
authorities: on its first handshake, not when the SDK's client is built. For a server
reached over plain http (llama.cpp, Ollama, LM Studio on this machine or the LAN), that
first handshake normally never comes — TLS is needed only if the server redirects to
https — and reading and parsing the system's CA file took ~30–40 ms of every `zeph ask`.
Should the certificate authorities not load, every handshake fails: never one unverified.
For an https base URL `trust_for` returns None and the SDK builds its own default.
"""

from __future__ import annotations

import ssl
import threading
from urllib.parse import urlsplit

_loading = threading.Lock()


class TrustOnFirstHandshake(ssl.SSLContext):
    """A client context (certificates and host names verified) whose certificate authorities
    are the platform's defaults (honouring SSL_CERT_FILE and SSL_CERT_DIR), read before its
    first handshake."""

    def __new__(cls) -> "TrustOnFirstHandshake":
        context = super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)
        context._trust_loaded = False
        return context

    def _load_trust(self) -> None:
        with _loading:
            if not self._trust_loaded:
                self.load_default_certs(ssl.Purpose.SERVER_AUTH)
                self._trust_loaded = True

    def wrap_socket(self, *args, **kwargs):  # type: ignore[override]
        self._load_trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args, **kwargs):  # type: ignore[override]
        self._load_trust()
        return super().wrap_bio(*args, **kwargs)


def trust_for(base_url: str | None) -> ssl.SSLContext | None:
    """The context for an SDK's http client: read-on-first-handshake for a plain-http
    base URL, None (the SDK's own default) for anything else."""
    if base_url and urlsplit(base_url.strip()).scheme.lower() == "http":
        return TrustOnFirstHandshake()
    return None
