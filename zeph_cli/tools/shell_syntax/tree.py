"""The syntax tree of a shell script, as reader.py builds it from tree-sitter's and the analysis walks it.

Invariant: plain data with no behaviour beyond reading a word's text; nothing
here knows how the text was read (tree-sitter stays in reader.py) or what
running it would do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A word is a list of parts:
#   ("lit", text, quoted)          literal text; quoted text is exempt from brace expansion and splitting
#   ("param", name, raw, quoted)   $name / ${name}: replaced when an earlier assignment made it known
#   ("dyn", raw, subs, quoted)     any other expansion, kept verbatim; `subs` are the command lists it runs


@dataclass
class Word:
    parts: list
    start: int
    end: int

    def plain(self) -> str | None:
        """The text of an entirely unquoted literal word (keywords, `{`, `}`)."""
        if len(self.parts) == 1 and self.parts[0][0] == "lit" and not self.parts[0][2]:
            return self.parts[0][1]
        return None

    def text(self) -> str:
        return "".join(p[1] if p[0] in ("lit", "dyn") else p[2] for p in self.parts)

    def quoted(self) -> bool:
        return any(p[0] == "lit" and p[2] for p in self.parts)


@dataclass
class Heredoc:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    parts: list = field(default_factory=list)


@dataclass
class Redirect:
    op: str
    target: Word | None
    heredoc: Heredoc | None = None


@dataclass
class List:
    items: list  # of Pipeline


@dataclass
class Pipeline:
    stages: list
    background: bool = False


@dataclass
class Simple:
    words: list
    redirects: list
    start: int
    end: int
    src: str


@dataclass
class Group:
    body: List
    subshell: bool
    redirects: list
    text: str


@dataclass
class Compound:
    """if/while/until/case/[[ ]]/(( )): its words are expanded, its lists run."""

    lists: list
    words: list
    redirects: list


@dataclass
class For:
    var: str | None
    words: list | None  # None: `for x; do` iterates over "$@"
    body: List
    redirects: list


@dataclass
class Function:
    name: str
    body: object
