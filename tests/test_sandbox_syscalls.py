"""What the sandbox refuses beyond writing files, for real: device nodes and typing into a terminal (the
seccomp filter; Landlock too for devices), signals to and abstract unix sockets of processes outside (Landlock
scopes), system calls through a foreign ABI (the filter kills the command).

Each check runs the real launcher in a child, as root and as an unprivileged user (nobody, through setpriv,
when the suite runs as root), beside a control run without the sandbox that shows the attack works here, so
every test can fail; then through the real `zeph ask -y`.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import tty
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_helpers import err, run_zeph
from tests.test_cli_tools import sent_tool_results, text_reply, tool_reply, workspace  # noqa: F401 (a fixture)
from zeph_cli.tools.sandbox import seccomp_filter
from zeph_cli.tools.sandbox.landlock_backend import (
    LAUNCHER,
    LandlockProbe,
    landlock_command,
    landlock_probe,
    landlock_site,
)
from zeph_cli.tools.sandbox.policy import build_policy

PROBE = landlock_probe()
SITE = landlock_site() or ""  # "" when missing: the tests needing it skip (the probe says why)
NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
TIMEOUT = 60

needs_landlock = pytest.mark.skipif(PROBE.problem is not None, reason=f"Landlock: {PROBE.problem}")


def _kernel_has_seccomp_filters() -> bool:
    try:
        return "Seccomp_filters:" in Path("/proc/self/status").read_text()
    except OSError:
        return False


# What this machine has, known without the launcher (so a launcher that stops applying one fails, not skips).
EXPECTED = {
    "scope-signal": PROBE.problem is None and PROBE.abi >= 6,
    "scope-abstract-unix": PROBE.problem is None and PROBE.abi >= 6,
    "seccomp": PROBE.problem is None and platform.machine() in ("x86_64", "aarch64") and _kernel_has_seccomp_filters(),
}


def needs(name: str):
    reason = f"Landlock ABI {PROBE.abi} < 6" if name.startswith("scope-") else "no seccomp filter for this machine"
    return pytest.mark.skipif(not EXPECTED[name], reason=PROBE.problem or reason)


@functools.cache
def python_for_nobody() -> str | None:
    """An interpreter nobody can run that finds `landlock` in SITE (this one may sit in root's home)."""
    if shutil.which("setpriv") is None:
        return None
    check = f"import sys; sys.path.insert(0, {SITE!r}); import landlock"
    for candidate in (sys.executable, "/usr/bin/python3"):
        # exec'd by a process already running as nobody (setpriv may still resolve the path as root)
        done = subprocess.run([*SETPRIV, "sh", "-c", 'exec "$0" -I -S -c "$1"', candidate, check],
                              capture_output=True, timeout=TIMEOUT)
        if done.returncode == 0:
            return candidate
    return None


@dataclass
class User:
    """Who runs the commands: `prefix` switches to that user, `python` is an interpreter they can run."""

    name: str
    prefix: list[str]
    python: str
    workspace: Path

    def launch(self, argv: list[str], *, allow_abstract_unix: bool = False, **popen) -> subprocess.CompletedProcess:
        """`argv` under the real launcher, writable in the workspace, as the parent builds it."""
        temp_dir = self.workspace / ".tmp"
        temp_dir.mkdir(exist_ok=True)
        policy = build_policy("workspace", [self.workspace], (), temp_dir, network=True, cwd=self.workspace)
        launched = landlock_command(policy, argv, SITE, allow_abstract_unix=allow_abstract_unix)
        launched[0] = self.python
        return self.unconfined(launched, **popen)

    def unconfined(self, argv: list[str], **popen) -> subprocess.CompletedProcess:
        return subprocess.run([*self.prefix, *argv], cwd=self.workspace, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=TIMEOUT, **popen)

    def spawn(self, argv: list[str]) -> subprocess.Popen:
        """`argv` started outside the sandbox, returned once it runs (as this user: setpriv has exec'd it)."""
        process = subprocess.Popen([*self.prefix, *argv], stdin=subprocess.DEVNULL)
        name = Path(argv[0]).name[:15]
        for _ in range(1000):
            try:
                if Path(f"/proc/{process.pid}/comm").read_text().strip() == name:
                    return process
            except OSError:
                pass
            threading.Event().wait(0.01)
        process.kill()
        raise AssertionError(f"{argv} did not start")


@pytest.fixture(params=["root", "unprivileged"])
def user(request, tmp_path) -> User:
    if request.param == "root":
        if os.geteuid() != 0:
            pytest.skip("the suite does not run as root")
        directory = tmp_path / "ws"
        directory.mkdir()
        return User("root", [], sys.executable, directory)
    if os.geteuid() != 0:
        directory = tmp_path / "ws"
        directory.mkdir()
        return User("unprivileged", [], sys.executable, directory)
    python = python_for_nobody()
    if python is None:
        pytest.skip("no interpreter that nobody can run with setpriv here")
    directory = Path(tempfile.mkdtemp(prefix="zeph-nobody-"))  # tmp_path's parents are root's alone
    os.chown(directory, NOBODY, NOBODY)
    request.addfinalizer(lambda: shutil.rmtree(directory, ignore_errors=True))
    return User("unprivileged", SETPRIV, python, directory)


def works_without_the_sandbox(works: bool, what: str) -> None:
    """The control: skip (the test could not fail) when `what` is refused here without zeph's sandbox too."""
    if not works:
        pytest.skip(f"{what} is refused here even without zeph's sandbox (by the kernel, or an outer sandbox)")


# ---- device nodes --------------------------------------------------------------------------------------------

MAKE_NODES = "mknod blk b 7 0; mknod chr c 1 3; mkfifo fifo && touch file && echo made"


@needs_landlock
def test_no_device_node_can_be_made_in_the_workspace_but_fifos_and_files_can(user):
    ws = user.workspace
    if user.name == "root":  # without the sandbox root makes the node a loop device's writes would go through
        control = user.unconfined(["sh", "-c", "mknod blk0 b 7 0"])
        works_without_the_sandbox(control.returncode == 0 and stat.S_ISBLK((ws / "blk0").stat().st_mode), "mknod")
    done = user.launch(["sh", "-c", MAKE_NODES])
    assert done.stdout.strip() == "made", done.stderr
    assert not os.path.lexists(ws / "blk") and not os.path.lexists(ws / "chr")
    assert "mknod: blk: Operation not permitted" in done.stderr, done.stderr
    assert stat.S_ISFIFO((ws / "fifo").stat().st_mode) and (ws / "file").is_file()


# Errors that tell the filter's refusal (EPERM) from the kernel's own answer without it (ENOTTY, ENOENT).
FILTER_CHECKS = r"""
import ctypes, errno, fcntl, os, stat, sys, termios
if sys.argv[1] == "filter":
    import importlib.util
    spec = importlib.util.spec_from_file_location("seccomp_filter", sys.argv[2])
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); module.install()
def outcome(action):
    try:
        action()
    except OSError as exc:
        return errno.errorcode[exc.errno]
    return "ok"
libc = ctypes.CDLL(None, use_errno=True)
def raw_ioctl(fd, request):
    if libc.syscall(ctypes.c_long(16 if os.uname().machine == "x86_64" else 29), ctypes.c_long(fd),
                    ctypes.c_ulong(request), ctypes.c_char_p(b"x")) != 0:
        raise OSError(ctypes.get_errno(), "ioctl")
null = os.open(os.devnull, os.O_RDWR)
print(outcome(lambda: os.mknod("", stat.S_IFCHR | 0o600, 0)), outcome(lambda: os.mknod("", stat.S_IFBLK | 0o600, 0)),
      outcome(lambda: os.mknod("", stat.S_IFIFO | 0o600)), outcome(lambda: os.mknod("", stat.S_IFREG | 0o600)),
      outcome(lambda: fcntl.ioctl(null, termios.TIOCSTI, b"x")), outcome(lambda: raw_ioctl(null, termios.TIOCSTI | 1 << 32)),
      outcome(lambda: fcntl.ioctl(null, 0x541C, b"x")), outcome(lambda: fcntl.ioctl(null, termios.TCGETS, bytes(64))))
"""


@needs("seccomp")
def test_the_seccomp_filter_alone_refuses_devices_and_terminal_injection_and_nothing_else(user):
    filter_file = str(LAUNCHER.with_name("seccomp_filter.py"))
    without = user.unconfined([user.python, "-I", "-c", FILTER_CHECKS, "none", filter_file])
    # mknod char, block, fifo, regular file; ioctl TIOCSTI, TIOCSTI with high bits set, TIOCLINUX, TCGETS
    passed = ["ENOENT", "ENOENT", "ENOENT", "ENOENT", "ENOTTY", "ENOTTY", "ENOTTY", "ENOTTY"]
    works_without_the_sandbox(without.stdout.split() == passed, f"one of these calls ({without.stdout.strip()})")
    with_filter = user.unconfined([user.python, "-I", "-c", FILTER_CHECKS, "filter", filter_file])
    assert with_filter.stdout.split() == ["EPERM", "EPERM", "ENOENT", "ENOENT", "EPERM", "EPERM", "EPERM", "ENOTTY"]


CONFINE_ONLY = r"""
import importlib.util, os, stat, sys
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("launcher", sys.argv[2])
launcher = importlib.util.module_from_spec(spec); spec.loader.exec_module(launcher)
launcher.confine([os.getcwd()])
for name, mode in (("blk", stat.S_IFBLK), ("fifo", stat.S_IFIFO)):
    try:
        os.mknod(name, mode | 0o600, os.makedev(7, 0))
        print(name, "made")
    except OSError as exc:
        print(name, os.strerror(exc.errno))
"""


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="only root may make device nodes at all")
def test_landlock_alone_makes_no_device_node_where_writes_are_allowed(tmp_path):
    control = subprocess.run(["mknod", "blk0", "b", "7", "0"], cwd=tmp_path, capture_output=True, timeout=TIMEOUT)
    works_without_the_sandbox(control.returncode == 0, "mknod")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", CONFINE_ONLY, SITE, str(LAUNCHER)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.stdout.splitlines() == ["blk Permission denied", "fifo made"], done.stderr
    assert not os.path.lexists(tmp_path / "blk")


# ---- typing into a terminal ----------------------------------------------------------------------------------

INJECT = r"""
import fcntl, os, sys, termios
fd = os.open(sys.argv[1], os.O_RDWR)  # a session leader without a terminal: this one becomes its own
try:
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")
    print("typed")
except OSError as exc:
    print(os.strerror(exc.errno))
"""


def legacy_tiocsti() -> bool:
    try:
        return Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() != "0"
    except OSError:
        return True  # before Linux 6.2 there was no switch: TIOCSTI always worked on one's own terminal


@needs("seccomp")
def test_tiocsti_cannot_type_into_a_terminal(user):
    master, slave = os.openpty()
    try:
        tty.setraw(slave)
        name = os.ttyname(slave)
        if user.prefix:
            os.chown(name, NOBODY, -1)

        def typed() -> bytes:
            os.set_blocking(slave, False)
            try:
                return os.read(slave, 100)
            except BlockingIOError:
                return b""

        control = user.unconfined([user.python, "-c", INJECT, name], start_new_session=True)
        works_without_the_sandbox(control.stdout.strip() == "typed" and typed() == b"x",
                                  "TIOCSTI" + ("" if legacy_tiocsti() else " (dev.tty.legacy_tiocsti = 0)"))
        done = user.launch([user.python, "-c", INJECT, name], start_new_session=True)
        assert done.stdout.strip() == "Operation not permitted", (done.stdout, done.stderr)
        assert typed() == b""
    finally:
        os.close(master)
        os.close(slave)


# ---- processes outside ---------------------------------------------------------------------------------------


@needs("scope-signal")
def test_a_process_outside_cannot_be_killed_one_the_command_started_can(user):
    first, outside = user.spawn(["sleep", "300"]), user.spawn(["sleep", "300"])
    try:
        control = user.unconfined(["kill", "-9", str(first.pid)])
        works_without_the_sandbox(control.returncode == 0 and first.wait(timeout=TIMEOUT) == -signal.SIGKILL, "kill")
        done = user.launch(["sh", "-c", f"kill -9 {outside.pid}; echo outside=$?; sleep 300 & kill -9 $!; wait $!; echo own=$?"])
        assert done.stdout.split() == ["outside=1", "own=137"], (done.stdout, done.stderr)
        assert "Operation not permitted" in done.stderr
        with pytest.raises(subprocess.TimeoutExpired):
            outside.wait(timeout=0.5)
    finally:
        for process in (first, outside):
            process.kill()
            process.wait()


def yama_ptrace_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return 0  # no Yama


TRACE = r"""
import ctypes, os, sys
pid = int(sys.argv[1])
try:
    open(f"/proc/{pid}/mem", "rb").close()
    print("mem: opened")
except OSError as exc:
    print("mem:", exc.strerror)
libc = ctypes.CDLL(None, use_errno=True)
print("attach:", "attached" if libc.ptrace(16, pid, None, None) == 0 else os.strerror(ctypes.get_errno()))
"""


@needs_landlock
def test_a_process_outside_cannot_be_traced_nor_its_memory_opened(user):
    outside = user.spawn(["sleep", "300"])
    try:
        control = user.unconfined([user.python, "-c", TRACE, str(outside.pid)])  # the tracer's exit detaches it
        works_without_the_sandbox(control.stdout.splitlines() == ["mem: opened", "attach: attached"],
                                  f"ptrace (Yama's ptrace_scope is {yama_ptrace_scope()})")
        done = user.launch([user.python, "-c", TRACE, str(outside.pid)])
        assert done.stdout.splitlines() == ["mem: Permission denied", "attach: Operation not permitted"], done.stderr
    finally:
        outside.kill()
        outside.wait()


CONNECT = r"""
import socket, sys
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    client.connect("\0" + sys.argv[1])
    print("outside: connected")
except OSError as exc:
    print("outside:", exc.strerror)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("\0" + sys.argv[1] + "-inside")
server.listen(1)
inner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
inner.connect("\0" + sys.argv[1] + "-inside")
inner.sendall(b"hello")
print("inside:", server.accept()[0].recv(5).decode())
"""


@pytest.fixture
def abstract_server():
    """A server listening on an abstract unix socket, as X11, D-Bus or tmux-like servers may: (name, socket)."""
    name = f"zeph-test-{os.getpid()}-{os.urandom(4).hex()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen(4)
    server.setblocking(False)
    yield name, server
    server.close()


@needs("scope-abstract-unix")
def test_an_abstract_socket_outside_is_unreachable_one_made_inside_works(user, abstract_server):
    name, server = abstract_server
    control = user.unconfined([user.python, "-c", CONNECT, name])
    works_without_the_sandbox(control.stdout.splitlines()[:1] == ["outside: connected"], "the connect")
    server.accept()[0].close()  # the control's connection
    done = user.launch([user.python, "-c", CONNECT, name])
    assert done.stdout.splitlines() == ["outside: Operation not permitted", "inside: hello"], done.stderr
    with pytest.raises(BlockingIOError):
        server.accept()  # nothing reached it


@needs("scope-abstract-unix")
def test_abstract_sockets_outside_can_be_allowed_signals_stay_scoped(user, abstract_server):
    name, _ = abstract_server
    script = f"{user.python} -c '{CONNECT}' {name}; kill -0 $PPID; echo parent=$?"
    done = user.launch(["sh", "-c", script], allow_abstract_unix=True)
    assert done.stdout.splitlines() == ["outside: connected", "inside: hello", "parent=1"], done.stderr


# ---- another ABI ---------------------------------------------------------------------------------------------

X32_GETPID = "import ctypes; print(ctypes.CDLL(None).syscall(0x40000000 + 39))"
I386_GETPID = r"""
import ctypes, mmap
code = b"\xb8\x14\x00\x00\x00\xcd\x80\xc3"  # mov eax, 20 (getpid on i386); int 0x80; ret
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
print(ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))())
"""


@needs("seccomp")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 and i386 calls exist on x86_64")
@pytest.mark.parametrize("script", [X32_GETPID, I386_GETPID], ids=["x32", "i386"])
def test_a_system_call_through_another_abi_kills_the_command(user, script):
    control = user.unconfined([user.python, "-c", script])
    works_without_the_sandbox(control.returncode == 0, f"the call ({control.returncode})")
    done = user.launch([user.python, "-c", script])
    assert done.returncode == -signal.SIGSYS and done.stdout == "", (done.returncode, done.stdout, done.stderr)


# ---- what is reported, and required ----------------------------------------------------------------------------


@needs_landlock
def test_the_probe_reports_each_protection_this_kernel_has_and_it_saw_work():
    assert PROBE.applied == tuple(name for name, expected in EXPECTED.items() if expected), PROBE.missing
    if all(EXPECTED.values()):
        assert PROBE.describe() == f"landlock ABI {PROBE.abi}, seccomp, scopes: signals, abstract sockets"
        assert PROBE.missing_line() is None


def test_what_is_missing_is_said_in_one_line():
    old_kernel = LandlockProbe(None, 5, ("seccomp",), (("scope-signal", "Landlock ABI 5 has no scopes"),
                                                        ("scope-abstract-unix", "Landlock ABI 5 has no scopes")))
    assert old_kernel.describe() == "landlock ABI 5, seccomp"
    assert old_kernel.missing_line() == "no Landlock scopes (signals, abstract sockets): Landlock ABI 5 has no scopes"
    no_filter = LandlockProbe(None, 7, ("scope-signal",), (("seccomp", "no filter for riscv64"),))
    assert no_filter.describe() == "landlock ABI 7, scopes: signals"
    assert no_filter.missing_line() == "no seccomp filter: no filter for riscv64"


@needs_landlock
def test_a_protection_the_probe_found_is_required_or_nothing_runs(tmp_path):
    copy = tmp_path / "sandbox"
    copy.mkdir()
    for name in ("launcher.py", "landlock_scopes.py"):
        shutil.copy(LAUNCHER.with_name(name), copy / name)
    (copy / "seccomp_filter.py").write_text("raise ImportError('broken on purpose')\n")
    launcher = [sys.executable, "-I", "-S", str(copy / "launcher.py"), SITE]
    probed = subprocess.run([*launcher, "--probe", str(tmp_path)], capture_output=True, text=True, timeout=TIMEOUT)
    found = json.loads(probed.stdout)
    assert found["missing"]["seccomp"] == "seccomp_filter.py cannot be loaded (broken on purpose)"
    assert "seccomp" not in found["applied"]
    ran = subprocess.run([*launcher, "--", "echo", "ran"], capture_output=True, text=True, timeout=TIMEOUT)
    assert ran.returncode == 0 and ran.stdout == "ran\n"
    refused = subprocess.run([*launcher, "--require", "seccomp", "--", "echo", "ran"], capture_output=True, text=True,
                             timeout=TIMEOUT)
    assert refused.returncode == 125 and refused.stdout == ""
    assert refused.stderr == (
        "zeph sandbox: seccomp worked when probed but cannot be applied now (seccomp_filter.py cannot be loaded "
        "(broken on purpose)); the command was not run\n"
    )


@needs_landlock
def test_commands_are_launched_requiring_what_the_probe_found(tmp_path):
    policy = build_policy("workspace", [tmp_path], (), tmp_path, network=True, cwd=tmp_path)
    argv = landlock_command(policy, ["true"], SITE)
    required = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--require"]
    assert required == list(PROBE.applied)


# ---- through zeph ask -y -------------------------------------------------------------------------------------


@needs("scope-signal")
def test_zeph_ask_cannot_kill_a_process_outside(fake_server, compatible, workspace):  # noqa: F811
    outside = subprocess.Popen(["sleep", "300"])
    try:
        fake_server.queue(tool_reply("call_k", "bash", {"command": f"kill -9 {outside.pid}"}))
        fake_server.queue(text_reply("it would not die"))
        result = run_zeph("ask", "-y", "stop that process", env=compatible, cwd=workspace)
        assert result.returncode == 0, err(result)
        (output,) = sent_tool_results(fake_server)
        # The scope refuses the signal; where the bubblewrap wall runs, its PID namespace does first.
        assert "Operation not permitted" in output or "No such process" in output, output
        with pytest.raises(subprocess.TimeoutExpired):
            outside.wait(timeout=0.5)
    finally:
        outside.kill()
        outside.wait()


@needs("scope-abstract-unix")
def test_zeph_ask_cannot_drive_a_server_outside_through_its_abstract_socket(fake_server, compatible, workspace,  # noqa: F811
                                                                           abstract_server, tmp_path):
    # A tmux-like server outside: whatever a client sends, it acts on (here: writes the canary).
    name, server = abstract_server
    canary = tmp_path / "canary.txt"
    canary.write_text("still here\n")
    stop = threading.Event()

    def serve() -> None:
        while not stop.wait(0.05):
            try:
                connection, _ = server.accept()
            except BlockingIOError:
                continue
            connection.setblocking(True)
            canary.write_bytes(connection.recv(100))
            connection.close()

    (workspace / "client.py").write_text(
        "import socket\n"
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"client.connect('\\0{name}')\n"
        "client.sendall(b'overwritten by the command')\n"
    )
    fake_server.queue(tool_reply("call_s", "bash", {"command": f"{sys.executable} client.py"}))
    fake_server.queue(text_reply("could not"))
    serving = threading.Thread(target=serve)
    serving.start()
    try:
        result = run_zeph("ask", "-y", "send it to the server", env=compatible, cwd=workspace)
    finally:
        stop.set()
        serving.join()
    assert result.returncode == 0, err(result)
    (output,) = sent_tool_results(fake_server)
    # The scope refuses the connect; where the bubblewrap wall runs, its network namespace does first.
    assert "PermissionError: [Errno 1] Operation not permitted" in output or "ConnectionRefusedError" in output, output
    assert canary.read_text() == "still here\n"



# ---- the filter on aarch64, which this machine cannot run -------------------------------------------------------


def run_filter(program: list[tuple[int, int, int, int]], arch: int, nr: int, args: tuple[int, ...] = ()) -> int:
    """What the kernel's classic BPF machine returns for `program` on one system call (the opcodes it uses)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == 0x54:  # and #k
            accumulator &= k
        elif code == 0x05:  # ja +k
            pc += k
        elif code in (0x15, 0x35):  # jeq / jge #k
            pc += jt if (accumulator == k if code == 0x15 else accumulator >= k) else jf
        elif code == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"opcode {code:#x} not modelled")


@pytest.mark.parametrize("machine", sorted(seccomp_filter.ARCHES))
def test_the_filter_program_decides_per_architecture(machine):
    program = seccomp_filter.filter_program(machine)
    arch, calls = seccomp_filter.ARCHES[machine]
    ioctl, _ = calls["ioctl"]
    mknodat, _ = calls["mknodat"]
    allow, kill = seccomp_filter.SECCOMP_RET_ALLOW, seccomp_filter.SECCOMP_RET_KILL_PROCESS
    deny = seccomp_filter.SECCOMP_RET_ERRNO | 1
    assert run_filter(program, arch, mknodat, (0, 0, stat.S_IFBLK | 0o600)) == deny
    assert run_filter(program, arch, mknodat, (0, 0, stat.S_IFCHR | 0o600)) == deny
    assert run_filter(program, arch, mknodat, (0, 0, stat.S_IFIFO | 0o600)) == allow
    assert run_filter(program, arch, mknodat, (0, 0, 0o600)) == allow
    assert run_filter(program, arch, ioctl, (0, termios.TIOCSTI | 1 << 32)) == deny
    assert run_filter(program, arch, ioctl, (0, 0x541C)) == deny
    assert run_filter(program, arch, ioctl, (0, termios.TCGETS)) == allow
    assert run_filter(program, arch, 0, (0, termios.TIOCSTI)) == allow  # another call with the same argument
    assert run_filter(program, arch ^ 0x80000000, ioctl, (0, termios.TCGETS)) == kill  # the 32-bit ABI
    if machine == "x86_64":
        assert run_filter(program, arch, 0x40000000 | ioctl, (0, termios.TCGETS)) == kill  # x32


def header_numbers(path: str, names: list[str]) -> dict[str, int] | None:
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    found = {m.group(1): int(m.group(2), 0) for m in re.finditer(r"#define (\w+)\s+(0x[0-9a-fA-F]+|\d+)\b", text)}
    return {name: found[name] for name in names if name in found}


@pytest.mark.parametrize("machine, header", [("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
                                             ("aarch64", "/usr/include/asm-generic/unistd.h")])
def test_the_filter_numbers_are_the_kernel_headers(machine, header):
    calls = seccomp_filter.ARCHES[machine][1]
    numbers = header_numbers(header, [f"__NR_{call}" for call in calls])
    elf = header_numbers("/usr/include/linux/elf-em.h", ["EM_X86_64", "EM_AARCH64"])
    if not numbers or not elf:
        pytest.skip("the kernel headers (linux-libc-dev) are not installed")
    assert {call: number for call, (number, _) in calls.items()} == {n.removeprefix("__NR_"): v for n, v in numbers.items()}
    em = elf["EM_X86_64" if machine == "x86_64" else "EM_AARCH64"]
    assert seccomp_filter.ARCHES[machine][0] == 0x80000000 | 0x40000000 | em  # 64-bit, little-endian
