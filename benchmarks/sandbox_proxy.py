"""What `[tools.sandbox] allowed_hosts` costs: the host proxy and the relay beside their baselines.

Prints, each as the median (and min) of RUNS runs:
- `HostProxy` start + close (a proxy per command costs this);
- a command (`true`) under bubblewrap's own network and the launcher, without and with `--proxy-socket`
  (the relay's fork and the proxy variables are the difference);
- curl downloading SIZE_MB from a loopback server: directly (the baseline), then from inside the sandbox
  through the relay and the proxy, as a plain request and through a CONNECT tunnel;
- the relay's resident memory.

Run from the repository root with the project installed (Linux with Landlock and bubblewrap):

    python benchmarks/sandbox_proxy.py
    RUNS=20 SIZE_MB=256 python benchmarks/sandbox_proxy.py

It asserts nothing; the machine's load average is printed with the figures.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from zeph_cli.tools.sandbox.bubblewrap import probe_bubblewrap
from zeph_cli.tools.sandbox.host_proxy import HostProxy
from zeph_cli.tools.sandbox.landlock_backend import (
    LAUNCHER,
    landlock_site,
    probe_landlock,
)
from zeph_cli.tools.sandbox.policy import WRITABLE_DEVICES

RUNS = int(os.environ.get("RUNS", "10"))
SIZE_MB = int(os.environ.get("SIZE_MB", "128"))
CHUNK = 1024 * 1024


def serve_zeros(size: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            block = bytes(CHUNK)
            for _ in range(size // CHUNK):
                self.wfile.write(block)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def timed(fn, runs: int = RUNS) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def line(label: str, seconds: list[float], unit: str = "ms", size: int | None = None) -> None:
    if size is None:
        print(f"  {label:<58} median {statistics.median(seconds) * 1000:7.1f} {unit}   min {min(seconds) * 1000:7.1f} {unit}")
    else:
        rates = [size / s / 1e6 for s in seconds]
        print(f"  {label:<58} median {statistics.median(rates):7.0f} MB/s  max {max(rates):7.0f} MB/s")


def main() -> int:
    bwrap, why = probe_bubblewrap()
    problem = probe_landlock()
    site = landlock_site()
    if bwrap is None or problem is not None or site is None:
        print(f"needs bubblewrap and Landlock: {why or problem}")
        return 1
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {RUNS} runs each, {SIZE_MB} MB downloads")
    directory = Path(tempfile.mkdtemp(prefix="zp-bench-"))
    size = SIZE_MB * CHUNK
    server = serve_zeros(size)
    authority = f"127.0.0.2:{server.server_address[1]}"
    try:
        def start_close() -> None:
            with HostProxy(directory / "once.sock", [authority]):
                pass

        line("HostProxy start + close", timed(start_close, max(RUNS, 50)))
        proxy = HostProxy(directory / "p.sock", [authority])
        proxy.start()

        def sandboxed(program: list[str], relay: bool) -> list[str]:
            argv = [sys.executable, "-I", "-S", str(LAUNCHER), site]
            for path in (directory, *WRITABLE_DEVICES):
                argv += ["--write", str(path)]
            if relay:
                argv += ["--proxy-socket", proxy.socket_path]
            return [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", *argv, "--", *program]

        def run(argv: list[str]) -> None:
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

        plain = sandboxed(["true"], relay=False)
        relayed = sandboxed(["true"], relay=True)
        run(plain)
        run(relayed)
        base, with_relay = [], []
        for _ in range(RUNS):  # interleaved
            base += timed(lambda: run(plain), 1)
            with_relay += timed(lambda: run(relayed), 1)
        line("`true` in bwrap --unshare-net + launcher (baseline)", base)
        line("`true` in bwrap --unshare-net + launcher --proxy-socket", with_relay)

        curl = ["curl", "-sS", "-o", "/dev/null", f"http://{authority}/"]
        direct = [*curl, "--noproxy", "*"]
        inside = sandboxed(curl, relay=True)
        tunnel = sandboxed([*curl, "-p"], relay=True)
        runs: dict[str, list[float]] = {"direct": [], "inside": [], "tunnel": []}
        for _ in range(max(RUNS // 2, 3)):
            runs["direct"] += timed(lambda: run(direct), 1)
            runs["inside"] += timed(lambda: run(inside), 1)
            runs["tunnel"] += timed(lambda: run(tunnel), 1)
        line("curl on the host, no proxy (baseline)", runs["direct"], size=size)
        line("curl in the sandbox, plain request via relay + proxy", runs["inside"], size=size)
        line("curl in the sandbox, CONNECT tunnel via relay + proxy", runs["tunnel"], size=size)

        find = "for p in /proc/[0-9]*; do grep -q zeph-net-relay $p/comm 2>/dev/null && grep VmRSS $p/status; done; true"
        rss = subprocess.run(sandboxed(["sh", "-c", find], relay=True), check=True, capture_output=True,
                             text=True).stdout.split()
        print(f"  relay resident memory: {' '.join(rss[1:3]) if len(rss) >= 3 else 'not found'}")
        proxy.close()
    finally:
        server.shutdown()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
