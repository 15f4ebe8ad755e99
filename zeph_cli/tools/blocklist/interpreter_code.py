"""Reading one-line interpreter programs (`python -c`, `perl -e`, `node -e`, `ruby -e`) for
the calls the blocklist judges: shell commands, file and tree removals, fork loops.

Invariant: pure; a call's argument is either a list of string literals (judged by
what they say) or something only known when the program runs (reported as
unknown, never as harmless).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_STRING_LITERAL = re.compile(r"""(['"])((?:\\.|(?!\1)[^\\])*+)\1""", re.S)
# What may sit between literals without making an argument unknown: commas, brackets, flags.
_HARMLESS_GLUE = re.compile(
    r"[\s,\[\]()]|\b[a-z_]+\s*=\s*(?:True|False|None|\d+|true|false)\b|\{\s*recursive\s*:\s*true\s*(?:,\s*force\s*:\s*true\s*)?\}"
)
_SHELL_CALLS = (
    r"system|popen|popen2|popen3|exec[lv]?p?e?|spawn[lv]?p?e?|execSync|spawnSync|execFile|execFileSync|shell_exec"
    r"|passthru|proc_open|check_output|check_call|getoutput|getstatusoutput|Popen|capture2|capture3|qx"
)
_CALL = re.compile(r"(?<![\w.])(?:[\w.]*\.)?(" + _SHELL_CALLS + r"|run|call)\s*\(")
_BARE_CALL = re.compile(r"(?<![\w.$])(system|exec)\s+(?=[\"'$@\[])([^;{}\n]*)")  # perl/ruby: system "…", exec "…"
_BACKTICK_COMMAND = re.compile(r"`([^`]*)`")
_TREE_REMOVALS = r"rmtree|removedirs|remove_tree|rmSync|rmdirSync|remove_dir_all|rm_rf|rm_r|deleteRecursive"
_FILE_REMOVALS = r"remove|unlink|unlinkSync|rmdir|delete|rm|rm_f|safe_unlink"
_REMOVAL = re.compile(r"(?<![\w$])(?:[\w.]*\.)?(" + _TREE_REMOVALS + "|" + _FILE_REMOVALS + r")\s*(\(|\s+(?=[\"'$@\w]))")
_FORK = re.compile(r"\bfork\b")
_LOOP = re.compile(r"\b(while|for|loop|until|times)\b|\biter\s*\(")


@dataclass(frozen=True)
class Call:
    name: str
    literals: tuple[str, ...]  # the string literals of its argument
    known: bool  # False: part of the argument is only known at run time


def _argument(code: str, start: int, parenthesized: bool) -> str:
    """The text of a call's argument from `start` (just past `(`, or past the name for a bare call)."""
    if not parenthesized:
        end = re.search(r"[;\n}]", code[start:])
        return code[start:start + end.start()] if end else code[start:]
    depth, i = 1, start
    while i < len(code):
        char = code[i]
        if char in "'\"":
            match = _STRING_LITERAL.match(code, i)
            if match:
                i = match.end()
                continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return code[start:i]
        i += 1
    return code[start:]


def _call(name: str, argument: str) -> Call:
    literals = tuple(m.group(2) for m in _STRING_LITERAL.finditer(argument))
    glue = _HARMLESS_GLUE.sub("", _STRING_LITERAL.sub("", argument))
    return Call(name, literals, not glue.strip())


def shell_calls(code: str, *, backticks: bool) -> Iterator[Call]:
    """Calls handing a command to the operating system (os.system, subprocess.run, execSync, `…`)."""
    spawns = "subprocess" in code or "child_process" in code or "Open3" in code
    for match in _CALL.finditer(code):
        name = match.group(1)
        if name in ("run", "call") and not spawns:
            continue
        yield _call(name, _argument(code, match.end(), True))
    for match in _BARE_CALL.finditer(code):
        yield _call(match.group(1), match.group(2))
    if backticks:
        for match in _BACKTICK_COMMAND.finditer(code):
            yield Call("backticks", (match.group(1),), "$" not in match.group(1) and "@" not in match.group(1))


def removals(code: str) -> Iterator[tuple[Call, bool]]:
    """(call, removes a whole tree?) for every file or tree removal in the code."""
    for match in _REMOVAL.finditer(code):
        name = match.group(1)
        if name in ("delete", "rm", "remove") and not re.search(r"\b(os|fs|File|FileUtils|Files|shutil|Path|pathlib)\b", code):
            continue
        if name == "remove" and re.search(r"\.remove\(", code[match.start():match.end()]) and "os.remove" not in code[match.start():match.end()]:
            continue  # list.remove(x), set.remove(x)
        tree = bool(re.fullmatch(_TREE_REMOVALS, name)) or "recursive" in code
        yield _call(name, _argument(code, match.end(), match.group(2) == "(")), tree


def fork_loop(code: str) -> bool:
    """A loop that forks without end (`while True: os.fork()`, `fork while 1`, `loop { fork }`)."""
    return bool(_FORK.search(code) and _LOOP.search(code))
