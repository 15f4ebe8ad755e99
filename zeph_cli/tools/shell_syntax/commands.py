"""What `parse_command` reports: the simple commands a command line could run.

Invariant: frozen values, argv after quote removal; nothing here refers back to
the text's syntax tree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimpleCommand:
    """One command the shell would run, after quote removal and expansion of what is known."""

    argv: tuple[str, ...]
    # (operator, target): (">", "out.txt"), ("2>&", "1"); for "<<"/"<<<" the target is the text fed.
    redirects: tuple[tuple[str, str], ...] = ()
    text: str = ""
    # argv[0] as written ("/usr/bin/rm"); argv[0] itself is its basename ("rm").
    program: str = ""
    # Run by xargs: more arguments come from xargs' input and are unknown here.
    from_xargs: bool = False
    # `xargs -I R` (or -i, --replace): R in the arguments is replaced by each input line.
    xargs_replace: str = ""
    # Run by `find … -exec`: "{}" stands for each path find yields under these starting points.
    find_roots: tuple[str, ...] = ()
    # Directories changed into (cd, pushd, env -C) before this command ran, in order; None where unknown.
    cd_path: tuple[str | None, ...] = ()
    # Leading `NAME=value` words, the value None where only known at run time.
    assignments: tuple[tuple[str, str | None], ...] = ()

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""


@dataclass(frozen=True)
class ParsedCommand:
    commands: tuple[SimpleCommand, ...]
    # Every pipeline, each as the commands of its stages in order (wrapped commands included).
    pipelines: tuple[tuple[SimpleCommand, ...], ...]
    # False when quotes, parentheses or keywords are unbalanced; `commands` is then a best effort.
    complete: bool
    # What could not be analysed at all (too deeply nested, too large): nothing in it was checked.
    unverifiable: tuple[str, ...] = ()
    # Functions whose bodies run copies of themselves in parallel (`:(){ :|:& };:`).
    fork_bombs: tuple[str, ...] = ()
    # Code that runs but whose text is only known at run time: the output of `tr` piped
    # into `sh`, a file written by `base64 -d` then run, `awk '{system($0)}'`, …
    opaque_code: tuple[str, ...] = ()
    # The command line as given.
    source: str = ""
