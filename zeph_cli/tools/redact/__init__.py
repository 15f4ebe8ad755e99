"""Secret redaction for text that tools hand to the model, and for the model's own tool-call arguments.

Invariant: `redact_secrets` is pure and idempotent and runs in time linear in
its input. It replaces only literal secrets with `[REDACTED]`: the shapes in
`token_rules.TOKEN_RULES` (vendor keys and tokens, private-key blocks, JWTs,
webhook URLs, Basic credentials, connection-string keys, passwords in URLs and
on `mysql -p…`), then the literal value of a secret-named setting
(`assignments`); references, code and placeholders stay readable, and so do
look-alikes such as git SHAs, UUIDs and base64 data.

Why a hand-written table rather than a maintained rule set: gitleaks' rules
are not on PyPI as data (the packages that carry gitleaks ship either its Go
binary, 22 MB run as a process per output, or config tooling without rules),
and its Go regexes need translating. `detect-secrets` installs, but its named
plugins miss 8 of the 14 shapes above (`xapp-`, `AIza`, `hf_`, `npm_`,
`mysql -p`, `PGPASSWORD`, `Authorization: Basic`, Docker `auth`) and cut JWTs
at the signature, while its entropy plugins flag every git SHA, base64 blob and
even plain words. So the rules here are data — one named row each, with a test
per row — and exact lengths and prefixes keep the look-alikes out
(benchmarks/redaction.py times a 30,000-character output).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .assignments import is_secret_name, redact_assignments
from .token_rules import TOKEN_RULES, SecretRule, redact_tokens
from .values import REDACTED

__all__ = ["REDACTED", "TOKEN_RULES", "SecretRule", "is_secret_name", "redact_arguments", "redact_secrets"]


def redact_secrets(text: str) -> tuple[str, int]:
    """`text` with every literal secret replaced by `[REDACTED]`, and how many were."""
    text, tokens = redact_tokens(text)
    text, assigned = redact_assignments(text)
    return text, tokens + assigned


def redact_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of tool-call arguments with every string in them, at any depth, redacted."""
    return {key: _redact_value(value) for key, value in arguments.items()}


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_secrets(value)[0]
    if isinstance(value, Mapping):
        return redact_arguments(value)
    if isinstance(value, (list, tuple)):
        return [_redact_value(item) for item in value]
    return value
