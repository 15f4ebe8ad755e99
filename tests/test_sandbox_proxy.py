"""The host allow-list proxy and its relay, for real: unix and TCP sockets, a target server on loopback,
curl and urllib through the relay inside bubblewrap's network namespace, under the real launcher.

The target listens on 127.0.0.2 (loopback, but not in NO_PROXY), and the proxy reaches it through an
explicit `127.0.0.2:PORT` pattern. Socket timeouts below only turn a hang into a failure.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from zeph_cli.tools.sandbox.bubblewrap import probe_bubblewrap
from zeph_cli.tools.sandbox.host_proxy import (
    HostPolicy,
    HostProxy,
    ProxyLimits,
    is_private,
    parse_host_patterns,
    refusal_note,
)
from zeph_cli.tools.sandbox.landlock_backend import (
    LAUNCHER,
    landlock_site,
    probe_landlock,
)
from zeph_cli.tools.sandbox.policy import WRITABLE_DEVICES

HANG = 30  # seconds before a blocked socket read counts as a failure
BWRAP, BWRAP_PROBLEM = probe_bubblewrap()
LANDLOCK_PROBLEM = probe_landlock()
needs_sandbox = pytest.mark.skipif(
    BWRAP is None or LANDLOCK_PROBLEM is not None,
    reason=f"bubblewrap: {BWRAP_PROBLEM}; Landlock: {LANDLOCK_PROBLEM}",
)
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"bubblewrap: {BWRAP_PROBLEM}")


# ---- a target server and the proxy -------------------------------------------------------------------


class Target:
    """An HTTP server on loopback that answers every GET with what it saw (Host header and path)."""

    def __init__(self, address: str = "127.0.0.2", tls: ssl.SSLContext | None = None) -> None:
        seen: list[tuple[str, str]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((",".join(self.headers.get_all("Host", [])), self.path))
                body = f"target says: host={self.headers.get('Host')} path={self.path}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.seen = seen
        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.address = address
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def pattern(self) -> str:
        return f"{self.address}:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def target() -> Iterator[Target]:
    server = Target()
    yield server
    server.close()


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a unix socket path holds at most 107 bytes."""
    directory = Path(tempfile.mkdtemp(prefix="zp-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def proxy_for(short_dir: Path) -> Iterator:
    started: list[HostProxy] = []

    def start(*patterns: str, limits: ProxyLimits | None = None) -> HostProxy:
        proxy = HostProxy(short_dir / f"p{len(started)}.sock", patterns, limits)
        proxy.start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.close()


def connect(proxy: HostProxy) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANG)
    sock.connect(proxy.socket_path)
    return sock


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def exchange(proxy: HostProxy, data: bytes) -> bytes:
    with connect(proxy) as sock:
        sock.sendall(data)
        return read_all(sock)


def status_and_body(response: bytes) -> tuple[str, str]:
    head, _, body = response.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0].decode(), body.decode()


def tunnel_get(proxy: HostProxy, authority: str, path: str = "/") -> tuple[str, bytes]:
    """CONNECT authority, then a GET inside the tunnel: (the CONNECT status line, the tunnelled response)."""
    with connect(proxy) as sock:
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        status = read_head(sock).split(b"\r\n", 1)[0].decode()
        if " 200 " not in status:
            return status, read_all(sock)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
        return status, read_all(sock)


# ---- patterns ----------------------------------------------------------------------------------------


def test_patterns_match_names_wildcards_ports_and_addresses():
    policy = HostPolicy(parse_host_patterns([
        "pypi.org", "*.pythonhosted.org", "GitHub.com.", "example.com:8443", "127.0.0.1:9000", "[::1]:9001",
        "bücher.example", "straße.example",
    ]))
    allowed = [
        ("pypi.org", 443), ("PyPI.org", 80), ("pypi.org.", 443), ("github.com", 443),
        ("files.pythonhosted.org", 443), ("a.b.pythonhosted.org", 443), ("example.com", 8443),
        ("127.0.0.1", 9000), ("::1", 9001), ("[::1]", 9001),
        ("bücher.example", 443), ("xn--bcher-kva.example", 443), ("BÜCHER.example", 443),
        ("xn--strae-oqa.example", 443), ("strasse.example", 443),  # IDNA 2008 (curl) and 2003 forms of ß
    ]
    refused = [
        ("evil.example", 443), ("pypi.org.evil.example", 443), ("evilpypi.org", 443), ("sub.pypi.org", 443),
        ("pythonhosted.org", 443),  # the wildcard is for the names below it, not the domain itself
        ("evilpythonhosted.org", 443), ("pythonhosted.org.evil", 443),
        ("pypi.org", 22), ("pypi.org", 8443), ("example.com", 443),  # a listed port replaces 80 and 443
        ("127.0.0.1", 9001), ("127.0.0.1", 443), ("::1", 9000),
        ("127.1", 9000), ("2130706433", 9000), ("0x7f.0.0.1", 9000),  # IPv4 written loosely is no name
        ("localhost", 9000), ("", 443), ("pypi.org/x", 443), ("pypi org", 443),
    ]
    assert [h for h in allowed if not policy.allows(*h)] == []
    assert [h for h in refused if policy.allows(*h)] == []


@pytest.mark.parametrize("entry, says", [
    ("*", "allow_network = true"),
    ("https://github.com/", "write 'github.com'"),
    ("github.com/python", "a host, not a URL"),
    ("foo*.example.com", "leading \"*.\""),
    ("*.com", "a domain with a dot"),
    ("pypi.org:99999", "1 to 65535"),
    ("pypi.org:https", "1 to 65535"),
    ("", "empty"),
    ("127.1", "four decimal numbers"),
    ("[pypi.org]:443", "IPv6"),
    ("bad_host!", "not a host name"),
])
def test_a_bad_pattern_is_one_line_naming_it(entry, says):
    with pytest.raises(ValueError) as caught:
        parse_host_patterns(["pypi.org", entry])
    message = str(caught.value)
    assert message.startswith(f"[tools.sandbox] allowed_hosts: {entry!r} is not a host pattern")
    assert says in message and "\n" not in message


def test_private_addresses_are_the_ones_a_name_never_reaches():
    private = ["127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
               "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fd00::1", "fe80::1",
               "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::", "64:ff9b::a00:1", "::127.0.0.1"]
    public = ["8.8.8.8", "151.101.0.223", "203.0.113.80", "198.18.0.1", "2606:4700::1", "::ffff:8.8.8.8"]
    assert [a for a in private if not is_private(ipaddress.ip_address(a))] == []
    assert [a for a in public if is_private(ipaddress.ip_address(a))] == []


# ---- the proxy on its unix socket --------------------------------------------------------------------


def test_an_allowed_host_is_reached_through_connect_and_plain_requests(proxy_for, target):
    proxy = proxy_for(target.pattern)
    status, response = tunnel_get(proxy, target.pattern, "/tunnelled")
    assert status == "HTTP/1.1 200 Connection established"
    assert f"target says: host={target.pattern} path=/tunnelled" in response.decode()
    # A plain request goes to the host its URL names, whatever Host header it carries.
    response = exchange(proxy, f"GET http://{target.pattern}/plain?q=1 HTTP/1.1\r\nHost: evil.example\r\n"
                               f"Proxy-Connection: keep-alive\r\n\r\n".encode())
    status, body = status_and_body(response)
    assert status.startswith("HTTP/1.0 200"), response
    assert body == f"target says: host={target.pattern} path=/plain?q=1\n"
    assert target.seen == [(target.pattern, "/tunnelled"), (target.pattern, "/plain?q=1")]
    assert proxy.refusals_since(0) == []


def test_a_host_not_listed_gets_403_naming_it_and_the_setting(proxy_for, target):
    proxy = proxy_for("pypi.org", "*.pythonhosted.org")
    mark = proxy.mark()
    for request in (f"CONNECT {target.pattern} HTTP/1.1\r\n\r\n",
                    f"GET http://{target.pattern}/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
                    "CONNECT pythonhosted.org:443 HTTP/1.1\r\n\r\n",
                    "CONNECT pypi.org:22 HTTP/1.1\r\n\r\n"):
        status, body = status_and_body(exchange(proxy, request.encode()))
        assert status.startswith("HTTP/1.1 403 "), (request, status)
        assert "[tools.sandbox] allowed_hosts" in status  # pip and urllib show the reason phrase
        assert body.count("\n") == 1 and "[tools.sandbox] allowed_hosts" in body
    assert body == ('zeph sandbox: pypi.org:22 is not in [tools.sandbox] allowed_hosts, so commands cannot reach '
                    'it; the user can add "pypi.org:22" to that list to allow it\n')
    assert target.seen == []
    hosts = [r.host for r in proxy.refusals_since(mark)]
    assert hosts == [target.pattern, target.pattern, "pythonhosted.org", "pypi.org:22"]
    note = refusal_note(proxy.refusals_since(mark), proxy.patterns)
    assert note == (
        f"[sandbox: the network requests to {target.pattern}, pythonhosted.org, pypi.org:22 were refused — "
        f"commands may reach only the hosts in [tools.sandbox] allowed_hosts (pypi.org, *.pythonhosted.org). "
        f'If the user wants commands to reach them, they can add "{target.pattern}", "pythonhosted.org", '
        f'"pypi.org:22" to [tools.sandbox] allowed_hosts (or allow every host with allow_network = true)]'
    )
    assert refusal_note(proxy.refusals_since(proxy.mark()), proxy.patterns) is None


def test_requests_that_are_not_proxy_requests_are_answered_400(proxy_for, target):
    proxy = proxy_for(target.pattern)
    for request, says in [
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP_PROXY"),
        ("GET ftp://x/ HTTP/1.1\r\n\r\n", "only http:// URLs"),
        (f"GET http://user@{target.pattern}/ HTTP/1.1\r\n\r\n", "credentials"),
        ("CONNECT 127.1:443 HTTP/1.1\r\n\r\n", "four decimal numbers"),
        ("CONNECT nohost HTTP/1.1\r\n\r\n", "host:port"),
        ("HELLO\r\n\r\n", "not an HTTP/1.x request line"),
        (f"GET http://{target.pattern}/ HTTP/1.1\r\nno colon here\r\n\r\n", "not a header line"),
    ]:
        status, body = status_and_body(exchange(proxy, request.encode()))
        assert status.startswith("HTTP/1.1 400"), request
        assert says in body, (request, body)
    assert target.seen == []


def test_an_oversized_request_head_is_refused_431(proxy_for, target):
    proxy = proxy_for(target.pattern, limits=ProxyLimits(max_head_bytes=4096))
    response = exchange(proxy, f"GET http://{target.pattern}/ HTTP/1.1\r\nX: {'a' * 8000}\r\n\r\n".encode())
    assert status_and_body(response)[0].startswith("HTTP/1.1 431")
    assert target.seen == []


def test_slow_and_half_open_clients_do_not_block_others(proxy_for, target):
    proxy = proxy_for(target.pattern)
    stalled = [connect(proxy) for _ in range(20)]
    try:
        for sock in stalled:
            sock.sendall(f"CONNECT {target.pattern} HTTP/1.1\r\n".encode())  # never finished
        status, response = tunnel_get(proxy, target.pattern, "/meanwhile")
        assert status == "HTTP/1.1 200 Connection established"
        assert b"path=/meanwhile" in response
    finally:
        for sock in stalled:
            sock.close()


def test_a_client_that_never_finishes_its_request_is_dropped(proxy_for, target):
    proxy = proxy_for(target.pattern, limits=ProxyLimits(head_timeout=0.2))
    with connect(proxy) as sock:
        sock.sendall(f"CONNECT {target.pattern} HTTP/1.1\r\n".encode())
        status, body = status_and_body(read_all(sock))
    assert status.startswith("HTTP/1.1 408") and "no complete request" in body


def test_an_idle_tunnel_is_closed(proxy_for, target):
    proxy = proxy_for(target.pattern, limits=ProxyLimits(idle_timeout=0.2))
    with connect(proxy) as sock:
        sock.sendall(f"CONNECT {target.pattern} HTTP/1.1\r\n\r\n".encode())
        assert read_head(sock).startswith(b"HTTP/1.1 200")
        assert read_all(sock) == b""  # closed by the proxy, not by the blocked-read timeout


def test_connections_beyond_the_limit_are_answered_503(proxy_for, target):
    proxy = proxy_for(target.pattern, limits=ProxyLimits(max_connections=2))
    held = [connect(proxy) for _ in range(2)]
    try:
        for sock in held:
            sock.sendall(b"CONNECT ")
        status, body = status_and_body(exchange(proxy, f"CONNECT {target.pattern} HTTP/1.1\r\n\r\n".encode()))
        assert status.startswith("HTTP/1.1 503") and "more than 2 connections" in body
    finally:
        for sock in held:
            sock.close()
    assert target.seen == []


async def test_the_proxy_serves_while_the_callers_event_loop_waits_on_it(short_dir, target):
    """As the bash tool uses it: started and closed from inside a running loop, which it never blocks."""
    import asyncio

    proxy = HostProxy(short_dir / "p.sock", [target.pattern])
    proxy.start()
    try:
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(f"GET http://{target.pattern}/from-a-loop HTTP/1.1\r\n\r\n".encode())
        response = await asyncio.wait_for(reader.read(), HANG)
        writer.close()
    finally:
        proxy.close()
    assert response.endswith(f"target says: host={target.pattern} path=/from-a-loop\n".encode())


def test_close_stops_serving_and_removes_the_socket(short_dir, target):
    proxy = HostProxy(short_dir / "p.sock", [target.pattern])
    with proxy:
        held = connect(proxy)
        held.sendall(f"CONNECT {target.pattern} HTTP/1.1\r\n\r\n".encode())
        assert read_head(held).startswith(b"HTTP/1.1 200")
    assert not (short_dir / "p.sock").exists()
    assert read_all(held) == b""  # the open tunnel was dropped
    held.close()
    assert not any(t.name == "zeph-host-proxy" and t.is_alive() for t in threading.enumerate())


def test_a_socket_path_too_long_is_one_error_naming_it(tmp_path):
    path = tmp_path / ("x" * 120) / "p.sock"
    with pytest.raises(OSError) as caught:
        HostProxy(path, ["pypi.org"]).start()
    assert str(path) in str(caught.value) and "107 bytes" in str(caught.value)


@needs_bwrap
def test_a_name_resolving_to_a_private_address_is_refused_unless_the_address_or_localhost_is_listed(
        short_dir, target):
    """DNS rebinding: names the proxy resolves to loopback (an /etc/hosts of its own, bound by bubblewrap)."""
    local = Target("127.0.0.1")
    hosts = short_dir / "hosts"
    hosts.write_text("127.0.0.1 localhost\n127.0.0.2 rebind.example a.wild.example\n")
    sock = short_dir / "r.sock"
    patterns = [f"rebind.example:{target.port}", f"*.wild.example:{target.port}", f"localhost:{local.port}"]
    server = subprocess.Popen(
        [BWRAP, "--dev-bind", "/", "/", "--ro-bind", str(hosts), "/etc/hosts", "--die-with-parent", "--",
         sys.executable, "-m", "zeph_cli.tools.sandbox.host_proxy", str(sock), *patterns],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("listening on")
        proxy = HostProxy(sock, patterns)  # not started: a handle on the running proxy's socket for the helpers
        for authority in (f"rebind.example:{target.port}", f"a.wild.example:{target.port}"):
            status, body = tunnel_get(proxy, authority)
            assert status.startswith("HTTP/1.1 403 "), (authority, status)
            assert "resolves to a private address (127.0.0.2)" in status
            assert body.decode() == (
                f"zeph sandbox: {authority} resolves to 127.0.0.2, a loopback or private address; [tools.sandbox] "
                f"allowed_hosts reaches such an address only when it lists the address itself "
                f'("127.0.0.2:{target.port}"), so the request was refused\n')
        status, _ = tunnel_get(proxy, f"wild.example:{target.port}")  # the wildcard's own domain: not listed
        assert "is not in [tools.sandbox] allowed_hosts" in status
        assert target.seen == []
        status, response = tunnel_get(proxy, f"localhost:{local.port}", "/local")
        assert status == "HTTP/1.1 200 Connection established" and b"path=/local" in response
    finally:
        server.terminate()
        server.wait(timeout=HANG)
        local.close()


# ---- the relay, inside the sandbox -------------------------------------------------------------------


def sandboxed(proxy: HostProxy, program: list[str], workdir: Path, *, env: dict[str, str] | None = None,
              wait: bool = True):
    """`program` run as zeph runs a command with allowed_hosts: bwrap's own network, then the launcher
    (Landlock) with the relay."""
    site = landlock_site()
    assert site is not None and BWRAP is not None
    argv = [sys.executable, "-I", "-S", str(LAUNCHER), site]
    for path in (workdir, *WRITABLE_DEVICES):
        argv += ["--write", str(path)]
    argv += ["--proxy-socket", proxy.socket_path, "--", *program]
    argv = [BWRAP, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", *argv]
    env = {**{k: v for k, v in os.environ.items() if "proxy" not in k.lower()}, **(env or {})}
    if not wait:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=workdir, env=env)
    return subprocess.run(argv, check=False, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
                          cwd=workdir, env=env)


@needs_sandbox
def test_curl_and_urllib_in_the_network_namespace_reach_the_allowed_host_and_no_other(proxy_for, target, short_dir):
    proxy = proxy_for(target.pattern)
    url = f"http://{target.pattern}"
    script = (
        f"curl -sS {url}/curl-plain; curl -sS -p {url}/curl-connect; "
        f"{sys.executable} -I -c 'import urllib.request as u; print(u.urlopen(\"{url}/urllib\").read().decode(), end=\"\")'; "
        f"curl -sS http://evil.example/; "
        f"curl -sS https://evil.example/ 2>&1; "
        f"curl -sS --noproxy '*' --max-time 20 {url}/direct 2>&1; "  # around the proxy: no network at all
        f"{sys.executable} -I -c 'import urllib.request as u; u.urlopen(\"https://evil.example/\")' 2>&1 | tail -1"
    )
    done = sandboxed(proxy, ["sh", "-c", script], short_dir)
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"target says: host={target.pattern} path=/curl-plain",
        f"target says: host={target.pattern} path=/curl-connect",
        f"target says: host={target.pattern} path=/urllib",
    ], done.stdout + done.stderr
    assert lines[3] == ('zeph sandbox: evil.example is not in [tools.sandbox] allowed_hosts, so commands cannot '
                        'reach it; the user can add "evil.example" to that list to allow it')
    assert lines[4] == "curl: (56) CONNECT tunnel failed, response 403"
    assert lines[5].startswith("curl: (7) Failed to connect to 127.0.0.2")
    assert lines[6] == ("urllib.error.URLError: <urlopen error Tunnel connection failed: 403 evil.example is not in "
                        "[tools.sandbox] allowed_hosts>")
    assert [path for _, path in target.seen] == ["/curl-plain", "/curl-connect", "/urllib"]
    assert [r.host for r in proxy.refusals_since(0)] == ["evil.example"] * 3


@needs_sandbox
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate")
def test_https_through_the_tunnel_checks_the_real_certificate(proxy_for, short_dir):
    key, cert = short_dir / "key.pem", short_dir / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.2", "-addext", "subjectAltName=IP:127.0.0.2"],
                   check=True, capture_output=True, timeout=60)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = Target(tls=tls)
    try:
        proxy = proxy_for(server.pattern)
        done = sandboxed(proxy, ["curl", "-sS", "--cacert", str(cert), f"https://{server.pattern}/secure"], short_dir)
        assert done.stdout == f"target says: host={server.pattern} path=/secure\n", done.stderr
    finally:
        server.close()


RELAY_CHECK = """
import os, sys
relays = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        comm = open(f"/proc/{pid}/comm").read().strip()
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    if comm == "zeph-net-relay" and sys.argv[1].encode() in cmdline:
        relays.append(int(pid))
print(*relays)
try:
    open(f"/proc/{relays[0]}/mem", "r+b").close()
    print("its memory: writable")
except OSError as exc:
    print("its memory:", type(exc).__name__)
sys.stdout.flush()
sys.stdin.read()  # until the test has looked at the relay
"""


@needs_sandbox
def test_the_relay_holds_no_output_cannot_be_taken_over_and_ends_with_the_command(proxy_for, target, short_dir):
    proxy = proxy_for(target.pattern)
    command = sandboxed(proxy, [sys.executable, "-I", "-c", RELAY_CHECK, proxy.socket_path], short_dir, wait=False)
    assert command.stdout is not None and command.stdin is not None
    try:
        pids = command.stdout.readline().split()
        assert len(pids) == 1, pids
        relay = int(pids[0])
        assert command.stdout.readline() == "its memory: PermissionError\n"  # Landlock: no tracing outside
        output = f"pipe:[{os.fstat(command.stdout.fileno()).st_ino}]"
        held = [fd.name for fd in Path(f"/proc/{relay}/fd").iterdir() if os.readlink(fd) == output]
        assert held == []
    finally:
        command.stdin.close()
        command.wait(timeout=HANG)
    deadline = time.monotonic() + HANG
    while Path(f"/proc/{relay}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Path(f"/proc/{relay}").exists(), "the relay outlived the command"


@needs_sandbox
def test_a_proxy_gone_during_the_command_is_a_502_line_not_a_dropped_connection(proxy_for, target, short_dir):
    proxy = proxy_for(target.pattern)
    command = sandboxed(proxy, ["sh", "-c", f"echo running; read go; curl -sS http://{target.pattern}/"],
                        short_dir, wait=False)
    assert command.stdin is not None and command.stdout is not None
    assert command.stdout.readline() == "running\n"
    proxy.close()
    command.stdin.write("go\n")
    command.stdin.close()
    assert command.stdout.read().startswith("zeph sandbox: zeph's network proxy is not answering (")
    assert command.wait(timeout=HANG) == 0
    assert target.seen == []


@needs_sandbox
def test_the_launcher_refuses_to_run_when_the_proxy_does_not_answer(short_dir):
    proxy = HostProxy(short_dir / "absent.sock", ["pypi.org"])  # never started
    done = sandboxed(proxy, ["sh", "-c", "echo ran"], short_dir)
    assert done.returncode == 125 and done.stdout == ""
    assert done.stderr == (f"zeph sandbox: zeph's network proxy does not answer at {proxy.socket_path} "
                           f"(No such file or directory); the command was not run\n")


@needs_sandbox
def test_the_command_gets_the_proxy_variables_and_servers_it_starts_are_reached_directly(proxy_for, target, short_dir):
    proxy = proxy_for(target.pattern)
    script = (
        "env | grep -i _proxy=; "
        f"{sys.executable} -I -u -m http.server 0 --bind 127.0.0.1 >{short_dir}/srv.log 2>&1 & "
        "for i in $(seq 200); do grep -q 'port' " + f"{short_dir}/srv.log" + " && break; sleep 0.05; done; "
        "port=$(sed -n 's/.*port \\([0-9]*\\).*/\\1/p' " + f"{short_dir}/srv.log); "
        "curl -sS -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:$port/; kill $!"
    )
    done = sandboxed(proxy, ["sh", "-c", script], short_dir, env={"HTTPS_PROXY": "http://corporate:3128"})
    lines = done.stdout.splitlines()
    port = next(line for line in lines if line.startswith("HTTP_PROXY=")).rsplit(":", 1)[1]
    assert sorted(lines[:8]) == sorted([
        f"ALL_PROXY=http://127.0.0.1:{port}", f"all_proxy=http://127.0.0.1:{port}",
        f"HTTPS_PROXY=http://127.0.0.1:{port}", f"https_proxy=http://127.0.0.1:{port}",
        f"HTTP_PROXY=http://127.0.0.1:{port}", f"http_proxy=http://127.0.0.1:{port}",
        "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
    ]), done.stdout + done.stderr
    assert lines[8] == "200"  # the sandbox's own loopback, not through the proxy
    assert proxy.refusals_since(0) == []
