"""A scripted HTTP server on 127.0.0.1 for wire-level provider tests.

Tests queue `FakeResponse`s (per path, or for any path); the server replays
them in order (then asks a responder, if one is set, to answer from the request), streaming chunked bodies when asked, and records every request
so tests can assert on exactly what went over the wire. Real SDK clients talk
to it over real sockets.

A GET (the read-only probes adapters send to learn about a server: llama.cpp's
/props, /v1/models...) is answered only by its own path's queue or route, and
otherwise with 404 `{"detail":"Not Found"}` as a server without that endpoint
does; it never takes a response queued for any path.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class FakeResponse:
    status: int = 200
    body: bytes | None = None
    chunks: list[bytes] | None = None  # streamed one by one (connection closes at the end)
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    chunk_delay: float = 0.0  # chunk i leaves (i + 1) * chunk_delay after the first
    delay: float = 0.0  # before the status line is sent (timeouts)
    drop_after: int | None = None  # close the socket after this many chunks, mid-stream
    reset_after: int | None = None  # reset the connection (TCP RST) after this many chunks, mid-stream

    @classmethod
    def json(cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> "FakeResponse":
        return cls(status=status, body=json.dumps(payload).encode(), headers=dict(headers or {}))

    @classmethod
    def stream(
        cls, chunks: list[str | bytes], content_type: str, *, drop_after: int | None = None, chunk_delay: float = 0.0
    ) -> "FakeResponse":
        raw = [c.encode() if isinstance(c, str) else c for c in chunks]
        return cls(chunks=raw, content_type=content_type, drop_after=drop_after, chunk_delay=chunk_delay)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    # How the reply went: "complete", "dropped" (drop_after) or "client-closed"
    # (the client hung up mid-reply); "" while it is still being sent.
    outcome: str = ""

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")


class FakeServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: serve https with this server-side context (its certificate names 127.0.0.1)."""
        self.requests: list[RecordedRequest] = []
        self._queues: dict[str | None, deque[FakeResponse]] = {}
        self._routes: dict[str, FakeResponse] = {}
        self._responder: Callable[[RecordedRequest], FakeResponse | None] | None = None
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm holds the
            # body until the client's delayed ACK (~40 ms a request), a stall no real server has.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                record = RecordedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.requests.append(record)
                response = server._next(path, record, any_path=self.command != "GET")
                record.outcome = self._send(response)

            def _send(self, response: FakeResponse) -> str:
                if response.delay:
                    time.sleep(response.delay)
                try:
                    self.send_response(response.status)
                    self.send_header("Content-Type", response.content_type)
                    for name, value in response.headers.items():
                        self.send_header(name, value)
                    if response.chunks is None:
                        body = response.body or b""
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        return "complete"
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    started = time.monotonic()
                    for i, chunk in enumerate(response.chunks):
                        if response.reset_after is not None and i >= response.reset_after:
                            self.wfile.flush()
                            self.close_connection = True
                            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                            self.connection.close()
                            return "reset"
                        if response.drop_after is not None and i >= response.drop_after:
                            self.wfile.flush()
                            self.close_connection = True
                            self.connection.shutdown(2)
                            return "dropped"
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                        if response.chunk_delay:  # paced on a schedule: a late chunk does not delay the rest
                            time.sleep(max(0.0, started + (i + 1) * response.chunk_delay - time.monotonic()))
                    self.wfile.write(b"0\r\n\r\n")
                    self.close_connection = True
                    return "complete"
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True
                    return "client-closed"

            do_GET = do_POST = do_DELETE = do_PUT = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._tls = tls is not None
        if tls is not None:  # a failed handshake fails that connection's accept(); the server serves on
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self._tls else 'http'}://{host}:{port}"

    def queue(self, *responses: FakeResponse, path: str | None = None) -> None:
        """Replay these responses, in order, to requests on `path` (None: any path)."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(responses)

    def route(self, path: str, response: FakeResponse) -> None:
        """Answer every request on `path` with `response` once its queue is empty."""
        self._routes[path] = response

    def respond_with(self, responder: Callable[[RecordedRequest], FakeResponse | None]) -> None:
        """Answer requests the queues do not cover by calling `responder` (None: fall through)."""
        self._responder = responder

    def _next(self, path: str, request: RecordedRequest, *, any_path: bool = True) -> FakeResponse:
        with self._lock:
            for key in (path, None) if any_path else (path,):
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
            responder = self._responder if any_path else None
        if responder is not None:
            response = responder(request)
            if response is not None:
                return response
        if path in self._routes:
            return self._routes[path]
        if not any_path:
            return FakeResponse.json({"detail": "Not Found"}, status=404)
        return FakeResponse.json({"error": f"fake server: nothing scripted for {path}"}, status=500)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def closed_port_url() -> str:
    """An http:// URL on 127.0.0.1 where nothing listens (connection refused)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# What a captive portal, a proxy or a web UI at the wrong address answers to any request.
LOGIN_PAGE = (
    b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n  <meta charset=\"utf-8\">\n  <title>Guest Wi-Fi \xe2\x80\x93 sign in</title>\n"
    b"</head>\n<body><form method=\"post\"><input name=\"code\"></form></body>\n</html>\n"
)


def html_page(content_type: str = "text/html; charset=utf-8") -> FakeResponse:
    """An HTML page with status 200, where an API reply should be."""
    return FakeResponse(status=200, body=LOGIN_PAGE, content_type=content_type)
