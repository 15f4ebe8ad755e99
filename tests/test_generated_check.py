"""The checks on a generated session summary or profile, on what small summarizers really wrote: the
embedded model's profile of assistant boilerplate, a profile that echoed its instructions, a summary that
was the session's last reply (a code block), one that copied the user's first message, and good ones."""

from __future__ import annotations

import pytest

from zeph_cli.context.generated_check import (
    Said,
    asks,
    boilerplate,
    check_generated,
    check_stored,
    code_share,
    content_words,
    grounding,
)
from zeph_cli.context.session_memory_blocks import instructions

PACKAGING_USER = [
    "I'm a data engineer and I mostly write Python. How do I package a Python library with pyproject.toml?",
    "What is the difference between setuptools and hatchling?",
    "How do I add a console script entry point?",
    "How do I publish the package to PyPI?",
    "How should I version my releases?",
    "How do I build a wheel locally?",
]
LAST_REPLY = (
    "To build a wheel locally, install the build frontend and run it in the project folder:\n"
    "```bash\npython -m pip install build\npython -m build --wheel\nls dist/\n```"
)
PACKAGING_REPLIES = [
    "Write a pyproject.toml with a [project] table (name, version, dependencies) and a [build-system] table.",
    "Setuptools is the long-standing default; hatchling is the lighter build backend of the Hatch project.",
    "Under [project.scripts], map a command name to a function: mytool = \"mytool.cli:main\".",
    "Build the distributions, then upload them with twine: twine upload dist/*.",
    "Most libraries use semantic versioning: MAJOR.MINOR.PATCH.",
    LAST_REPLY,
]
SAID = Said(PACKAGING_USER, PACKAGING_REPLIES, instructions())

# What the embedded model (SmolLM2-135M) wrote as the profile and the summaries.
BOILERPLATE_PROFILE = (
    "I'm here to help you with whatever your needs are. Whether you have a question about a project, need "
    "some advice or just want to chat, feel free to ask!"
)
ECHOED_PROFILE = "ACK: You maintain a short profile of a user…"
ECHOED_PROFILE_LONG = (
    "ACK: You maintain a short profile of a user for an assistant: stable preferences (language, tone, tools), "
    "work background and long-term focus. Leave out one-off tasks."
)
COPIED_USER_MESSAGE = "I'm a data engineer and I mostly write Python. How do I package a Python library with PyPI?"
QUESTION_PROFILE = "I'm a data engineer and I write Python. How do you package a Python library with PyPI?"
REPEATED_REQUEST = (
    "This is a request for a two-week trip to Japan in April and what cities should I visit? The user wants to "
    "bake bread using a recipe."
)


@pytest.mark.parametrize(
    ("text", "what", "reason"),
    [
        (BOILERPLATE_PROFILE, "profile", "generic assistant text (“I'm here to help”)"),
        (ECHOED_PROFILE, "profile", "repeats its own instructions"),
        (ECHOED_PROFILE_LONG, "profile", "repeats its own instructions"),
        (LAST_REPLY, "summary", "copies a reply of the session"),
        (COPIED_USER_MESSAGE, "summary", "copies a message the user wrote"),
        (QUESTION_PROFILE, "profile", "asks a question (“How do you package a Python library with PyPI?”)"),
        ("```python\nimport requests\nrequests.get(url).json()\n```", "summary", "code, not a summary"),
        ("import requests\nresponse = requests.get(url)\nprint(response.json())", "summary", "code, not a summary"),
        ("The user asked how to build a Python wheel:\n```\npython -m build\n```", "summary", "holds a code block"),
        ("The assistant provided a comprehensive overview of best practices and useful resources for beginners.",
         "summary", "not about what the user wrote: 0 of its 8 content words"),
        ("Thanks for the conversation, it was a pleasure.", "summary", "says nothing about the user"),
        ("", "summary", "empty"),
    ],
)
def test_what_small_summarizers_wrote_is_discarded_with_a_reason(text, what, reason):
    verdict = check_generated(text, SAID, what=what)
    assert not verdict.ok
    assert verdict.reason.startswith(reason), verdict.reason


def test_a_question_copied_from_another_session_is_discarded_too():
    travel = Said(["I'm planning a two-week trip to Japan in April. What cities should I visit?"], [], instructions())
    verdict = check_generated(REPEATED_REQUEST, travel)
    assert not verdict.ok and verdict.reason.startswith("asks a question"), verdict.reason


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("The user is packaging a Python library with pyproject.toml: comparing setuptools and hatchling, adding a "
         "console script entry point, building a wheel and publishing to PyPI; how to version releases is still open.",
         "summary"),
        ("Packaging a Python library: pyproject.toml, hatchling rather than setuptools, a console script, wheels "
         "built locally and published to PyPI. Open: a versioning scheme.", "summary"),
        ("- Data engineer who mostly writes Python\n- Packages and publishes Python libraries (pyproject.toml, PyPI)",
         "profile"),
        ("Data engineer; writes Python; publishes libraries to PyPI with hatchling.", "profile"),
        ("The user builds a wheel with `python -m build` and publishes it to PyPI.", "summary"),
    ],
)
def test_summaries_and_profiles_about_the_user_are_kept(text, what):
    assert check_generated(text, SAID, what=what).ok, check_generated(text, SAID, what=what).reason


def test_a_summary_in_the_users_language_is_kept():
    said = Said(["Je prépare un voyage de deux semaines au Japon en avril. Quelles villes visiter ?",
                 "Le JR pass vaut-il le coup ?", "Que manger à Osaka ?"], [], instructions())
    text = "Voyage de deux semaines au Japon en avril : villes à visiter, le JR pass, que manger à Osaka."
    assert check_generated(text, said).ok, check_generated(text, said).reason


def test_words_count_by_their_stem_and_words_about_users_and_sessions_do_not_count():
    assert content_words("The user asked about publishing packages and the session discussed it") == [
        "publishing", "packages"]
    assert grounding("publishing packages", ["How do I publish the package?"]) == (2, 2)
    assert grounding("baking sourdough", ["How do I publish the package?"]) == (0, 2)


def test_the_parts_name_what_they_found():
    assert boilerplate("Sure, feel free to ask.") == "feel free to"
    assert boilerplate("The user prefers short answers.") == ""
    assert asks("Works in Rust. How do I fix the borrow checker?") == "How do I fix the borrow checker?"
    assert asks("Still open: whether the cache should expire?") == ""  # an open point, asked of no one
    assert code_share("```bash\npython -m build\n```") == 1.0 and code_share("The user ran pip install build.") == 0.0
    assert code_share("x = 1\ny = 2\nThe user set two variables in the shell today.") < 0.5


def test_what_was_stored_before_the_checks_is_checked_on_the_text_alone():
    assert not check_stored(BOILERPLATE_PROFILE, what="profile", instructions=instructions()).ok
    assert not check_stored(ECHOED_PROFILE, what="profile", instructions=instructions()).ok
    assert not check_stored(LAST_REPLY, instructions=instructions()).ok
    assert check_stored("- Data engineer who mostly writes Python", what="profile", instructions=instructions()).ok


def test_a_profile_update_may_keep_the_current_profile_word_for_word():
    current = "- Prefers short answers in German\n- Reviews Rust code at work"
    said = Said(["How do I fix a lifetime error?"], ["Add a lifetime parameter."], instructions(), known=[current])
    assert check_generated(current, said, what="profile").ok
    assert not check_generated(current, Said(["How do I fix a lifetime error?"], [], instructions()), what="profile").ok
