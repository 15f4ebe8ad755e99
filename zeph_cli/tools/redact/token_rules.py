"""The table of secret shapes found by their form alone: vendor keys, tokens, credentials in context.

Invariant: every rule is a named row of data — a pattern whose `secret` group is
replaced by the marker, and a check the matched secret must pass — and every
pattern starts at a fixed prefix that may not continue a word (or at a fixed
context such as `hooks.slack.com/`, `Authorization: Basic` or `machine`, or at
the start of a line: a .pgpass line), with no repetition able to match the same
text in more than a bounded number of ways, so a pass is linear in its input.
Exact lengths and closing boundaries keep look-alikes out: a git SHA, a UUID or
a base64 blob has none of these prefixes, `AIza` inside a word is not a key, a
bare `mysql -p` has no value to hide, and grep's `file:line:text` is no .pgpass
line. The rows are the shapes gitleaks' rules (`gitleaks_rules`, run after
this table) lack, and the vendors whose tokens those rules miss in the forms
tools print (see the package docstring). Pure, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

from .values import REDACTED, is_literal_secret

__all__ = ["TOKEN_RULES", "SecretRule", "redact_tokens"]


@dataclass(frozen=True)
class SecretRule:
    """One shape of secret. The pattern runs only on text containing one of `keywords` (lower-case)."""

    name: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    is_secret: Callable[[str], bool]


def _always(secret: str) -> bool:
    return True


def _has_digit(secret: str) -> bool:
    """Random keys contain digits; hyphenated words such as `sk-learn-…` do not."""
    return any(c.isdigit() for c in secret)


def _looks_random(secret: str) -> bool:
    """A digit, or both cases of letter: rules out `xxxx…` placeholders and plain words."""
    return _has_digit(secret) or (any(c.isupper() for c in secret) and any(c.islower() for c in secret))


def _has_letter_and_digit(secret: str) -> bool:
    return _has_digit(secret) and any(c.isalpha() for c in secret)


def _unredacted_block(body: str) -> bool:
    return body.strip() not in ("", REDACTED)


def _unquoted_literal(value: str) -> bool:
    """A shell word, quotes and all, that holds a literal value (not `$VAR`, not empty)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return is_literal_secret(value[1:-1], quoted=True, name="")
    return is_literal_secret(value, quoted=False, name="")


def _user_and_password(encoded: str) -> bool:
    """Base64 of `user:password`, as in HTTP Basic credentials and Docker's `auth`."""
    try:
        return b":" in base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return False


def _random_after(prefix_length: int) -> Callable[[str], bool]:
    """`_looks_random` on what follows a fixed prefix that itself holds digits (`ya29.`, `oy2`)."""
    return lambda secret: _looks_random(secret[prefix_length:])


def _any_literal(value: str) -> bool:
    """A password as a file stores it: anything but a placeholder, a reference or the marker."""
    return is_literal_secret(value, quoted=True, name="")


def _netrc_password(value: str) -> bool:
    """A `.netrc` password: quotes dropped, four characters or more (`password z` is an example)."""
    value = value.strip("\"'`")
    return len(value) >= 4 and _any_literal(value)


_WORD_START = r"(?<![A-Za-z0-9_-])"  # a prefix that does not continue a word or a token
_WORD_END = r"(?![A-Za-z0-9_-])"

TOKEN_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        "private-key-block",
        ("private key",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"(?P<secret>[\s\S]*?)"
            r"(?:-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
        _unredacted_block,
    ),
    SecretRule(
        "openai-or-anthropic-key",
        ("sk-",),
        re.compile(_WORD_START + r"(?P<secret>sk-[A-Za-z0-9_-]{20,})"),
        _has_digit,
    ),
    SecretRule(
        "stripe-key",
        ("k_live_", "k_test_"),
        re.compile(_WORD_START + r"(?P<secret>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})"),
        _always,
    ),
    SecretRule(
        "aws-access-key-id",
        ("akia", "asia"),
        re.compile(r"(?<![A-Za-z0-9])(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
        _always,
    ),
    SecretRule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"(?<![A-Za-z0-9_])(?P<secret>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        _always,
    ),
    SecretRule(
        "gitlab-token",
        ("glpat-", "gldt-", "glptt-", "glrt-"),
        re.compile(_WORD_START + r"(?P<secret>gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_.-]{20,})"),
        _looks_random,
    ),
    SecretRule(
        "slack-token",
        ("xox", "xapp-"),
        re.compile(_WORD_START + r"(?P<secret>xox[abeprs]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})"),
        _has_digit,
    ),
    SecretRule(
        "slack-webhook",
        ("hooks.slack.com/",),
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_-]+/[A-Za-z0-9_/-]{8,})"),
        _has_digit,
    ),
    SecretRule(
        "google-api-key",
        ("aiza",),
        re.compile(_WORD_START + r"(?P<secret>AIza[A-Za-z0-9_-]{35})" + _WORD_END),
        _looks_random,
    ),
    SecretRule(
        "hugging-face-token",
        ("hf_",),
        re.compile(_WORD_START + r"(?P<secret>hf_[A-Za-z0-9]{34})" + _WORD_END),
        _looks_random,
    ),
    SecretRule(
        "npm-token",
        ("npm_",),
        re.compile(_WORD_START + r"(?P<secret>npm_[A-Za-z0-9]{36})" + _WORD_END),
        _looks_random,
    ),
    SecretRule(
        "sendgrid-key",
        ("sg.",),
        re.compile(r"(?<![A-Za-z0-9_.-])(?P<secret>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})" + _WORD_END),
        _always,
    ),
    SecretRule(
        "json-web-token",
        ("eyj",),
        re.compile(_WORD_START + r"(?P<secret>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)"),
        _always,
    ),
    SecretRule(
        "bearer-token",
        ("bearer",),
        re.compile(_WORD_START + r"(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)"),
        _has_digit,
    ),
    SecretRule(
        "basic-auth-header",
        ("basic",),
        re.compile(
            r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})"
        ),
        _user_and_password,
    ),
    SecretRule(
        "docker-config-auth",
        ('"auth"',),
        re.compile(r"\"auth\"[ \t]*:[ \t]*\"(?P<secret>[A-Za-z0-9+/]{4,}={0,2})\""),
        _user_and_password,
    ),
    SecretRule(
        "azure-account-key",
        ("accountkey=", "sharedaccesskey="),
        re.compile(r"(?<![A-Za-z0-9_])(?i:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
        _always,
    ),
    SecretRule(
        "mysql-password-option",
        ("mysql", "mariadb"),
        # `mysql … -pVALUE` (a bare `-p` asks at the prompt); the scan for `-p`
        # stays within 200 characters of the same command.
        re.compile(
            r"(?<![\w.-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)"
            r"(?=[ \t])[^\n;|&]{0,200}?[ \t]-p(?P<secret>\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"`;|&]+)"
        ),
        _unquoted_literal,
    ),
    SecretRule(
        "docker-hub-token",
        ("dckr_",),
        re.compile(_WORD_START + r"(?P<secret>dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,})"),
        _random_after(9),
    ),
    SecretRule(
        "nuget-api-key",
        ("oy2",),
        re.compile(_WORD_START + r"(?P<secret>oy2[a-z0-9]{43})" + _WORD_END),
        _random_after(3),
    ),
    SecretRule(
        "google-oauth-access-token",
        ("ya29.",),
        re.compile(_WORD_START + r"(?P<secret>ya29\.[A-Za-z0-9_-]{20,})"),
        _random_after(5),
    ),
    SecretRule(
        "google-oauth-client-secret",
        ("gocspx-",),
        re.compile(_WORD_START + r"(?P<secret>GOCSPX-[A-Za-z0-9_-]{28})" + _WORD_END),
        _random_after(7),
    ),
    SecretRule(
        "square-oauth-secret",
        ("sq0csp-",),
        re.compile(_WORD_START + r"(?P<secret>sq0csp-[A-Za-z0-9_-]{43})" + _WORD_END),
        _random_after(7),
    ),
    SecretRule(
        "stripe-webhook-secret",
        ("whsec_",),
        re.compile(_WORD_START + r"(?P<secret>whsec_[A-Za-z0-9+/=]{24,})"),
        _random_after(6),
    ),
    SecretRule(
        "braintree-access-token",
        ("access_token$",),
        re.compile(r"(?<![A-Za-z0-9_])(?P<secret>access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32})"),
        _always,
    ),
    SecretRule(
        "url-signature",
        ("sig=",),
        # Azure SAS URLs, and the Logic Apps / Power Automate URLs behind Teams workflows: `…&sig=…`.
        re.compile(r"[?&](?i:sig)=(?P<secret>[A-Za-z0-9%+/=_-]{16,})"),
        _looks_random,
    ),
    SecretRule(
        "discord-webhook",
        ("discord",),
        re.compile(r"discord(?:app)?\.com/api/webhooks/(?P<secret>[0-9]{17,20}/[A-Za-z0-9_-]{60,})"),
        _always,
    ),
    SecretRule(
        "teams-webhook",
        ("webhookb2/", "office.com/webhook/", "office365.com/webhook/"),
        re.compile(
            r"(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)/"
            r"(?P<secret>[A-Za-z0-9-]+@[A-Za-z0-9-]+/IncomingWebhook/[A-Za-z0-9_/-]{32,})"
        ),
        _always,
    ),
    SecretRule(
        "zapier-webhook",
        ("hooks.zapier.com/",),
        re.compile(r"hooks\.zapier\.com/hooks/catch/(?P<secret>[0-9]+/[A-Za-z0-9]+)"),
        _has_digit,
    ),
    SecretRule(
        "webhook-path",
        ("hook/", "hooks/"),
        # Any service's webhook URL whose path after `/hooks/`, `/hook/` or `/webhooks/` (and one word such
        # as `incoming/`) is a random token: Mattermost, Rocket.Chat, Webex, Feishu… A numeric hook id or
        # a word (`/webhooks/stripe`) is not one.
        re.compile(
            r"(?<=/)(?:web)?hooks?/(?:[A-Za-z]+/)?"
            r"(?P<secret>[A-Za-z0-9_-]{20,}(?:/[A-Za-z0-9_-]{8,})*)"
        ),
        _has_letter_and_digit,
    ),
    SecretRule(
        "pgpass-line",
        (":",),
        # `host:port:database:user:password`, a whole line of ~/.pgpass; the host has a letter, a dot,
        # is `*` or a socket directory, so times (`12:30:45:…`) and grep's `file:line:text` are not one.
        re.compile(
            r"^[ \t]*(?:\*|(?=[0-9_-]*[A-Za-z.])[A-Za-z0-9_.-]+|/[^\s:]*)"
            r":(?:\*|[0-9]{1,5}):(?:[\w.$*@+-]|\\.)+:(?:[\w.$*@+-]|\\.)+:(?P<secret>[^\n]*[^\s])[ \t]*$",
            re.MULTILINE,
        ),
        _any_literal,
    ),
    SecretRule(
        "netrc-password",
        ("password",),
        # `machine HOST [login U] [account A] password P` (or `default …`), on one line or several.
        re.compile(
            r"(?<![\w.-])(?:machine[ \t\n]+[^\s]+|default)(?:\s+(?:login|account|port)\s+[^\s]+){0,3}"
            r"\s+password[ \t]+(?P<secret>[^\s]+)"
        ),
        _netrc_password,
    ),
    SecretRule(
        "url-password",
        ("://",),
        re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:(?P<secret>[^\s/@]+)@"),
        lambda value: is_literal_secret(value, quoted=False, name=""),
    ),
)


def redact_tokens(text: str) -> tuple[str, int]:
    """`text` with the secret of every rule's match replaced by the marker, and how many were."""
    total = 0
    lowered = text.lower()  # redaction only removes text, so a keyword absent here stays absent
    for rule in TOKEN_RULES:
        if any(keyword in lowered for keyword in rule.keywords):
            text, count = _redact_matches(rule, text)
            total += count
    return text, total


def _redact_matches(rule: SecretRule, text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        secret = match.group("secret")
        if not rule.is_secret(secret):
            return match.group(0)
        count += 1
        start, end = match.span("secret")
        offset = match.start()
        return match.group(0)[: start - offset] + _keep_edges(secret, REDACTED) + match.group(0)[end - offset :]

    return rule.pattern.sub(replace, text), count


def _keep_edges(secret: str, replacement: str) -> str:
    """The replacement with the secret's leading and trailing whitespace kept (PEM bodies)."""
    stripped = secret.strip()
    if not stripped:
        return replacement
    start = secret.index(stripped)
    return secret[:start] + replacement + secret[start + len(stripped) :]
