"""A labelled recall set: facts a developer tells an agent, and queries that should bring each back.

Invariant: data only. Every query names the key of the one fact it should
recall, or None for a query unrelated to every fact (it should recall nothing
from these sessions). Queries are phrased differently from their facts —
questions, paraphrases, keyword fragments, identifiers — so the set measures
recall, not string matching. benchmarks/recall.py mixes the facts into
sessions of distractor messages (benchmarks/data/dev_chat.py).
"""

from __future__ import annotations

# key -> what the user said, once, in some earlier session.
FACTS: dict[str, str] = {
    "dev_port": "The dev server for the dashboard runs on port 8473, not 3000: Grafana already has 3000 on my machine.",
    "staging_db": "Our staging database lives at /srv/data/orchid/staging.sqlite3, never point the tests at it.",
    "python_pin": "We're pinned to Python 3.11 for the billing service because the PDF library breaks on 3.12.",
    "formatter": "I prefer ruff format over black, with a line length of 110.",
    "itest": "Run the integration tests with `make itest`; plain pytest skips them because they need Docker.",
    "branch_names": "Branch names must look like feat/JIRA-123-short-slug, CI rejects anything else.",
    "no_friday": "We decided not to deploy on Fridays any more after the outage in March.",
    "auth_owner": "Priya Raman owns the auth module; ask her before touching the token refresh logic.",
    "queue_choice": "We picked RabbitMQ over Kafka for the job queue: the volume is tiny and ops already knows it.",
    "timezone": "All timestamps are stored in UTC and rendered in Europe/Berlin time in the admin UI.",
    "sandbox_key": "The payments sandbox key is read from ACME_PAY_SANDBOX_KEY in the environment, never from the config file.",
    "log_level": "In production we keep the log level at WARNING, DEBUG fills the disk within minutes.",
    "migrations": "Database migrations are done with Alembic, autogenerate is off and we write every migration by hand.",
    "editor": "I use Neovim with the LazyVim setup, so please don't suggest VS Code extensions.",
    "cache_ttl": "The product catalogue cache TTL is 900 seconds because marketing wants price changes visible within 15 minutes.",
    "retries": "HTTP calls to the shipping partner retry 4 times with exponential backoff starting at 250 ms.",
    "frontend": "The new admin frontend is written in Svelte; the old one stays on Angular until Q3.",
    "licence": "The SDK is released under the Apache-2.0 licence, the server stays proprietary.",
    "upload_cap": "Uploads are capped at 25 MB by nginx's client_max_body_size.",
    "feature_flag": "The new checkout flow is behind the feature flag checkout_v2_enabled.",
    "ci_runner": "CI runs on GitHub Actions, and the self-hosted runner with the GPU is labelled gpu-runner-01.",
    "reviews": "Every pull request needs two approvals, one of them from someone on the platform team.",
    "protobuf": "Shared protobuf definitions live in libs/proto and are generated into gen/ at build time.",
    "coverage": "We agreed on a coverage floor of 85 percent for the core package.",
    "docker_base": "Our Docker images build from python:3.11-slim-bookworm to stay under 200 MB.",
    "paging": "On-call pages go to the PagerDuty service orchid-backend, and Slack alerts go to #orchid-alerts.",
    "codename": "The internal codename for the mobile app rewrite is Kestrel.",
    "indentation": "Use tabs in the Go services and four spaces everywhere else.",
    "backups": "Postgres backups run nightly at 02:30 UTC and we keep them for 35 days.",
    "rate_limit": "The public API is rate limited to 600 requests per minute per token.",
    "sentry": "Errors are reported to Sentry; the DSN comes from the SENTRY_DSN environment variable.",
    "commits": "Commit messages follow Conventional Commits, for example fix(api): handle an empty cart.",
}

# (query, the key of the fact it should recall, or None: unrelated, should recall nothing)
QUERIES: list[tuple[str, str | None]] = [
    ("which port does the dashboard dev server use?", "dev_port"),
    ("8473", "dev_port"),
    ("where is the staging database file?", "staging_db"),
    ("staging.sqlite3", "staging_db"),
    ("why can't billing move to Python 3.12?", "python_pin"),
    ("code formatter and line length", "formatter"),
    ("how do I run the integration tests?", "itest"),
    ("make itest", "itest"),
    ("what should a branch name look like?", "branch_names"),
    ("is it fine to ship a release at the end of the week?", "no_friday"),
    ("friday deploy", "no_friday"),
    ("who should I talk to before changing token refresh?", "auth_owner"),
    ("Priya", "auth_owner"),
    ("why did we choose RabbitMQ for background jobs?", "queue_choice"),
    ("message broker decision Kafka", "queue_choice"),
    ("what timezone does the admin UI display?", "timezone"),
    ("ACME_PAY_SANDBOX_KEY", "sandbox_key"),
    ("where does the payments sandbox key come from?", "sandbox_key"),
    ("production log level", "log_level"),
    ("how are database migrations written here?", "migrations"),
    ("which editor do I use?", "editor"),
    ("catalogue cache expiry time", "cache_ttl"),
    ("how often does the shipping partner client retry?", "retries"),
    ("what framework is the new admin frontend built with?", "frontend"),
    ("what license is the SDK under?", "licence"),
    ("maximum upload size", "upload_cap"),
    ("checkout_v2_enabled", "feature_flag"),
    ("which flag guards the new checkout?", "feature_flag"),
    ("self-hosted GPU runner label", "ci_runner"),
    ("how many approvals does a pull request need?", "reviews"),
    ("where do the shared protobuf files live?", "protobuf"),
    ("libs/proto", "protobuf"),
    ("minimum test coverage we agreed on", "coverage"),
    ("base image for our docker builds", "docker_base"),
    ("where do on-call alerts go?", "paging"),
    ("what is the codename of the mobile rewrite?", "codename"),
    ("Kestrel", "codename"),
    ("tabs or spaces in Go code", "indentation"),
    ("when do the database backups run?", "backups"),
    ("public API rate limit per token", "rate_limit"),
    ("where are exceptions reported?", "sentry"),
    ("commit message format", "commits"),
    ("Go indentation tabs spaces", "indentation"),
    ("nightly postgres backup schedule", "backups"),
    ("python version for billing", "python_pin"),
    ("sentry error reporting setup", "sentry"),
    ("who owns auth module", "auth_owner"),
    # unrelated to every fact
    ("write a haiku about autumn leaves", None),
    ("what's the capital of Australia?", None),
    ("how do I bake sourdough bread at home?", None),
    ("recommend a good science fiction novel", None),
    ("translate good morning into Japanese", None),
    ("who won the football world cup in 2018?", None),
    ("tell me a joke about cats", None),
    ("what is the boiling point of water on Everest?", None),
    ("best hiking trails near Lisbon", None),
    ("quantum entanglement", None),
    ("banana bread", None),
    ("explain photosynthesis simply", None),
]

# What the agent answered after each fact (so the fact's session looks like a session).
ACKNOWLEDGEMENTS = (
    "Got it, I'll keep that in mind.",
    "Noted.",
    "Understood, thanks for telling me.",
    "OK, I'll remember that for later.",
)
