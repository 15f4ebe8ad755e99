"""How a shell or interpreter command line gets the program it runs.

Invariant: pure; `program_source` classifies every argv, naming the program
text, file or standard input it runs, or saying it is no shell or interpreter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .argv import basename

SHELLS = frozenset({"sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"})
STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


@dataclass(frozen=True)
class _Interpreter:
    code: str = ""  # short options whose value is the program text
    module: str = ""  # short options naming a module or file to run
    values: str = ""  # other short options taking a value
    attached: str = ""  # short options whose value, if any, is the rest of the same word (perl -MFile::Path)
    long_code: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()


_INTERPRETERS = {
    "python": _Interpreter(code="c", module="m", values="WX"),
    "perl": _Interpreter(code="eE", values="I", attached="MmlDd0iCxF"),
    "ruby": _Interpreter(code="e", values="rIC"),
    "node": _Interpreter(
        code="ep",
        values="r",
        long_code=frozenset({"--eval", "--print"}),
        long_values=frozenset({"--require", "--import", "--loader", "--experimental-loader", "--conditions"}),
    ),
    "php": _Interpreter(code="r", module="f", values="cdz"),
    "lua": _Interpreter(code="e", values="l"),
}
_INTERPRETER_NAME = re.compile(r"(python|pypy|perl|ruby|node|nodejs|php|lua|luajit)[0-9.]*")


def interpreter_family(name: str) -> str | None:
    """"python" for python3.12, "node" for nodejs, …; None for anything else."""
    match = _INTERPRETER_NAME.fullmatch(name)
    if not match:
        return None
    family = match.group(1)
    return {"pypy": "python", "nodejs": "node", "luajit": "lua"}.get(family, family)


def program_source(argv: Sequence[str]) -> tuple[str, str | None]:
    """How a shell or interpreter command gets its program.

    ("stdin", None) reads it from standard input; ("code", text) from `-c`/`-e`;
    ("missing", None) has `-c` without its text (xargs supplies it); ("file",
    path) runs a script or module; ("", None) is not a shell or interpreter.
    """
    if not argv:
        return "", None
    name = basename(argv[0])
    if name in SHELLS:
        return _shell_source(argv)
    family = interpreter_family(name)
    if family is not None:
        return _interpreter_source(argv, _INTERPRETERS[family])
    return "", None


def _shell_source(argv: Sequence[str]) -> tuple[str, str | None]:
    c_mode = s_mode = False
    i, n = 1, len(argv)
    while i < n:
        arg = argv[i]
        if arg in ("--", "-"):
            i += 1
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name == "--command":
                if eq:
                    return "code", value
                return ("code", argv[i + 1]) if i + 1 < n else ("missing", None)
            if name in ("--rcfile", "--init-file", "--init-command") and not eq:
                i += 1
            i += 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            for k, char in enumerate(arg[1:], 1):
                if char in "oO":
                    if k == len(arg) - 1:
                        i += 1
                    break
                if arg[0] == "-" and char == "c":
                    c_mode = True
                elif arg[0] == "-" and char == "s":
                    s_mode = True
            i += 1
            continue
        break
    operand = argv[i] if i < n else None
    if c_mode:
        return ("code", operand) if operand is not None else ("missing", None)
    if s_mode or operand is None or operand in STDIN_PATHS:
        return "stdin", None
    return "file", operand


def _interpreter_source(argv: Sequence[str], spec: _Interpreter) -> tuple[str, str | None]:
    i, n = 1, len(argv)
    while i < n:
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg == "-":
            return "stdin", None
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in spec.long_code:
                if eq:
                    return "code", value
                return ("code", argv[i + 1]) if i + 1 < n else ("missing", None)
            if name in spec.long_values and not eq:
                i += 1
            i += 1
            continue
        if arg.startswith("-") and len(arg) > 1:
            for k, char in enumerate(arg[1:], 1):
                rest = arg[k + 1:]
                if char in spec.code:
                    if rest:
                        return "code", rest
                    return ("code", argv[i + 1]) if i + 1 < n else ("missing", None)
                if char in spec.module:
                    return "file", rest or (argv[i + 1] if i + 1 < n else "")
                if char in spec.values:
                    if not rest:
                        i += 1
                    break
                if char in spec.attached:
                    break
            i += 1
            continue
        break
    operand = argv[i] if i < n else None
    if operand is None or operand in STDIN_PATHS:
        return "stdin", None
    return "file", operand
