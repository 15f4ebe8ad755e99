"""A new user's first hour on the embedded model: 20 chats of 6 turns on varied topics through the real
`zeph ask` (no API key: SmolLM2-135M through llama-cpp-python), then "Write a short essay about the
history of ancient Egypt." in a new session.

Prints, after each chat, how long it took (the session-summary worker that `zeph ask` leaves behind is
waited for: it runs detached); then what `zeph profile show` and `zeph profile sessions` hold, every
session summary and profile the checks on generated text kept or discarded and why, the essay, how many
of its words are about Egypt and how many come from the other chats' topics (a reply that drifts into an
earlier chat repeats its words), and the recall lines `zeph context` shows for the essay's turn.

Everything runs in a scratch home (`--out DIR`, default a new temporary directory, kept), with zeph's
defaults; `--set KEY=VALUE` adds an environment variable (e.g. ZEPH_MEMORY_CROSS_SESSION_ENABLED=true
ZEPH_MEMORY_PROFILE_ENABLED=true to make the embedded model write summaries and the profile anyway).
`--chats N` runs the first N chats; `--report --out DIR` prints the report of a finished run again. On 2 busy cores a run takes 30-90 minutes: the model's replies often
run to their length limit.

    python benchmarks/embedded_chats.py [--chats 20] [--out DIR] [--set KEY=VALUE ...]
    python benchmarks/embedded_chats.py --report --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHATS = [
    ["I'm a data engineer and I mostly write Python. How do I package a Python library with pyproject.toml?",
     "What is the difference between setuptools and hatchling?", "How do I add a console script entry point?",
     "How do I publish the package to PyPI?", "How should I version my releases?", "How do I build a wheel locally?"],
    ["I want to start a small vegetable garden on my balcony. Where do I start?", "Which vegetables grow well in pots?",
     "How often should I water tomatoes in summer?", "What soil mix should I use?", "How do I deal with aphids?",
     "When should I harvest the tomatoes?"],
    ["How do I bake sourdough bread at home?", "How do I keep a starter alive?", "How long should the dough rise?",
     "Why is my crumb so dense?", "What flour works best?", "How hot should the oven be?"],
    ["I'm planning a two-week trip to Japan in April. What cities should I visit?", "Is the JR pass worth it?",
     "What should I eat in Osaka?", "How do I get from Tokyo to Kyoto?", "Any etiquette tips for temples?",
     "How much cash should I carry?"],
    ["I just started learning guitar. How should I practise?", "How do I play a G chord?",
     "My fingertips hurt, is that normal?", "How do I tune my guitar by ear?", "What are good first songs?",
     "How do I practise strumming patterns?"],
    ["How do I make a monthly budget?", "What is the 50/30/20 rule?", "How big should my emergency fund be?",
     "Should I pay off debt or invest first?", "What is an index fund?", "How do I track my spending?"],
    ["I'm training for my first half marathon. How should I plan my weeks?", "How long should my long run be?",
     "What should I eat before a race?", "How do I avoid shin splints?", "What pace should easy runs be?",
     "How do I taper before the race?"],
    ["Can you explain ownership in Rust?", "What is borrowing?",
     "Why does the borrow checker complain about two mutable references?",
     "What are lifetimes?", "When should I use Rc and RefCell?", "How does Box differ from a reference?"],
    ["My home Wi-Fi is slow in the bedroom. How can I fix it?", "Is a mesh system better than a repeater?",
     "Which Wi-Fi channel should I use?", "What is the difference between 2.4 and 5 GHz?",
     "How do I set up a guest network?", "Should I use a wired backhaul?"],
    ["I bought my first camera. How do aperture, shutter speed and ISO work together?",
     "What is a good setting for portraits?", "How do I shoot in low light?", "What does the rule of thirds mean?",
     "Should I shoot RAW or JPEG?", "How do I take sharp photos of moving kids?"],
    ["What is a good chess opening for beginners?", "How does the Italian Game start?", "What is a fork?",
     "How do I avoid blundering pieces?", "How should I study endgames?", "How do I get better at tactics?"],
    ["My PostgreSQL query is slow. How do indexes help?", "What is a composite index?",
     "When is a sequential scan better?", "How do I read EXPLAIN ANALYZE output?", "What is a partial index?",
     "How do I find unused indexes?"],
    ["Can you help me improve my resume for a data engineering job?", "How long should a resume be?",
     "How do I describe my projects?", "Should I include a summary section?", "How do I tailor it to each job?",
     "What should the cover letter say?"],
    ["What can I see in the night sky this month with binoculars?", "How do I find the Andromeda galaxy?",
     "What is the difference between a planet and a star when looking up?", "How do I avoid light pollution?",
     "Which telescope should a beginner buy?", "How do I photograph the Moon?"],
    ["How do I write a Dockerfile for a Python web app?", "What is a multi-stage build?", "How do I keep images small?",
     "How do I pass environment variables?", "What is docker compose for?", "How do I debug a container that exits?"],
    ["How do I loop over files in a bash script?", "How do I handle spaces in file names?",
     "What does set -euo pipefail do?", "How do I parse command line options?", "How do I read a file line by line?",
     "How do I check if a command exists?"],
    ["I want to learn to knit. What do I need?", "How do I cast on?", "What is the difference between knit and purl?",
     "How do I fix a dropped stitch?", "What is a good first project?", "How do I bind off?"],
    ["My car makes a squeaking noise when I brake. What could it be?", "How often should brake pads be replaced?",
     "How do I check tyre pressure?", "When should I change the oil?", "What does the check engine light mean?",
     "How do I jump start a car?"],
    ["I want to learn Spanish in a year. How should I start?", "How many words do I need for basic conversation?",
     "Are language apps enough?", "How do I practise speaking alone?", "What is the subjunctive?",
     "How do I remember vocabulary?"],
    ["How do I get started with unit testing in Python?", "What is the difference between pytest and unittest?",
     "How do I use fixtures?", "How do I test code that calls an HTTP API?", "What is code coverage?",
     "How do I run only failed tests?"],
]
ESSAY = "Write a short essay about the history of ancient Egypt."
EGYPT = {"egypt", "egyptian", "egyptians", "pharaoh", "pharaohs", "nile", "pyramid", "pyramids", "giza", "memphis",
         "thebes", "dynasty", "dynasties", "kingdom", "hieroglyphs", "hieroglyphics", "cleopatra", "ramesses", "tutankhamun",
         "menes", "narmer", "alexandria", "ptolemaic", "ancient", "tomb", "tombs", "temple", "sphinx"}
# Words only the other chats bring up: one in the essay came from an earlier chat.
DRIFT = {"python", "pypi", "pyproject", "hatchling", "setuptools", "wheel", "garden", "tomatoes", "aphids",
         "sourdough", "starter", "dough", "crumb", "japan", "tokyo", "kyoto", "osaka", "guitar", "chord", "strumming",
         "budget", "index", "marathon", "shin", "rust", "borrow", "wi-fi", "wifi", "mesh", "router", "aperture", "iso",
         "chess", "postgresql", "resume", "telescope", "andromeda", "dockerfile", "docker", "bash", "knit", "purl",
         "brake", "tyre", "spanish", "subjunctive", "pytest", "unittest", "package", "library", "user", "session"}


def zeph_bin() -> str:
    found = shutil.which("zeph", path=str(Path(sys.executable).parent)) or shutil.which("zeph")
    if not found:
        sys.exit("zeph is not installed in this environment: pip install -e '.[local]'")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=len(CHATS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--report", action="store_true", help="only print the report of the run in --out")
    args = parser.parse_args()
    if args.report and args.out is None:
        parser.error("--report needs --out DIR, the folder of a finished run")
    out = (args.out or Path(tempfile.mkdtemp(prefix="zeph-embedded-chats-"))).resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ZEPH_") and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(ZEPH_HOME=str(out / "home"), XDG_CONFIG_HOME=str(out / "config"), XDG_DATA_HOME=str(out / "data"))
    for item in args.set:
        key, _, value = item.partition("=")
        env[key] = value
    zeph = zeph_bin()
    transcript = open(out / "transcript.txt", "a", encoding="utf-8")

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run([zeph, *command], cwd=work, env=env, capture_output=True, text=True, timeout=1800)

    def ask(prompt: str, cont: bool) -> str:
        started = time.monotonic()
        result = run("ask", *(["-c"] if cont else []), prompt)
        transcript.write(f"\n>>> {prompt}  ({time.monotonic() - started:.1f}s, exit {result.returncode})\n"
                         f"{result.stdout}\n{result.stderr}")
        transcript.flush()
        return result.stdout

    def wait_for_worker() -> None:
        """The detached summary worker of this scratch home (found by its working directory) has exited."""
        time.sleep(1.0)
        while any(_worker_in(pid, work) for pid in os.listdir("/proc") if pid.isdigit()):
            time.sleep(1.0)

    print(f"scratch home: {out}", flush=True)
    if args.report:
        essay = (out / "essay.txt").read_text(encoding="utf-8")
    else:
        begun = time.monotonic()
        for n, chat in enumerate(CHATS[: args.chats], 1):
            started = time.monotonic()
            for turn, prompt in enumerate(chat):
                ask(prompt, cont=turn > 0)
            wait_for_worker()
            print(f"chat {n:2}: {time.monotonic() - started:6.0f} s  ({chat[0][:60]})", flush=True)
        essay = ask(ESSAY, cont=False)
        (out / "essay.txt").write_text(essay, encoding="utf-8")
        print(f"all chats and the essay: {time.monotonic() - begun:.0f} s\n")

    for command in (("profile", "show"), ("profile", "sessions")):
        result = run(*command)
        print(f"$ zeph {' '.join(command)}\n{result.stderr}{result.stdout}")
    sessions = json.loads(run("profile", "sessions", "--json").stdout or "[]")
    profile = json.loads(run("profile", "show", "--json").stdout or "null")
    kept = [s for s in sessions if s["text"]]
    discarded = [s for s in sessions if s.get("last_summary_discarded")]
    print(f"session summaries kept: {len(kept)}, discarded: {len(discarded)}")
    if profile and profile.get("last_update_discarded"):
        print(f"profile update discarded: {profile['last_update_discarded']}")

    words = re.findall(r"[a-z][a-z-]*", essay.lower())
    on_topic = sum(w in EGYPT for w in words)
    drift = sorted({w for w in words if w in DRIFT})
    print(f"\nthe essay ({len(words)} words; {on_topic} about Egypt; words of other chats: {', '.join(drift) or 'none'}):")
    print(essay.strip())
    context = run("context")
    print("\n$ zeph context (the essay's turn)")
    print("\n".join(line for line in context.stdout.splitlines() if line.startswith(("recall", "  #", "session summaries"))))


def _worker_in(pid: str, work: Path) -> bool:
    try:
        if b"zeph_cli.features.session_memory.worker" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return False
        return os.readlink(f"/proc/{pid}/cwd") == str(work)
    except OSError:
        return False


if __name__ == "__main__":
    main()
