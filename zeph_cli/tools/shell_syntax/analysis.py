"""Expands a script's words, follows wrappers and nested scripts, and collects
every simple command it could run.

Invariant: `parse_command` never raises, runs nothing and touches no files;
what it cannot analyse — text the parser could not read, nesting too deep,
braces too large — is reported as `unverifiable`, never passed over.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from .argv import basename, getopt, split_find
from .commands import ParsedCommand, SimpleCommand
from .effects import cd_target, echoed_text, substituted_output
from .embedded import Embedded, embedded_commands, recipes, variable_command
from .expansion import ASSIGNED_NAME, BracesTooComplex, first_brace_group, split_assignments, split_fields
from .reader import MAX_DEPTH, Report, TooDeep, parse
from .tree import Compound, For, Function, Group, List, Pipeline, Redirect, Simple, Word
from .programs import SHELLS, interpreter_family, program_source
from .wrappers import WRAPPERS, scripts_run_by
from .written import WrittenFiles, stdin_program

MAX_BRACE_WORDS = 1024  # words one brace expansion may produce
MAX_BRACE_WORK = 1_000_000  # characters brace expansion may build per command line
MAX_LOOP_VALUES = 16  # a `for` loop over more literal values is analysed once, its variable unknown

TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
TOO_MANY_BRACE_WORDS = "a brace expansion is too large to check"
PARSER_FAILED = "the shell parser failed on it"
DEFAULT_IFS = " \t\n"


def parse_command(command: str) -> ParsedCommand:
    """Every simple command `command` could run, as bash would split and unquote it."""
    analyzer = _Analyzer()
    try:
        analyzer.script(command, _State({"IFS": DEFAULT_IFS}, ()))
    except RecursionError:
        analyzer.flag(TOO_DEEP)
    except Exception:  # noqa: BLE001 — a parser defect must surface as "unverifiable", never as a pass
        analyzer.flag(PARSER_FAILED)
    if analyzer.report.unreadable:
        analyzer.flag(analyzer.report.unreadable[0])
    return analyzer.result()


@dataclass
class _State:
    """What one shell knows while running: literal variables and directories changed into."""

    env: dict[str, str]
    cd: tuple[str | None, ...]

    def copy(self) -> _State:
        return _State(dict(self.env), self.cd)


@dataclass
class _FunctionTrace:
    name: str
    calls: int = 0
    parallel_calls: int = 0
    assigns: set[str] = field(default_factory=set)
    changes_dir: bool = False


@dataclass
class _Origin:
    """Where a command's words came from, to quote the source of wrapped commands."""

    src: str
    spans: list[tuple[int, int]]
    end: int

    def text(self, first: int, stop: int | None = None) -> str:
        if first >= len(self.spans):
            return ""
        last = self.end if stop is None or stop > len(self.spans) else self.spans[stop - 1][1]
        return self.src[self.spans[first][0]:last]

    def tail(self, first: int, stop: int | None = None) -> _Origin:
        spans = self.spans[first:stop]
        end = self.end if stop is None else (spans[-1][1] if spans else self.end)
        return _Origin(self.src, spans, end)


_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_VARIABLE_SETTERS = frozenset({"read", "mapfile", "readarray", "getopts", "unset", "let"})
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFAULT_ASSIGN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")


class _Analyzer:
    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.pipelines: list[tuple[SimpleCommand, ...]] = []
        self.report = Report()
        self.unverifiable: list[str] = []
        self.fork_bombs: list[str] = []
        self.depth = 0
        self.active: list[_FunctionTrace] = []
        self.defined: dict[str, _FunctionTrace] = {}
        self.looping = False
        self.brace_work = 0
        self.opaque: list[str] = []
        self.written = WrittenFiles()
        self.source = ""

    def result(self) -> ParsedCommand:
        return ParsedCommand(
            tuple(self.commands),
            tuple(self.pipelines),
            not self.report.incomplete,
            tuple(self.unverifiable),
            tuple(dict.fromkeys(self.fork_bombs)),
            tuple(dict.fromkeys(self.opaque)),
            self.source,
        )

    def flag(self, what: str) -> None:
        if what not in self.unverifiable:
            self.unverifiable.append(what)

    def deeper(self, walk: Callable[..., None], *args: object) -> None:
        if self.depth >= MAX_DEPTH:
            self.flag(TOO_DEEP)
            return
        self.depth += 1
        try:
            walk(*args)
        finally:
            self.depth -= 1

    def script(self, text: str, state: _State) -> None:
        """Analyse `text` as a shell script run `self.depth` levels deep."""
        if not self.source:
            self.source = text
        if self.depth >= MAX_DEPTH:
            self.flag(TOO_DEEP)
            return
        try:
            tree = parse(text, self.depth, self.report)
        except TooDeep:
            self.flag(TOO_DEEP)
            return
        self.deeper(self.walk_list, tree, state, False)

    # structure

    def walk_list(self, node: List, state: _State, parallel: bool) -> None:
        for pipeline in node.items:
            self.walk_pipeline(pipeline, state, parallel)

    def walk_pipeline(self, pipeline: Pipeline, state: _State, parallel: bool) -> None:
        parallel = parallel or pipeline.background or len(pipeline.stages) > 1
        stages = [self.walk_command(stage, state, parallel) for stage in pipeline.stages]
        flat = tuple(command for stage in stages for command in stage)
        if flat:
            self.pipelines.append(flat)
        for before, after in pairwise(stages):
            reader = next((c for c in after if stdin_program(c) and not c.from_xargs), None)
            if reader is None:
                continue
            fed = next((t for t in map(echoed_text, reversed(before)) if t is not None), None)
            producer = next((c.name for c in reversed(before) if c.argv), "")
            if fed is None and self.files_catted(before) is not None:
                continue  # `cat script.sh | sh` runs a file, like `sh script.sh`
            if fed is None and not any(c.redirects and not c.argv for c in before):
                self.opaque.append(f"the output of {producer or 'a command'} piped into {reader.name}")
            elif fed:
                self.run_code(reader, fed, state)

    def files_catted(self, stage: list[SimpleCommand]) -> list[str] | None:
        """The files a plain `cat FILE…` stage prints, when none was written by this command line."""
        real = [c for c in stage if c.argv]
        if len(real) != 1 or real[0].name != "cat" or len(real[0].argv) < 2:
            return None
        files = list(real[0].argv[1:])
        if any(f.startswith("-") or self.written.get(f) is not None for f in files):
            return None
        return files

    def run_code(self, reader: SimpleCommand, code: str, state: _State) -> None:
        """Analyse code a command reads as a program (from stdin, a file written earlier, …)."""
        kind = stdin_program(reader) or _file_program(reader)
        if kind == "make":
            for found in recipes(code, "a makefile"):
                self.embedded(found, reader, state)
        elif kind in ("shell", None):
            self.script(code, _State(dict(state.env), reader.cd_path))
        else:
            self.commands.append(_command((reader.name, "-c" if kind == "python" else "-e", code), (), code, cd_path=reader.cd_path))

    def embedded(self, found: Embedded, command: SimpleCommand, state: _State) -> None:
        if found.script is None:
            self.opaque.append(f"{found.what} (in {command.name})")
        elif found.script.strip():
            self.script(found.script, _State(dict(state.env), command.cd_path))

    def walk_command(self, node: object, state: _State, parallel: bool) -> list[SimpleCommand]:
        mark = len(self.commands)
        if isinstance(node, Simple):
            self.walk_simple(node, state, parallel)
        else:
            self.deeper(self.walk_compound, node, state, parallel)
        return self.commands[mark:]

    def walk_compound(self, node: object, state: _State, parallel: bool) -> None:
        if isinstance(node, Group):
            self.walk_list(node.body, state.copy() if node.subshell else state, parallel)
            self.redirect_only(node.redirects, node.text, state)
        elif isinstance(node, For):
            self.walk_for(node, state, parallel)
        elif isinstance(node, Function):
            self.walk_function(node, state)
        elif isinstance(node, Compound):
            for word in node.words:
                self.expand(word, state)
            for body in node.lists:
                self.walk_list(body, state, parallel)
            self.redirect_only(node.redirects, "", state)

    def walk_for(self, node: For, state: _State, parallel: bool) -> None:
        values: list[str] = []
        dynamic = False
        for word in node.words or []:
            fields, is_dynamic = self.expand(word, state)
            values.extend(fields)
            dynamic = dynamic or is_dynamic
        if node.var:
            self.assign(state, node.var, None)
            unique = list(dict.fromkeys(values))
            if node.words is not None and not dynamic and 0 < len(unique) <= MAX_LOOP_VALUES and not self.looping:
                self.looping = True
                try:
                    for value in unique:
                        state.env[node.var] = value
                        self.walk_list(node.body, state, parallel)
                finally:
                    self.looping = False
                self.redirect_only(node.redirects, "", state)
                return
        self.walk_list(node.body, state, parallel)
        self.redirect_only(node.redirects, "", state)

    def walk_function(self, node: Function, state: _State) -> None:
        trace = _FunctionTrace(node.name)
        self.active.append(trace)
        try:
            self.walk_command(node.body, state.copy(), False)
        finally:
            self.active.pop()
        self.defined[node.name] = trace
        if trace.calls >= 2 and trace.parallel_calls >= 1:
            self.fork_bombs.append(node.name)

    def redirect_only(self, redirects: list, text: str, state: _State) -> None:
        """Redirections on a group or loop, reported as a command without words."""
        if redirects:
            resolved = tuple(self.redirect(r, state) for r in redirects)
            self.commands.append(SimpleCommand((), resolved, text, cd_path=state.cd))

    # simple commands

    def walk_simple(self, node: Simple, state: _State, parallel: bool) -> None:
        assignments, words = split_assignments(node.words)
        assigned = []
        for name, parts in assignments:
            text, flags, _ = self.expand_parts(parts, state)
            assigned.append((name, None if "2" in flags else text))
        argv: list[str] = []
        spans: list[tuple[int, int]] = []
        for word in words:
            fields, _ = self.expand(word, state)
            argv.extend(fields)
            spans.extend([(word.start, word.end)] * len(fields))
        redirects = tuple(self.redirect(r, state) for r in node.redirects)
        text = node.src[node.start:node.end]
        if not argv:
            for name, value in assigned:
                self.assign(state, name, value)
                found = variable_command(name, value)
                if found is not None:
                    self.embedded(found, SimpleCommand((), (), text, cd_path=state.cd), state)
            if redirects:
                self.commands.append(SimpleCommand((), redirects, text, cd_path=state.cd))
            return
        command = _command(argv, redirects, text, cd_path=state.cd, assignments=tuple(assigned))
        self.emit(command, _Origin(node.src, spans, node.end), state, parallel, 0)

    def redirect(self, redirect: Redirect, state: _State) -> tuple[str, str]:
        if redirect.heredoc is not None:
            text, _, _ = self.expand_parts(redirect.heredoc.parts, state)
            return redirect.op, text
        if redirect.target is None:
            return redirect.op, ""
        fields, _ = self.expand(redirect.target, state)
        return redirect.op, " ".join(fields)

    def emit(self, command: SimpleCommand, origin: _Origin, state: _State, parallel: bool, layers: int) -> None:
        self.commands.append(command)
        for trace in self.active:
            if command.name == trace.name:
                trace.calls += 1
                trace.parallel_calls += parallel
        self.track_state(command, state)
        argv = command.argv
        replace = command.xargs_replace
        if replace and any(replace in text for text in [*scripts_run_by(argv), program_source(argv)[1] or ""]):
            # `xargs -I % sh -c '… % …'`: each input line becomes part of the code
            hint = ' (pass it as "$1" instead)' if command.name in SHELLS else ""
            self.opaque.append(f"{command.name} code with each xargs input line pasted in at {replace}{hint}")
        for text in scripts_run_by(argv):
            if replace:
                text = text.replace(replace, "$XARGS_INPUT")  # still analysed, the input a variable
            if argv[0] == "eval":
                self.script(text, state)
            else:
                self.script(text, _State(dict(state.env), command.cd_path))
        if command.from_xargs and program_source(argv)[0] == "missing":
            self.opaque.append(f"a script {command.name} -c takes from xargs' input")
        for name, value in [*command.assignments, *_env_assignments(argv)]:
            found = variable_command(name, value)
            if found is not None:
                self.embedded(found, command, state)
        for found in embedded_commands(argv):
            self.embedded(found, command, state)
        if stdin_program(command):
            for op, target in command.redirects:
                if op in ("<<", "<<-", "<<<") and target:
                    self.run_code(command, target, state)
        self.run_generated(command, state)
        self.written.record(command)
        if layers >= MAX_DEPTH:
            self.flag(TOO_DEEP)
            return
        self.follow_wrapper(command, origin, state, parallel, layers)
        if argv[0] == "find":
            starts, _, execs = split_find(argv)
            for first, stop in execs:
                if first < stop:
                    inner = _command(
                        argv[first:stop], (), origin.text(first, stop),
                        cd_path=command.cd_path, from_xargs=command.from_xargs, find_roots=starts,
                        xargs_replace=command.xargs_replace,
                    )
                    self.emit(inner, origin.tail(first, stop), state, parallel, layers + 1)

    def follow_wrapper(self, command: SimpleCommand, origin: _Origin, state: _State, parallel: bool, layers: int) -> None:
        unwrap = WRAPPERS.get(command.name)
        inner = unwrap(command.argv) if unwrap is not None else None
        if inner is None:
            return
        cd_path = command.cd_path + ((inner.chdir,) if inner.chdir is not None else ())
        if inner.elsewhere:
            cd_path += (None,)
        if inner.script is not None:
            self.script(inner.script, _State(dict(state.env), cd_path))
        elif inner.index < len(command.argv):
            wrapped = _command(
                command.argv[inner.index:], command.redirects, origin.text(inner.index),
                cd_path=cd_path, from_xargs=command.from_xargs or inner.from_xargs, find_roots=command.find_roots,
                xargs_replace=inner.xargs_replace or command.xargs_replace,
            )
            self.emit(wrapped, origin.tail(inner.index), state, parallel, layers + 1)

    def run_generated(self, command: SimpleCommand, state: _State) -> None:
        """A file this same command line wrote earlier, now run as a program: analyse what was written."""
        for path in _programs_run(command):
            written = self.written.get(path, command.cd_path)
            if written is None:
                continue
            writer, content = written
            if content is None:
                self.opaque.append(f"{path}, written by {writer} earlier in this command")
            else:
                self.run_code(command, content, state)
        for word in _programs_run(command, substitutions=True):
            if word.startswith("<(") and word.endswith(")"):
                inner = _Analyzer()
                inner.depth = self.depth
                inner.script(word[2:-1], state.copy())
                output = _plain_output(inner.commands)
                if output is None:
                    self.opaque.append(f"the output of {word[:40]} run by {command.name}")
                else:
                    self.run_code(command, output, state)

    def track_state(self, command: SimpleCommand, state: _State) -> None:
        """What a command changes in its shell: the directory, known variables."""
        name, args = command.name, command.argv[1:]
        if name in ("cd", "pushd", "popd"):
            state.cd = state.cd + (cd_target(command.argv),)
            for trace in self.active:
                trace.changes_dir = True
        elif name in _DECLARERS:
            for arg in args:
                match = ASSIGNED_NAME.match(arg)
                if match:
                    value = arg[match.end():]
                    known = None if "$" in value or "`" in value else value
                    self.assign(state, match.group(1), known)
                    found = variable_command(match.group(1), known)
                    if found is not None:
                        self.embedded(found, command, state)
                elif _IDENTIFIERS.fullmatch(arg) and name != "export":
                    self.assign(state, arg, None)
        elif name in _VARIABLE_SETTERS or (name == "printf" and "-v" in args):
            for identifier in _IDENTIFIERS.findall(" ".join(args)):
                self.assign(state, identifier, None)
        elif name in ("source", "."):
            state.env.clear()
        called = self.defined.get(name)
        if called is not None:
            if called.changes_dir:
                state.cd = state.cd + (None,)
            for variable in called.assigns:
                state.env.pop(variable, None)

    def assign(self, state: _State, name: str, value: str | None) -> None:
        if value is None:
            state.env.pop(name, None)
        else:
            state.env[name] = value
        for trace in self.active:
            trace.assigns.add(name)

    # words

    def expand(self, word: Word, state: _State) -> tuple[list[str], bool]:
        """The fields a word expands to (brace expansion, known variables, splitting) and whether
        any part of it is only known at run time."""
        text, flags, quoted = self.expand_parts(word.parts, state)
        pieces = self.brace_expand(text, flags)
        fields: list[str] = []
        ifs = state.env.get("IFS", DEFAULT_IFS)
        for piece_text, piece_flags in pieces:
            fields.extend(split_fields(piece_text, piece_flags, quoted, ifs))
        return fields, "2" in flags

    def expand_parts(self, parts: list, state: _State) -> tuple[str, str, bool]:
        """Text and per-character flags: 0 unquoted, 1 quoted, 2 unknown until run time,
        3 from an unquoted known variable (split on blanks)."""
        texts: list[str] = []
        flags: list[str] = []
        quoted_seen = False
        for part in parts:
            kind = part[0]
            if kind == "lit":
                texts.append(part[1])
                flags.append(("1" if part[2] else "0") * len(part[1]))
                quoted_seen = quoted_seen or part[2]
            elif kind == "param":
                value = state.env.get(part[1])
                if value is None:
                    texts.append(part[2])
                    flags.append("2" * len(part[2]))
                else:
                    texts.append(value)
                    flags.append(("1" if part[3] else "3") * len(value))
                quoted_seen = quoted_seen or part[3]
            else:
                raw, subs, quoted = part[1], part[2], part[3]
                value = self.run_substitutions(raw, subs, state)
                if value is None:
                    texts.append(raw)
                    flags.append("2" * len(raw))
                else:
                    texts.append(value)
                    flags.append(("1" if quoted else "3") * len(value))
                quoted_seen = quoted_seen or quoted
        return "".join(texts), "".join(flags), quoted_seen

    def run_substitutions(self, raw: str, subs: list, state: _State) -> str | None:
        """Walk the command lists an expansion runs; its output when that is plain (`$(echo rm)`)."""
        if raw.startswith(("$((", "((")):
            for identifier in _IDENTIFIERS.findall(raw):
                self.assign(state, identifier, None)
        match = _DEFAULT_ASSIGN.match(raw)
        if match:
            self.assign(state, match.group(1), None)
        if not subs:
            return None
        mark = len(self.commands)
        for sub in subs:
            self.deeper(self.walk_list, sub, state.copy(), False)
        if len(subs) == 1 and raw.startswith(("$(", "`")) and not raw.startswith("$(("):
            return substituted_output(self.commands[mark:])
        return None

    def brace_expand(self, text: str, flags: str) -> list[tuple[str, str]]:
        if "0" not in flags or "{" not in text:
            return [(text, flags)]
        try:
            return self._brace_expand(text, flags)
        except BracesTooComplex:
            self.flag(TOO_MANY_BRACE_WORDS)
            return [(text, flags)]

    def _brace_expand(self, text: str, flags: str) -> list[tuple[str, str]]:
        results: list[tuple[str, str]] = []
        todo = [(text, flags)]
        while todo:
            piece_text, piece_flags = todo.pop()
            self.brace_work += len(piece_text)
            if self.brace_work > MAX_BRACE_WORK:
                raise BracesTooComplex
            group = first_brace_group(piece_text, piece_flags)
            if group is None:
                results.append((piece_text, piece_flags))
                continue
            open_at, close_at, commas = group
            bounds = [open_at, *commas, close_at]
            prefix_text, prefix_flags = piece_text[:open_at], piece_flags[:open_at]
            suffix_text, suffix_flags = piece_text[close_at + 1:], piece_flags[close_at + 1:]
            for a, b in reversed(list(pairwise(bounds))):
                todo.append((
                    prefix_text + piece_text[a + 1:b] + suffix_text,
                    prefix_flags + piece_flags[a + 1:b] + suffix_flags,
                ))
            if len(todo) + len(results) > MAX_BRACE_WORDS:
                raise BracesTooComplex
        return results


def _env_assignments(argv: Sequence[str]) -> list[tuple[str, str | None]]:
    """NAME=value words `env` sets for the command it runs."""
    if not argv or argv[0] != "env":
        return []
    found: list[tuple[str, str | None]] = []
    for arg in argv[1:]:
        match = ASSIGNED_NAME.match(arg)
        if match:
            found.append((match.group(1), arg[match.end():]))
        elif not arg.startswith("-"):
            break
    return found


def _programs_run(command: SimpleCommand, substitutions: bool = False) -> list[str]:
    """Files `command` runs as a program: itself, a shell's or interpreter's script, a sourced file,
    make's makefile; with `substitutions`, only those written as `<( … )`."""
    argv = command.argv
    if not argv:
        return []
    found = [] if substitutions else [command.program or argv[0]]
    kind, program = program_source(argv)
    if kind == "file" and program:
        found.append(program)
    if argv[0] in ("source", ".") and len(argv) > 1:
        found.append(argv[1])
    if argv[0] in ("make", "gmake"):
        makefiles = [v for option, v in getopt(argv, "fCIEjlLoOW", {"--file", "--makefile"})[1] if option in ("-f", "--file", "--makefile") and v]
        found += makefiles or ([] if substitutions else ["Makefile", "makefile", "GNUmakefile"])
    if substitutions:
        return [word for word in found if word.startswith("<(")]
    return found


def _plain_output(commands: list[SimpleCommand]) -> str | None:
    """What a substitution prints, when it is one echo/printf/cat-heredoc."""
    real = [c for c in commands if c.argv]
    return echoed_text(real[0]) if len(real) == 1 else None


def _file_program(command: SimpleCommand) -> str | None:
    """How a command runs a program file: "make", an interpreter family, else None (a shell)."""
    if command.name in ("make", "gmake"):
        return "make"
    return interpreter_family(command.name)


def _command(argv: Sequence[str], redirects: Sequence[tuple[str, str]], text: str, **fields: Any) -> SimpleCommand:
    argv = tuple(argv)
    program = argv[0]
    return SimpleCommand(
        (basename(program), *argv[1:]), tuple(redirects), text or " ".join(argv), program=program, **fields
    )
