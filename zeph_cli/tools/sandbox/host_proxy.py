"""The host allow-list proxy: sandboxed commands reach the hosts `[tools.sandbox] allowed_hosts` lists, and no other.

Invariant: a connection leaves this proxy only to a host that a pattern matches, on a port that pattern
allows (80 and 443 unless it names one), at an address vetted here: the proxy resolves the name itself
and connects to the address it vetted, and a name pattern never reaches a loopback, private, link-local
or reserved address (`is_private`) — only a pattern that is that address does, or `localhost` for
loopback — so a name that resolves, or is rebound, to 127.0.0.1, 10.x or 169.254.169.254 is refused.
Everything else is answered `403` with one line naming the host and the setting that allows it, and is
recorded for the tool result. Every connection is bounded: the request head in size and time, name
resolution and connecting in time, a tunnel by its idle time; at most `ProxyLimits.max_connections` at
once; flow control caps its buffers.

Wiring (the caller owns both ends; this module never imports the launcher, nor the launcher this):
- One proxy per sandbox (`sandbox.Sandbox`): `HostProxy(<dir>/proxy.sock, settings.allowed_hosts)`,
  started when the sandbox settles and closed when it is collected. The socket (mode 0600; a path holds
  at most 107 bytes) lies in a directory the bubblewrap wall binds read-only into the sandbox, so a
  command cannot remove or replace it. It is served from a thread with an event loop of its own, so it
  works alike under the chat app's loop, `zeph ask`'s `asyncio.run` and plain threads.
- The command's argv: bubblewrap with `--unshare-net` around the launcher, given
  `--proxy-socket <the path inside>` before `--` (with its `--write` options). The launcher forks a relay
  on 127.0.0.1 in the sandbox's own loopback and gives the command HTTP_PROXY, HTTPS_PROXY, ALL_PROXY
  (and lowercase) and NO_PROXY (`proxy_relay.py`); it refuses to run the command (exit 125, one line)
  when nothing answers at that path.
- Per command: `mark()` before it, `refusal_note(proxy.refusals_since(mark), proxy.patterns)` after it is
  the line to add to its result, or None.
- `parse_host_patterns(allowed_hosts)` validates the setting: ValueError, one line naming the entry.

Not covered: a command may send any bytes to an allowed host (its TLS name and HTTP Host header inside a
tunnel are not inspected), and programs that ignore the proxy variables get no network at all.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ipaddress
import os
import re
import socket
import stat
import threading
import unicodedata
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Self
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_PORTS", "HostPattern", "HostPolicy", "HostProxy", "ProxyLimits", "Refusal", "is_private",
    "parse_host_pattern", "parse_host_patterns", "refusal_note",
]

DEFAULT_PORTS = (80, 443)
SETTING = "[tools.sandbox] allowed_hosts"
MAX_SOCKET_PATH_BYTES = 107
MAX_REFUSALS_KEPT = 256
LINGER_SECS = 2.0
LINGER_BYTES = 64 * 1024

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class ProxyLimits:
    """How much one proxy holds and waits. Times are in seconds."""

    max_connections: int = 128
    max_head_bytes: int = 32 * 1024       # request line and headers
    head_timeout: float = 20.0            # to send the whole request head
    resolve_timeout: float = 15.0
    connect_timeout: float = 15.0         # per address tried
    idle_timeout: float = 300.0           # a tunnel with no byte either way for this long is closed
    chunk_bytes: int = 64 * 1024
    resolver_threads: int = 4


# ---- host patterns ------------------------------------------------------------------------------------

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class _BadHost(ValueError):
    """A host that is neither a DNS name nor an IP address as written."""


def _ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_loose_ipv4(text: str) -> bool:
    """Whether the resolver would read `text` as an IPv4 address although it is not dotted-quad
    (`127.1`, `0x7f.0.0.1`, `2130706433`)."""
    try:
        socket.inet_aton(text)
    except OSError:
        return False
    return True


def _name_forms(text: str) -> tuple[str, ...]:
    """The ASCII forms of a host name, lowercased without a final dot: one form for an ASCII name; for a
    Unicode one, its IDNA 2003 form and its per-label punycode form (what IDNA 2008 clients such as curl
    send: `straße.de` is `strasse.de` in one and `xn--strae-oqa.de` in the other). Raises _BadHost."""
    name = text.strip().lower()
    name = name[:-1] if name.endswith(".") else name  # the root: `pypi.org.` is `pypi.org`
    if not name or len(name) > 253:
        raise _BadHost("not a host name")
    forms: list[str] = []
    if name.isascii():
        forms.append(name)
    else:
        try:
            forms.append(name.encode("idna").decode("ascii").lower())
        except UnicodeError:
            pass
        labels = []
        for label in unicodedata.normalize("NFC", name).split("."):
            labels.append(label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii"))
        forms.append(".".join(labels))
    valid = tuple(dict.fromkeys(f for f in forms if all(_LABEL.match(lbl) for lbl in f.split("."))))
    if not valid:
        raise _BadHost("not a host name")
    if any(_is_loose_ipv4(f) for f in valid):
        raise _BadHost("an IPv4 address must be written as four decimal numbers (a.b.c.d)")
    return valid


@dataclass(frozen=True)
class HostPattern:
    """One `allowed_hosts` entry: a name (`pypi.org`), a wildcard for the names below a suffix
    (`*.pythonhosted.org`, not the suffix itself), or an IP address (`127.0.0.1`, `[::1]`); each with
    an optional `:port`. Without a port it allows 80 and 443."""

    text: str
    names: tuple[str, ...] = ()       # the name's ASCII forms (the suffix's, for a wildcard)
    wildcard: bool = False
    address: IPAddress | None = None
    port: int | None = None

    @property
    def reaches_private(self) -> bool:
        """Whether the pattern may reach non-public addresses: an IP address, or `localhost` (loopback)."""
        return self.address is not None or (not self.wildcard and self.names == ("localhost",))

    def allows_port(self, port: int) -> bool:
        return port in DEFAULT_PORTS if self.port is None else port == self.port

    def matches_host(self, host: str | IPAddress) -> bool:
        if isinstance(host, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            return self.address is not None and self.address == host
        if self.address is not None:
            return False
        if self.wildcard:
            return any(host.endswith("." + suffix) for suffix in self.names)
        return host in self.names


def _pattern_error(text: str, why: str) -> ValueError:
    return ValueError(f"{SETTING}: {text!r} is not a host pattern ({why}); write a host name like \"pypi.org\", "
                      f"a wildcard like \"*.pythonhosted.org\", or an address like \"127.0.0.1:8080\"")


def _split_port(text: str) -> tuple[str, int | None]:
    """`host:port`, `[v6]:port`, `[v6]`, bare `v6` or `host` → (host, port or None). Raises ValueError."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError("an unclosed [")
        host, rest = text[1:end], text[end + 1:]
        if rest and not rest.startswith(":"):
            raise ValueError("text after ]")
        port_text = rest[1:] if rest else None
        if _ip(host) is None or _ip(host).version != 6:  # type: ignore[union-attr]
            raise ValueError("[…] holds an IPv6 address")
    elif text.count(":") > 1:
        return text, None  # a bare IPv6 address (checked by the caller)
    elif ":" in text:
        host, port_text = text.split(":", 1)
    else:
        host, port_text = text, None
    if port_text is None:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"the port {port_text!r} is not a number from 1 to 65535")
    return host, int(port_text)


def parse_host_pattern(text: str) -> HostPattern:
    """One `allowed_hosts` entry as a pattern; ValueError naming it when it is not one."""
    raw = text.strip()
    if "://" in raw or "/" in raw:
        name = urlsplit(raw if "://" in raw else "//" + raw).hostname or raw
        raise _pattern_error(text, f"a host, not a URL: write {name!r}")
    if not raw:
        raise _pattern_error(text, "it is empty")
    try:
        host, port = _split_port(raw)
    except ValueError as exc:
        raise _pattern_error(text, str(exc)) from None
    address = _ip(host)
    if address is not None:
        return HostPattern(text=raw, address=address, port=port)
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    if "*" in host:
        why = ("allow_network = true lets commands reach every host" if host in ("", "*")
               else "only a leading \"*.\" is a wildcard")
        raise _pattern_error(text, why)
    try:
        names = _name_forms(host)
    except _BadHost as exc:
        raise _pattern_error(text, str(exc)) from None
    if wildcard and "." not in names[0]:
        raise _pattern_error(text, "a wildcard needs a domain with a dot after \"*.\", such as \"*.example.com\"")
    return HostPattern(text=raw, names=names, wildcard=wildcard, port=port)


def parse_host_patterns(patterns: Iterable[str]) -> tuple[HostPattern, ...]:
    """The `allowed_hosts` setting as patterns; ValueError (one line naming the entry) on a bad one."""
    return tuple(parse_host_pattern(p) for p in patterns)


@dataclass(frozen=True)
class _Target:
    """A requested host, normalised: a name in ASCII form or an address."""

    host: str | IPAddress
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if isinstance(self.host, ipaddress.IPv6Address) else str(self.host)
        return host if self.port in DEFAULT_PORTS else f"{host}:{self.port}"

    @property
    def name(self) -> str:
        return f"[{self.host}]" if isinstance(self.host, ipaddress.IPv6Address) else str(self.host)


def _target(host: str, port: int) -> _Target:
    """The host of a request, normalised (IDNA, lowercase, no final dot). Raises _BadHost."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not 0 < port < 65536:
        raise _BadHost(f"the port {port} is out of range")
    address = _ip(host)
    if address is not None:
        return _Target(address, port)
    return _Target(_name_forms(host)[0], port)


class HostPolicy:
    """Which requested hosts and ports the patterns allow (pure: no resolution)."""

    def __init__(self, patterns: Sequence[HostPattern]) -> None:
        self.patterns = tuple(patterns)

    def match(self, host: str | IPAddress, port: int) -> HostPattern | None:
        """The first pattern allowing `host` (normalised, see `_target`) on `port`, or None."""
        for pattern in self.patterns:
            if pattern.matches_host(host) and pattern.allows_port(port):
                return pattern
        return None

    def allows(self, host: str, port: int) -> bool:
        """Whether `host` as a client writes it (any case, Unicode or punycode) is allowed on `port`."""
        try:
            target = _target(host, port)
        except _BadHost:
            return False
        return self.match(target.host, target.port) is not None


# What a name pattern never reaches: the machine itself, the networks around it, and addresses that are
# not one host's. Documentation (192.0.2/24, 198.51.100/24, 203.0.113/24) and benchmarking (198.18/15)
# ranges stay reachable: some resolvers and local proxies answer every name with one of them ("fake-IP"
# DNS, mirrors on test networks), and no one's own services sit there by accident.
_PRIVATE_V4 = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4",
))
_PRIVATE_V6 = tuple(ipaddress.IPv6Network(n) for n in (
    "::/127", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
))
_V4_INSIDE_V6 = (  # prefixes whose last 32 bits are an IPv4 address: IPv4-compatible, NAT64
    ipaddress.IPv6Network("::/96"), ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"),
)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in net for net in _V4_INSIDE_V6):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_private(address: IPAddress) -> bool:
    """Whether a name pattern must not reach `address`: loopback, private (10/8, 172.16/12, 192.168/16,
    fc00::/7), shared (100.64/10), link-local (169.254/16, the cloud metadata service's; fe80::/10),
    unspecified, multicast or reserved — also when such an IPv4 address sits inside an IPv6 one."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            return is_private(inner)
        return any(address in net for net in _PRIVATE_V6)
    return any(address in net for net in _PRIVATE_V4)


# ---- refusals -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """One refused request: `host` as shown (`evil.example`, `github.com:22`), `suggestion` the entry that
    would allow it, `address` set when the host matched but resolved to a non-public address."""

    host: str
    suggestion: str
    address: str | None = None

    def line(self) -> str:
        """The 403 body: one line naming the host and how to allow it."""
        if self.address is not None:
            return (f"zeph sandbox: {self.host} resolves to {self.address}, a loopback or private address; "
                    f"{SETTING} reaches such an address only when it lists the address itself "
                    f"(\"{self.suggestion}\"), so the request was refused")
        return (f"zeph sandbox: {self.host} is not in {SETTING}, so commands cannot reach it; "
                f"the user can add \"{self.suggestion}\" to that list to allow it")

    def reason(self) -> str:
        """The 403 reason phrase (pip and urllib show it after 'Tunnel connection failed: 403')."""
        if self.address is not None:
            return f"{self.host} resolves to a private address ({self.address})"
        return f"{self.host} is not in {SETTING}"


def refusal_note(refusals: Sequence[Refusal], patterns: Sequence[HostPattern] = ()) -> str | None:
    """One line for a command's result saying which network requests the sandbox refused and how to allow
    them; None when none was."""
    if not refusals:
        return None
    distinct = list(dict.fromkeys(refusals))
    hosts = [r.host for r in distinct]
    plural = len(hosts) > 1
    shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    reasons = []
    if any(r.address is None for r in distinct):
        listed = ", ".join(p.text for p in patterns[:6]) + (" …" if len(patterns) > 6 else "")
        reasons.append(f"commands may reach only the hosts in {SETTING} ({listed})" if patterns
                       else f"commands may reach no host ({SETTING} is empty)")
    private = next((r for r in distinct if r.address is not None), None)
    if private is not None:
        reasons.append(f"{private.host} resolves to {private.address}, a loopback or private address, which "
                       f"allowed_hosts reaches only when it lists the address itself")
    additions = ", ".join(f'"{r.suggestion}"' for r in distinct[:3]) + (" …" if len(distinct) > 3 else "")
    every = " (or allow every host with allow_network = true)" if any(r.address is None for r in distinct) else ""
    return (f"[sandbox: the network request{'s' if plural else ''} to {shown} {'were' if plural else 'was'} "
            f"refused — {'; '.join(reasons)}. If the user wants commands to reach {'them' if plural else 'it'}, "
            f"they can add {additions} to {SETTING}{every}]")


# ---- the proxy ----------------------------------------------------------------------------------------

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
               "te", "trailer", "upgrade"}


class _Reply(Exception):
    """Answer the client with this status and one line, then close."""

    def __init__(self, status: int, reason: str, line: str) -> None:
        super().__init__(line)
        self.status, self.reason, self.line = status, reason, line


def _response(status: int, reason: str, line: str) -> bytes:
    body = (line.rstrip("\n") + "\n").encode("utf-8", "replace")
    reason = re.sub(r"[\x00-\x1f\x7f]", " ", reason).encode("latin-1", "replace").decode("latin-1")
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\nX-Zeph-Sandbox: {status}\r\n\r\n")
    return head.encode("latin-1") + body


def _decode_head(raw: bytes) -> list[str]:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        try:
            text = raw.decode("utf-8")  # a Unicode host name sent as it is
        except UnicodeDecodeError:
            raise _Reply(400, "Bad Request", "zeph sandbox proxy: the request head is not text") from None
    lines = text[:-4].split("\r\n")
    if any("\r" in line or "\n" in line or "\x00" in line for line in lines):
        raise _Reply(400, "Bad Request", "zeph sandbox proxy: the request head has stray control characters")
    return lines


@dataclass
class _Request:
    method: str
    target: _Target
    head: bytes | None  # what to send upstream for a plain request; None for CONNECT


def _parse_request(raw: bytes) -> _Request:
    lines = _decode_head(raw)
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.match(parts[0]) or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise _Reply(400, "Bad Request", f"zeph sandbox proxy: not an HTTP/1.x request line: {lines[0][:200]!r}")
    method, uri, version = parts
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.match(name):
            raise _Reply(400, "Bad Request", f"zeph sandbox proxy: not a header line: {line[:200]!r}")
        headers.append((name, value.strip()))
    try:
        if method == "CONNECT":
            host, port_text = uri.rsplit(":", 1) if ":" in uri else (uri, "")
            if not port_text.isdigit():
                raise _BadHost(f"CONNECT needs host:port, got {uri[:200]!r}")
            return _Request(method, _target(host, int(port_text)), None)
        if not uri.lower().startswith("http://"):
            why = ("it speaks only to HTTP clients through a proxy setting (HTTP_PROXY/HTTPS_PROXY)"
                   if uri.startswith("/") else "only http:// URLs and CONNECT tunnels are relayed")
            raise _Reply(400, "Bad Request", f"zeph sandbox proxy: {uri[:200]!r} cannot be relayed: {why}")
        url = urlsplit(uri)
        if url.hostname is None or "@" in url.netloc:
            raise _BadHost(f"no host (or credentials) in {uri[:200]!r}")
        port = 80 if url.port is None else url.port
        target = _target(url.hostname, port)
    except _BadHost as exc:
        raise _Reply(400, "Bad Request", f"zeph sandbox proxy: bad host in {uri[:200]!r}: {exc}") from None
    except ValueError as exc:  # urlsplit's port
        raise _Reply(400, "Bad Request", f"zeph sandbox proxy: bad URL {uri[:200]!r}: {exc}") from None
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    listed = {token.strip().lower() for name, value in headers if name.lower() == "connection"
              for token in value.split(",")}
    kept = [(n, v) for n, v in headers if n.lower() not in _HOP_BY_HOP and n.lower() != "host" and n.lower() not in listed]
    authority = target.name if port == 80 else f"{target.name}:{port}"
    out = [f"{method} {path} {version}", f"Host: {authority}", *(f"{n}: {v}" for n, v in kept), "Connection: close"]
    return _Request(method, target, ("\r\n".join(out) + "\r\n\r\n").encode("utf-8"))


class HostProxy:
    """An HTTP proxy on a unix socket that lets through only what `patterns` allow (see the module doc).

    `start()` and `close()` are synchronous and safe from any thread or event loop; so is reading the
    refusals. Usable as a context manager.
    """

    def __init__(self, socket_path: str | os.PathLike[str], patterns: Iterable[str] | Iterable[HostPattern],
                 limits: ProxyLimits | None = None) -> None:
        self.patterns = tuple(p if isinstance(p, HostPattern) else parse_host_pattern(str(p)) for p in patterns)
        self.policy = HostPolicy(self.patterns)
        self.socket_path = os.fspath(socket_path)
        self.limits = limits or ProxyLimits()
        self._lock = threading.Lock()
        self._refusals: deque[tuple[int, Refusal]] = deque(maxlen=MAX_REFUSALS_KEPT)
        self._refused_count = 0
        self.connections_served = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._inode: tuple[int, int] | None = None
        self._resolver: concurrent.futures.ThreadPoolExecutor | None = None

    # -- the caller's side ---------------------------------------------------------------------------

    def start(self) -> None:
        """Bind the socket and serve it from a thread. Raises OSError (naming the path) when it cannot."""
        if self._thread is not None:
            raise RuntimeError("the proxy is already started")
        path = self.socket_path
        if len(os.fsencode(path)) > MAX_SOCKET_PATH_BYTES:
            raise OSError(f"the proxy socket path {path} is longer than the {MAX_SOCKET_PATH_BYTES} bytes "
                          f"a unix socket path may have")
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)  # a socket left by a proxy that did not close
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            os.chmod(path, 0o600)
            listener.listen(128)
            listener.setblocking(False)
            info = os.stat(path)
        except OSError as exc:
            listener.close()
            raise OSError(exc.errno, f"the sandbox's network proxy cannot listen at {path}: {exc.strerror or exc}") from None
        self._inode = (info.st_dev, info.st_ino)
        self._resolver = concurrent.futures.ThreadPoolExecutor(self.limits.resolver_threads, "zeph-proxy-dns")
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(loop, listener, ready, failure),
                                        name="zeph-host-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self.close()
            raise OSError(f"the sandbox's network proxy did not start: {failure[0]}")

    def close(self) -> None:
        """Stop serving, drop open connections, remove the socket. Idempotent."""
        loop, thread, stop = self._loop, self._thread, self._stop
        if loop is not None and thread is not None and thread.is_alive() and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has just closed by itself
                loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=10)
        if self._resolver is not None:
            self._resolver.shutdown(wait=False, cancel_futures=True)
            self._resolver = None
        if self._inode is not None:
            with contextlib.suppress(OSError):
                info = os.lstat(self.socket_path)
                if (info.st_dev, info.st_ino) == self._inode:  # never someone else's file put in its place
                    os.unlink(self.socket_path)
            self._inode = None
        self._thread = self._loop = self._stop = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def mark(self) -> int:
        """A position in the refusal record; `refusals_since(mark)` returns what came after it."""
        with self._lock:
            return self._refused_count

    def refusals_since(self, mark: int = 0) -> list[Refusal]:
        """The requests refused after `mark` (the last `MAX_REFUSALS_KEPT` at most), oldest first."""
        with self._lock:
            return [refusal for number, refusal in self._refusals if number >= mark]

    @property
    def refused_count(self) -> int:
        with self._lock:
            return self._refused_count

    # -- the proxy's thread --------------------------------------------------------------------------

    def _run(self, loop: asyncio.AbstractEventLoop, listener: socket.socket, ready: threading.Event,
             failure: list[BaseException]) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(listener, ready, failure))
        except BaseException as exc:  # noqa: BLE001 - reported to start(), never lost
            failure.append(exc)
        finally:
            ready.set()
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self, listener: socket.socket, ready: threading.Event, failure: list[BaseException]) -> None:
        self._stop = asyncio.Event()
        handlers: set[asyncio.Task[None]] = set()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            handlers.add(task)
            try:
                if len(handlers) > self.limits.max_connections:
                    await _send_and_close(writer, _response(
                        503, "Too many connections",
                        f"zeph sandbox proxy: more than {self.limits.max_connections} connections at once"), reader)
                    return
                await self._handle(reader, writer)
            finally:
                handlers.discard(task)

        try:
            server = await asyncio.start_unix_server(handle, sock=listener, limit=self.limits.max_head_bytes)
        except BaseException as exc:  # noqa: BLE001 - reported to start(), never lost
            listener.close()
            failure.append(exc)
            return
        ready.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for task in list(handlers):
                task.cancel()
            if handlers:
                await asyncio.wait(list(handlers), timeout=5)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), timeout=1)
            await asyncio.sleep(0)  # let the closed transports finish closing

    def _refuse(self, refusal: Refusal) -> _Reply:
        with self._lock:
            self._refusals.append((self._refused_count, refusal))
            self._refused_count += 1
        return _Reply(403, refusal.reason(), refusal.line())

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.limits.head_timeout)
            except (asyncio.LimitOverrunError, ValueError):
                raise _Reply(431, "Request Header Fields Too Large",
                             f"zeph sandbox proxy: the request head is longer than {self.limits.max_head_bytes} bytes") from None
            except asyncio.IncompleteReadError:
                return  # the client left before finishing its request
            except TimeoutError:
                raise _Reply(408, "Request Timeout",
                             f"zeph sandbox proxy: no complete request within {self.limits.head_timeout:g} s") from None
            request = _parse_request(raw)
            up_reader, upstream = await self._connect(request.target)
            self.connections_served += 1
            if request.head is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(request.head)
            await _tunnel(reader, writer, up_reader, upstream, self.limits)
        except _Reply as reply:
            await _send_and_close(writer, _response(reply.status, reply.reason, reply.line), reader)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()

    async def _connect(self, target: _Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Open the connection `target` may have, or raise the _Reply that refuses it."""
        suggestion = str(target)
        pattern = self.policy.match(target.host, target.port)
        if pattern is None:
            raise self._refuse(Refusal(str(target), suggestion))
        if isinstance(target.host, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            addresses: list[IPAddress] = [target.host]
        else:
            addresses = await self._resolve(target)
            if pattern.reaches_private:  # localhost: loopback only
                vetted = [a for a in addresses if a.is_loopback]
            else:
                vetted = [a for a in addresses if not is_private(a)]
            if not vetted:
                first = addresses[0]
                literal = f"[{first}]" if first.version == 6 else str(first)
                raise self._refuse(Refusal(str(target), f"{literal}:{target.port}", address=str(first)))
            addresses = vetted
        errors = []
        for address in addresses[:4]:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(str(address), target.port, limit=self.limits.chunk_bytes),
                    self.limits.connect_timeout)
            except TimeoutError:
                errors.append(f"{address}: no answer within {self.limits.connect_timeout:g} s")
            except OSError as exc:
                errors.append(f"{address}: {exc.strerror or exc}")
        raise _Reply(502, "Bad Gateway", f"zeph sandbox proxy: cannot connect to {target} ({'; '.join(errors)})")

    async def _resolve(self, target: _Target) -> list[IPAddress]:
        loop = asyncio.get_running_loop()
        try:
            host, port = str(target.host), target.port
            infos = await asyncio.wait_for(loop.run_in_executor(
                self._resolver, lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)),
                self.limits.resolve_timeout)
        except TimeoutError:
            raise _Reply(502, "Bad Gateway",
                         f"zeph sandbox proxy: {target.host} did not resolve within {self.limits.resolve_timeout:g} s") from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: the resolver is shut down (closing)
            raise _Reply(502, "Bad Gateway", f"zeph sandbox proxy: cannot resolve {target.host} ({exc})") from None
        found: list[IPAddress] = []
        for family, _, _, _, sockaddr in infos:
            if family in (socket.AF_INET, socket.AF_INET6):
                address = _ip(str(sockaddr[0]).split("%", 1)[0])
                if address is not None and address not in found:
                    found.append(address)
        if not found:
            raise _Reply(502, "Bad Gateway", f"zeph sandbox proxy: {target.host} has no IP address")
        return found


async def _send_and_close(writer: asyncio.StreamWriter, data: bytes, reader: asyncio.StreamReader | None = None) -> None:
    """Send `data`, then close — after reading what the client is still sending (at most `LINGER_BYTES`
    for `LINGER_SECS`), so that closing does not reset the connection before the client read the answer."""
    with contextlib.suppress(ConnectionError, OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
        writer.write(data)
        await asyncio.wait_for(writer.drain(), LINGER_SECS)
        if reader is not None and writer.can_write_eof():
            writer.write_eof()
            loop = asyncio.get_running_loop()
            deadline, left = loop.time() + LINGER_SECS, LINGER_BYTES
            while left > 0 and (remaining := deadline - loop.time()) > 0:
                chunk = await asyncio.wait_for(reader.read(min(left, 16 * 1024)), remaining)
                if not chunk:
                    break
                left -= len(chunk)
    writer.close()


async def _tunnel(client_reader: asyncio.StreamReader, client: asyncio.StreamWriter,
                  up_reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, limits: ProxyLimits) -> None:
    """Copy both ways until both ends are done, one end fails, or nothing moves for `idle_timeout`."""
    loop = asyncio.get_running_loop()
    last = [loop.time()]

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(limits.chunk_bytes):
            last[0] = loop.time()
            sink.write(data)
            await sink.drain()  # flow control: at most about a chunk held per direction
        if sink.can_write_eof():
            sink.write_eof()

    tasks = {asyncio.ensure_future(copy(client_reader, upstream)), asyncio.ensure_future(copy(up_reader, client))}
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, timeout=min(limits.idle_timeout, 30.0),
                                               return_when=asyncio.FIRST_COMPLETED)
            if any(t.exception() is not None for t in done):
                return  # one end failed: the other cannot be finished meaningfully
            if pending and loop.time() - last[0] >= limits.idle_timeout:
                return
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m zeph_cli.tools.sandbox.host_proxy SOCKET PATTERN...`: serve until SIGINT or SIGTERM,
    printing each refusal on stderr (to try the proxy by hand)."""
    import signal
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m zeph_cli.tools.sandbox.host_proxy SOCKET [PATTERN]...", file=sys.stderr)
        return 2
    try:
        proxy = HostProxy(args[0], args[1:])
        proxy.start()
    except (ValueError, OSError) as exc:
        print(f"zeph: error: {exc}", file=sys.stderr)
        return 1
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    print(f"listening on {proxy.socket_path}", flush=True)
    shown = 0
    try:
        while not done.wait(0.2):
            for refusal in proxy.refusals_since(shown):
                print(refusal.line(), file=sys.stderr, flush=True)
                shown += 1
    finally:
        proxy.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
