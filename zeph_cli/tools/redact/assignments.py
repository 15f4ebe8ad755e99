"""Redaction of the literal value of a secret-named setting (`DB_PASSWORD=…`, `"api_key": "…"`).

Invariant: pure, idempotent and linear in its input; only the value is replaced,
the name and operator stay, and a value that is a reference, code or a
placeholder (see `values.is_literal_secret`) stays readable.

Which setting names count as secret (case-insensitive, on the last dotted part,
camelCase read as snake_case): `PASSWORD`, `PASSWD`, `PASSPHRASE`, `SECRET`,
`TOKEN`, `API_KEY`, `ACCESS_KEY`, `SECRET_KEY`, `PRIVATE_KEY` and a few more,
alone or as a suffix (`DB_PASSWORD`, `client_secret`, `apiKey`), and the
client variables `PGPASSWORD` and `MYSQL_PWD`. A bare `_KEY` suffix counts only
in an UPPER_CASE name (`STRIPE_KEY=…`), because lower-case `sort_key`/`cache_key`
are ordinary code. Names ending in `_ID`, `_PATH`, `_FILE`, `_COUNT`… are not
secrets (`AWS_ACCESS_KEY_ID`, `SSH_KEY_PATH`), nor is the shell's `PWD`.
"""

from __future__ import annotations

import re

from .values import REDACTED, is_literal_secret

# A name that may be a secret's (`is_secret_name` decides) followed by an
# assignment operator. The value is matched separately, and only after the
# name is judged, so a line that assigns no secret is never consumed.
_ASSIGNMENT = re.compile(
    r"""
    (?<![A-Za-z0-9_.$@-])
    (?P<quote>["']?)
    (?P<name>-{0,2}(?=[A-Za-z_])[A-Za-z0-9_.-]*?(?i:passw(?:or)?d|passphrase|secret|token|key|pwd))
    (?P=quote)
    (?: (?P<tight>=)(?=[^\s=>])                                   # NAME=value (env, shell)
      | [ \t]*:[ \t]*[A-Za-z_][\w.]*(?:\[[^\]\n]{0,80}\])?[ \t]*=(?!=)[ \t]*  # name: Type = value
      | [ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*                        # NAME = value, NAME: value
    )
    """,
    re.VERBOSE,
)
_QUOTED_VALUE = re.compile(r"""[rRbBfFuU]{0,2}(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>(?:[^'\\\n]|\\.)*)')""")
_WORD_VALUE = re.compile(r"""[^\s'"`,;]+""")
_WORDS_VALUE = re.compile(r"""[^\s'"`,;]+(?:[ \t]+[^\s'"`,;#]+)*""")

_SECRET_WORDS = (
    "PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN",
    "API_KEY", "APIKEY", "ACCESS_KEY", "SECRET_KEY", "PRIVATE_KEY", "SIGNING_KEY",
    "ENCRYPTION_KEY", "MASTER_KEY", "AUTH_KEY",
)
# Whole names of client variables that hold a password without a separating `_`.
_SECRET_VARIABLES = frozenset({"PGPASSWORD", "MYSQL_PWD"})
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def redact_assignments(text: str) -> tuple[str, int]:
    """`text` with the literal value of every secret-named setting replaced, and how many were."""
    pieces: list[str] = []
    count = 0
    position = 0  # text before this index is already in `pieces`
    search_from = 0
    while match := _ASSIGNMENT.search(text, search_from):
        search_from = match.end()
        name = match.group("name")
        if not is_secret_name(name):
            continue
        value_span = _value_span(text, match.end(), tight=match.group("tight") is not None)
        if value_span is None:
            continue
        start, end, quoted = value_span
        search_from = max(search_from, end)
        if is_literal_secret(text[start:end], quoted=quoted, name=name):
            pieces.append(text[position:start])
            pieces.append(REDACTED)
            position = end
            count += 1
    pieces.append(text[position:])
    return "".join(pieces), count


def _value_span(text: str, at: int, *, tight: bool) -> tuple[int, int, bool] | None:
    """Where the value after an operator lies: (start, end, quoted), inner text only when quoted."""
    quoted = _QUOTED_VALUE.match(text, at)
    if quoted is not None:
        group = "dq" if quoted.group("dq") is not None else "sq"
        return quoted.start(group), quoted.end(group), True
    bare = (_WORD_VALUE if tight else _WORDS_VALUE).match(text, at)
    if bare is None:
        return None
    return bare.start(), bare.end(), False


def is_secret_name(raw: str) -> bool:
    """Whether a setting or variable of this name holds a secret (see the module docstring)."""
    name = raw.lstrip("-").rsplit(".", 1)[-1]
    snake = _CAMEL_BOUNDARY.sub("_", name).replace("-", "_").upper()
    if snake in _SECRET_VARIABLES or any(snake == word or snake.endswith("_" + word) for word in _SECRET_WORDS):
        return True
    return name.isupper() and snake.endswith("_KEY")
