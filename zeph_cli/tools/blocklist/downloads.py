"""Running code nobody has read: downloads or decoded data fed to a shell or interpreter.

Invariant: code reaching an interpreter from a downloader (curl, wget, nc, …) or
a decoder (base64 -d, xxd -r, …) is refused, whether piped, substituted or redirected.
"""

from __future__ import annotations

from ..shell_syntax import SHELLS, STDIN_PATHS, ParsedCommand, SimpleCommand, parse_command, program_source
from .commands import show_command, tool_name
from .paths import Where

DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat", "netcat", "socat"})
# Their output is code nobody has read either: `echo … | base64 -d | sh`.
DECODERS = frozenset({"base64", "base32", "basenc", "xxd", "uudecode", "openssl", "gunzip", "zcat", "bzcat", "xzcat", "rev"})


def downloaded_code(command: SimpleCommand, where: Where) -> str | None:
    """Running code straight from a download (bash <(curl …), eval "$(curl …)", source <(wget …))."""
    argv = command.argv
    if not argv:
        return None
    name = tool_name(command)
    kind, program = program_source(argv)
    candidates = [argv[0]]
    if kind == "file" and program:
        candidates.append(program)
    if kind == "code" and program and name not in SHELLS:
        candidates.append(program)
    if name in ("source", ".") and len(argv) > 1:
        candidates.append(argv[1])
    if kind == "stdin":
        candidates += [target for op, target in command.redirects if op.lstrip("0123456789") in ("<", "<<<")]
    for text in candidates:
        source = _code_source_in(text)
        if source in DOWNLOADERS:
            return f"running code downloaded by {source} ({show_command(command)}) is blocked"
        if source is not None:
            return f"running code decoded by {source} ({show_command(command)}) is blocked: cannot verify what it runs"
    return None


def _code_source_in(text: str) -> str | None:
    """The downloader (or decoder) whose output a substitution in `text` turns into code."""
    if not any(marker in text for marker in ("$(", "`", "<(")):
        return None
    found = [tool_name(inner) for inner in parse_command(text).commands]
    return next((n for n in found if n in DOWNLOADERS), None) or next((n for n in found if n in DECODERS), None)


def download_piped_to_interpreter(parsed: ParsedCommand, where: Where) -> str | None:
    """curl … | sh runs whatever the server sends, unread (as does base64 -d | sh)."""
    for pipeline in parsed.pipelines:
        source = None
        for command in pipeline:
            if source is not None and _runs_input_as_code(command):
                if source in DECODERS:
                    return f"piping {source} output into {command.argv[0]} is blocked: cannot verify what it runs"
                return f"piping {source} output into {command.argv[0]} is blocked"
            if source is None and tool_name(command) in DOWNLOADERS | DECODERS:
                source = tool_name(command)
    return None


def _runs_input_as_code(command: SimpleCommand) -> bool:
    kind, code = program_source(command.argv)
    if command.from_xargs:
        replace = command.xargs_replace
        return kind in ("stdin", "missing") or (kind == "code" and code is not None and bool(replace) and replace in code)
    if tool_name(command) in ("source", ".", "eval"):
        return command.argv[1:2] != () and command.argv[1] in STDIN_PATHS
    return kind == "stdin"
