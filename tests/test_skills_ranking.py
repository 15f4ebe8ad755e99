"""Scoring skills against a message: keyword boosts, the thresholds, and the real embedder on a
few clear cases of the labelled set (tests/data/skills_set.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.features.memory.embedders.embedded import EmbeddedEmbedder
from zeph_cli.features.skills.model import Skill, SkillMatch
from zeph_cli.features.skills.ranking import NAME_BOOST, TRIGGER_BOOST, SkillVectors, keyword_hit, pick, score_skills
from tests.data.skills_set import SKILLS


def skill(name: str, description: str = "d", triggers: tuple[str, ...] = (), flags: tuple[str, ...] = ()) -> Skill:
    return Skill(name, description, triggers, (), "body", Path("/x") / name, "user", flags)


@pytest.fixture(scope="module")
def embedder() -> EmbeddedEmbedder:
    return EmbeddedEmbedder()


@pytest.fixture(scope="module")
def labelled() -> list[Skill]:
    return [skill(name, description, tuple(triggers)) for name, (description, triggers, _body) in SKILLS.items()]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("please DEPLOY now", (NAME_BOOST, "name")),
        ("apply the sql migrations", (NAME_BOOST, "name")),  # '-' in a name matches a space
        ("time for a release", (TRIGGER_BOOST, "trigger 'release'")),
        ("two releases today", (TRIGGER_BOOST, "trigger 'release'")),  # a plural
        ("a schema change is due", (TRIGGER_BOOST, "trigger 'schema change'")),
        ("redeployment plans", None),  # whole words only
        ("shipping fees", None),
    ],
)
def test_keyword_hits(message, expected):
    deploy = skill("deploy", triggers=("release", "ship"))
    migrations = skill("sql-migrations", triggers=("schema change",))
    hit = keyword_hit(deploy, message) or keyword_hit(migrations, message)
    assert hit == expected


def test_pick_keeps_the_best_above_both_floors_and_never_a_flagged_skill():
    scored = [SkillMatch(skill("evil", flags=("you are now",)), 0.95, "name"), SkillMatch(skill("a"), 0.9, "name"),
              SkillMatch(skill("b"), 0.6, "similar"), SkillMatch(skill("c"), 0.5, "similar"),
              SkillMatch(skill("d"), 0.2, "similar")]
    assert [m.skill.name for m in pick(scored, limit=5, min_score=0.25)] == ["a", "b"]  # c < 0.6 × 0.9
    assert [m.skill.name for m in pick(scored, limit=1, min_score=0.25)] == ["a"]
    assert pick(scored, limit=5, min_score=0.95) == ()
    assert pick(scored, limit=0, min_score=0.0) == ()


def test_keywords_only_without_similarity():
    scored = score_skills([skill("deploy"), skill("lint")], "deploy it", None)
    assert [(m.skill.name, m.score, m.reason) for m in scored] == [("deploy", NAME_BOOST, "name"), ("lint", 0.0, "similar")]


def test_similarity_wins_when_higher_than_the_keyword_boost():
    scored = score_skills([skill("deploy")], "deploy", {"deploy": 0.97})
    assert (scored[0].score, scored[0].reason) == (0.97, "similar")


def test_clear_cases_with_the_real_embedder(embedder, labelled):
    vectors = SkillVectors()
    for message, expected in [("the container keeps restarting, can you check the Dockerfile", "docker"),
                              ("look over my diff and tell me what's wrong with it", "code-review")]:
        scored = score_skills(labelled, message, vectors.similarity(embedder, labelled, message))
        assert pick(scored, limit=5, min_score=0.25)[0].skill.name == expected, scored[:3]
    for message in ["hello there", "thanks, that's great"]:
        scored = score_skills(labelled, message, vectors.similarity(embedder, labelled, message))
        assert pick(scored, limit=5, min_score=0.25) == (), scored[:3]


def test_skill_vectors_are_cached_by_model_and_text(embedder, labelled):
    vectors = SkillVectors()
    vectors.similarity(embedder, labelled, "one")
    vectors.similarity(embedder, labelled, "two")
    assert vectors.embedded == len(labelled)
    edited = [skill(labelled[0].name, "Something else entirely now."), *labelled[1:]]
    vectors.similarity(embedder, edited, "three")
    assert vectors.embedded == len(labelled) + 1
