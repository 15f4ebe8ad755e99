"""First-token time of `zeph ask` on the embedded model, cold and warm.

Cold: an empty cache dir, so the run evaluates the whole system prompt (and saves it); warm: the
runs after it, which restore the saved prefix and evaluate only the question. Each round is one cold
run followed by WARM warm runs; the figures are medians over the rounds. A second section times the
parts of a run that do not depend on the prompt (importing llama_cpp, loading the model, restoring the
saved state, evaluating the turn after it with 1 thread and with every core: as zeph loads the model,
threads spinning or sleeping while they wait for each other). Prints figures, asserts nothing. Run from
the repository root with the project installed:
`python benchmarks/local_first_token.py` (ROUNDS=3 WARM=3 by default).
"""

from __future__ import annotations

import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ZEPH = str(Path(sys.executable).parent / "zeph")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
WARM = int(os.environ.get("WARM", "3"))
QUESTION = "hello there"


def first_token(env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first byte of the reply on stdout, seconds to exit) of one `zeph ask`."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [ZEPH, "ask", QUESTION], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    first = None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    selector.register(process.stderr, selectors.EVENT_READ)
    errors = b""
    open_streams = 2
    while open_streams:
        for key, _ in selector.select():
            chunk = os.read(key.fileobj.fileno(), 4096)
            if not chunk:
                selector.unregister(key.fileobj)
                open_streams -= 1
            elif key.fileobj is process.stdout and first is None and chunk.strip():
                first = time.perf_counter() - start
            elif key.fileobj is process.stderr:
                errors += chunk
    code = process.wait()
    total = time.perf_counter() - start
    if code != 0 or first is None:
        raise SystemExit(f"zeph ask failed ({code}): {errors.decode()[-500:]}")
    return first, total


PHASES = r"""
import asyncio, sys, time
from pathlib import Path
t0 = time.perf_counter()
from zeph_cli.providers.local_loader import import_llama_cpp
llama_cpp = import_llama_cpp()  # with zeph's choice of how threads wait, unless the run sets its own
t1 = time.perf_counter()
from zeph_cli.config import load_config
from zeph_cli.messages import Message
from zeph_cli.providers import resolve_settings
from zeph_cli.providers.base import ChatRequest
from zeph_cli.providers.local import LocalProvider
from zeph_cli.providers.local_loader import LoadSpec, ModelLoad
from zeph_cli.providers.local_prefix import PrefixStore, model_identity, restore_latest
directory, threads = Path(sys.argv[1]), int(sys.argv[2])
settings = resolve_settings(load_config(env={}).config, env={})
t1b = time.perf_counter()
llama = ModelLoad(LoadSpec(settings.model, 8192, threads, "", "")).result()
t2 = time.perf_counter()
restored = restore_latest(llama, PrefixStore(directory), model_identity(settings.model, llama.n_ctx(), {"device": ""}))
t3 = time.perf_counter()
# The saved prefix is the system message as the chat template renders it: ask the real provider a question after
# it, as `zeph ask` does, and see what llama.cpp evaluates for it.
rendered = llama.detokenize(llama.input_ids[:restored].tolist(), special=True).decode()
system = rendered.split("<|im_start|>system\n", 1)[1].rsplit("<|im_end|>", 1)[0]
evaluated = []
real_eval, real_sample = llama_cpp.Llama.eval, llama_cpp.Llama.sample
def eval_timed(self, tokens):
    start = time.perf_counter(); real_eval(self, tokens); evaluated.append((len(tokens), time.perf_counter() - start))
sampled = []
def sample_timed(self, *args, **kwargs):
    start = time.perf_counter(); token = real_sample(self, *args, **kwargs); sampled.append(time.perf_counter() - start)
    return token
llama_cpp.Llama.eval, llama_cpp.Llama.sample = eval_timed, sample_timed
provider = LocalProvider(settings, prefix_cache_dir=directory)
provider._llama = llama
time_block = ("<time>\nCurrent local time: Friday, 27 November 2026, 10:25 UTC\n"
              "ISO 8601: 2026-11-27T10:25:28+00:00\n</time>")
request = ChatRequest(messages=(Message.system(system), Message.context(time_block), Message.user("hello there")),
                      max_tokens=4, temperature=0.0)
async def ask():
    async for _ in provider.stream(request):
        pass
    await provider.aclose()
asyncio.run(ask())
suffix_tokens, suffix_seconds = evaluated[0]
next_token = evaluated[1][1] if len(evaluated) > 1 else 0.0
print(f"{t1 - t0:.3f} {t2 - t1b:.3f} {t3 - t2:.3f} {restored} {suffix_tokens} {suffix_seconds:.3f} "
      f"{provider.last_prefix.source} {sampled[0]:.4f} {next_token:.4f}")
"""


def report(label: str, samples: list[float]) -> None:
    print(f"{label:<46} median {statistics.median(samples):6.2f} s   min {min(samples):6.2f} s   (n={len(samples)})")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "ZEPH_HOME": str(Path(tmp) / "data"),
            "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
            "ZEPH_LLM_PROVIDER": "local",
            "ZEPH_LLM_MAX_TOKENS": "8",
            "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "false",
        }
        # bytecode is written, as for any installed tool (a stale .pyc would be compiled again on every run)
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZEPH_CONFIG", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        cache = Path(tmp) / "data" / "cache"
        cold, warm, cold_total, warm_total = [], [], [], []
        for _ in range(ROUNDS):
            shutil.rmtree(cache, ignore_errors=True)
            first, total = first_token(env)
            cold.append(first)
            cold_total.append(total)
            for _ in range(WARM):
                first, total = first_token(env)
                warm.append(first)
                warm_total.append(total)
        print(f"zeph ask {QUESTION!r} on the embedded model ({os.cpu_count()} cores)")
        report("first token, cold (empty cache dir)", cold)
        report("first token, warm (saved prefix restored)", warm)
        report("whole run, cold", cold_total)
        report("whole run, warm", warm_total)

        if not list((cache / "local-prefix").glob("*.kvstate")):
            print("no saved prefix in the cache dir (a zeph without the prefix cache?): no parts to time")
            return
        def parts(threads: int, **extra: str) -> list[list[str]]:
            return [
                subprocess.run(
                    [sys.executable, "-c", PHASES, str(cache / "local-prefix"), str(threads)],
                    env={**env, **extra},
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                for _ in range(ROUNDS)
            ]

        def median(rows: list[list[str]], i: int) -> float:
            return statistics.median(float(p[i]) for p in rows)

        cores = os.cpu_count() or 1
        load = os.getloadavg()[0]
        print(f"parts of a warm run (medians; 1-minute load average {load:.2f} on {cores} cores):")
        runs = {
            f"{cores} threads, as zeph loads": parts(cores),
            f"{cores} threads, spinning": parts(cores, OMP_WAIT_POLICY="ACTIVE"),
            f"{cores} threads, sleeping": parts(cores, OMP_WAIT_POLICY="PASSIVE"),
            "1 thread": parts(1),
        }
        first = next(iter(runs.values()))
        print(f"  import llama_cpp                           {median(first, 0):6.2f} s")
        print(f"  load the model (n_ctx 8192)                {median(first, 1):6.2f} s")
        print(f"  restore the saved prefix ({first[0][3]} tokens)      {median(first, 2):6.3f} s")
        print(f"  a request after that prefix evaluates {first[0][4]} tokens (the turn: <time> and the question):")
        for label, rows in runs.items():
            print(f"    {label:<24} suffix {median(rows, 5):6.3f} s   sample {median(rows, 7) * 1000:5.1f} ms"
                  f"   next token {median(rows, 8) * 1000:6.1f} ms")

if __name__ == "__main__":
    main()
