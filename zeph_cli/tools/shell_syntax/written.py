"""Files a command line writes and later runs, and the programs that read code from standard input.

Invariant: pure; a file's content is known only when an `echo`, `printf` or
here-document `cat` wrote it; any other writer (a download, a decoder, `cp`)
leaves it unknown, so running it is reported as code that cannot be checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from .argv import getopt, operands
from .commands import SimpleCommand
from .effects import echoed_text
from .programs import STDIN_PATHS, interpreter_family, program_source
from .wrappers import shell_reads_stdin

_WRITES = re.compile(r"[0-9]*(>|>\||&>)")
_APPENDS = re.compile(r"[0-9]*(>>|&>>)")


class WrittenFiles:
    """What each file written so far in one command line holds (None: not known)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, str | None]] = {}

    def get(self, path: str, cd_path: Sequence[str | None] = ()) -> tuple[str, str | None] | None:
        """(writer, content) of a file written earlier, by the path as run."""
        return self.files.get(_key(path)) if path else None

    def record(self, command: SimpleCommand) -> None:
        text = echoed_text(command)
        for op, target in command.redirects:
            if not target or target in STDIN_PATHS or target.startswith("/dev/"):
                continue
            writer = command.name or "a redirect"
            if _WRITES.fullmatch(op):
                self.files[_key(target)] = (writer, text)
            elif _APPENDS.fullmatch(op):
                before = self.files.get(_key(target), (writer, ""))[1]
                self.files[_key(target)] = (writer, None if before is None or text is None else before + text)
        for path in _downloaded_or_copied(command):
            self.files[_key(path)] = (command.name, None)


def _key(path: str) -> str:
    return os.path.normpath(path)


def _downloaded_or_copied(command: SimpleCommand) -> list[str]:
    argv, name = command.argv, command.name
    if name in ("curl", "wget"):
        named = _anywhere(argv, ("-o", "--output") if name == "curl" else ("-O", "--output-document"))
        urls = [arg for arg in argv[1:] if "://" in arg]
        remote_name = name == "wget" or any(a in ("-O", "--remote-name") or a.startswith("--remote-name") for a in argv[1:])
        return named or ([_url_name(url) for url in urls] if remote_name else [])
    if name in ("cp", "mv", "install", "ln", "tee", "dd", "unzip", "tar"):
        found = operands(argv)
        return found[-1:] if name not in ("tee",) else found
    return []


def _anywhere(argv: Sequence[str], names: tuple[str, ...]) -> list[str]:
    """Values of the options `names` wherever they stand (`-o f`, `-of`, `--output=f`)."""
    found = []
    for index, arg in enumerate(argv[1:], 1):
        for option in names:
            bundled = not option.startswith("--") and re.fullmatch(r"-[A-Za-z]+", arg) and arg.endswith(option[1])
            if (arg == option or bundled) and index + 1 < len(argv):
                found.append(argv[index + 1])
            elif option.startswith("--") and arg.startswith(option + "="):
                found.append(arg[len(option) + 1:])
            elif not option.startswith("--") and arg.startswith(option) and len(arg) > 2:
                found.append(arg[2:])
    return found


def _url_name(url: str) -> str:
    return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def stdin_program(command: SimpleCommand) -> str | None:
    """What kind of program a command reads from standard input: "shell", "make", an
    interpreter family ("python", …), or None when its input is data."""
    argv, name = command.argv, command.name
    if not argv:
        return None
    if shell_reads_stdin(command):
        return "shell"
    if name in ("source", ".") and len(argv) > 1 and argv[1] in STDIN_PATHS:
        return "shell"
    if name in ("at", "batch"):
        _, options = getopt(argv, "qfmMtvc")
        return None if any(o in ("-f", "-l", "-r", "-d", "-c") for o, _ in options) else "shell"
    if name in ("make", "gmake"):
        _, options = getopt(argv, "fCIEjlLoOW", {"--file", "--makefile"})
        files = [value for option, value in options if option in ("-f", "--file", "--makefile")]
        return "make" if any(f in STDIN_PATHS for f in files) else None
    family = interpreter_family(name)
    if family is not None and program_source(argv)[0] == "stdin":
        return family
    return None
