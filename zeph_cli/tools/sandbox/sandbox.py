"""One agent's sandbox: the settings, the backends that enforce them, and its state in words.

Invariant: while the sandbox is enabled, `prepare` returns a launch whose argv runs the program
so that it cannot write outside the policy's writable paths — or raises `SandboxRefused` when strict and
some protection cannot be had here. On Linux the argv is a process limit, then the bubblewrap
wall (read-only `/`, private `/tmp`, PID/IPC/UTS/network namespaces, secret stores hidden, git's
and zeph's own files read-only, outside unix sockets covered), then the Landlock launcher; each
part that cannot run here is named in `SandboxState.missing`, which `take_notice` reports once.
When nothing works and strict is off, the program runs unconfined. Backends are probed lazily
(see `detect`), by running them.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...config import SandboxConfig
from ..failures import ToolFailure
from .bubblewrap import INSIDE_NETWORK_DIR, INSIDE_TEMP, WallLayout, wall_prefix
from .denials import hidden_note, network_note, process_note, protected_note, refused_write_note
from .detect import BACKEND_CHOICES, bubblewrap_status, filesystem_backend
from .host_proxy import HostProxy, refusal_note
from .landlock_backend import LAUNCHER, landlock_command, landlock_probe, landlock_site
from .limits import ProcessLimit
from .policy import SandboxPolicy, build_policy
from .protected import Protection, ZephFiles, protection, setting_paths
from .seatbelt import seatbelt_command
from .sockets import bound_socket_paths

__all__ = ["Launch", "Sandbox", "SandboxRefused", "SandboxState"]

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
PROXY_SOCKET = "proxy.sock"


class SandboxRefused(ToolFailure):
    """strict = true and some protection cannot be had here: the command is not run."""


@dataclass(frozen=True)
class SandboxState:
    """What confines commands: `backend` ("bubblewrap+landlock", "bubblewrap", "landlock", "seatbelt")
    or None, and `missing`, the protections that could not be had here (each says why)."""

    enabled: bool
    backend: str | None
    policy: SandboxPolicy | None
    missing: tuple[str, ...] = ()
    strict: bool = False
    off_reason: str = ""
    applied: str = ""  # what the launcher was checked to apply: `landlock ABI 7, seccomp, scopes: …`

    @property
    def wall(self) -> bool:
        return self.backend is not None and self.backend.startswith("bubblewrap")

    @property
    def problem(self) -> str | None:
        return "; ".join(self.missing) or None

    @property
    def refuses(self) -> bool:
        return self.enabled and self.strict and bool(self.missing)

    def line(self) -> str:
        """`sandbox: bubblewrap+landlock (workspace, network blocked)` or `sandbox: unavailable — why`."""
        if not self.enabled:
            return f"sandbox: off ({self.off_reason})"
        if self.backend is None:
            consequence = "shell commands are refused (strict = true)" if self.strict else "shell commands run unconfined"
            return f"sandbox: unavailable — {self.problem}; {consequence}"
        assert self.policy is not None
        head = f"sandbox: {self.backend} ({self.policy.describe()})" + (f" · {self.applied}" if self.applied else "")
        if not self.missing:
            return head
        consequence = "shell commands are refused (strict = true)" if self.strict else "commands run without it"
        return f"{head}; missing: {self.problem}; {consequence}"


@dataclass(frozen=True)
class Launch:
    """One command's way into the sandbox: its argv, and what `Sandbox.finish` tidies after it."""

    argv: list[str]
    guard: Protection = Protection()  # what the wall kept hidden or read-only for this command
    proxy_mark: int | None = None  # where the proxy's refusals stood when it started


class Sandbox:
    """Built once per agent from `[tools.sandbox]` and the workspace roots (workspace + allowed_paths).

    `backend` forces the choice ("auto", "landlock", "seatbelt" or "none"): "landlock" is Landlock
    without the bubblewrap wall, "none" stands for a machine where nothing works.
    """

    def __init__(self, settings: SandboxConfig, workspace: Sequence[Path], *, cwd: Path, backend: str = "auto") -> None:
        if backend not in BACKEND_CHOICES:
            raise ValueError(f"unknown sandbox backend {backend!r}")
        self.settings = settings
        self.workspace = tuple(workspace)
        self.cwd = cwd
        self.backend_choice = backend
        self.home = Path.home()
        self._state: SandboxState | None = None
        self._settling = threading.Lock()
        self._layout: WallLayout | None = None
        self._limit: ProcessLimit | None = None
        self._proxy: HostProxy | None = None
        self._noticed = False

    @property
    def enabled(self) -> bool:
        return self.settings.enabled and self.settings.profile != "off"

    def state(self) -> SandboxState:
        """The sandbox as it will run commands (probing the backends the first time, once, whichever thread
        asks first: the chat app's status line and a command's spawn may ask together)."""
        with self._settling:
            if self._state is None:
                self._state = self._settle()
            return self._state

    def _settle(self) -> SandboxState:
        settings = self.settings
        if not settings.enabled:
            return SandboxState(False, None, None, off_reason="[tools.sandbox] enabled = false")
        if settings.profile == "off":
            return SandboxState(False, None, None, off_reason='[tools.sandbox] profile = "off"')
        parent = Path(tempfile.mkdtemp(prefix="zeph-sandbox-"))
        weakref.finalize(self, shutil.rmtree, parent, True)
        self._layout = WallLayout.make(parent)
        policy = build_policy(
            settings.profile, self.workspace, settings.allow_write, self._layout.temp,
            network=settings.allow_network, cwd=self.cwd,
        )
        fs_backend, fs_problem = filesystem_backend(self.backend_choice)
        if not sys.platform.startswith("linux") or self.backend_choice in ("landlock", "none"):
            wall, wall_problem = None, ("the bubblewrap wall was not chosen" if self.backend_choice != "none" else None)
        else:
            wall, wall_problem = bubblewrap_status()
        missing: list[str] = []
        if wall is None and fs_backend is None:
            return SandboxState(True, None, policy, (fs_problem or wall_problem or "no sandbox backend works here",),
                                settings.strict)
        if sys.platform.startswith("linux"):
            if wall is None:
                missing.append(_without_wall(wall_problem or "", policy.network))
            if fs_backend is None:
                missing.append(f"Landlock ({fs_problem})")
            if wall is not None and bound_socket_paths() is None:
                missing.append("covering unix sockets outside (the kernel's table /proc/net/unix cannot be read)")
            self._limit = ProcessLimit(settings.max_processes)
            if self._limit.missing:
                missing.append(f"a process limit ({self._limit.missing})")
        elif not policy.network:
            missing.append("network isolation (it needs bubblewrap on Linux)")
        if wall is not None and not policy.network and settings.allowed_hosts:
            why = self._start_proxy(settings.allowed_hosts)
            if why:
                missing.append(f"the allowed_hosts proxy ({why})")
        elif settings.allowed_hosts and not policy.network:
            missing.append("the allowed_hosts proxy (it needs the bubblewrap wall)")
        applied = ""
        if fs_backend == "landlock":
            probe = landlock_probe()
            applied = probe.describe()
            if (lacking := probe.missing_line()) is not None:
                missing.append(lacking)
        backend = "+".join(name for name in ("bubblewrap" if wall else None, fs_backend) if name)
        return SandboxState(True, backend, policy, tuple(missing), settings.strict, applied=applied)

    def _start_proxy(self, hosts: Sequence[str]) -> str | None:
        """Serve `hosts` to commands through a proxy on a socket in the wall's network dir; why not, if not."""
        assert self._layout is not None
        proxy = HostProxy(self._layout.network / PROXY_SOCKET, hosts)
        try:
            proxy.start()
        except (OSError, ValueError) as exc:
            return str(exc)
        self._proxy = proxy
        weakref.finalize(self, proxy.close)
        return None

    def prepare(self, program: list[str]) -> Launch:
        """How to run `program` inside the sandbox (`program` itself when it is off or unavailable); pass
        the launch to `finish` once it ended. Raises `SandboxRefused` when strict and some protection is
        missing."""
        state = self.state()
        if state.refuses:
            raise SandboxRefused(
                f"{Path(program[0]).name}: refused — [tools.sandbox] strict = true and the sandbox is not complete here "
                f"(missing: {state.problem}); the user can set strict = false to run commands with what there is"
            )
        if state.backend is None or state.policy is None:
            return Launch(list(program))
        if state.backend == "seatbelt":
            return Launch(seatbelt_command(state.policy, program))
        argv = list(program)
        proxy = self._proxy if state.wall else None
        if "landlock" in state.backend:
            site = landlock_site()
            assert site is not None  # the probe found it
            socket = INSIDE_NETWORK_DIR / PROXY_SOCKET if proxy is not None else None
            argv = landlock_command(self._inside_policy(state), argv, site, proxy_socket=socket)
        guard = Protection()
        if state.wall:
            bwrap, _ = bubblewrap_status()
            assert bwrap is not None and self._layout is not None
            guard = self.protection()
            argv = [*wall_prefix(
                bwrap, self._layout, writable=state.policy.roots, network=state.policy.network, protection=guard,
                sockets=bound_socket_paths() or (), visible=self._visible, cwd=self.cwd,
                network_dir=self._layout.network if proxy is not None else None,
            ), *argv]
        if self._limit is not None:
            argv = [*self._limit.prefix(), *argv]
        return Launch(argv, guard, proxy.mark() if proxy is not None else None)

    def finish(
        self, launch: Launch, output: str = "", command: str = "", *, failed: bool = False, exit_code: int | None = None,
    ) -> list[str]:
        """After a command ended, the lines to add to its result: why the sandbox made it fail, if it did (from
        its `output`), a watched file it made (a `.git/commondir` sending git to another directory's config and
        hooks) removed, and the hosts the proxy refused. (Directories held empty stay: removing one could open
        it under another command still running.)"""
        notes = self._explain(launch.guard, output, command, failed=failed, exit_code=exit_code)
        for path in launch.guard.watched:
            if os.path.lexists(path):
                try:
                    os.unlink(path)
                    notes.append(f"[sandbox: the command made {path}, which would send git to another directory's "
                                 "config and hooks; it was removed]")
                except OSError as exc:
                    notes.append(f"[sandbox: the command made {path}, which would send git to another directory's "
                                 f"config and hooks, and it could not be removed ({exc.strerror}): remove it before "
                                 "running git]")
        if launch.proxy_mark is not None and self._proxy is not None:
            note = refusal_note(self._proxy.refusals_since(launch.proxy_mark), self._proxy.patterns)
            if note:
                notes.append(note)
        return notes

    def protection(self) -> Protection:
        """What commands may not see or change right now (checked on each call: a `.git` may appear)."""
        state = self.state()
        return protection(
            state.policy.roots if state.policy is not None else (), home=self.home, cwd=self.cwd, zeph=self._zeph,
            allow_read=self.settings.allow_read, deny_read=self.settings.deny_read,
        )

    @functools.cached_property
    def _zeph(self) -> ZephFiles:
        return ZephFiles.of_this_process()

    def _inside_policy(self, state: SandboxState) -> SandboxPolicy:
        """The policy as seen inside the wall, where the private temp dir is /tmp."""
        assert state.policy is not None
        if not state.wall:
            return state.policy
        writable = (INSIDE_TEMP, *state.policy.roots)
        return SandboxPolicy(state.policy.profile, writable, INSIDE_TEMP, state.policy.network)

    @functools.cached_property
    def _visible(self) -> list[Path]:
        """Paths under /tmp that commands still need to see: the workspace (read-only when the profile says so),
        what runs the launcher, the user's PATH, allow_read (found once: none of them moves in a session)."""
        paths = [*self.workspace, self.cwd, Path(sys.prefix), Path(sys.base_prefix), LAUNCHER.parent]
        site = landlock_site()
        if site:
            paths.append(Path(site))
        paths += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p)]
        paths += setting_paths(self.settings.allow_read, self.home, self.cwd)
        out: list[Path] = []
        for path in paths:
            real = Path(os.path.realpath(path))
            if os.path.exists(real) and real not in out:
                out.append(real)
        return out

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the temp-dir variables pointing at the private temp dir (when sandboxed)."""
        state = self.state()
        out = dict(env)
        if state.backend is not None and state.policy is not None:
            temp = INSIDE_TEMP if state.wall else state.policy.temp_dir
            for name in TEMP_VARIABLES:
                out[name] = str(temp)
        return out

    def _explain(self, guard: Protection, output: str, command: str, *, failed: bool, exit_code: int | None) -> list[str]:
        """Lines saying why the sandbox made a command fail (none when it did not)."""
        state = self.state()
        if state.backend is None or state.policy is None:
            return []
        notes = [
            refused_write_note(output, state.policy, self.cwd, protected=guard,
                               temp_shown=str(INSIDE_TEMP) if state.wall else None),
            protected_note(output, guard, self.cwd),
            hidden_note(command, guard, self.home, private_tmp=state.wall and failed,
                        seen=[*state.policy.writable, *self._visible]),
            process_note(command, output, exit_code) if failed and state.backend != "seatbelt" else None,
        ]
        if state.wall or not state.policy.network:
            notes.append(network_note(output, state.policy))
        return [n for n in notes if n]

    def take_notice(self) -> str | None:
        """Once, after the backends were probed: the warning that protections are missing, and where
        zeph's own files lie inside the workspace."""
        if self._noticed or self._state is None or not self._state.enabled:
            return None
        lines = [self._state.line()] if self._state.missing or self._state.backend is None else []
        if self._state.wall:
            lines += [f"sandbox: {note}" for note in self.protection().notes]
        if not lines:
            return None
        self._noticed = True
        return "\n".join(lines)


def _without_wall(why: str, network_allowed: bool) -> str:
    """What is lost when the bubblewrap wall cannot run (Landlock alone still confines writes)."""
    lost = "file metadata (chmod, chown, touch) outside, other processes (kill, ptrace), devices, unix sockets " \
           "outside, secret stores (~/.ssh…), read-only .git hooks and config, a private /tmp"
    if not network_allowed:
        lost += ", network isolation"
    return f"the bubblewrap wall ({why}), so commands are not kept from: {lost}"
