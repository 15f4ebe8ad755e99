"""Which simple commands could a command line run? Read with tree-sitter-bash, judged as bash runs it.

Invariant: pure and total — `parse_command` never raises, never runs anything
and never touches the file system. It reports every simple command bash could
run for the text, quotes and escapes removed as bash removes them, including
commands inside substitutions, groups, loops, function bodies, `bash -c` and
`eval` scripts and behind wrappers such as `sudo`, `env`, `xargs` or
`find -exec`. What it cannot analyse is flagged: `unverifiable` (text the
parser cannot read, nesting too deep, a brace expansion too large) and
`complete`. tree-sitter is imported by the first command read (reader.py),
never at start-up.
"""

from .analysis import PARSER_FAILED, parse_command
from .argv import basename, operands, split_find
from .commands import ParsedCommand, SimpleCommand
from .programs import SHELLS, STDIN_PATHS, interpreter_family, program_source

__all__ = [
    "PARSER_FAILED",
    "SHELLS",
    "STDIN_PATHS",
    "ParsedCommand",
    "SimpleCommand",
    "basename",
    "interpreter_family",
    "operands",
    "parse_command",
    "program_source",
    "split_find",
]
