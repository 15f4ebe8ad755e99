"""First-token time of `zeph ask` on the embedded model, cold and warm.

Cold: an empty cache dir, so the run evaluates the whole system prompt (and saves it); warm: the
runs after it, which restore the saved prefix and evaluate only the question. Each round is one cold
run followed by WARM warm runs; the figures are medians over the rounds. A second section times the
parts of a run that do not depend on the prompt (importing llama_cpp, loading the model, restoring the
saved state). Prints figures, asserts nothing. Run from the repository root with the project installed:
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
import json, struct, sys, time
t0 = time.perf_counter()
from llama_cpp import Llama
t1 = time.perf_counter()
from zeph_cli.config import load_config
from zeph_cli.providers import resolve_settings
from zeph_cli.providers.local_prefix import MAGIC, _restore
settings = resolve_settings(load_config(env={}).config, env={})
llama = Llama(model_path=settings.model, n_ctx=8192, n_threads=2, verbose=False)
t2 = time.perf_counter()
from pathlib import Path
data = sorted(Path(sys.argv[1]).glob("*.kvstate"))[0].read_bytes()
(length,) = struct.unpack_from("<I", data, len(MAGIC))
start = len(MAGIC) + 4
header = json.loads(data[start : start + length])
body = start + length
tokens = list(struct.unpack_from(f"<{header['tokens']}i", data, body))
_restore(llama, tokens, data[body + 4 * len(tokens) :])
t3 = time.perf_counter()
question = llama.tokenize(
    b"<|im_start|>user\n<time>\nCurrent local time: Friday, 27 November 2026, 10:25 UTC\n"
    b"ISO 8601: 2026-11-27T10:25:28+00:00\n</time>\n\nhello there<|im_end|>\n<|im_start|>assistant\n",
    add_bos=False,
    special=True,
)
llama.eval(question)
t4 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t2:.3f} {len(data)} {len(tokens)} {t4 - t3:.3f} {len(question)}")
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
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZEPH_CONFIG"):
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
        parts = [
            subprocess.run(
                [sys.executable, "-c", PHASES, str(cache / "local-prefix")],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            for _ in range(ROUNDS)
        ]

        def median(i: int) -> float:
            return statistics.median(float(p[i]) for p in parts)

        print("parts of a warm run (medians):")
        print(f"  import llama_cpp                        {median(0):6.2f} s")
        print(f"  load the model (n_ctx 8192)             {median(1):6.2f} s")
        size = int(parts[0][3]) / 1e6
        print(f"  restore the saved prefix ({int(parts[0][4])} tokens)   {median(2):6.2f} s  ({size:.1f} MB)")
        print(f"  evaluate the turn's suffix ({int(parts[0][6])} tokens)  {median(5):6.2f} s")


if __name__ == "__main__":
    main()
