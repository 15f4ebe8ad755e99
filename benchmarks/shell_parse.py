"""Shell parsing speed on the blocklist corpus: the hand-written lexer and parser against tree-sitter-bash.

Invariant: prints timings and counts, asserts nothing about time. The old parser is loaded from git history
(the commit before it was removed) into a temporary package, so both read the same commands in one process;
without git it is left out. Figures: reading the syntax tree alone (old: lexer and parser; new: tree-sitter's
parse, then reader.py turning its tree into the nodes the analysis walks), the whole `parse_command` (reading,
expansion, wrappers, nested scripts), how many commands the new parser refuses as unreadable and on how many
the two agree, then the import cost a fresh process pays on its first checked command.

    python benchmarks/shell_parse.py [--repeat 30] [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.data.shell_cases import BENIGN, HOSTILE  # noqa: E402
from zeph_cli.tools.shell_syntax import parse_command  # noqa: E402
from zeph_cli.tools.shell_syntax import reader  # noqa: E402

PACKAGE = "zeph_cli/tools/shell_syntax"


def old_package(folder: Path) -> object | None:
    """The hand-written parser's package as it was before its removal, imported as `old_shell_syntax`."""
    try:
        removal = subprocess.run(
            ["git", "log", "--diff-filter=D", "-1", "--format=%H", "--", f"{PACKAGE}/lexer.py"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.strip()
        revision = f"{removal}^" if removal else "HEAD"
        names = subprocess.run(
            ["git", "ls-tree", "--name-only", revision, f"{PACKAGE}/"], cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    target = folder / "old_shell_syntax"
    target.mkdir()
    for name in names:
        source = subprocess.run(["git", "show", f"{revision}:{name}"], cwd=ROOT, capture_output=True, check=True).stdout
        (target / Path(name).name).write_bytes(source)
    if not (target / "lexer.py").exists():
        return None
    sys.path.insert(0, str(folder))
    return importlib.import_module("old_shell_syntax")


def old_unverifiable(old: object | None, command: str) -> bool:
    return old is not None and bool(old.parse_command(command).unverifiable)  # type: ignore[attr-defined]


def best_ms(functions: list[Callable[[str], object]], commands: list[str], repeat: int) -> list[float]:
    """The fastest pass of each function over the commands, the functions taking turns so that a busy
    machine slows them alike."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for index, function in enumerate(functions):
            started = time.perf_counter()
            for command in commands:
                function(command)
            best[index] = min(best[index], time.perf_counter() - started)
    return [value * 1000 for value in best]


def fresh_process_ms(code: str, runs: int) -> list[float]:
    """The least wall time of each `# --` separated step of `code` in new interpreters, measured inside them."""
    steps = code.split("# --\n")
    timed = "import time\nmarks = [time.perf_counter()]\n"
    timed += "".join(f"{step}\nmarks.append(time.perf_counter())\n" for step in steps)
    timed += "print(' '.join(str((b - a) * 1000) for a, b in zip(marks, marks[1:])))"
    best = [float("inf")] * len(steps)
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", timed], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        best = [min(a, float(b)) for a, b in zip(best, out.split(), strict=True)]
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="passes over the corpus; the fastest is kept")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes for the import figures")
    args = parser.parse_args()
    commands = list(dict.fromkeys(HOSTILE + BENIGN))
    parse_command("ls")  # load tree-sitter before timing

    with tempfile.TemporaryDirectory() as folder:
        old = old_package(Path(folder))
        print(f"{len(commands)} commands (tests/data/shell_cases.py), fastest of {args.repeat} passes, ms per pass\n")
        print(f"{'':42}{'hand-written':>14}{'tree-sitter':>14}")
        new_tree = lambda c: reader.parse(c, 0, reader.Report())  # noqa: E731
        ts_only = lambda c: reader._parse_bytes(c.encode("utf-8", "surrogatepass"))  # noqa: E731
        if old is not None:
            old_parser = importlib.import_module("old_shell_syntax.parser")
            old_lexer = importlib.import_module("old_shell_syntax.lexer")
            old_tree = lambda c: old_parser.parse(c, 0, old_lexer.Report())  # noqa: E731
            times = best_ms([old_tree, ts_only, new_tree, old.parse_command, parse_command], commands, args.repeat)  # type: ignore[attr-defined]
            rows = [("parse (tree-sitter alone)", times[0], times[1]),
                    ("syntax tree (lexer+parser / parse+reader)", times[0], times[2]),
                    ("parse_command (with the analysis)", times[3], times[4])]
            for label, before, after in rows:
                print(f"{label:42}{before:>14.1f}{after:>14.1f}   {before / after:.1f}x")
            agree = sum(
                sorted({c.argv for c in old.parse_command(text).commands})  # type: ignore[attr-defined]
                == sorted({c.argv for c in parse_command(text).commands})
                for text in commands
            )
            print(f"\nsame commands found by both: {agree} of {len(commands)}")
        else:
            print("(no git history: the hand-written parser is not shown)")
            times = best_ms([ts_only, new_tree, parse_command], commands, args.repeat)
            labels = ("parse (tree-sitter alone)", "syntax tree (parse+reader)", "parse_command (with the analysis)")
            for label, after in zip(labels, times, strict=True):
                print(f"{label:42}{'':>14}{after:>14.1f}")
        unreadable = sum(bool(parse_command(c).unverifiable) and not old_unverifiable(old, c) for c in commands)
        print(f"refused as unreadable by the new parser alone: {unreadable} of {len(commands)}")

    print(f"\nfresh process, least of {args.runs} runs, ms")
    (imports,) = fresh_process_ms("import tree_sitter, tree_sitter_bash", args.runs)
    package, first, second = fresh_process_ms(
        "from zeph_cli.tools.shell_syntax import parse_command\n# --\nparse_command('ls -la')\n# --\nparse_command('git status')",
        args.runs,
    )
    print(f"{'import tree_sitter + tree_sitter_bash':42}{imports:>14.1f}")
    print(f"{'import zeph_cli.tools.shell_syntax':42}{package:>14.1f}   (tree-sitter not loaded yet)")
    print(f"{'first command checked (loads tree-sitter)':42}{first:>14.1f}")
    print(f"{'second command checked':42}{second:>14.1f}")


if __name__ == "__main__":
    main()
