"""How llama.cpp's threads should wait for each other: the embedded model's speed alone and beside other work.

llama.cpp (OpenMP) splits each step of an evaluation over every core and its threads wait for each other
hundreds of times per token. A waiting thread spins, then sleeps; how long it spins is OpenMP's
GOMP_SPINCOUNT (300,000 by default), or it sleeps at once (OMP_WAIT_POLICY=PASSIVE). This times evaluating
a 181-token prompt and generating 64 tokens with each choice: alone, beside a second model doing the same
(two `zeph ask` at once), and beside busy processes (one per core: a build, a test run). zeph loads the
model with the bounded spin unless the 1-minute load average already says every core is busy (then
PASSIVE), or the user set either variable. Prints figures, asserts nothing. Run from the repository root
with the project installed (`pip install -e '.[local]'`): `python benchmarks/local_threads.py` (ROUNDS=2).
A run that takes longer than TIMEOUT seconds (60) is stopped and printed as such.
"""

from __future__ import annotations

import concurrent.futures
import os
import statistics
import subprocess
import sys

from zeph_cli.providers.local_loader import BOUNDED_SPIN

ROUNDS = int(os.environ.get("ROUNDS", "2"))
TIMEOUT = float(os.environ.get("TIMEOUT", "60"))
CORES = os.cpu_count() or 1

GENERATE = r"""
import sys, time
import llama_cpp
from zeph_cli.config import load_config
from zeph_cli.providers.local_loader import keep_weights_off_amx
keep_weights_off_amx(llama_cpp)  # as zeph loads (the thread settings under test come from this process's environment)
from zeph_cli.providers import resolve_settings
model = resolve_settings(load_config(env={}).config, env={}).model
llama = llama_cpp.Llama(model_path=model, n_ctx=2048, n_threads=int(sys.argv[1]), n_threads_batch=int(sys.argv[1]),
                        verbose=False)
tokens = llama.tokenize(b"The sea is " * 60)
start = time.perf_counter()
llama.eval(tokens)
prompt = time.perf_counter() - start
start = time.perf_counter()
for _ in range(64):
    llama.eval([llama.sample(temp=0)])
print(f"{prompt:.3f} {time.perf_counter() - start:.3f}")
"""

CHOICES = {
    "OpenMP's default (spin 300,000)": {},
    f"zeph's bounded spin ({BOUNDED_SPIN})": {"GOMP_SPINCOUNT": BOUNDED_SPIN},
    "sleep at once (PASSIVE)": {"OMP_WAIT_POLICY": "PASSIVE"},
}


def one_run(extra: dict[str, str]) -> tuple[float, float] | None:
    """(prompt seconds, 64 tokens seconds) of one process, None when it ran past TIMEOUT."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(extra)
    try:
        result = subprocess.run(
            [sys.executable, "-c", GENERATE, str(CORES)], env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return None
    if result.returncode != 0:
        raise SystemExit(f"the model run failed: {result.stderr[-500:]}")
    prompt, generate = result.stdout.split()
    return float(prompt), float(generate)


def runs_at_once(extra: dict[str, str], models: int) -> list[tuple[float, float] | None]:
    with concurrent.futures.ThreadPoolExecutor(models) as pool:
        return list(pool.map(lambda _: one_run(extra), range(models)))


def shown(samples: list[tuple[float, float] | None], part: int) -> str:
    if any(sample is None for sample in samples):
        return f"> {TIMEOUT:.0f} s".rjust(8)
    return f"{statistics.median(sample[part] for sample in samples):6.2f} s"


def main() -> None:
    print(f"llama.cpp threads waiting for each other: {CORES} cores, {CORES} threads, "
          f"1-minute load average {os.getloadavg()[0]:.2f} at the start; medians of {ROUNDS} rounds")
    print(f"{'':34} {'alone':>20} {'beside a 2nd model':>20} {f'beside {CORES} busy':>20}")
    print(f"{'':34} {'prompt':>9} {'64 tok':>10} {'prompt':>9} {'64 tok':>10} {'prompt':>9} {'64 tok':>10}")
    for label, extra in CHOICES.items():
        alone, paired, busy = [], [], []
        for _ in range(ROUNDS):
            alone += runs_at_once(extra, 1)
            paired += runs_at_once(extra, 2)
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(CORES)]
            try:
                busy += runs_at_once(extra, 1)
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()
        cells = [f"{shown(s, 0):>9} {shown(s, 1):>10}" for s in (alone, paired, busy)]
        print(f"{label:<34} {' '.join(cells)}", flush=True)


if __name__ == "__main__":
    main()
