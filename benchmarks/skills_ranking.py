"""Skill matching figures: how the threshold (`[skills] min_score`) trades hits for false matches.

The labelled set of tests/data/skills_set.py (realistic skills, messages that
should match one of them, small talk that must match none) is matched by the
product's own `SkillService` (real SKILL.md files in a temporary folder, the
offline embedder `[memory] embedder` names — minilm by default, another with
ZEPH_MEMORY_EMBEDDER=wordllama — keyword boosts), once per threshold: hits (the
expected skill among the matched), wrong extras (other skills matched beside
or instead of it) and small-talk false positives (small talk that matched
anything). Then the same without the embedder (keywords only), and the match
latency: the first match (skill vectors computed) and warm matches (p50 / p95).

Prints figures; asserts nothing. Run from the repository root with the project
installed: `python benchmarks/skills_ranking.py [--thresholds 0.2,0.25,0.3,0.35,0.4] [--show]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.data.skills_set import MATCHING, SKILLS, SMALL_TALK  # noqa: E402
from zeph_cli.config import SkillsConfig  # noqa: E402
from zeph_cli.features.memory.embedders.select import shared_offline, EMBEDDED_MODELS  # noqa: E402
from zeph_cli.features.skills.ranking import SkillVectors  # noqa: E402
from zeph_cli.features.skills.service import SkillService  # noqa: E402


def write_skills(root: Path) -> None:
    for name, (description, triggers, body) in SKILLS.items():
        folder = root / name
        folder.mkdir(parents=True)
        front = yaml.safe_dump({"name": name, "description": description, "triggers": triggers}, sort_keys=False)
        (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}\n")


def service(root: Path, min_score: float, embedder) -> SkillService:
    async def ready():
        return embedder

    config = SkillsConfig(min_score=min_score)
    return SkillService(config, project_root=None, user_dir=root, base_dir=None, embedder=ready if embedder else None)


async def figures(root: Path, min_score: float, embedder, show: bool) -> str:
    skills = service(root, min_score, embedder)
    hits = extras = false_positives = 0
    for message, expected in MATCHING:
        names = [m.skill.name for m in (await skills.match(message)).matched]
        hits += expected in names
        extras += sum(1 for n in names if n != expected)
        if show:
            print(f"  {'ok ' if expected in names else 'MISS'} {message!r} -> {names} (want {expected})")
    for message in SMALL_TALK:
        matched = (await skills.match(message)).matched
        false_positives += bool(matched)
        if show and matched:
            print(f"  FP   {message!r} -> {[(m.skill.name, round(m.score, 2)) for m in matched]}")
    for warning in skills.take_warnings():
        print(f"  warning: {warning}")
    return (f"hits {hits}/{len(MATCHING)}  wrong extras {extras}  "
            f"small-talk false positives {false_positives}/{len(SMALL_TALK)}")


def small_talk_scores(skills: SkillService, embedder) -> str:
    """How close small talk comes to the skills: its best similarity to any skill, per message."""
    vectors = SkillVectors()
    listed = skills.skills()
    best = sorted(max(vectors.similarity(embedder, listed, message).values()) for message in SMALL_TALK)
    return f"small talk's best similarity to a skill: max {best[-1]:.2f}, median {statistics.median(best):.2f}"


async def latency(root: Path, embedder) -> str:
    skills = service(root, 0.25, embedder)
    start = time.perf_counter()
    await skills.match("warm up the catalog and the skill vectors")
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(5):
        for message, _expected in MATCHING:
            start = time.perf_counter()
            await skills.match(message)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[int(len(times) * 0.95) - 1]
    return f"first match {first:.1f} ms (catalog read, {len(SKILLS)} skills embedded); warm p50 {statistics.median(times):.2f} ms, p95 {p95:.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thresholds", default="0.15,0.2,0.25,0.3,0.35,0.4,0.5")
    parser.add_argument("--show", action="store_true", help="print every message's outcome")
    args = parser.parse_args()
    embedder = shared_offline(EMBEDDED_MODELS[os.environ.get("ZEPH_MEMORY_EMBEDDER", "minilm")])
    start = time.perf_counter()
    embedder.load()
    print(f"embedder {embedder.model} loaded in {(time.perf_counter() - start) * 1000:.0f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_skills(root)
        print(f"{len(SKILLS)} skills, {len(MATCHING)} matching messages, {len(SMALL_TALK)} small-talk messages")
        for threshold in [float(t) for t in args.thresholds.split(",")]:
            print(f"min_score {threshold:.2f}: {await figures(root, threshold, embedder, args.show)}")
        print(small_talk_scores(service(root, 0.25, embedder), embedder))
        print(f"keywords only: {await figures(root, 0.25, None, args.show)}")
        print(await latency(root, embedder))


if __name__ == "__main__":
    asyncio.run(main())
