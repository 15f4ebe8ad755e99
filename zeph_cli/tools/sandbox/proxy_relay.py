"""The relay inside the sandbox: a loopback port whose connections go to zeph's host proxy (a unix socket).

`start(socket_path)` runs in the launcher before it confines itself and execs the command: it binds
127.0.0.1:<free port> (in the sandbox's own network namespace, only the sandbox reaches it), forks the relay
detached from the launcher (a double fork, so the command never sees an extra child to wait for) and returns
the proxy variables for the command: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY in both cases, and NO_PROXY for
loopback, so servers a command starts inside the sandbox are reached directly.

Invariant: the relay copies bytes between each accepted connection and a new connection to `socket_path`
and does nothing else; the proxy outside decides what goes through. It holds none of the command's
standard streams or other descriptors (a tool reading the command's output sees its end when the command
ends), and exits once the watched process — the launcher, which becomes the command — has ended. It is forked
before the Landlock ruleset and any seccomp filter are applied, so neither can stop it from connecting
to the socket; a confined command cannot trace it (Landlock refuses tracing a process outside the
command's domain), only stop it, which costs that command its network. At most `MAX_CONNECTIONS` at once,
two threads each.

Standard library only: the launcher loads this file by path under `python -I -S`; never `zeph_cli`.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the launcher, which then execs the command, needs it not
    import threading

__all__ = ["MAX_CONNECTIONS", "RelayFailed", "proxy_environment", "start"]

MAX_CONNECTIONS = 64
CHUNK_BYTES = 64 * 1024
CONNECT_TIMEOUT_SECS = 10.0
THREAD_STACK_BYTES = 256 * 1024
NO_PROXY = "localhost,127.0.0.1,::1"
PROCESS_NAME = b"zeph-net-relay"


class RelayFailed(Exception):
    """The relay cannot be started; the message says why."""


def proxy_environment(port: int) -> dict[str, str]:
    """The variables that send a command's HTTP(S) clients through the relay on `port`."""
    url = f"http://127.0.0.1:{port}"
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = NO_PROXY
    return env


def start(socket_path: str) -> dict[str, str]:
    """Fork the relay to `socket_path` and return the environment for the command. Raises RelayFailed."""
    try:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(CONNECT_TIMEOUT_SECS)
            probe.connect(socket_path)
        finally:
            probe.close()
    except OSError as exc:
        raise RelayFailed(f"zeph's network proxy does not answer at {socket_path} ({exc.strerror or exc})") from None
    try:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(MAX_CONNECTIONS)
        port = listener.getsockname()[1]
    except OSError as exc:
        raise RelayFailed(f"the network relay cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None
    watched = os.getpid()
    try:
        watch_fd = os.pidfd_open(watched)  # readable once the launcher (then the command) has ended
    except (AttributeError, OSError):
        watch_fd = None
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked processes
        code = 1
        try:
            if os.fork() == 0:
                _serve(listener, socket_path, watched, watch_fd)
            code = 0
        finally:
            os._exit(code)
    listener.close()
    if watch_fd is not None:
        os.close(watch_fd)
    _, status = os.waitpid(child, 0)
    if status != 0:
        raise RelayFailed("the network relay could not be forked")
    return proxy_environment(port)


def _serve(listener: socket.socket, socket_path: str, watched: int, watch_fd: int | None) -> None:  # pragma: no cover
    """The relay's life: detached from the command's streams, serving until the watched process ends."""
    import select  # here, not at the top: the launcher, which execs the command, never needs them
    import threading

    code = 0
    try:
        _detach(keep={listener.fileno(), *(() if watch_fd is None else (watch_fd,))})
        threading.stack_size(THREAD_STACK_BYTES)
        active = threading.BoundedSemaphore(MAX_CONNECTIONS)
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        if watch_fd is not None:
            poller.register(watch_fd, select.POLLIN)
        while True:
            events = poller.poll(None if watch_fd is not None else 500)
            if watch_fd is not None and any(fd == watch_fd for fd, _ in events):
                return
            if watch_fd is None and not _alive(watched):
                return
            if not any(fd == listener.fileno() for fd, _ in events):
                continue
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            if not active.acquire(blocking=False):
                _answer(client, 503, f"more than {MAX_CONNECTIONS} connections at once through the sandbox's relay")
                client.close()
                continue
            try:
                threading.Thread(target=_relay, args=(client, socket_path, active), daemon=True).start()
            except RuntimeError:  # no thread can be started (a process limit): this connection only fails
                client.close()
                active.release()
    except BaseException:  # noqa: BLE001 - the relay ends; only the command's network goes with it
        code = 1
    finally:
        os._exit(code)


def _detach(keep: set[int]) -> None:  # pragma: no cover
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for fd in _open_fds():
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    try:
        with open("/proc/self/comm", "wb") as comm:  # `ps` shows what it is, not a second launcher
            comm.write(PROCESS_NAME)
    except OSError:
        pass


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


def _alive(pid: int) -> bool:
    """Whether `pid` is running (a zombie has ended), for kernels without pidfd_open."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _relay(client: socket.socket, socket_path: str, active: threading.BoundedSemaphore) -> None:  # pragma: no cover
    import threading

    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            upstream.settimeout(CONNECT_TIMEOUT_SECS)
            upstream.connect(socket_path)
            upstream.settimeout(None)
        except OSError as exc:
            _answer(client, 502, f"zeph's network proxy is not answering ({exc.strerror or exc})")
            return
        back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
        back.start()
        _copy(client, upstream)
        back.join()
    except (OSError, RuntimeError):
        pass
    finally:
        client.close()
        upstream.close()
        active.release()


def _answer(client: socket.socket, status: int, why: str) -> None:  # pragma: no cover
    """An HTTP error to a client the relay cannot serve (it speaks HTTP to its proxy first)."""
    line = f"zeph sandbox: {why}\n".encode()
    try:
        client.settimeout(1.0)
        reason = b"Bad Gateway" if status == 502 else b"Service Unavailable"
        client.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (status, reason, len(line), line))
    except OSError:
        pass


def _copy(source: socket.socket, sink: socket.socket) -> None:  # pragma: no cover
    """Bytes from `source` to `sink` until `source` ends (then half-close `sink`) or either fails (then
    shut both, which ends the other direction too)."""
    try:
        while data := source.recv(CHUNK_BYTES):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
