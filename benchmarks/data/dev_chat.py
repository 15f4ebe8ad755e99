"""Realistic developer-chat filler for recall benchmarks: varied user requests and assistant replies.

Invariant: pure functions of the `random.Random` they are given (a seed gives the
same texts); texts are assembled from templates and a coding vocabulary, so
nearly every message is distinct, mentions files, functions, errors and numbers
the way real sessions do, and FTS5 and an embedder see ordinary text. Nothing
here uses the identifiers of benchmarks/data/recall_set.py's facts (no port
8473, no Kestrel, no checkout_v2_enabled…), only their kind of subject.
"""

from __future__ import annotations

import random

MODULES = (
    "billing invoices users accounts search notifications reports exports scheduler importer "
    "webhooks inventory orders payments sessions permissions audit metrics storage uploads "
    "mailer templates pricing catalog shipping analytics gateway worker cli settings"
).split()
FILES = "models views service handlers utils client tasks schema api routes forms serializers store cache".split()
VERBS = "load save parse validate render sync fetch build resolve merge compute export import refresh cancel".split()
NOUNS = (
    "invoice user order payment report token session row batch event record config template price "
    "item account job request response page query snapshot webhook file entry"
).split()
ERRORS = (
    "KeyError: 'account_id'",
    "TypeError: 'NoneType' object is not subscriptable",
    "sqlite3.IntegrityError: UNIQUE constraint failed",
    "TimeoutError after 30 seconds",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "AssertionError: expected 200, got 500",
    "ValueError: invalid literal for int() with base 10",
    "json.decoder.JSONDecodeError: Expecting value",
    "PermissionError: [Errno 13] Permission denied",
    "RecursionError: maximum recursion depth exceeded",
    "AttributeError: 'dict' object has no attribute 'items_list'",
    "ImportError: cannot import name 'helpers'",
    "a 502 from the upstream",
    "a deadlock in the worker pool",
    "OSError: [Errno 28] No space left on device",
)
CONDITIONS = (
    "the cache is cold", "two workers run at once", "the input file is empty", "the user has no email",
    "the locale is set to de_DE", "it runs in CI", "the list has more than a thousand entries",
    "the network is slow", "a migration is pending", "the date is at the end of the month",
    "the request has no body", "the token expired", "the feature is disabled", "the queue is full",
)
GOALS = (
    "returns early on empty input", "does not hit the database twice", "handles unicode names",
    "logs the request id", "is easier to test", "streams instead of loading everything",
    "retries on a timeout", "keeps the old behaviour behind a flag", "reports progress",
    "validates its arguments", "is typed properly", "closes the connection it opens",
)
OBSERVATIONS = (
    "builds the query string by hand", "swallows the exception and returns None",
    "reads the whole file into memory", "opens a new connection per call", "sorts the rows twice",
    "compares naive and aware datetimes", "mutates its default argument", "never awaits the task",
    "uses the wrong column for the join", "caches the result forever",
)
CHANGES = (
    "a parametrized query", "an explicit error with the offending value", "a generator",
    "one shared connection", "a single sort", "aware datetimes in UTC", "a None default",
    "an awaited task with a timeout", "the right foreign key", "a cache with a bounded size",
)
TOPICS = (
    "the release checklist", "the onboarding doc", "the flaky test in CI", "the slow dashboard page",
    "the memory leak in the worker", "the new pricing rules", "the CSV export", "the login redirect",
    "the search ranking", "the nightly job", "the API pagination", "the email templates",
)
PEOPLE = "Tom Lena Marcus Aiko Jonas Sofia Omar Clara Ben Yusuf Mei Nora".split()
TOOLS = "pytest mypy ruff coverage docker make npm alembic celery uvicorn gunicorn pip".split()


def _path(rng: random.Random) -> str:
    return f"src/{rng.choice(MODULES)}/{rng.choice(FILES)}.py"


def _func(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def _test(rng: random.Random) -> str:
    return f"tests/{rng.choice(MODULES)}/test_{rng.choice(FILES)}.py::test_{_func(rng)}"


def user_text(rng: random.Random) -> str:
    m, p, f, e, c = rng.choice(MODULES), _path(rng), _func(rng), rng.choice(ERRORS), rng.choice(CONDITIONS)
    text = rng.choice((
        f"{_test(rng)} fails with {e} when {c}. Can you look?",
        f"Can you refactor {f} in {p} so that it {rng.choice(GOALS)}?",
        f"Why does `{rng.choice(TOOLS)}` print {e} on the {m} package?",
        f"Add a {rng.choice(NOUNS)} parameter to {f} and update its callers in {m}.",
        f"Rename {f} to {_func(rng)} everywhere in the {m} module.",
        f"The {m} endpoint takes {rng.randint(2, 40) * 100} ms on {rng.choice(TOPICS)}, what is slow?",
        f"{rng.choice(PEOPLE)} says {rng.choice(TOPICS)} is broken again since yesterday's merge.",
        f"Write a test for {f} covering the case where {c}.",
        f"Let's look at {rng.choice(TOPICS)} next. Start with {p}.",
        (f"The mock server in the {m} tests listens on port {rng.choice((5000, 5432, 6379, 8000, 8080, 9000, 9200))}, "
         f"is that why {e} shows up?"),
        f"Bump the {m} timeout to {rng.randint(5, 120)} seconds and see if {e} goes away.",
        f"Is {f} still used anywhere, or can we delete it?",
    ))
    if rng.random() < 0.3:
        text += " " + rng.choice((
            f"It started after we upgraded {rng.choice(TOOLS)}.",
            f"{rng.choice(PEOPLE)} reviewed the last change to it.",
            "No rush, after lunch is fine.",
            f"Only {rng.randint(2, 30)} of {rng.randint(31, 400)} runs fail.",
        ))
    return text


def assistant_text(rng: random.Random) -> str:
    p, f, o, ch = _path(rng), _func(rng), rng.choice(OBSERVATIONS), rng.choice(CHANGES)
    parts = [rng.choice((
        f"I read {p}: {f} {o}. I changed it to use {ch}.",
        f"The error comes from {f} in {p}, which {o} when {rng.choice(CONDITIONS)}.",
        f"Done: {f} now {rng.choice(GOALS)}, and {_test(rng)} covers it.",
        f"I searched the {rng.choice(MODULES)} package: {f} has {rng.randint(1, 9)} callers, all in {p}.",
        f"Here is what I found about {rng.choice(TOPICS)}: {f} {o}.",
    ))]
    if rng.random() < 0.6:
        parts.append(rng.choice((
            f"`{rng.choice(TOOLS)}` passes now ({rng.randint(20, 900)} tests, {rng.randint(2, 90)} s).",
            f"I left {_func(rng)} alone, it is unrelated.",
            f"One thing to check: {rng.choice(CONDITIONS)} still logs a warning.",
            f"The diff touches {rng.randint(1, 7)} files and {rng.randint(5, 300)} lines.",
            f"Shall I also update {_path(rng)}?",
        )))
    if rng.random() < 0.25:
        a, b = _func(rng), rng.choice(NOUNS)
        parts.append(f"```python\ndef {a}({b}):\n    return {rng.choice(VERBS)}({b}, strict=True)\n```")
    return " ".join(parts)


def session_title(rng: random.Random) -> str:
    return rng.choice((f"Fix {rng.choice(TOPICS)}", f"{rng.choice(MODULES)} refactor", f"Debug {_func(rng)}"))
