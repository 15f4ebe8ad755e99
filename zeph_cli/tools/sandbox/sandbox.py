"""One agent's sandbox: the settings, the backend that enforces them, and its state in words.

Invariant: while the sandbox is enabled, `command` returns an argv under which
the program cannot write outside the policy's writable paths — or raises
`SandboxRefused` when strict and that cannot be guaranteed. When no backend works
and strict is off, the program runs unconfined and `take_notice` reports it
once. Backends are probed lazily (see `detect`).
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...config import SandboxConfig
from ..failures import ToolFailure
from .detect import BACKEND_CHOICES, bubblewrap_status, filesystem_backend
from .bubblewrap import network_isolation_prefix
from .denials import network_note, refused_write_note
from .landlock_backend import landlock_command, landlock_site
from .policy import SandboxPolicy, build_policy
from .seatbelt import seatbelt_command

__all__ = ["Sandbox", "SandboxRefused", "SandboxState"]

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")


class SandboxRefused(ToolFailure):
    """strict = true and no backend can enforce the sandbox: the command is not run."""


@dataclass(frozen=True)
class SandboxState:
    """What confines commands: `backend` ("landlock", "landlock+bubblewrap", "seatbelt") or None."""

    enabled: bool
    backend: str | None
    policy: SandboxPolicy | None
    problem: str | None = None  # why there is no backend, or why the network is not isolated
    strict: bool = False
    off_reason: str = ""

    @property
    def refuses(self) -> bool:
        return self.enabled and self.strict and self.problem is not None

    def line(self) -> str:
        """`sandbox: landlock (workspace, network allowed)` or `sandbox: unavailable — why`."""
        if not self.enabled:
            return f"sandbox: off ({self.off_reason})"
        if self.backend is None:
            consequence = "shell commands are refused (strict = true)" if self.strict else "shell commands run unconfined"
            return f"sandbox: unavailable — {self.problem}; {consequence}"
        assert self.policy is not None
        if self.problem is None:
            return f"sandbox: {self.backend} ({self.policy.describe()})"
        consequence = "shell commands are refused (strict = true)" if self.strict else "commands can still use it"
        return f"sandbox: {self.backend} ({self.policy.profile}, network not isolated — {self.problem}; {consequence})"


class Sandbox:
    """Built once per agent from `[tools.sandbox]` and the workspace roots (workspace + allowed_paths).

    `backend` forces the choice ("auto", "landlock", "seatbelt" or "none"); "none" stands for a
    machine where nothing works.
    """

    def __init__(self, settings: SandboxConfig, workspace: Sequence[Path], *, cwd: Path, backend: str = "auto") -> None:
        if backend not in BACKEND_CHOICES:
            raise ValueError(f"unknown sandbox backend {backend!r}")
        self.settings = settings
        self.workspace = tuple(workspace)
        self.cwd = cwd
        self.backend_choice = backend
        self._state: SandboxState | None = None
        self._noticed = False

    @property
    def enabled(self) -> bool:
        return self.settings.enabled and self.settings.profile != "off"

    def state(self) -> SandboxState:
        """The sandbox as it will run commands (probing the backends the first time)."""
        if self._state is None:
            self._state = self._settle()
        return self._state

    def _settle(self) -> SandboxState:
        settings = self.settings
        if not settings.enabled:
            return SandboxState(False, None, None, off_reason="[tools.sandbox] enabled = false")
        if settings.profile == "off":
            return SandboxState(False, None, None, off_reason='[tools.sandbox] profile = "off"')
        temp_dir = Path(tempfile.mkdtemp(prefix="zeph-sandbox-"))
        weakref.finalize(self, shutil.rmtree, temp_dir, True)
        policy = build_policy(
            settings.profile, self.workspace, settings.allow_write, temp_dir, network=settings.allow_network, cwd=self.cwd
        )
        backend, problem = filesystem_backend(self.backend_choice)
        if backend is None:
            return SandboxState(True, None, policy, problem, settings.strict)
        if backend == "landlock" and not policy.network:
            bwrap, why = bubblewrap_status()
            if bwrap is None:
                return SandboxState(True, backend, policy, f"network isolation needs bubblewrap: {why}", settings.strict)
            backend = "landlock+bubblewrap"
        return SandboxState(True, backend, policy, None, settings.strict)

    def command(self, program: list[str]) -> list[str]:
        """The argv that runs `program` inside the sandbox (`program` itself when it is off or
        unavailable). Raises `SandboxRefused` when strict and the sandbox cannot be enforced."""
        state = self.state()
        if state.refuses:
            raise SandboxRefused(
                f"{Path(program[0]).name}: refused — [tools.sandbox] strict = true and the sandbox cannot be enforced here "
                f"({state.problem}); the user can set strict = false to run commands unconfined"
            )
        if state.backend is None or state.policy is None:
            return program
        if state.backend.startswith("landlock"):
            site = landlock_site()
            assert site is not None  # the probe found it
            argv = landlock_command(state.policy, program, site)
            if state.backend == "landlock+bubblewrap":
                bwrap, _ = bubblewrap_status()
                assert bwrap is not None
                argv = [*network_isolation_prefix(bwrap), *argv]
            return argv
        return seatbelt_command(state.policy, program)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the temp-dir variables pointing at the private temp dir (when sandboxed)."""
        state = self.state()
        out = dict(env)
        if state.backend is not None and state.policy is not None:
            for name in TEMP_VARIABLES:
                out[name] = str(state.policy.temp_dir)
        return out

    def explain(self, output: str, cwd: Path) -> list[str]:
        """Lines to add to a failed command's result when the sandbox is why it failed."""
        state = self.state()
        if state.backend is None or state.policy is None:
            return []
        notes = [refused_write_note(output, state.policy, cwd)]
        if "bubblewrap" in state.backend:
            notes.append(network_note(output, state.policy))
        return [n for n in notes if n]

    def take_notice(self) -> str | None:
        """Once, after the backends were probed: the warning that commands are not confined."""
        if self._noticed or self._state is None or not self._state.enabled or self._state.problem is None:
            return None
        self._noticed = True
        return self._state.line()
