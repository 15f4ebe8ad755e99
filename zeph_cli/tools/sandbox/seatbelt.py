"""The macOS backend: a `sandbox-exec` (Seatbelt) profile made from the policy.

Invariant: `seatbelt_profile` is a pure function of the policy. The profile
allows everything but writing outside the writable paths (and, with the network
off, any network use); later rules win in Seatbelt, so the allow-list after the
blanket `deny file-write*` is what opens the writable paths. Paths never enter
the profile text: they are passed as `-D` parameters, so no path can break its
syntax.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .policy import WRITABLE_DEVICES, SandboxPolicy

__all__ = ["SANDBOX_EXEC", "probe_seatbelt", "seatbelt_command", "seatbelt_profile"]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
PROBE_TIMEOUT_SECS = 15


def seatbelt_profile(policy: SandboxPolicy) -> tuple[str, dict[str, str]]:
    """The profile text and the `-D` parameters it reads (WRITABLE_ROOT_0 … for the writable paths)."""
    params = {f"WRITABLE_ROOT_{i}": str(path) for i, path in enumerate(policy.writable)}
    roots = [f'    (subpath (param "{name}"))' for name in params]
    devices = [f'    (literal "{device}")' for device in WRITABLE_DEVICES]
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        "(allow file-write*",
        *roots,
        *devices,
        ")",
    ]
    if not policy.network:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n", params


def seatbelt_command(policy: SandboxPolicy, program: list[str]) -> list[str]:
    """`program` run by sandbox-exec under the policy's profile."""
    text, params = seatbelt_profile(policy)
    return [SANDBOX_EXEC, "-p", text, *(f"-D{name}={value}" for name, value in params.items()), "--", *program]


def probe_seatbelt() -> str | None:
    """None when sandbox-exec runs a command here; otherwise why not."""
    if sys.platform != "darwin":
        return f"sandbox-exec is macOS-only (this is {sys.platform})"
    if not Path(SANDBOX_EXEC).is_file():
        return f"{SANDBOX_EXEC} is missing"
    try:
        done = subprocess.run(
            [SANDBOX_EXEC, "-p", "(version 1)\n(allow default)\n", "/usr/bin/true"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_SECS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sandbox-exec could not run ({exc})"
    if done.returncode != 0:
        return f"sandbox-exec failed: {done.stderr.strip() or f'exit code {done.returncode}'}"
    return None
