"""Do the commands a normal build, test or git session runs still work inside the sandbox?

Runs every allowed command of the blocklist's corpus (tests/data/shell_cases.py BENIGN) through the real
bash tool twice, each time in a fresh copy of the same small project (a git repository with sources,
tests, a Makefile, data files): once without the sandbox, once inside it with the default settings.
Prints the commands whose exit code differs, with the sandbox's note, and the totals. Asserts nothing;
commands that need the network, ssh or docker fail both ways on an offline machine.

    python benchmarks/sandbox_corpus.py [--network] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.data.shell_cases import BENIGN
from zeph_cli.config import SandboxConfig
from zeph_cli.tools.base import ToolContext
from zeph_cli.tools.confinement import Confinement
from zeph_cli.tools.sandbox import Sandbox
from zeph_cli.tools.shell import BashTool

TIMEOUT_SECS = 20
FILES = {
    "README.md": "# demo\n",
    "file.txt": "foo\nbar\nfoo\n",
    "a.txt": "a\nb\n",
    "b.txt": "a\nc\n",
    "list.txt": "one\ntwo\n",
    "log.txt": "started\n",
    "data.json": '{"items": [1, 2]}\n',
    "data.csv": "x,1\ny,2\n",
    "encoded.txt": "aGVsbG8K\n",
    "script.sh": "echo script ran\n",
    "scripts/build.sh": "echo built\n",
    "src/app.py": "def main():\n    return 1  # TODO\n",
    "tests/test_app.py": "def test_one():\n    assert 1\n",
    "Makefile": "test:\n\tpython3 -m pytest -q -p no:cacheprovider tests\nbuild:\n\techo build\n",
    "Makefile.dev": "build:\n\techo dev build\n",
    "build/Makefile": "test:\n\techo build tests\n",
}


def make_project(root: Path) -> None:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "build" / "old.o").write_text("x")
    subprocess.run(["tar", "-czf", str(root / "archive.tgz"), "-C", str(root), "src"], check=True)
    subprocess.run(["tar", "-cf", str(root / "archive.tar"), "-C", str(root), "src"], check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "one"],
                 ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "two"]):
        subprocess.run(["git", *args], cwd=root, check=True)


async def run(command: str, sandboxed: bool, network: bool) -> tuple[int | None, str]:
    with tempfile.TemporaryDirectory(prefix="zeph-corpus-", dir="/var/tmp") as directory:
        root = Path(directory) / "project"
        root.mkdir()
        make_project(root)
        settings = SandboxConfig(allow_network=network) if sandboxed else SandboxConfig(enabled=False)
        sandbox = Sandbox(settings, [root], cwd=root)
        context = ToolContext(Confinement(root), root, sandbox=sandbox)
        result = await BashTool().run({"command": command, "timeout_secs": TIMEOUT_SECS}, context)
        return result.exit_code, result.content


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", action="store_true", help="allow the network inside the sandbox")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    same = differ = 0
    start = time.perf_counter()
    for command in BENIGN:
        bare_code, bare = await run(command, False, args.network)
        boxed_code, boxed = await run(command, True, args.network)
        if (bare_code == 0) == (boxed_code == 0):
            same += 1
            if args.verbose:
                print(f"same   exit {bare_code}/{boxed_code}  {command}")
            continue
        differ += 1
        note = next((line for line in boxed.splitlines() if line.startswith("[sandbox")), boxed.splitlines()[-1:] or [""])
        print(f"DIFFER exit {bare_code} → {boxed_code}  {command}\n       {str(note)[:300]}")
    print(f"\n{len(BENIGN)} commands: {same} behave the same, {differ} differ "
          f"(network {'allowed' if args.network else 'off'} in the sandbox; {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    if shutil.which("git") is None:
        sys.exit("needs git")
    asyncio.run(main())
