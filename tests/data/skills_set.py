"""A labelled set for calibrating skill matching: realistic skills, messages that should match
one of them, and small talk that must match none.

Used by `benchmarks/skills_ranking.py` (figures per threshold) and, for a few clear cases,
by `tests/test_skills_ranking.py`.
"""

from __future__ import annotations

# name → (description, triggers, body)
SKILLS: dict[str, tuple[str, list[str], str]] = {
    "deploy": (
        "Ship the API service to staging, then production, with the release checklist.",
        ["deploy", "release", "ship"],
        "Run make check, then ./scripts/deploy.sh staging, watch the health endpoint, then production.",
    ),
    "sql-migrations": (
        "Write and apply SQL schema migrations safely with alembic.",
        ["migration", "alembic", "schema change"],
        "Always write a downgrade. Run alembic upgrade head --sql first and read the SQL.",
    ),
    "code-review": (
        "Review a pull request or a diff for bugs, readability and missing tests.",
        ["review", "pull request", "PR"],
        "Read the diff twice. Comment on correctness first, then tests, then naming.",
    ),
    "write-tests": (
        "Write pytest unit tests for new or changed Python code.",
        ["pytest", "unit test", "test coverage"],
        "One behaviour per test; real objects over mocks; name tests after the behaviour.",
    ),
    "docker": (
        "Build, run and debug Docker images and docker compose services.",
        ["docker", "dockerfile", "container", "compose"],
        "Use multi-stage builds; pin base images; check docker compose logs first.",
    ),
    "git-history": (
        "Clean up git history: rebase, squash, fix commit messages, resolve merge conflicts.",
        ["rebase", "squash", "merge conflict", "cherry-pick"],
        "Never rewrite pushed shared branches; use git rebase -i with autosquash.",
    ),
    "changelog": (
        "Update CHANGELOG.md with user-facing changes for the next version.",
        ["changelog", "release notes"],
        "Group entries under Added, Changed, Fixed; link the issue numbers.",
    ),
    "perf-profiling": (
        "Find why Python code is slow: profile with cProfile and py-spy, then optimise the hot path.",
        ["profile", "slow", "performance", "py-spy"],
        "Measure before changing anything; profile the real workload.",
    ),
    "security-audit": (
        "Audit code for security issues: injection, secrets in the repo, unsafe deserialisation.",
        ["security", "vulnerability", "secrets", "CVE"],
        "Grep for eval, pickle.loads, subprocess with shell=True and hard-coded keys.",
    ),
    "api-docs": (
        "Write or update the REST API reference documentation and OpenAPI spec.",
        ["openapi", "api docs", "swagger", "endpoint documentation"],
        "Every endpoint: method, path, parameters, example request and response, errors.",
    ),
    "frontend-css": (
        "Fix layout and styling problems in the web frontend's CSS and Tailwind classes.",
        ["css", "tailwind", "layout", "styling"],
        "Check the flexbox container first; avoid !important.",
    ),
    "incident-response": (
        "Handle a production outage: triage, mitigate, communicate, write the postmortem.",
        ["outage", "incident", "postmortem", "on-call"],
        "Mitigate first, then find the root cause. Post status updates every 30 minutes.",
    ),
}

# (message, the skill it should match)
MATCHING: list[tuple[str, str]] = [
    ("Please deploy the api to staging", "deploy"),
    ("Can we ship version 2.3 to production today?", "deploy"),
    ("I need to add a column to the users table with a migration", "sql-migrations"),
    ("how do I roll back the last alembic revision", "sql-migrations"),
    ("Could you review this pull request for me?", "code-review"),
    ("look over my diff and tell me what's wrong with it", "code-review"),
    ("write pytest tests for the parser module", "write-tests"),
    ("add unit tests covering the new retry logic", "write-tests"),
    ("the container keeps restarting, can you check the Dockerfile", "docker"),
    ("docker compose up fails with a port already in use", "docker"),
    ("squash my last three commits into one", "git-history"),
    ("I have a merge conflict in settings.py after pulling main", "git-history"),
    ("add the new flag to the changelog", "changelog"),
    ("this endpoint is really slow, find out why", "perf-profiling"),
    ("profile the import step, it takes 10 seconds", "perf-profiling"),
    ("check the repo for leaked secrets and other security problems", "security-audit"),
    ("update the openapi spec for the new /orders endpoint", "api-docs"),
    ("the sidebar layout breaks on mobile, fix the css", "frontend-css"),
    ("the site is down, we have an outage, help!", "incident-response"),
    ("write the postmortem for yesterday's incident", "incident-response"),
    # paraphrases: no name or trigger in them, only similarity can match these
    ("put the new build live on the servers", "deploy"),
    ("the database tables need a new index added through our versioned scripts", "sql-migrations"),
    ("combine these commits and tidy up the log before I push", "git-history"),
    ("why does this function take so long to run", "perf-profiling"),
    ("are there any api keys committed by accident?", "security-audit"),
    ("the button is misaligned on the checkout page", "frontend-css"),
    ("production returns 500 errors for every customer right now", "incident-response"),
    ("describe the request and response formats of our REST endpoints", "api-docs"),
]

# Messages that must match no skill.
SMALL_TALK: list[str] = [
    "hello there",
    "hi!",
    "thanks, that's great",
    "how are you today?",
    "good morning",
    "what's the weather like?",
    "tell me a joke",
    "ok",
    "who are you?",
    "never mind, forget it",
    "see you tomorrow",
    "what time is it in Tokyo?",
]
