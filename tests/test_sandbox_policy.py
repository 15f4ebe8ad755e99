"""The sandbox's pure parts: the policy, the macOS profile text, the refusal notes, the state line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zeph_cli.config import SandboxConfig, load_config
from zeph_cli.tools.sandbox import Sandbox
from zeph_cli.tools.sandbox.denials import network_note, refused_write_note
from zeph_cli.tools.sandbox.landlock_backend import LAUNCHER
from zeph_cli.tools.sandbox.policy import SandboxPolicy, build_policy
from zeph_cli.tools.sandbox.sandbox import SandboxState
from zeph_cli.tools.sandbox.limits import ProcessLimit, tasks_of
from zeph_cli.tools.sandbox.protected import ZephFiles, protection
from zeph_cli.tools.sandbox.seatbelt import seatbelt_command, seatbelt_profile
from zeph_cli.tools.sandbox.sockets import bound_socket_paths

WS = Path("/work/ws")
TEMP = Path("/tmp/zeph-sandbox-x")


def policy(profile: str = "workspace", network: bool = True, extra: tuple[Path, ...] = ()) -> SandboxPolicy:
    writable = (TEMP, WS, *extra) if profile == "workspace" else (TEMP,)
    return SandboxPolicy(profile, writable, TEMP, network)


# ---- policy ----------------------------------------------------------------------------------------


def test_workspace_policy_writes_the_roots_allow_write_and_temp(tmp_path):
    ws, extra, temp = tmp_path / "ws", tmp_path / "cache", tmp_path / "t"
    for d in (ws, extra, temp):
        d.mkdir()
    built = build_policy("workspace", [ws, ws], ["../cache", "~/x"], temp, network=True, cwd=ws)
    home = Path("~/x").expanduser()
    assert built.writable == (temp, ws, extra, home)  # relative from cwd, ~ expanded, no duplicates
    assert built.allows_write(ws / "a" / "b") and built.allows_write(temp / "f") and built.allows_write(Path("/dev/null"))
    assert not built.allows_write(tmp_path / "other") and not built.allows_write(tmp_path)


def test_read_only_policy_writes_only_the_temp_dir(tmp_path):
    built = build_policy("read-only", [tmp_path / "ws"], ["/elsewhere"], tmp_path, network=False, cwd=tmp_path)
    assert built.writable == (tmp_path,)
    assert built.describe() == "read-only, network blocked"


def test_config_keys_and_environment_variables(tmp_path):
    config = load_config(env={
        "ZEPH_TOOLS_SANDBOX_PROFILE": "read-only", "ZEPH_TOOLS_SANDBOX_ALLOW_WRITE": "/a, /b",
        "ZEPH_TOOLS_SANDBOX_ALLOW_NETWORK": "false", "ZEPH_TOOLS_SANDBOX_STRICT": "1",
    }).config.tools.sandbox
    assert config == SandboxConfig(enabled=True, profile="read-only", allow_write=("/a", "/b"), allow_network=False, strict=True)
    assert SandboxConfig() == SandboxConfig(enabled=True, profile="workspace", allow_write=(), allow_network=False,
                                            allow_read=(), deny_read=(), max_processes=1024, strict=False)


# ---- macOS profile ------------------------------------------------------------------------------------


def test_seatbelt_profile_denies_writes_outside_and_passes_paths_as_parameters():
    text, params = seatbelt_profile(policy(extra=(Path('/odd "dir")'),)))
    lines = text.splitlines()
    assert lines[:4] == ["(version 1)", "(allow default)", "(deny file-write*)", "(allow file-write*"]
    assert '    (subpath (param "WRITABLE_ROOT_2"))' in lines and '    (literal "/dev/null")' in lines
    assert params == {"WRITABLE_ROOT_0": str(TEMP), "WRITABLE_ROOT_1": str(WS), "WRITABLE_ROOT_2": '/odd "dir")'}
    assert 'odd' not in text  # no path inside the profile text
    assert "(deny network*)" not in text
    assert text.count("(") == text.count(")")


def test_seatbelt_profile_without_network_and_its_command():
    text, _ = seatbelt_profile(policy("read-only", network=False))
    assert text.rstrip().endswith("(deny network*)") and "WRITABLE_ROOT_1" not in text
    argv = seatbelt_command(policy(), ["/bin/bash", "-c", "ls"])
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[-4:] == ["--", "/bin/bash", "-c", "ls"]
    assert f"-DWRITABLE_ROOT_1={WS}" in argv


# ---- refusal notes ------------------------------------------------------------------------------------


def anywhere(_path: Path) -> bool:
    return True


@pytest.mark.parametrize("output, path", [
    ("rm: cannot remove '/srv/data/canary': Permission denied", "/srv/data/canary"),
    ("mkdir: cannot create directory ‘/srv/new’: Permission denied", "/srv/new"),
    ("bash: line 1: /srv/out.txt: Permission denied", "/srv/out.txt"),
    ("PermissionError: [Errno 13] Permission denied: '/srv/x.json'", "/srv/x.json"),
    ("touch: cannot touch '/srv/ro': Read-only file system", "/srv/ro"),
])
def test_a_refused_write_outside_gets_one_clear_line(output, path):
    note = refused_write_note(output + "\n[exit code 1]", policy(), WS, anywhere)
    assert note is not None and note.startswith(f"[sandbox: writing {path} was refused")
    assert str(WS) in note and "[tools.sandbox] allow_write" in note and "enabled = false" in note
    assert "\n" not in note


def test_relative_paths_are_taken_from_the_working_directory_in_read_only():
    note = refused_write_note("touch: cannot touch 'notes.txt': Permission denied", policy("read-only"), WS, anywhere)
    assert note is not None and f"writing {WS / 'notes.txt'} was refused" in note
    assert 'profile = "workspace"' in note


@pytest.mark.parametrize("output", [
    "cat: /etc/shadow: No such file or directory",  # not a refusal
    "rm: cannot remove '/work/ws/a': Permission denied",  # inside the writable set: not the sandbox
    "echo: write error: '/dev/null': Permission denied",
    "all good",
])
def test_no_note_without_a_refused_path_outside(output):
    assert refused_write_note(output, policy(), WS, anywhere) is None


def test_no_note_when_the_user_could_not_write_there_anyway():
    assert refused_write_note("rm: cannot remove '/srv/a': Permission denied", policy(), WS, lambda p: False) is None


def test_network_note_only_when_the_network_is_blocked():
    failure = "curl: (6) Could not resolve host: example.com"
    assert network_note(failure, policy(network=True)) is None
    assert "allow_network = true" in network_note(failure, policy(network=False))
    assert network_note("ok", policy(network=False)) is None


# ---- state line -------------------------------------------------------------------------------------------


def test_state_lines():
    p = policy()
    assert SandboxState(True, "bubblewrap+landlock", p).line() == "sandbox: bubblewrap+landlock (workspace, network allowed)"
    assert SandboxState(True, "bubblewrap+landlock", p, applied="landlock ABI 7, seccomp").line() == (
        "sandbox: bubblewrap+landlock (workspace, network allowed) · landlock ABI 7, seccomp"
    )
    assert SandboxState(True, None, p, ("no Landlock here",), strict=False).line() == (
        "sandbox: unavailable — no Landlock here; shell commands run unconfined"
    )
    assert SandboxState(True, None, p, ("x",), strict=True).refuses
    assert not SandboxState(True, "landlock", p).refuses
    line = SandboxState(True, "landlock", policy(network=False), ("the bubblewrap wall (gone)", "a process limit (no)")).line()
    assert line == ("sandbox: landlock (workspace, network blocked); missing: the bubblewrap wall (gone); "
                    "a process limit (no); commands run without it")
    assert SandboxState(True, "landlock", p, ("the bubblewrap wall (gone)",), strict=True).refuses


def test_disabled_sandbox_neither_probes_nor_wraps(tmp_path):
    sandbox = Sandbox(SandboxConfig(enabled=False), [tmp_path], cwd=tmp_path)
    assert sandbox.prepare(["/bin/sh", "-c", "true"]).argv == ["/bin/sh", "-c", "true"]
    assert sandbox.environment({"TMPDIR": "/tmp"}) == {"TMPDIR": "/tmp"}
    assert sandbox.take_notice() is None


def test_unknown_backend_choice_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        Sandbox(SandboxConfig(), [tmp_path], cwd=tmp_path, backend="chroot")


# ---- the launcher's own failures -------------------------------------------------------------------------


def test_launcher_runs_nothing_when_misused():
    done = subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), "/nonexistent", "echo", "hi"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 125 and "hi" not in done.stdout and "expected -- PROGRAM" in done.stderr


def test_launcher_without_the_landlock_package_refuses_to_run(tmp_path):
    done = subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), str(tmp_path), "--", "echo", "hi"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 125 and done.stdout == ""
    assert done.stderr.strip() == (
        "zeph sandbox: the landlock package cannot be imported (No module named 'landlock'); the command was not run"
    )


# ---- what is hidden and what is read-only ------------------------------------------------------------------


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    home, ws = tmp_path / "home", tmp_path / "home" / "ws"
    for d in (home / ".ssh", home / ".aws", ws / ".git" / "hooks", ws / ".git" / "modules" / "lib" / "hooks"):
        d.mkdir(parents=True)
    for f in (home / ".netrc", ws / ".git" / "config", ws / ".git" / "modules" / "lib" / "config"):
        f.write_text("x\n")
    return home, ws


def test_secret_stores_are_hidden_allow_read_shows_one_and_deny_read_adds(tmp_path):
    home, ws = _tree(tmp_path)
    (ws / "private").mkdir()
    got = protection([ws], home=home, cwd=ws, zeph=ZephFiles(), allow_read=["~/.aws"], deny_read=["private"])
    assert {home / ".ssh", home / ".netrc", ws / "private"} <= set(got.hidden)
    assert home / ".aws" not in got.hidden and home / ".gnupg" not in got.hidden  # shown, missing
    assert got.is_hidden(home / ".ssh" / "id_rsa") and not got.is_hidden(home / ".sshx")


def test_nothing_that_holds_a_writable_root_is_hidden_and_only_the_outermost_is_listed(tmp_path):
    home, ws = _tree(tmp_path)
    zeph = ZephFiles(private=(home, home / ".ssh"))  # zeph's data dir would be the whole home here
    got = protection([ws], home=home, cwd=ws, zeph=zeph, deny_read=["~/.ssh/keys"])
    assert home not in got.hidden and home / ".ssh" in got.hidden
    assert home / ".ssh" / "keys" not in got.hidden


def test_git_parts_and_zeph_files_in_a_writable_root_are_read_only_and_missing_ones_held(tmp_path):
    home, ws = _tree(tmp_path)
    venv = ws / ".venv"
    venv.mkdir()
    got = protection([ws], home=home, cwd=ws, zeph=ZephFiles(installed=(venv,)))
    assert set(got.read_only) == {ws / ".git" / "config", ws / ".git" / "hooks", ws / ".git" / "modules" / "lib" / "config",
                                  ws / ".git" / "modules" / "lib" / "hooks", venv}
    assert got.held_empty == (ws / ".zeph",)  # .git/info missing is not held: git does not run it
    assert any(str(venv) in note and "may read it but not change it" in note for note in got.notes)
    (ws / ".zeph").mkdir()
    assert ws / ".zeph" in protection([ws], home=home, cwd=ws, zeph=ZephFiles()).read_only


def test_a_worktree_pointer_is_read_only_and_nothing_is_held_where_it_could_not_be_made(tmp_path):
    home, ws = _tree(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").write_text("gitdir: /elsewhere\n")
    got = protection([other], home=home, cwd=other, zeph=ZephFiles())
    assert got.read_only == (other / ".git",)
    if os.geteuid() != 0:  # root may write anywhere
        other.chmod(0o555)
        try:
            assert protection([other], home=home, cwd=other, zeph=ZephFiles()).held_empty == ()
        finally:
            other.chmod(0o755)


def test_bound_unix_sockets_are_read_from_the_kernel_table(tmp_path):
    import socket as sockets_module

    path = tmp_path / "s.sock"
    server = sockets_module.socket(sockets_module.AF_UNIX)
    server.bind(str(path))
    (tmp_path / "plain").write_text("x")
    table = tmp_path / "unix"
    table.write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        f"0000: 00000002 00000000 00010000 0001 01 1 {path}\n"
        "0000: 00000002 00000000 00010000 0001 01 2 @abstract\n"
        f"0000: 00000002 00000000 00010000 0001 01 3 {tmp_path / 'plain'}\n"
        "0000: 00000002 00000000 00010000 0001 01 4 /gone/s.sock\n"
        "0000: 00000003 00000000 00000000 0001 03 5\n"
    )
    try:
        assert bound_socket_paths(table) == [path]
        assert bound_socket_paths(tmp_path / "missing") is None
    finally:
        server.close()


def test_the_process_limit_for_users_is_on_top_of_what_they_run_already():
    user = ProcessLimit(64, euid=1000)
    ceiling = int(user.prefix()[2].split("ulimit -p ")[1].split()[0])
    assert user.prefix()[:2] == ["/bin/sh", "-c"] and user.missing is None and user.cgroup is None
    assert ceiling >= 64 + tasks_of(os.getuid()) - 8  # the user's own processes (give or take a few since)


def test_no_allow_write_advice_for_the_kernels_files():
    failure = "unshare: write failed /proc/self/uid_map: Permission denied\necho: '/sys/kernel/x': Read-only file system"
    assert refused_write_note(failure, policy(), WS, could_write=lambda p: True) is None
