"""Redaction speed on tool outputs of 30,000 characters: a clean log, one with secrets, look-alikes only.

Invariant: prints timings and counts, asserts nothing about time. The texts come from a seeded random
source, so runs compare. `--detect-secrets` also times detect-secrets' line scanner on the same texts
(when it is importable), the comparison behind the choice in zeph_cli/tools/redact/__init__.py.

    python benchmarks/redaction.py [--repeat 50] [--detect-secrets]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.texts import prose
from zeph_cli.tools.redact import redact_secrets

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
    look_alikes: list[str] = []
    while sum(len(line) + 1 for line in look_alikes) < SIZE:
        look_alikes.append(look_alike_line(rng))
    return {"prose": clean, "prose + 7 secrets": "\n".join(lines), "SHAs, UUIDs, base64": "\n".join(look_alikes)}


def time_ms(function, text: str, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function(text)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def detect_secrets_scanner():
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    def scan(text: str) -> int:
        with default_settings():
            return sum(len(list(scan_line(line))) for line in text.splitlines())

    return scan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--detect-secrets", action="store_true")
    args = parser.parse_args()
    scanner = None
    if args.detect_secrets:
        try:
            scanner = detect_secrets_scanner()
        except ImportError:
            print("detect-secrets is not installed; timing zeph only")
    for label, text in texts(random.Random(13)).items():
        _, count = redact_secrets(text)
        line = f"{label:22} {len(text):6,} chars  zeph: {time_ms(redact_secrets, text, args.repeat):6.2f} ms, {count} redacted"
        if scanner is not None:
            line += f"  | detect-secrets: {time_ms(scanner, text, max(1, args.repeat // 10)):7.1f} ms, {scanner(text)} findings"
        print(line)


if __name__ == "__main__":
    main()
