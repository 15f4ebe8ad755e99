"""Secret redaction: which secret shapes it catches, which look-alikes it keeps, and how long a 30,000-character
tool output takes — beside an earlier version of zeph's redaction and beside detect-secrets.

Invariant: prints figures, asserts nothing. Every text comes from a seeded random source, so runs compare.
A shape is caught when no 16 characters in a row of its secrets' last two thirds are left in the output (a
vendor prefix may stay, a cut-off tail may not); look-alike lines are kept when they come out unchanged. The shapes are tests/secret_shapes.py's: UNSEEN_SHAPES (registry, cloud and e-commerce
tokens, .pgpass and .netrc lines, webhook URLs: the kinds the hand-written table did not know) and
HELD_OUT_SHAPES (more of the same kinds, written after the rules and not used to tune them). The look-alikes
are the redaction tests' (references and placeholders, SHAs, UUIDs, base64, hashes beside secret-ish words).

    python benchmarks/redaction.py [--repeat 50] [--baseline GIT_REF] [--detect-secrets]

`--baseline` loads zeph_cli/tools/redact as it was at GIT_REF (a commit before the rule set: c70b96f) from
git; `--detect-secrets` scans with detect-secrets' default plugins, and with its named plugins only (no
high-entropy ones), and replaces each value it reports (install it to compare: `pip install detect-secrets`).
"""

from __future__ import annotations

import argparse
import base64
import importlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.texts import prose
from tests import test_tool_redact as redaction_tests
from tests.secret_shapes import HELD_OUT_SHAPES, MORE_LOOK_ALIKES, UNSEEN_SHAPES, Shape
from zeph_cli.tools.redact import REDACTED, redact_secrets

Redactor = Callable[[str], str]
SIZE = 30_000
SECRETS = (
    "OPENAI_API_KEY=sk-abc123DEF456ghi789JKL012mno345PQR678stu901",
    "maps?key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "Cookie: s=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
    "mysql -u root -pS3cretPass99 shop",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
    "Authorization: Basic dXNlcjpwYXNzd29yZA==",
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
)
LOOK_ALIKE_SETS = {
    "references and placeholders": redaction_tests.FALSE_POSITIVES,
    "SHAs, UUIDs, base64, prose": redaction_tests.LOOK_ALIKES,
    "digests beside key words": MORE_LOOK_ALIKES,
}


def look_alike_line(rng: random.Random) -> str:
    sha = f"{rng.getrandbits(160):040x}"
    blob = base64.b64encode(rng.randbytes(48)).decode()
    return f"commit {sha} request {uuid.UUID(int=rng.getrandbits(128))} data {blob}"


def texts(rng: random.Random) -> dict[str, str]:
    clean = prose(rng, SIZE)[:SIZE]
    lines = clean.splitlines()
    step = max(1, len(lines) // len(SECRETS))
    for index, secret in enumerate(SECRETS):
        lines.insert(index * step, secret)
    with_shapes = list(lines)
    step = max(1, len(with_shapes) // len(UNSEEN_SHAPES))
    for index, shape in enumerate(UNSEEN_SHAPES):
        with_shapes.insert(index * step, shape.text)
    look_alikes: list[str] = []
    size = 0
    while size < SIZE:
        look_alikes.append(look_alike_line(rng))
        size += len(look_alikes[-1]) + 1
    return {
        "prose": clean,
        "prose + 7 secrets": "\n".join(lines),
        f"+ {len(UNSEEN_SHAPES)} new shapes": "\n".join(with_shapes),
        "SHAs, UUIDs, base64": "\n".join(look_alikes),
    }


def zeph_at(ref: str) -> Redactor:
    """zeph's redaction as it was at a git ref, loaded from git into a temporary package."""
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref, "zeph_cli/tools/redact"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    if not files:
        raise SystemExit(f"no zeph_cli/tools/redact at {ref}")
    package = Path(tempfile.mkdtemp(prefix="zeph-redact-")) / "redact_baseline"
    for name in files:
        target = package / Path(name).relative_to("zeph_cli/tools/redact")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(subprocess.run(["git", "show", f"{ref}:{name}"], cwd=ROOT, check=True, capture_output=True).stdout)
    sys.path.insert(0, str(package.parent))
    module = importlib.import_module("redact_baseline")
    return lambda text: module.redact_secrets(text)[0]


def detect_secrets_redactor(entropy: bool) -> Redactor:
    """detect-secrets' line scanner with its default plugins, or with all but the two high-entropy ones."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings, transient_settings

    names = [plugin.__name__ for plugin in get_mapping_from_secret_type_to_class().values()]
    named = {"plugins_used": [{"name": name} for name in names if "HighEntropy" not in name]}

    def redact(text: str) -> str:
        with default_settings() if entropy else transient_settings(named):
            found = {secret.secret_value for line in text.splitlines() for secret in scan_line(line) if secret.secret_value}
        for value in sorted(found, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return text

    return redact


def leaks(secret: str, output: str, run: int = 16) -> bool:
    """Whether `run` characters in a row from the secret's last two thirds (past any vendor prefix) remain."""
    tail = secret[len(secret) // 3 :]
    return any(tail[start : start + run] in output for start in range(max(1, len(tail) - run + 1)))


def caught(redact: Redactor, shapes: tuple[Shape, ...]) -> tuple[int, list[str]]:
    missed = []
    for shape in shapes:
        output = redact(shape.text)
        if any(leaks(secret, output) for secret in shape.secrets):
            missed.append(shape.name)
    return len(shapes) - len(missed), missed


def kept(redact: Redactor, text: str) -> tuple[int, int]:
    lines = text.splitlines()
    return sum(1 for line in lines if redact(line) == line), len(lines)


def times_ms(redactors: dict[str, tuple[Redactor, int]], text: str) -> dict[str, float]:
    """Median CPU time of each redactor on `text` (the machine's other work does not count), its runs taken
    in turn with the others' so that cache and frequency effects fall on all alike."""
    samples: dict[str, list[float]] = {name: [] for name in redactors}
    for index in range(max(repeat for _, repeat in redactors.values())):
        for name, (redact, repeat) in redactors.items():
            if index < repeat:
                started = time.process_time()
                redact(text)
                samples[name].append((time.process_time() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--baseline", metavar="GIT_REF", help="also measure zeph's redaction as it was at this commit")
    parser.add_argument("--detect-secrets", action="store_true")
    args = parser.parse_args()

    started = time.process_time()
    redact_secrets("the first call loads and compiles: token sk ey s. a:b")
    first_call = (time.process_time() - started) * 1000
    redactors: dict[str, tuple[Redactor, int]] = {"zeph": (lambda text: redact_secrets(text)[0], args.repeat)}
    if args.baseline:
        redactors = {f"zeph@{args.baseline}": (zeph_at(args.baseline), args.repeat), **redactors}
    if args.detect_secrets:
        try:
            redactors["detect-secrets"] = (detect_secrets_redactor(entropy=True), max(1, args.repeat // 10))
            redactors["d-s named only"] = (detect_secrets_redactor(entropy=False), max(1, args.repeat // 10))
        except ImportError:
            print("detect-secrets is not installed; leaving it out")
    width = max(len(name) for name in redactors) + 2

    print(f"secret shapes caught (of {len(UNSEEN_SHAPES)} new kinds, {len(HELD_OUT_SHAPES)} held out) and look-alike lines kept")
    for name, (redact, _) in redactors.items():
        new, missed_new = caught(redact, UNSEEN_SHAPES)
        held, missed_held = caught(redact, HELD_OUT_SHAPES)
        kept_counts = [kept(redact, text) for text in LOOK_ALIKE_SETS.values()]
        kept_text = ", ".join(f"{k}/{n}" for k, n in kept_counts)
        print(f"  {name:{width}} new {new:2}/{len(UNSEEN_SHAPES)}  held out {held:2}/{len(HELD_OUT_SHAPES)}  look-alikes kept {kept_text}")
        if name == "zeph":
            print(f"  {'':{width}} missed: {', '.join(missed_new + missed_held) or 'none'}")
    print(f"  (look-alike sets: {', '.join(LOOK_ALIKE_SETS)})")
    by_kind: dict[str, list[Shape]] = {}
    for shape in UNSEEN_SHAPES:
        by_kind.setdefault(shape.kind, []).append(shape)
    print("  new shapes by kind: " + ", ".join(
        f"{kind} " + " → ".join(f"{caught(redact, tuple(shapes))[0]}" for redact, _ in redactors.values()) + f"/{len(shapes)}"
        for kind, shapes in by_kind.items()
    ) + f"  ({' → '.join(redactors)})")

    print(f"\nCPU time per output (median of --repeat; zeph's first call, loading the rules: {first_call:.0f} ms)")
    for label, text in texts(random.Random(13)).items():
        medians = times_ms(redactors, text)
        cells = [
            f"{name}: {medians[name]:7.2f} ms, {redact(text).count(REDACTED):2} redacted" for name, (redact, _) in redactors.items()
        ]
        print(f"  {label:22} {len(text):6,} chars  " + "  | ".join(cells))


if __name__ == "__main__":
    main()
