"""What configured MCP servers cost a `zeph ask` whose turn calls none of them.

Prints the median and min wall time of N interleaved runs (after one warm-up run of each) of the real
`zeph ask "hello there"` against the wire-level fake model (tests/fakes, the OpenAI-compatible route,
in its own process, the same short reply to every request):
- with no MCP server configured (the baseline);
- with three stdio servers configured: mcp-server-time, mcp-server-git and server-everything (the npm
  reference server, tests/mcp_reference.py), their lists cached by an earlier ask;
- the same three with their cache removed before every run (what a first ask, or a changed config, pays);
- no server and three cached servers again with a prompt that names something ("what is the capital of
  France"): recall loads the embedder for it either way, and tool discovery ranks the servers' 40-odd
  tools by it (their vectors embedded once per process);
then the difference of the medians beside the goal (+0.15 s), and one `python -X importtime` run of the
cached ask: its import total and whether the `mcp` SDK, numpy or the embedder stack were imported.

zeph runs from this checkout (`python -m zeph_cli`, PYTHONPATH = the repository root) in the running venv,
with its defaults (recall and every other default feature on) in scratch data, config and cache
directories. Without node or the npm install (`npm ci --prefix tests/mcp_servers`) server-everything is
left out, and one line says so.

Run from the repository root:

    python benchmarks/mcp_startup.py            # RUNS=10 interleaved runs of each
    RUNS=20 python benchmarks/mcp_startup.py

It asserts nothing; the machine's load average is printed with the figures.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import importtime  # noqa: E402
from benchmarks.startup import RunFailed, base_env, fake_server, interleaved  # noqa: E402
from tests.mcp_reference import EVERYTHING, WHY_MISSING  # noqa: E402

RUNS = int(os.environ.get("RUNS", "10"))
GOAL_S = 0.15
PROMPT = "hello there"  # names nothing: no embedder is loaded for it
NAMED = "what is the capital of France"
MODEL = "gpt-4o"
BIN = Path(sys.executable).parent
WATCHED = ("mcp", "numpy", "onnxruntime", "tokenizers", "fastembed", "textual")


def servers_toml() -> str:
    """Three stdio servers, as a user would configure them."""
    time_server = shutil.which("mcp-server-time") or str(BIN / "mcp-server-time")
    git_server = shutil.which("mcp-server-git") or str(BIN / "mcp-server-git")
    out = (f'[[mcp.servers]]\nid = "time"\ncommand = "{time_server}"\nargs = ["--local-timezone", "UTC"]\n\n'
           f'[[mcp.servers]]\nid = "git"\ncommand = "{git_server}"\n\n')
    if not WHY_MISSING:
        out += f'[[mcp.servers]]\nid = "everything"\ncommand = "{EVERYTHING}"\nargs = ["stdio"]\n'
    return out


Run = tuple[list[str], dict[str, str], Callable[[], None] | None]  # argv, env, what to do before each run


def run(command: Run) -> subprocess.CompletedProcess:
    args, env, _ = command
    result = subprocess.run(args, env=env, capture_output=True, stdin=subprocess.DEVNULL, cwd=env["BENCH_CWD"])
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {result.returncode}"]
        raise RunFailed(f"zeph ask: {lines[-1]}")
    return result


def timed(command: Run) -> float:
    before = command[2]
    if before is not None:
        before()
    start = time.perf_counter()
    run(command)
    return time.perf_counter() - start


def main() -> None:
    print(f"zeph ask with MCP servers configured, the turn calling none ({RUNS} interleaved runs; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    if WHY_MISSING:
        print(f"  server-everything left out: {WHY_MISSING}")
    with tempfile.TemporaryDirectory() as tmp, fake_server() as url:
        scratch = Path(tmp)
        work = scratch / "project"
        work.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        config = scratch / "servers.toml"
        config.write_text(servers_toml())
        empty = scratch / "none.toml"
        empty.write_text("")
        base = {**base_env(scratch), "PYTHONPATH": str(ROOT), "BENCH_CWD": str(work), "ZEPH_HOME": str(scratch / "home"),
                "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": url + "/v1", "ZEPH_LLM_MODEL": MODEL,
                "OPENAI_API_KEY": "sk-bench"}
        ask = [sys.executable, "-m", "zeph_cli", "ask", PROMPT]
        named = [sys.executable, "-m", "zeph_cli", "ask", NAMED]
        cold = {**base, "ZEPH_HOME": str(scratch / "home-cold")}
        cold_cache = scratch / "home-cold" / "cache"
        commands: dict[str, Run] = {
            "no MCP server": (ask, {**base, "ZEPH_CONFIG": str(empty)}, None),
            "3 servers, cached lists": (ask, {**base, "ZEPH_CONFIG": str(config)}, None),
            "3 servers, no cache (a first ask)": (ask, {**cold, "ZEPH_CONFIG": str(config)},
                                                  lambda: shutil.rmtree(cold_cache, ignore_errors=True)),
            "no MCP server, a prompt naming something": (named, {**base, "ZEPH_CONFIG": str(empty)}, None),
            "3 servers cached, a prompt naming something": (named, {**base, "ZEPH_CONFIG": str(config)}, None),
        }
        try:
            samples = interleaved(commands, RUNS, timed)
        except RunFailed as error:
            print(f"  not measured: {error}")
            return
        medians = {label: statistics.median(values) for label, values in samples.items()}
        for label, values in samples.items():
            print(f"  {label:<44} median {medians[label] * 1000:7.1f} ms   min {min(values) * 1000:7.1f} ms   (n={len(values)})")
        extra = medians["3 servers, cached lists"] - medians["no MCP server"]
        verdict = "met" if extra <= GOAL_S else "not met"
        print(f"  3 servers (cached) beside none: {extra:+.3f} s   goal <= +{GOAL_S} s: {verdict}")
        print(f"  3 servers (no cache) beside none: {medians['3 servers, no cache (a first ask)'] - medians['no MCP server']:+.3f} s")
        named_extra = medians["3 servers cached, a prompt naming something"] - medians["no MCP server, a prompt naming something"]
        print(f"  3 servers (cached) beside none, a prompt naming something: {named_extra:+.3f} s")
        args, env, _ = commands["3 servers, cached lists"]
        try:
            result = run(([args[0], "-X", "importtime", *args[1:]], env, None))
        except RunFailed as error:
            print(f"  imports not measured: {error}")
            return
        roots = importtime.parse(result.stderr.decode(errors="replace"))
        marks = ", ".join(f"{name} {'yes' if importtime.was_imported(roots, name) else 'no'}" for name in WATCHED)
        print(f"  the cached ask imported {importtime.total_ms(roots):.0f} ms of modules; {marks}")


if __name__ == "__main__":
    main()
