"""The seccomp filter sandboxed commands run under: no device nodes, no typing into a terminal.

Invariant: `install()` either puts in force, for this process and everything
it forks or execs, a filter that
  - refuses with EPERM `mknod`/`mknodat` whose mode makes a character or block
    device (regular files, FIFOs and sockets pass), and `ioctl` TIOCSTI (push
    input into a terminal, as if typed) and TIOCLINUX (which includes pasting
    the console selection); only the low 32 bits of the request and mode are
    compared, as the kernel reads them, so high bits cannot slip past;
  - kills the process at any system call made through another ABI than the
    native one (i386 `int 0x80` and x32 on x86_64, 32-bit ARM on aarch64),
    whose numbers mean other calls;
  - allows every other system call, sockets included;
or raises `SeccompUnavailable` having changed nothing.

A hand-assembled classic BPF program loaded with prctl(PR_SET_SECCOMP) rather
than libseccomp: the one Python binding on PyPI (pyseccomp, last released in
2021) needs the system's libseccomp.so.2, which minimal images and other
distributions lack, and runs `ldconfig -p` twice at import to find it. The
program is 21 instructions (x86_64; 17 on aarch64) and its syscall numbers are
kernel ABI. Other architectures get no filter (the caller reports it) rather
than a guess. Standard library only: the launcher loads this file by path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

__all__ = ["SeccompUnavailable", "filter_program", "install"]

# Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
_JA = 0x05  # BPF_JMP | BPF_JA
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (low word first: little-endian).
_NR, _ARCH = 0, 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index


SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

TIOCSTI = 0x5412
TIOCLINUX = 0x541C
S_IFMT, S_IFCHR, S_IFBLK = 0o170000, 0o020000, 0o060000
X32_SYSCALL_BIT = 0x40000000

# machine -> (AUDIT_ARCH_*, {call: (number, index of the mode argument or None for ioctl)}).
ARCHES = {
    "x86_64": (0xC000003E, {"ioctl": (16, None), "mknod": (133, 1), "mknodat": (259, 2)}),
    "aarch64": (0xC00000B7, {"ioctl": (29, None), "mknodat": (33, 2)}),  # no mknod: the generic table has none
}


class SeccompUnavailable(Exception):
    """No filter was installed; the message says why."""


def _native_arch() -> str:
    machine = platform.machine()
    if machine in ("amd64", "AMD64"):
        machine = "x86_64"
    elif machine == "arm64":
        machine = "aarch64"
    if machine not in ARCHES:
        raise SeccompUnavailable(f"no filter for {machine or 'this machine'} (x86_64 and aarch64 only)")
    # A 32-bit interpreter on a 64-bit kernel makes its calls through the compat ABI: the filter would kill it.
    if struct.calcsize("P") != 8 or sys.byteorder != "little":
        raise SeccompUnavailable(f"no filter for a {struct.calcsize('P') * 8}-bit {sys.byteorder}-endian process on {machine}")
    return machine


def filter_program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter for `machine` as (code, jt, jf, k) instructions; jumps are forward offsets."""
    audit_arch, calls = ARCHES[machine]
    # (code, jt, jf, k) where jt/jf may name a label; ("label", name) marks where a label points.
    source: list[tuple] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, "kill", audit_arch),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if machine == "x86_64":
        source.append((_JGE_K, "kill", 0, X32_SYSCALL_BIT))
    for call, (number, _mode_arg) in calls.items():
        source.append((_JEQ_K, call, 0, number))
    source.append((_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    for call, (_number, mode_arg) in calls.items():
        source.append(("label", call))
        if mode_arg is None:  # ioctl: the request is the second argument, an unsigned int to the kernel
            source += [
                (_LD_W_ABS, 0, 0, _arg_low(1)),
                (_JEQ_K, "deny", 0, TIOCSTI),
                (_JEQ_K, "deny", "allow", TIOCLINUX),
            ]
        else:
            source += [(_LD_W_ABS, 0, 0, _arg_low(mode_arg)), (_JA, 0, 0, "mode")]
    source += [
        ("label", "mode"),
        (_AND_K, 0, 0, S_IFMT),
        (_JEQ_K, "deny", 0, S_IFCHR),
        (_JEQ_K, "deny", "allow", S_IFBLK),
        ("label", "allow"),
        (_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        ("label", "deny"),
        (_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
        ("label", "kill"),
        (_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    return _assemble(source)


def _assemble(source: list[tuple]) -> list[tuple[int, int, int, int]]:
    labels: dict[str, int] = {}
    position = 0
    for item in source:
        if item[0] == "label":
            labels[item[1]] = position
        else:
            position += 1
    program: list[tuple[int, int, int, int]] = []
    for item in source:
        if item[0] == "label":
            continue
        code, jt, jf, k = item
        here = len(program)

        def offset(target, here=here):
            if not isinstance(target, str):
                return target
            distance = labels[target] - here - 1
            assert 0 <= distance < 256, (target, distance)  # classic BPF jumps forward only
            return distance

        if code == _JA:
            program.append((code, 0, 0, offset(k)))
        else:
            program.append((code, offset(jt), offset(jf), k))
    return program


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def install() -> None:
    """Put the filter in force for this (single-threaded) process; see the module's invariant."""
    if not sys.platform.startswith("linux"):
        raise SeccompUnavailable(f"seccomp is Linux-only (this is {sys.platform})")
    program = filter_program(_native_arch())
    instructions = (_SockFilter * len(program))(*(_SockFilter(*i) for i in program))
    fprog = _SockFprog(len(program), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    # Without no_new_privs only CAP_SYS_ADMIN may install a filter; Landlock has set it already.
    if prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise SeccompUnavailable(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.cast(ctypes.byref(fprog), ctypes.c_void_p), 0, 0) != 0:
        code = ctypes.get_errno()
        why = "the kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)" if code == errno.EINVAL else os.strerror(code)
        raise SeccompUnavailable(f"prctl(PR_SET_SECCOMP): {why}")
