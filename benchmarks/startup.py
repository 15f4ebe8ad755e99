"""Start-up and `ask` wall time of zeph beside simonw/llm, on the same wire-level fake servers.

Prints, for each pair, the median and min wall time of N runs taken interleaved
(llm, zeph, llm, zeph, ... after one warm-up run of each) and the ratio zeph/llm:
- `llm --help` beside `zeph --help`;
- OpenAI-compatible server: `llm -m bench "hello there"` (an extra-openai-models.yaml
  entry) beside `zeph ask "hello there"` (provider `compatible`), goal ratio <= 0.8;
- `llm -c` beside `zeph ask -c`, continuing a conversation that grows run by run;
- Anthropic: `llm -m claude-sonnet-4.6` (the llm-anthropic plugin) beside `zeph ask`
  (provider `anthropic`), goal ratio <= 0.8;
- beside both asks, the SDK alone (`benchmarks/sdk_floor.py`: import the SDK, build its async client,
  stream the one reply, with no collector at start-up and no teardown at exit; zeph's venv), the floor
  both tools stand on, and what each spends beside it;
- `zeph ask` on the embedded model with a 1-token reply, when the local extra is installed;
then the import breakdown of one `python -X importtime` run of each `ask`: the
top-level packages by cumulative import time (with their own time), and for zeph
the self time of its own modules (the least of 5 runs) and whether numpy, Textual, tiktoken,
sqlite-utils or the tool-safety modules were imported.

zeph runs with its defaults (recall and every other default feature on) in a
scratch data and config directory; llm in a scratch LLM_USER_PATH, loading only
the plugin the path needs (LLM_LOAD_PLUGINS). Both talk to one fake server
(tests/fakes) running in its own process, which streams the same short reply to
every request.

llm and llm-anthropic are pip-installed once into a scratch venv and reused
(default ~/.cache/zeph-bench/llm-venv; `--llm-venv PATH` or ZEPH_BENCH_LLM_VENV);
if that fails, one line says so and zeph's figures are printed alone. zeph is
measured the same way, from a scratch venv of its own holding this checkout
(`pip install -e .`, no extras: what a user's fresh install has; default
~/.cache/zeph-bench/zeph-venv, reinstalled when pyproject.toml changes), so
neither side pays for packages only this development venv has; `--this-venv`
measures the running venv's zeph instead. Bytecode is written (and
PYTHONDONTWRITEBYTECODE dropped), as for any installed tool.

Run from the repository root with the project installed:

    python benchmarks/startup.py                    # RUNS=10 interleaved runs per pair
    RUNS=20 python benchmarks/startup.py --no-embedded

It asserts nothing; the machine's load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import importtime  # noqa: E402
from tests.fakes import anthropic_wire, openai_wire  # noqa: E402
from tests.fakes.server import FakeServer  # noqa: E402

SDK_FLOOR = ROOT / "benchmarks" / "sdk_floor.py"
ZEPH = str(Path(sys.executable).parent / "zeph")  # the running venv's (--this-venv, the embedded figure)
RUNS = int(os.environ.get("RUNS", "10"))
GOAL = 0.8
OWN_IMPORT_RUNS = 5  # zeph's own import time is small beside the SDK's: the least of a few runs
PROMPT = "hello there"
OPENAI_MODEL = "gpt-4o"
ANTHROPIC_MODEL = "claude-sonnet-4-6"  # llm-anthropic's alias for it: claude-sonnet-4.6
LLM_PACKAGES = ("llm", "llm-anthropic")
DEFAULT_VENV = Path.home() / ".cache" / "zeph-bench" / "llm-venv"
DEFAULT_ZEPH_VENV = Path.home() / ".cache" / "zeph-bench" / "zeph-venv"
FOREIGN_ENV = ("ZEPH_", "LLM_", "OPENAI_", "ANTHROPIC_", "OLLAMA_")
WATCHED = ("numpy", "textual", "tiktoken", "sqlite_utils", "zeph_cli.tools.shell_syntax", "zeph_cli.tools.blocklist", "tree_sitter")

Command = tuple[list[str], dict[str, str]]


class RunFailed(Exception):
    """A measured command exited non-zero; the message is its last stderr line."""


# ---- the fake server, in its own process ---------------------------------------


def serve() -> None:
    """The server process: print its URL, answer every request alike, stop when stdin closes."""
    server = FakeServer()
    server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["Hello", " there."])))
    events = anthropic_wire.text_events(["Hello", " there."], model=ANTHROPIC_MODEL)
    server.route(anthropic_wire.MESSAGES_PATH, anthropic_wire.sse_response(events))
    print(server.url, flush=True)
    sys.stdin.read()
    server.close()


@contextmanager
def fake_server() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield process.stdout.readline().strip()
    finally:
        process.stdin.close()
        process.wait(timeout=10)


# ---- llm in a scratch venv ------------------------------------------------------


def llm_versions(venv: Path) -> str | None:
    """'llm X, llm-anthropic Y' when both are installed in `venv`, else None."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    code = "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in ('llm', 'llm-anthropic')))"
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def pip_install(venv: Path, args: list[str], timeout: int) -> str | None:
    """A venv at `venv` with `pip install ARGS` done in it; None, or why it failed in one line."""
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, *args], check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as error:
        return ((error.stderr or "").strip().splitlines()[-1:] or [f"exit status {error.returncode}"])[0]
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None


def ensure_llm(venv: Path) -> Path | None:
    """The venv holding llm and llm-anthropic, installed on first use; None (and one line) if that fails."""
    if llm_versions(venv):
        return venv
    print(f"installing {' and '.join(LLM_PACKAGES)} into {venv} (once)...", flush=True)
    failure = pip_install(venv, list(LLM_PACKAGES), timeout=1200)
    if failure:
        print(f"llm: not measured, installing it into {venv} failed: {failure}")
        return None
    return venv if llm_versions(venv) else None


def ensure_zeph(venv: Path) -> Path | None:
    """A venv with this checkout installed (editable, no extras), made on first use and again when
    pyproject.toml changes; None (and one line) if that fails."""
    stamp = venv / "zeph-bench-pyproject.sha256"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if (venv / "bin" / "zeph").exists() and stamp.exists() and stamp.read_text() == wanted:
        return venv
    print(f"installing this checkout into {venv} (once)...", flush=True)
    failure = pip_install(venv, ["-e", str(ROOT)], timeout=1800)
    if failure:
        print(f"zeph: a fresh venv could not be made in {venv} ({failure}); measuring this venv's zeph")
        return None
    stamp.write_text(wanted)
    return venv


# ---- environments ----------------------------------------------------------------


def base_env(scratch: Path) -> dict[str, str]:
    """This environment without either tool's settings, with scratch XDG directories."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV) and k != "PYTHONDONTWRITEBYTECODE"}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[name] = str(scratch / name.lower())
    return env


def zeph_env(base: dict[str, str], scratch: Path, home: str = "zeph-home", **settings: str) -> dict[str, str]:
    return {**base, "ZEPH_HOME": str(scratch / home), **settings}


def llm_env(base: dict[str, str], scratch: Path, url: str, **settings: str) -> dict[str, str]:
    """llm's user directory with an extra-openai-models.yaml entry `bench` for the fake server."""
    user_path = scratch / "llm-user"
    user_path.mkdir(exist_ok=True)
    (user_path / "extra-openai-models.yaml").write_text(
        f"- model_id: bench\n  model_name: {OPENAI_MODEL}\n  api_base: \"{url}/v1\"\n"
    )
    return {**base, "LLM_USER_PATH": str(user_path), **settings}


# ---- timing ----------------------------------------------------------------------


def run(command: Command) -> subprocess.CompletedProcess:
    args, env = command
    result = subprocess.run(args, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {result.returncode}"]
        raise RunFailed(f"{Path(args[0]).name} {' '.join(args[1:])}: {lines[-1]}")
    return result


def timed(command: Command) -> float:
    start = time.perf_counter()
    run(command)
    return time.perf_counter() - start


def interleaved(commands: dict[str, Any], runs: int, time_one: Callable[[Any], float] = timed) -> dict[str, list[float]]:
    """One warm-up run of each command, then `runs` rounds running each once in turn (each timed by
    `time_one`)."""
    for command in commands.values():
        time_one(command)
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            samples[label].append(time_one(command))
    return samples


def report(label: str, samples: list[float]) -> None:
    median, fastest = statistics.median(samples) * 1000, min(samples) * 1000
    print(f"  {label:<46} median {median:7.1f} ms   min {fastest:7.1f} ms   (n={len(samples)})")


def compare(
    title: str, llm: Command | None, zeph: Command, runs: int, goal: float | None = GOAL, sdk: Command | None = None
) -> None:
    """Time them interleaved (zeph alone without llm; `sdk`, the SDK alone, when given) and print medians,
    mins, the ratio and, with the SDK's floor, what each tool spends above it."""
    print(title)
    commands = {"zeph": zeph} if llm is None else {"llm": llm, "zeph": zeph}
    if sdk is not None:
        commands["sdk"] = sdk
    try:
        samples = interleaved(commands, runs)
    except RunFailed as error:
        print(f"  not measured: {error}")
        return
    for label, command in commands.items():
        name = "the SDK alone (import, client, one reply)" if label == "sdk" else None
        report(name or " ".join([Path(command[0][0]).name, *command[0][1:]]), samples[label])
    if llm is None:
        return
    median = {label: statistics.median(values) * 1000 for label, values in samples.items()}
    ratio = median["zeph"] / median["llm"]
    verdict = "" if goal is None else f"   goal <= {goal}: {'met' if ratio <= goal else 'not met'}"
    print(f"  ratio zeph/llm (medians) {ratio:.2f}{verdict}")
    if sdk is not None and goal is not None:
        room = goal * median["llm"] - median["sdk"]
        print(f"  beside the SDK alone (medians): llm {median['llm'] - median['sdk']:+.0f} ms, "
              f"zeph {median['zeph'] - median['sdk']:+.0f} ms; the SDK alone is {median['sdk'] / median['llm']:.2f} "
              f"of llm, so the goal needs zeph within {room:+.0f} ms of it")


# ---- import breakdown -------------------------------------------------------------


def import_tree(python: str, command: Command) -> list[importtime.Module]:
    args, env = command
    result = run(([python, "-X", "importtime", *args], env))
    return importtime.parse(result.stderr.decode(errors="replace"))


def print_imports(label: str, roots: list[importtime.Module], top: int = 10) -> None:
    print(f"  {label}: {importtime.total_ms(roots):.0f} ms of imports; top-level packages by cumulative time:")
    for cost in importtime.packages(roots)[:top]:
        print(f"    {cost.name:<24} cumulative {cost.cumulative_ms:7.1f} ms   own {cost.own_ms:7.1f} ms")


def print_zeph_watch(roots: list[importtime.Module], own_runs: list[float]) -> None:
    modules = sum(1 for m in importtime.walk(roots) if m.name.split(".")[0] == "zeph_cli")
    print(f"    zeph_cli's own {modules} modules: {min(own_runs):.1f} ms self time, least of {len(own_runs)} runs "
          f"(median {statistics.median(own_runs):.1f}; goal <= 80 ms)")
    marks = ", ".join(f"{name} {'yes' if importtime.was_imported(roots, name) else 'no'}" for name in WATCHED)
    print(f"    imported: {marks}")


def breakdown(title: str, llm_venv: Path | None, llm: Command | None, zeph: Command) -> None:
    print(title)
    try:
        if llm is not None and llm_venv is not None:
            print_imports("llm", import_tree(str(llm_venv / "bin" / "python"), llm))
        python = str(Path(zeph[0][0]).parent / "python")
        trees = [import_tree(python, zeph) for _ in range(OWN_IMPORT_RUNS)]
    except RunFailed as error:
        print(f"  not measured: {error}")
        return
    roots = trees[0]
    print_imports("zeph", roots)
    print_zeph_watch(roots, [importtime.own_ms(tree, "zeph_cli") for tree in trees])


# ---- the whole run ----------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-venv", type=Path, default=Path(os.environ.get("ZEPH_BENCH_LLM_VENV", DEFAULT_VENV)))
    parser.add_argument("--zeph-venv", type=Path, default=Path(os.environ.get("ZEPH_BENCH_ZEPH_VENV", DEFAULT_ZEPH_VENV)))
    parser.add_argument("--this-venv", action="store_true", help="measure the running venv's zeph, not a fresh one")
    parser.add_argument("--no-embedded", action="store_true", help="skip zeph ask on the embedded model")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def embedded_figure(base: dict[str, str], scratch: Path, runs: int) -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print("zeph ask on the embedded model: skipped, the local extra is not installed")
        return
    command = ([ZEPH, "ask", PROMPT], zeph_env(base, scratch, "zeph-home-embedded", ZEPH_LLM_MAX_TOKENS="1"))
    compare("zeph ask on the embedded model (1-token reply)", None, command, runs)


def main() -> None:
    args = parse_args()
    if args.serve:
        serve()
        return
    venv = ensure_llm(args.llm_venv.expanduser())
    versions = llm_versions(venv) if venv else None
    llm_bin = str(venv / "bin" / "llm") if venv else ""
    zeph_venv = None if args.this_venv else ensure_zeph(args.zeph_venv.expanduser())
    zeph = str(zeph_venv / "bin" / "zeph") if zeph_venv else ZEPH
    print(f"{RUNS} interleaved runs per pair; {versions or 'llm not installed'}; zeph from {Path(zeph).parent.parent}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}\n")
    with tempfile.TemporaryDirectory() as tmp, fake_server() as url:
        scratch = Path(tmp)
        base = base_env(scratch)
        llm_openai = llm_env(base, scratch, url, OPENAI_API_KEY="sk-bench", LLM_LOAD_PLUGINS="")
        llm_anthropic = {**llm_openai, "ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": url,
                         "LLM_LOAD_PLUGINS": "llm-anthropic"}
        zeph_openai = zeph_env(base, scratch, ZEPH_LLM_PROVIDER="compatible", ZEPH_LLM_BASE_URL=url + "/v1",
                               ZEPH_LLM_MODEL=OPENAI_MODEL, OPENAI_API_KEY="sk-bench")
        zeph_anthropic = zeph_env(base, scratch, ZEPH_LLM_PROVIDER="anthropic", ZEPH_LLM_MODEL=ANTHROPIC_MODEL,
                                  ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-bench")

        def llm(env: dict[str, str], *words: str) -> Command | None:
            return ([llm_bin, *words], env) if venv else None

        def sdk_alone(kind: str, base_url: str, model: str) -> Command:
            return [str(Path(zeph).parent / "python"), str(SDK_FLOOR), kind, base_url, model], base

        compare("--help", llm(llm_openai, "--help"), ([zeph, "--help"], zeph_env(base, scratch)), RUNS, goal=None)
        ask_openai = llm(llm_openai, "-m", "bench", PROMPT), ([zeph, "ask", PROMPT], zeph_openai)
        compare("\nOpenAI-compatible server", *ask_openai, RUNS, sdk=sdk_alone("openai", url + "/v1", OPENAI_MODEL))
        compare("\nContinuing the conversation (OpenAI-compatible)", llm(llm_openai, "-c", "again"),
                ([zeph, "ask", "-c", "again"], zeph_openai), RUNS)
        ask_anthropic = llm(llm_anthropic, "-m", "claude-sonnet-4.6", PROMPT), ([zeph, "ask", PROMPT], zeph_anthropic)
        compare("\nAnthropic (llm-anthropic plugin)", *ask_anthropic, RUNS,
                sdk=sdk_alone("anthropic", url, ANTHROPIC_MODEL))
        if not args.no_embedded:
            print()
            embedded_figure(base, scratch, max(RUNS // 2, 3))
        breakdown("\nImports, OpenAI-compatible ask (one -X importtime run each)", venv, *ask_openai)
        breakdown("\nImports, Anthropic ask", venv, *ask_anthropic)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
