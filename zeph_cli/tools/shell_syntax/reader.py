"""Reads shell text into the syntax tree the analysis walks (tree.py), with tree-sitter-bash.

Invariant: the only module that knows tree-sitter, which it imports when the
first command is read (never at start-up). Reading never raises and never
drops a word. What tree-sitter cannot read — an error or a missing token, a
here-document it ends where bash would not, a test it reads past its `]]`, a
substitution it leaves inside a word — goes into `Report.unreadable`, and the
command is refused as one that cannot be checked: its structure is then
tree-sitter's guess, which can hide a command (`[[ -d / ]] && rm -rf /` is
read as one test). The words it could not place still become commands, split
at the operators between them, so a more precise reason can come first.
Nesting beyond `MAX_DEPTH` raises `TooDeep`.

Where tree-sitter-bash reads valid text otherwise than bash, the tree follows
bash: a word is a run of text with no blank in it (`r\\<newline>m` is one
word, `-rf$IFS/` expands `$IFS` however tree-sitter cut it, a blank inside a
tree-sitter word splits it); words after a redirection's target are arguments
(`rm >/dev/null -rf /`); commands on a here-document's line after its
operator belong to that line (`cat <<EOF 2>/dev/null | sh`); `<<<` after
another redirection and `<>` are redirections; a backtick body is unescaped
and read again (`` `a \\`b\\`` `` runs b); `time` and `coproc` are reserved
words before a compound command; in double quotes, the blanks tree-sitter
counts into an expansion are quoted text.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .tree import Compound, For, Function, Group, Heredoc, List, Pipeline, Redirect, Simple, Word

MAX_DEPTH = 32  # nesting of substitutions, groups, compound commands and nested scripts


class TooDeep(Exception):
    """Nesting beyond MAX_DEPTH: the text is not analysed further."""


@dataclass
class Report:
    incomplete: bool = False
    # What tree-sitter could not read (an error, a missing token, a substitution left in literal text):
    # what bash would run there is not known, so the command cannot be checked.
    unreadable: list[str] = field(default_factory=list)


Node = Any  # a tree_sitter.Node

_local = threading.local()  # a tree-sitter parser is not safe to share between threads


def _parse_bytes(data: bytes) -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = _local.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return parser.parse(data)


def parse(text: str, depth: int, report: Report) -> List:
    """The command list of a whole script nested `depth` levels deep."""
    return _Reader(text, depth, report).script()


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIMPLE_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CONTINUATIONS = re.compile(r"(?:\\\n)+")
_UNQUOTED_SPECIAL = re.compile(r"[\\ \t\n$`]|[<>]\(")
_RESERVED = re.compile(rb"\b(?:time|coproc)\b")
_TIME_PREFIX = re.compile(r"time(?:[ \t]+(?:-p|--))*")
_COPROC_PREFIX = re.compile(r"coproc(?:[ \t]+[A-Za-z_][A-Za-z0-9_]*(?=[ \t]*(?:\(|\{[ \t\n])))?")
_LEADING_TABS = re.compile(r"(^|\n)\t+")
_LINE_TABS = re.compile(r"\n\t+")

_OPERATORS = frozenset({"|", "|&", ";", "&", "&&", "||"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "arithmetic_expansion", *_SUBSTITUTIONS})
_SIMPLE_STATEMENTS = frozenset({"command", "declaration_command", "unset_command", "variable_assignments"})
_COMPOUNDS = frozenset({
    "subshell", "compound_statement", "if_statement", "while_statement", "for_statement",
    "c_style_for_statement", "case_statement", "function_definition",
})
_STATEMENTS = frozenset({
    *_SIMPLE_STATEMENTS, *_COMPOUNDS, "redirected_statement", "pipeline", "list", "negated_command", "test_command",
    "variable_assignment",
})
# Nodes that are (pieces of) one word; a blank between two of them ends a word.
_WORDS = frozenset({
    "word", "number", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
    "brace_expression", "extglob_pattern", "variable_name", "special_variable_name", "regex", "test_operator",
    "array", "variable_assignment", "command_name", "file_descriptor", "subscript", *_EXPANSIONS,
})
_CONTAINERS = frozenset({"concatenation", "command_name", "variable_assignment"})  # words made of words
_LITERAL_LEAVES = frozenset({
    "word", "number", "brace_expression", "extglob_pattern", "variable_name", "special_variable_name", "regex",
    "test_operator", "file_descriptor",
})
_ANSI_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
    "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}
_HEX = re.compile(r"[0-9a-fA-F]+")
_OCTAL = re.compile(r"[0-7]+")

_BREAK = None  # in a run of word pieces: a blank inside a node ends the word there


class _Line:
    """Pipelines built from a run of nodes: words and redirections gather into the command being
    built, a compound command takes the redirections after it, operators end commands."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.pipelines: list[Pipeline] = []
        self.stages: list[object] = []
        self.words: list[Node] = []
        self.redirects: list[Redirect] = []
        self.spans: list[tuple[int, int]] = []
        self.command: Group | Compound | For | Function | None = None
        self.chain_start = 0

    def word(self, node: Node) -> None:
        if self.command is not None:  # words after a compound command: bash refuses, report them anyway
            self.end_stage()
        self.words.append(node)

    def redirect(self, redirect: Redirect, span: tuple[int, int]) -> None:
        if self.command is not None and hasattr(self.command, "redirects"):
            self.command.redirects.append(redirect)
        else:
            self.redirects.append(redirect)
            self.spans.append(span)

    def compound(self, command: Group | Compound | For | Function) -> None:
        self.end_stage()
        self.command = command

    def end_stage(self) -> None:
        if self.command is not None:
            self.stages.append(self.command)
            self.command = None
        if self.words or self.redirects:
            self.stages.append(self.reader.simple(self.words, self.redirects, self.spans))
            self.words, self.redirects, self.spans = [], [], []

    def end(self, background: bool = False, and_or: bool = False) -> None:
        self.end_stage()
        if self.stages:
            self.pipelines.append(Pipeline(self.stages))
            self.stages = []
        if background:
            for pipeline in self.pipelines[self.chain_start:]:
                pipeline.background = True
        if not and_or:
            self.chain_start = len(self.pipelines)


class _Reader:
    def __init__(self, text: str, depth: int, report: Report) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.ascii = len(self.data) == len(text)
        self.depth = depth
        self.report = report
        self._starts: list[int] | None = None

    # positions

    def at(self, offset: int) -> int:
        """The character index of a byte offset."""
        if self.ascii:
            return offset
        if self._starts is None:
            starts, position = [], 0
            for char in self.text:
                starts.append(position)
                code = ord(char)
                position += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
            self._starts = starts
        return bisect_left(self._starts, offset)

    def span(self, node: Node) -> tuple[int, int]:
        if self.ascii:
            return node.start_byte, node.end_byte
        return self.at(node.start_byte), self.at(node.end_byte)

    def source(self, node: Node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooDeep

    def leave(self) -> None:
        self.depth -= 1

    # structure

    def script(self) -> List:
        data = self.data
        tree = _parse_bytes(data)
        for _ in range(8):
            blanks = self._reserved_words(tree.root_node) if _RESERVED.search(data) else []
            if not blanks:
                break
            edited = bytearray(data)
            for start, end in blanks:
                edited[start:end] = b" " * (end - start)
            data = bytes(edited)
            tree = _parse_bytes(data)
        root = tree.root_node
        if root.has_error:
            error = self._first_error(root)
            if error is not None:
                self.report.incomplete = True
                self.report.unreadable.append(error)
        return self.statements(root.children)

    def _first_error(self, root: Node) -> str | None:
        """What tree-sitter could not read, for a message: the text of its first error, or the token missing.
        None when every error is a redirection tree-sitter-bash lacks and this module reads (`<<<` after
        another redirection, `<>`)."""
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_missing:
                before = self.text[max(0, self.at(node.start_byte) - 30):self.at(node.start_byte)]
                what = f"a {node.type.replace('_', ' ')}" if node.is_named else repr(node.type)
                return f"the shell parser cannot read it: {what} is missing after {' '.join(before.split())!r}"
            if node.type == "ERROR" and not (_split_herestring(node) or _split_read_write(node) or _folded_operator(node)):
                return f"the shell parser cannot read it: {' '.join(self.source(node).split())[:40]!r}"
            stack.extend(reversed([c for c in node.children if c.has_error]))
        return None

    def _reserved_words(self, root: Node) -> list[tuple[int, int]]:
        """Byte spans of `time [-p]` and `coproc [NAME]` that tree-sitter read as a command's name."""
        found = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                name = node.child_by_field_name("name")
                first = name.children[0] if name is not None and name.child_count == 1 else None
                if first is not None and first.type == "word" and self.source(first) in ("time", "coproc"):
                    start = self.at(first.start_byte)
                    pattern = _TIME_PREFIX if self.source(first) == "time" else _COPROC_PREFIX
                    match = pattern.match(self.text, start)
                    if match:
                        length = len(match.group().encode("utf-8", "surrogatepass"))
                        found.append((first.start_byte, first.start_byte + length))
            stack.extend(node.children)
        return found

    def statements(self, children: Iterable[Node]) -> List:
        line = _Line(self)
        for child in children:
            if child.type in _STATEMENTS:
                line.end()
            self.feed(line, child)
        line.end()
        return List(line.pipelines)

    def feed(self, line: _Line, node: Node) -> None:
        kind = node.type
        if kind in _SIMPLE_STATEMENTS:
            line.end_stage()
            for child in node.children:
                child_kind = child.type
                if child_kind in _REDIRECTS:
                    self.redirect(line, child)
                elif child_kind == "ERROR" or child_kind == "comment":
                    self.feed(line, child)
                else:
                    line.word(child)
            return
        if kind == "comment" or node.is_missing:
            return
        if kind == "list":
            self._feed_list(line, node)
        elif kind in ("pipeline", "negated_command"):
            for child in node.children:
                self.feed(line, child)
        elif kind == "variable_assignment":
            line.end_stage()
            line.word(node)
        elif kind == "redirected_statement":
            body = node.child_by_field_name("body")
            for child in node.children:
                if body is not None and child.id == body.id:
                    self.feed(line, child)
                elif child.type in _REDIRECTS:
                    self.redirect(line, child)
                else:
                    self.feed(line, child)
        elif kind in _REDIRECTS:
            self.redirect(line, node)
        elif kind == "test_command":
            line.end_stage()
            leaves = self._word_leaves(node)
            words = self.words(leaves)
            closing = "]]" if self.source(node).startswith("[[") else "]"
            inside = words if closing == "]]" else words[:-1]  # `[[ ]]` are not among the words, `[ ]` are
            if any(w.plain() == closing for w in inside):  # tree-sitter read past the test's end
                self.report.unreadable.append(f"the shell parser cannot read it: {' '.join(self.source(node).split())[:40]!r}")
            if closing == "]]":
                line.compound(Compound([], words, []))
            else:
                for leaf in leaves:
                    line.word(leaf)
        elif kind in _COMPOUNDS:
            line.compound(self.compound(node))
        elif kind == "ERROR":
            if _split_herestring(node):
                return  # the `<<` of a `<<<` whose `<` tree-sitter read as the next redirection
            if not _folded_operator(node):
                self.report.incomplete = True
            if node.child_count == 0:
                if node.end_byte > node.start_byte:
                    line.word(node)
                return
            self.enter()
            try:
                for child in node.children:
                    self.feed(line, child)
            finally:
                self.leave()
        elif kind in _WORDS or kind == "$":
            line.word(node)
        elif kind in ("|", "|&"):
            line.end_stage()
        elif kind in ("&&", "||"):
            line.end(and_or=True)
        elif kind == "&":
            line.end(background=True)
        elif kind == "!":
            return
        elif not node.is_named:
            if kind in ("{", "}") and self._glued(node):
                line.word(node)  # `{rm,-rf,/}` in text tree-sitter could not read: a word, as bash reads it
            else:
                line.end()  # `;`, a newline, `;;`, keywords, parentheses and braces
        else:
            for child in node.children:  # clauses (do_group, elif_clause, …) and anything unforeseen
                self.feed(line, child)

    @staticmethod
    def _glued(node: Node) -> bool:
        before, after = node.prev_sibling, node.next_sibling
        return (after is not None and after.is_named and after.start_byte == node.end_byte) or (
            before is not None and before.is_named and before.end_byte == node.start_byte
        )

    def _feed_list(self, line: _Line, node: Node) -> None:
        """`a && b || c`: tree-sitter nests these to the left, as deep as the list is long."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "list":
                stack.extend(reversed(current.children))
            else:
                self.feed(line, current)

    def compound(self, node: Node) -> Group | Compound | For | Function:
        self.enter()
        try:
            return self._compound(node)
        finally:
            self.leave()

    def _compound(self, node: Node) -> Group | Compound | For | Function:
        kind = node.type
        text = self.source(node)
        if kind == "subshell":
            return Group(self.statements(node.children), True, [], text)
        if kind == "compound_statement":
            if text.startswith("(("):
                return Compound([], [self.arithmetic(node, text)], [])
            return Group(self.statements(node.children), False, [], text)
        if kind == "for_statement":
            variable = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            has_in = any(child.type == "in" for child in node.children)
            body = node.child_by_field_name("body")
            return For(
                self.source(variable) if variable is not None else None,
                self.words(values) if has_in else None,
                self.statements(body.children) if body is not None else List([]),
                [],
            )
        if kind == "c_style_for_statement":
            body = node.child_by_field_name("body")
            opened = next((c for c in node.children if c.type == "(("), None)
            closed = next((c for c in node.children if c.type == "))"), None)
            raw_start = self.at(opened.start_byte) if opened is not None else self.at(node.start_byte)
            raw_end = self.at(closed.end_byte) if closed is not None else self.at(node.end_byte)
            raw = self.text[raw_start:raw_end]
            word = Word([("dyn", raw, self.substitutions(node, stop=body), False)], raw_start, raw_end)
            return For(None, [word], self.statements(body.children) if body is not None else List([]), [])
        if kind == "case_statement":
            words: list[Word] = []
            lists: list[List] = []
            value = node.child_by_field_name("value")
            if value is not None:
                words += self.words([value])
            for item in node.children:
                if item.type != "case_item":
                    if item.type == "ERROR":
                        lists.append(self.statements([item]))
                    continue
                patterns = item.children_by_field_name("value")
                words += self.words(patterns)
                taken = {p.id for p in patterns}
                lists.append(self.statements(c for c in item.children if c.id not in taken))
            return Compound(lists, words, [])
        if kind == "function_definition":
            return self._function(node)
        # if, while and until: conditions and bodies, walked in order
        return Compound([self.statements(node.children)], [], [])

    def _function(self, node: Node) -> Function:
        """`f() { …; } > log`: the body, with the redirections written after it."""
        name = node.child_by_field_name("name")
        found = node.child_by_field_name("body")
        if found is None:
            self.report.incomplete = True
            body: Group | Compound | For | Function = Compound([], [], [])
        elif found.type in _COMPOUNDS:
            body = self.compound(found)
        else:  # `f() [[ … ]]`
            body = Compound([self.statements([found])], [], [])
        line = _Line(self)
        for child in node.children:
            if child.type in _REDIRECTS:
                self.redirect(line, child)
        if isinstance(body, (Group, Compound, For)):
            body.redirects.extend(line.redirects)
        return Function(self.source(name) if name is not None else "", body)

    def arithmetic(self, node: Node, raw: str) -> Word:
        start, end = self.span(node)
        return Word([("dyn", raw, self.substitutions(node), False)], start, end)

    def _word_leaves(self, node: Node) -> list[Node]:
        """The words of a test (`[ … ]`, `[[ … ]]`) in order, through the expressions tree-sitter builds."""
        found: list[Node] = []
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if child.type in ("[[", "]]") or child.is_missing:
                continue
            if child.type in _WORDS or not child.is_named or child.child_count == 0:
                found.append(child)
            else:
                stack.extend(reversed(child.children))
        return found

    # redirections

    def redirect(self, line: _Line, node: Node) -> None:
        kind = node.type
        start, end = self.span(node)
        if kind == "heredoc_redirect":
            self._heredoc(line, node, (start, end))
            return
        targets = [c for c in node.children if (c.type in _WORDS and c.type != "file_descriptor") or c.type == "$"]
        first = targets[0] if targets else None
        op_end = self.at(first.start_byte) if first is not None else end
        op = "".join(self.text[start:op_end].split())
        before = node.prev_sibling
        if op == "<" and before is not None and _split_herestring(before):
            op = "<<<"
        target_word: Word | None = None
        rest: list[Node] = []
        if op.endswith("-") and op[-2:-1] == "&":  # `3<&-` closes the descriptor: what follows are arguments
            op, target_word = op[:-1], Word([("lit", "-", False)], op_end - 1, op_end)
            rest = [c for c in node.children if first is not None and c.start_byte >= first.start_byte]
        elif first is not None:
            words = self.words([first])
            target_word = words[0] if words else Word([("lit", "", True)], op_end, op_end)
            rest = [c for c in node.children if c.start_byte >= first.end_byte]
        else:
            self.report.incomplete = True
        line.redirect(Redirect(op, target_word), (start, end))
        for child in rest:  # tree-sitter puts the words after a redirection's target into it
            self.feed(line, child)

    def _heredoc(self, line: _Line, node: Node, span: tuple[int, int]) -> None:
        op = "<<"
        start_node = body = None
        trailing: list[Node] = []
        for child in node.children:
            kind = child.type
            if kind in ("<<", "<<-"):
                op = kind
            elif kind == "heredoc_start":
                start_node = child
            elif kind == "heredoc_body":
                body = child
            elif kind != "heredoc_end":
                trailing.append(child)
        end_node = next((c for c in node.children if c.type == "heredoc_end"), None)
        if end_node is None:
            self.report.incomplete = True
        delimiter = self.source(start_node) if start_node is not None else ""
        quoted = any(char in delimiter for char in "'\"\\")
        strip_tabs = op == "<<-"
        if end_node is not None and body is not None:
            self._check_heredoc_end(_unquote(delimiter), strip_tabs, body, end_node)
        doc = Heredoc(delimiter, strip_tabs, quoted, self._heredoc_parts(body, quoted, strip_tabs))
        target = None
        if start_node is not None:
            target = Word([("lit", delimiter, quoted)], *self.span(start_node))
        line.redirect(Redirect(op, target, doc), span)
        for child in trailing:  # `cat <<EOF | sh`, `cat <<EOF > out && …`: the rest of the line
            self.feed(line, child)

    def _check_heredoc_end(self, delimiter: str, strip_tabs: bool, body: Node, end: Node) -> None:
        """Bash ends a here-document at the first line that is its delimiter, nothing more; tree-sitter
        also ends it at a line that only starts with it (`EOF | cat '$(…)'`), and the rest of that line,
        text bash expands as the document, would be read as commands."""
        text = self.text
        end_start, end_end = self.span(end)
        line_start = text.rfind("\n", 0, end_start) + 1
        line_end = text.find("\n", end_end)
        line = text[line_start:len(text) if line_end < 0 else line_end]
        body_start, _ = self.span(body)
        lines = text[body_start:line_start].split("\n")[:-1] if line_start > body_start else []
        strip = (lambda value: value.lstrip("\t")) if strip_tabs else (lambda value: value)
        if strip(line) != delimiter or any(strip(earlier) == delimiter for earlier in lines):
            self.report.unreadable.append(
                f"the shell parser cannot read it: where the here-document {delimiter!r} ends ({' '.join(line.split())[:40]!r})"
            )

    def _heredoc_parts(self, body: Node | None, quoted: bool, strip_tabs: bool) -> list:
        """A here-document's text: literal with a quoted delimiter, else expanded like double quotes
        (`\\"` stays); `<<-` strips the tabs that start its lines."""
        if body is None:
            return [("lit", "", True)]
        start, end = self.span(body)
        if quoted:
            text = self.text[start:end]
            return [("lit", _LEADING_TABS.sub(r"\1", text) if strip_tabs else text, True)]

        def literal(a: int, b: int) -> list:
            text = self.text[a:b]
            if strip_tabs:
                text = _LEADING_TABS.sub(r"\1", text) if a == start or self.text[a - 1] == "\n" else _LINE_TABS.sub("\n", text)
            return self._quoted_text(text, heredoc=True)

        parts: list = [("lit", "", True)]
        position = start
        for child in body.children:
            child_start, child_end = self.span(child)
            if child.type in _EXPANSIONS:
                child_start = _skip_blanks(self.text, child_start, child_end)
                parts += literal(position, child_start)
                parts.append(self.expansion(child, child_start, child_end, quoted=True))
            else:
                parts += literal(position, child_end)
            position = max(position, child_end)
        return parts + literal(position, end)

    # simple commands and words

    def simple(self, nodes: list[Node], redirects: list[Redirect], spans: list[tuple[int, int]]) -> Simple:
        words = self.words(nodes)
        bounds = [(word.start, word.end) for word in words] + spans
        start = min(s for s, _ in bounds) if bounds else 0
        end = max(e for _, e in bounds) if bounds else 0
        return Simple(words, redirects, start, end, self.text)

    def words(self, nodes: Iterable[Node]) -> list[Word]:
        """Words as bash splits them: pieces that touch (or meet across a `\\<newline>`) are one word."""
        flat = self._flatten(nodes)
        spans = [(node.start_byte, node.end_byte) for node in flat] if self.ascii else [self.span(node) for node in flat]
        text = self.text
        words: list[Word] = []
        i, n = 0, len(flat)
        while i < n:
            start, end = spans[i]
            j = i + 1
            while j < n and (end >= spans[j][0] or self._touching(end, spans[j][0])):
                end = spans[j][1]
                j += 1
            if j == i + 1 and flat[i].type in _LITERAL_LEAVES and not _UNQUOTED_SPECIAL.search(text, start, end):
                words.append(Word([("lit", text[start:end], False)], start, end))  # the common case: a plain word
            else:
                words += self._joined(flat[i:j], spans[i:j])
            i = j
        return words

    def _joined(self, nodes: list[Node], spans: list[tuple[int, int]]) -> list[Word]:
        """The words of nodes that touch: one, unless tree-sitter put a blank inside one of them."""
        words: list[Word] = []
        parts: list | None = None
        start = end = 0
        for piece in self._pieces(nodes, spans):
            if piece is _BREAK:
                if parts:
                    words.append(Word(parts, start, end))
                parts = None
                continue
            piece_start, piece_end, piece_parts = piece
            if parts is None:
                parts, start = [], piece_start
            for part in piece_parts:
                if parts and part[0] == "lit" and parts[-1][0] == "lit" and parts[-1][2] == part[2]:
                    parts[-1] = ("lit", parts[-1][1] + part[1], part[2])  # `]` `]` read as one: `]]`
                else:
                    parts.append(part)
            end = piece_end
        if parts:
            words.append(Word(parts, start, end))
        return words

    def _touching(self, end: int, start: int) -> bool:
        return end >= start or _CONTINUATIONS.fullmatch(self.text, end, start) is not None

    def _pieces(self, flat: list[Node], spans: list[tuple[int, int]]) -> Iterable:
        i, n = 0, len(flat)
        while i < n:
            node = flat[i]
            kind = node.type
            start, end = spans[i]
            if self._literal(node, flat[i + 1] if i + 1 < n else None):
                # touching literal text is read as one: tree-sitter splits `-rf$IFS/` into `-rf`, `$`, `IFS/`
                i += 1
                while i < n and self._literal(flat[i], flat[i + 1] if i + 1 < n else None):
                    end = spans[i][1]
                    i += 1
                yield from self._unquoted(self.text[start:end], start)
                continue
            i += 1
            if kind == "$":  # `$"…"`: a translated string is a string
                yield start, end, []
            elif kind == "ERROR":
                self.report.incomplete = True
                text = self.text[start:end]
                if text[:1] in ("'", '"'):
                    yield start, end, [("lit", text[1:], True)]
                else:
                    yield from self._unquoted(text, start)
            else:
                yield start, end, self.word_parts(node, start, end)

    def _flatten(self, nodes: Iterable[Node]) -> list[Node]:
        """The leaves and word-level nodes of `nodes`, in order."""
        flat: list[Node] = []
        stack = list(nodes)
        stack.reverse()
        while stack:
            node = stack.pop()
            kind = node.type
            if kind in _CONTAINERS or (kind == "ERROR" and node.child_count):
                if kind == "ERROR":
                    self.report.incomplete = True
                stack.extend(reversed(node.children))
            elif not node.is_missing:
                flat.append(node)
        return flat

    def _literal(self, node: Node, following: Node | None) -> bool:
        kind = node.type
        if kind in _LITERAL_LEAVES:
            return True
        if kind == "subscript":
            return not any(marker in self.source(node) for marker in ("$(", "`", "<(", ">("))
        if node.is_named:
            return False
        return not (kind == "$" and following is not None and following.type == "string"
                    and following.start_byte == node.end_byte)

    def _unquoted(self, text: str, start: int) -> Iterable:
        """Unquoted text: `\\x` is a quoted x, `\\<newline>` vanishes, a blank ends the word, `$name` expands."""
        if not _UNQUOTED_SPECIAL.search(text):
            if text:
                yield start, start + len(text), [("lit", text, False)]
            return
        parts: list = []
        buffer: list[str] = []
        piece_start = start
        i, n = 0, len(text)
        while i < n:
            char = text[i]
            if char == "\\" and i + 1 < n:
                if text[i + 1] != "\n":
                    if buffer:
                        parts.append(("lit", "".join(buffer), False))
                        buffer = []
                    parts.append(("lit", text[i + 1], True))
                i += 2
            elif char in " \t\n":
                if buffer:
                    parts.append(("lit", "".join(buffer), False))
                    buffer = []
                if parts:
                    yield piece_start, start + i, parts
                    parts = []
                yield _BREAK
                i += 1
                piece_start = start + i
            elif char in "<>" and text.startswith("(", i + 1):  # a process substitution tree-sitter did not see
                self.report.unreadable.append(f"the shell parser left {text[i:i + 40]!r} unparsed")
                buffer.append(char)
                i += 1
            elif char in "$`":
                part, after = self._dollar(text, i, quoted=False)
                if part is None:
                    buffer.append(char)
                    i += 1
                    continue
                if buffer:
                    parts.append(("lit", "".join(buffer), False))
                    buffer = []
                parts.append(part)
                i = after
            else:
                buffer.append(char)
                i += 1
        if buffer:
            parts.append(("lit", "".join(buffer), False))
        if parts:
            yield piece_start, start + n, parts

    def _dollar(self, text: str, i: int, quoted: bool) -> tuple[tuple | None, int]:
        """An expansion tree-sitter left in literal text: `$name`, `$1` and backticks are read here;
        a `$(…)` or `${…}` it did not parse cannot be checked and is reported unreadable."""
        if text[i] == "`":
            close = i + 1
            while close < len(text) and text[close] != "`":
                close += 2 if text[close] == "\\" else 1
            if close < len(text):
                raw = text[i:close + 1]
                return ("dyn", raw, [self.substitution(None, raw, quoted)], quoted), close + 1
        else:
            match = _NAME.match(text, i + 1)
            if match:
                return ("param", match.group(), text[i:match.end()], quoted), match.end()
            if i + 1 < len(text) and text[i + 1] in "0123456789@*#?$!-":
                return ("dyn", text[i:i + 2], [], quoted), i + 2
            match = _SIMPLE_BRACED.match(text, i)
            if match:
                return ("param", match.group(1), match.group(), quoted), match.end()
            if not text.startswith(("$(", "${", "$["), i):
                return None, i + 1
        self.report.unreadable.append(f"the shell parser left {text[i:i + 40]!r} unparsed")
        return ("dyn", text[i:], [], quoted), len(text)

    def word_parts(self, node: Node, start: int, end: int, quoted: bool = False) -> list:
        kind = node.type
        text = self.text[start:end]
        if kind == "raw_string":
            closed = len(text) >= 2 and text.endswith("'")
            return [("lit", text[1:-1] if closed else text[1:], True)]
        if kind == "ansi_c_string":
            closed = len(text) >= 3 and text.endswith("'")
            return [("lit", _ansi_c(text[2:-1] if closed else text[2:]), True)]
        if kind == "translated_string":  # `$"…"`: its string
            inner = next((c for c in node.children if c.type == "string"), None)
            return self._string(inner, *self.span(inner)) if inner is not None else [("lit", text[2:-1], True)]
        if kind == "string":
            return self._string(node, start, end)
        if kind in _EXPANSIONS:
            return [self.expansion(node, start, end, quoted)]
        return [("dyn", text, self.substitutions(node), quoted)]  # arrays, subscripts: only known at run time

    def _string(self, node: Node, start: int, end: int) -> list:
        """Double-quoted text: its literal parts unescaped, its expansions kept as parts."""
        text = self.text
        opening = start + (2 if text.startswith('$"', start) else 1)
        closed = end - start >= 2 and text[end - 1] == '"' and end > opening
        content_end = end - 1 if closed else end
        parts: list = [("lit", "", True)]  # "" is still a word
        position = opening
        for child in node.children:
            child_start, child_end = self.span(child)
            if child_end <= opening or child_start >= content_end or child.is_missing:
                continue  # the quotes
            if child.type in _EXPANSIONS:
                child_start = _skip_blanks(text, child_start, child_end)
            if child_start > position:
                parts.extend(self._quoted_text(text[position:child_start]))
            if child.type in _EXPANSIONS:
                parts.append(self.expansion(child, child_start, child_end, quoted=True))
            elif child.type == "string_content" or not child.is_named:
                parts.extend(self._quoted_text(text[child_start:child_end]))
            else:
                parts.append(("dyn", text[child_start:child_end], self.substitutions(child), True))
            position = max(position, child_end)
        if content_end > position:
            parts.extend(self._quoted_text(text[position:content_end]))
        return parts

    def _quoted_text(self, text: str, heredoc: bool = False) -> list:
        """Text in double quotes (or an unquoted here-document): `\\` escapes only $ ` \\ (and ") and newline."""
        if not any(char in text for char in "\\$`"):
            return [("lit", text, True)]
        escapable = "$`\\\n" if heredoc else '$`"\\\n'
        parts: list = []
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            char = text[i]
            if char == "\\" and i + 1 < n and text[i + 1] in escapable:
                if text[i + 1] != "\n":
                    out.append(text[i + 1])
                i += 2
            elif char in "$`":
                part, after = self._dollar(text, i, quoted=True)
                if part is None:
                    out.append(char)
                    i += 1
                    continue
                if out:
                    parts.append(("lit", "".join(out), True))
                    out = []
                parts.append(part)
                i = after
            else:
                out.append(char)
                i += 1
        if out or not parts:
            parts.append(("lit", "".join(out), True))
        return parts

    def expansion(self, node: Node, start: int, end: int, quoted: bool) -> tuple:
        kind = node.type
        raw = self.text[start:end]
        if kind == "simple_expansion":
            if _NAME.fullmatch(raw, 1):
                return ("param", raw[1:], raw, quoted)
            return ("dyn", raw, [], quoted)
        if kind == "expansion":
            match = _SIMPLE_BRACED.fullmatch(raw)
            if match:
                return ("param", match.group(1), raw, quoted)
        if kind in _SUBSTITUTIONS:
            return ("dyn", raw, [self.substitution(node, raw, quoted)], quoted)
        return ("dyn", raw, self.substitutions(node), quoted)

    def substitution(self, node: Node | None, raw: str, quoted: bool) -> List:
        """The command list `$( … )`, `<( … )`, `>( … )` or `` ` … ` `` runs."""
        self.enter()
        try:
            if not raw.startswith("`") and node is not None:
                return self.statements(node.children)
            closed = len(raw) >= 2 and raw.endswith("`") and not raw.endswith("\\`")
            if not closed:
                self.report.incomplete = True
            body = _unescape_backticks(raw[1:-1] if closed else raw[1:], quoted)
            return _Reader(body, self.depth, self.report).script()
        finally:
            self.leave()

    def substitutions(self, node: Node, stop: Node | None = None) -> list:
        """The command lists run by substitutions anywhere inside `node` (not below `stop`)."""
        found = []
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if stop is not None and child.id == stop.id:
                continue
            if child.type in _SUBSTITUTIONS:
                start, end = self.span(child)
                start = _skip_blanks(self.text, start, end)
                found.append(self.substitution(child, self.text[start:end], False))
            else:
                stack.extend(reversed(child.children))
        return found


def _split_herestring(node: Node) -> bool:
    """`cmd 2>&1 <<< "x"`: tree-sitter-bash reads the `<<<` after another redirection as an error `<<`
    and a redirection `< "x"`."""
    if node.type != "ERROR" or node.child_count != 1 or node.children[0].type != "<<":
        return False
    after = node.next_sibling
    return after is not None and after.type == "file_redirect" and after.start_byte == node.end_byte \
        and after.child_count > 0 and after.children[0].type == "<"


def _folded_operator(node: Node) -> bool:
    """`cat <<EOF 2>/dev/null | sh`, `cat <<EOF && a; b`: on a here-document's line, tree-sitter-bash
    folds the rest of the line into the redirection or command before it, each operator an error."""
    if node.type != "ERROR" or node.child_count != 1 or node.children[0].type not in _OPERATORS:
        return False
    parent = node.parent
    if parent is None or parent.type not in ("file_redirect", "command"):
        return False
    while parent is not None and parent.type != "heredoc_redirect":
        parent = parent.parent
    return parent is not None


def _split_read_write(node: Node) -> bool:
    """`exec 3<> file`: tree-sitter-bash reads `<>` as `<` and an error `>`."""
    if node.type != "ERROR" or node.child_count != 1 or node.children[0].type != ">":
        return False
    before = node.prev_sibling
    return before is not None and before.type == "<" and before.end_byte == node.start_byte \
        and node.parent is not None and node.parent.type == "file_redirect"


def _unquote(word: str) -> str:
    """A here-document's delimiter as bash compares it: quotes and backslashes removed."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(word):
        char = word[i]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and i + 1 < len(word) and word[i + 1] in '$`"\\':
                out.append(word[i + 1])
                i += 1
            else:
                out.append(char)
        elif char in "'\"":
            quote = char
        elif char == "\\" and i + 1 < len(word):
            out.append(word[i + 1])
            i += 1
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _skip_blanks(text: str, start: int, end: int) -> int:
    """Where an expansion really starts: tree-sitter counts the blanks before it in double quotes."""
    while start < end and text[start] in " \t\n":
        start += 1
    return start


def _unescape_backticks(body: str, quoted: bool) -> str:
    """The script inside backticks: `\\$`, `` \\` `` and `\\\\` (and `\\"` in double quotes) lose the backslash."""
    if "\\" not in body:
        return body
    escapable = '$`\\"' if quoted else "$`\\"
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "\\" and i + 1 < n and body[i + 1] in escapable:
            out.append(body[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _ansi_c(text: str) -> str:
    """The characters of `$'…'` text, its escapes decoded as bash decodes them."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "\\" and i + 1 < n:
            decoded, length = _ansi_escape(text, i + 1)
            out.append(decoded)
            i += 1 + length
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _ansi_escape(src: str, position: int) -> tuple[str, int]:
    """The character a `$'…'` escape stands for, and how many characters after the backslash it used."""
    char = src[position]
    if char in _ANSI_ESCAPES:
        return _ANSI_ESCAPES[char], 1
    if char in "xuU":
        limit = {"x": 2, "u": 4, "U": 8}[char]
        match = _HEX.match(src, position + 1, position + 1 + limit)
        if not match:
            return "\\" + char, 1
        return _safe_chr(int(match.group(), 16)), 1 + len(match.group())
    if char in "01234567":
        match = _OCTAL.match(src, position, position + 3)
        assert match is not None
        return _safe_chr(int(match.group(), 8) & 0xFF), len(match.group())
    if char == "c" and position + 1 < len(src):
        return chr(ord(src[position + 1]) & 0x1F), 2
    return "\\" + char, 1


def _safe_chr(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return ""
