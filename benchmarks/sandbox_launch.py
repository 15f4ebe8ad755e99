"""What the sandbox launcher costs per command, part by part (Linux).

Invariant: prints timings, asserts nothing about time. Each figure is the median
of `--repeat` fresh child processes (a Landlock layer or a seccomp filter can
only be added, so every sample needs a new process):
  - end to end: `/bin/true` bare, under `python -I -S -c pass` (the launcher's
    interpreter floor), and under the real launcher with everything it applies;
  - inside the launcher: loading landlock_scopes.py and seccomp_filter.py,
    the Landlock file-system ruleset (importing `landlock` included), the
    scopes layer and the seccomp filter;
  - the filter's cost per system call: `dd bs=1` copying 200,000 bytes (400,000
    read/write calls) with and without it.

    python benchmarks/sandbox_launch.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zeph_cli.tools.sandbox.landlock_backend import (
    LAUNCHER,
    landlock_probe,
    landlock_site,
)

STEPS = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
clock = time.perf_counter
t0 = clock()
import importlib.util
spec = importlib.util.spec_from_file_location("launcher", sys.argv[2])
launcher = importlib.util.module_from_spec(spec); spec.loader.exec_module(launcher)
t1 = clock()
modules, _ = launcher.load_protections()
t2 = clock()
abi = launcher.confine([sys.argv[3]])
t3 = clock()
modules["landlock_scopes"].restrict(["signal", "abstract-unix"], abi)
t4 = clock()
modules["seccomp_filter"].install()
t5 = clock()
print(json.dumps({"load launcher": t1 - t0, "load the two modules": t2 - t1, "landlock ruleset": t3 - t2,
                  "scopes layer": t4 - t3, "seccomp filter": t5 - t4}))
"""

FILTER_THEN_EXEC = r"""
import os, sys
if sys.argv[1] == "filter":
    import importlib.util
    spec = importlib.util.spec_from_file_location("seccomp_filter", sys.argv[2])
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); module.install()
os.execvp(sys.argv[3], sys.argv[3:])
"""


def wall_ms(argv: list[str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    site = landlock_site()
    probe = landlock_probe()
    if site is None or probe.problem:
        print(f"Landlock does not work here: {probe.problem}")
        return 1
    print(f"{probe.describe()} (load {os.getloadavg()[0]:.1f}, median of {args.repeat})")
    with tempfile.TemporaryDirectory() as workspace:
        launch = [sys.executable, "-I", "-S", str(LAUNCHER), site, "--write", workspace]
        for name in probe.applied:
            launch += ["--require", name]
        print("\nend to end, /bin/true:")
        for label, argv in (
            ("bare", ["/bin/true"]),
            ("python -I -S -c pass", [sys.executable, "-I", "-S", "-c", "pass"]),
            ("launcher, all of it", [*launch, "--", "/bin/true"]),
        ):
            print(f"  {label:<24} {wall_ms(argv, args.repeat):7.1f} ms")
        steps: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            done = subprocess.run([sys.executable, "-I", "-S", "-c", STEPS, site, str(LAUNCHER), workspace],
                                  check=True, capture_output=True, text=True)
            for key, seconds in json.loads(done.stdout).items():
                steps.setdefault(key, []).append(seconds * 1000)
        print("\ninside the launcher:")
        for key, samples in steps.items():
            print(f"  {key:<24} {statistics.median(samples):7.2f} ms")
        seccomp_file = str(LAUNCHER.with_name("seccomp_filter.py"))
        dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=200000"]
        print("\n400,000 system calls (dd bs=1 count=200000):")
        for label in ("none", "filter"):
            argv = [sys.executable, "-I", "-S", "-c", FILTER_THEN_EXEC, label, seccomp_file, *dd]
            print(f"  {'seccomp ' + label:<24} {wall_ms(argv, max(5, args.repeat // 3)):7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
