"""Code whose text is only known when it runs: the blocklist cannot check it, so it is refused.

Invariant: refused only where the parse reports code it could not read (the
output of `tr` piped into `sh`, a downloaded file run later, `awk '{system($0)}'`)
or a command word that is itself an unresolved expansion (`$cmd`, `"$@"`,
`"${a[@]}"`) in a command line that also carries dangerous material; an
unresolved word with nothing dangerous around it (`$EDITOR file`) is left to the
permission prompt.
"""

from __future__ import annotations

import re

from ..shell_syntax import ParsedCommand, SimpleCommand
from .paths import Where

# Program names and arguments that turn a command of unknown name into a likely attack.
_DANGEROUS_MATERIAL = re.compile(
    r"(?<![A-Za-z0-9])(?:rm|rmdir|unlink|shred|dd|mkfs[.\w]*|wipefs|fdisk|parted|chmod|chown|chgrp|mv|truncate"
    r"|kill|pkill|killall|shutdown|reboot|halt|poweroff|systemctl|crontab|curl|wget|nc|ncat|socat|base64|xxd"
    r"|openssl|sh|bash|zsh|dash|sudo|su|doas|python[0-9.]*|perl|ruby|node|find|rsync|tee|iptables"
    r"|--no-preserve-root|--recursive|-[rRf]{2,})(?![A-Za-z0-9])"
    r"|(?:^|[\s=,_:;'\"(])(?:/|~|\$HOME|\$\{HOME\}|\.\.)(?:[\s,_:;'\")/]|$)|/etc/|/dev/|/boot|/usr|\$\(|`",
)
_UNKNOWN = ("$", "`", "<(", ">(")


def unknown_code(parsed: ParsedCommand, where: Where) -> str | None:
    """Code reaching a shell or interpreter whose text is only known at run time."""
    if parsed.opaque_code:
        return f"{parsed.opaque_code[0]} is run as code and is blocked: cannot verify what it runs"
    return None


def unknown_command_words(parsed: ParsedCommand, where: Where) -> str | None:
    """`$cmd`, `"$@"`, `"${a[@]}"`, `$(tr …)` as the command name, beside dangerous material."""
    for command in parsed.commands:
        reason = _unknown_command_word(command, parsed.source)
        if reason is not None:
            return reason
    return None


def _unknown_command_word(command: SimpleCommand, source: str) -> str | None:
    program = command.program or command.name
    if not program or not any(marker in program for marker in _UNKNOWN):
        return None
    rest = " ".join(command.argv[1:])
    for text in (rest, source):
        match = _DANGEROUS_MATERIAL.search(_without(text, program))
        if match:
            return (
                f"the command {program[:40]} is only known when it runs, and this command line also holds"
                f" {match.group().strip() or '/'!r}: blocked (cannot tell what runs)"
            )
    return None


def _without(text: str, program: str) -> str:
    """`text` with the unresolved program word itself taken out (its own `$(` does not count)."""
    return text.replace(program, " ", 1)
