"""What a simple command is known to do before it runs: the directory `cd`
changes into, the text `echo`, `printf` or a here-document `cat` writes.

Invariant: pure; whatever depends on run time (escapes, formats, variables) is
None, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .argv import getopt
from .commands import SimpleCommand

def cd_target(argv: Sequence[str]) -> str | None:
    name = argv[0]
    if name == "popd":
        return None
    i, _ = getopt(argv, "")
    if i >= len(argv):
        return "~" if name == "cd" else None
    target = argv[i]
    if target == "-" or (name == "pushd" and target[:1] in "+-"):
        return None
    return target


def echoed_text(command: SimpleCommand) -> str | None:
    """What echo/printf/cat-with-heredoc writes, when it is known before running."""
    name, args = command.name, list(command.argv[1:])
    if name == "echo":
        escapes = False
        while args and re.fullmatch(r"-[neE]+", args[0]):
            flags = args.pop(0)
            escapes = flags.rfind("e") > flags.rfind("E") if ("e" in flags or "E" in flags) else escapes
        text = " ".join(args)
        return decode_escapes(text) if escapes else text
    if name == "printf":
        if args[:1] == ["-v"]:
            return None
        if args[:1] == ["--"]:
            args = args[1:]
        return _printf(args[0], args[1:]) if args else None
    if name == "cat" and len(command.argv) == 1:
        for op, target in command.redirects:
            if op in ("<<", "<<-", "<<<"):
                return target
    return None


_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|0?[0-7]{1,3}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b",
                   "\\": "\\", "'": "'", '"': '"'}


def decode_escapes(text: str) -> str:
    """Backslash escapes as `printf` and `echo -e` read them: \\n, \\x72, \\162, \\u00e9."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU":
            return _chr(int(code[1:], 16))
        if code[0] in "01234567":
            return _chr(int(code, 8) & 0xFF)
        return _SIMPLE_ESCAPES.get(code, "\\" + code)

    return _ESCAPE.sub(one, text)


def _chr(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return ""


_DIRECTIVE = re.compile(r"%(%|[-+ #0]*[0-9]*(?:\.[0-9]*)?([sbdiqc]))")


def _printf(format_text: str, args: list[str]) -> str | None:
    """What `printf FORMAT ARGS…` prints, for %s/%b/%d/%c/%q directives; None for anything else."""
    if "%" in _DIRECTIVE.sub("", format_text):
        return None
    directives = [m for m in _DIRECTIVE.finditer(format_text) if m.group(1) != "%"]
    if not directives:
        return decode_escapes(format_text.replace("%%", "%"))
    out: list[str] = []
    remaining = list(args)
    while True:
        def fill(match: re.Match[str]) -> str:
            if match.group(1) == "%":
                return "%"
            value = remaining.pop(0) if remaining else ""
            return decode_escapes(value) if match.group(2) == "b" else value

        out.append(_DIRECTIVE.sub(fill, decode_escapes(format_text)))
        if not remaining:
            return "".join(out)


def substituted_output(commands: list[SimpleCommand]) -> str | None:
    """The output of `$( … )` when it is plain: `$(echo rm)`, `$(which rm)`, `$(command -v rm)`."""
    if not commands:
        return None
    first = commands[0]
    if any(c.find_roots or c.from_xargs for c in commands):
        return None
    if first.name in ("which", "type", "whence") or (first.name == "command" and any(a in ("-v", "-V") for a in first.argv)):
        names = [a for a in first.argv[1:] if not a.startswith("-")]
        output = names[0] if len(names) == 1 else None
    elif len(commands) == 1:
        output = echoed_text(first)
    else:
        output = None
    if output is None or any(marker in output for marker in ("$", "`", "\\", "%")):
        return None  # escapes and formats are not interpreted here: the output stays unknown
    return output.rstrip("\n")
