"""Start-up wall time of `zeph --help` and `zeph ask` against a local server.

Prints figures (median and min over N runs); asserts nothing. Run from the
repository root with the project installed: `python benchmarks/startup.py`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes import openai_wire  # noqa: E402
from tests.fakes.server import FakeServer  # noqa: E402

ZEPH = str(Path(sys.executable).parent / "zeph")
RUNS = int(os.environ.get("RUNS", "10"))


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run([ZEPH, *args], env=env, capture_output=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"zeph {' '.join(args)} failed: {result.stderr.decode()[-500:]}")
    return elapsed


def report(label: str, samples: list[float]) -> None:
    print(f"{label:<44} median {statistics.median(samples) * 1000:7.1f} ms   min {min(samples) * 1000:7.1f} ms   (n={len(samples)})")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "ZEPH_HOME": str(Path(tmp) / "data"),
            "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
        }
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZEPH_CONFIG"):
            env.pop(name, None)
        timed(["--help"], env)  # warm the OS file cache
        report("zeph --help", [timed(["--help"], env) for _ in range(RUNS)])

        server = FakeServer()
        try:
            server.route("/v1/chat/completions", openai_wire.stream_response(openai_wire.text_chunks(["Hello", " there."])))
            ask_env = {**env, "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": server.url + "/v1", "ZEPH_LLM_MODEL": "gpt-4o"}
            timed(["ask", "hi"], ask_env)
            report("zeph ask (compatible server on localhost)", [timed(["ask", "hi"], ask_env) for _ in range(RUNS)])
            report("zeph ask -c (growing session)", [timed(["ask", "-c", "again"], ask_env) for _ in range(RUNS)])
        finally:
            server.close()

        local_env = {**env, "ZEPH_LLM_MAX_TOKENS": "1"}
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            print("zeph ask (embedded model): skipped, the local extra is not installed")
            return
        report("zeph ask (embedded model, 1-token reply)", [timed(["ask", "hi"], local_env) for _ in range(max(RUNS // 2, 3))])


if __name__ == "__main__":
    main()
