"""Secret redaction for text that tools hand to the model, and for the model's own tool-call arguments.

Invariant: `redact_secrets` is pure and idempotent and runs in time linear in
its input. It replaces only literal secrets with `[REDACTED]`, in three passes:
the table of shapes in `token_rules.TOKEN_RULES` (vendor keys and tokens,
private-key blocks, JWTs, webhook URLs, .pgpass and .netrc lines, Basic
credentials, connection-string keys, passwords and signatures in URLs,
`mysql -p…`), then the literal value of a secret-named setting
(`assignments`), then gitleaks' published rules (`gitleaks_rules`: 217 vendor
shapes, and a generic key — a value with a digit and more than 3.5 bits of
entropy a character beside access/auth/credential/key/secret/token).
References, code and placeholders stay readable, and so do look-alikes such as
git SHAs, UUIDs, base64 data and digests.

Why gitleaks' rules: they are maintained — each a vendor's documented prefix
and length with an entropy floor, keywords and allowlists tuned on real
repositories. Of 32 registry, cloud, e-commerce, .pgpass, .netrc and webhook
shapes, redaction without them caught 6 and they caught 11 more (9 more of 31
held-out shapes written after every rule here). Their patterns are Go regexps,
which google-re2 runs unchanged and in linear time (Python's `re` rejects 26
of the 221 and would backtrack on others).

Why the table stays, and runs first: gitleaks lacks .pgpass and .netrc lines,
Discord, Zapier and other `/hooks/…` webhook URLs (and cuts Teams' current
ones short), URL passwords and `sig=` signatures, `mysql -p`, Basic and Bearer
headers outside a `curl` command, Docker's `auth`, Azure `AccountKey`, and
Docker Hub, NuGet, Google OAuth, Square OAuth, Stripe webhook and Braintree
tokens; and its vendor rules want a quote, a space or `;` after a token, so
they miss one followed by `&`, `,`, `)` or `<` (in a URL's query, a list,
markup), which the table's rows for the same vendors catch.

detect-secrets was measured too and left out: with its entropy plugins it
flags the look-alikes (3 of 39 references and placeholders kept, 0 of 32 SHAs
and UUIDs) and 5,176 words of 30,000 characters of prose, in a third of a
second of CPU (zeph: 3 ms); without them its named plugins catch 4 of the 32
shapes (benchmarks/redaction.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .assignments import is_secret_name, redact_assignments
from .gitleaks_rules import redact_rule_set
from .token_rules import TOKEN_RULES, SecretRule, redact_tokens
from .values import REDACTED

__all__ = ["REDACTED", "TOKEN_RULES", "SecretRule", "is_secret_name", "redact_arguments", "redact_secrets"]


def redact_secrets(text: str) -> tuple[str, int]:
    """`text` with every literal secret replaced by `[REDACTED]`, and how many were."""
    text, tokens = redact_tokens(text)
    text, assigned = redact_assignments(text)
    text, found = redact_rule_set(text, REDACTED)
    return text, tokens + assigned + found


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
