"""The environment a command the model chose runs with: the user's, less what looks like a secret.

Invariant: pure. A variable is withheld when its name holds KEY, SECRET, TOKEN, PASSWORD, PASSWD or
CREDENTIAL (any case: OPENAI_API_KEY, GITHUB_TOKEN, PGPASSWORD, AWS_SECRET_ACCESS_KEY) or is one of
`secret_names` (the configured providers' api_key_env, whatever they are called), unless a pattern of
`pass_env` (`[tools.sandbox] pass_env`, shell-style: "NPM_TOKEN", "CI_*") names it. Everything else is
passed as it is, so builds, tests and git see the same PATH, HOME, locale, toolchain and virtualenv
variables as the user's own shell. A command that mentions a withheld variable gets a note naming it
and the setting that passes it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

SECRET_NAME_PARTS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def passed(name: str, pass_env: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in pass_env)


def command_environment(
    env: Mapping[str, str], *, pass_env: Iterable[str] = (), secret_names: Iterable[str] = ()
) -> tuple[dict[str, str], tuple[str, ...]]:
    """`env` without the variables that look like secrets (see the module's invariant), and their names, sorted."""
    patterns, named = tuple(pass_env), {n for n in secret_names if n}
    withheld = {n for n in env if (looks_secret(n) or n in named) and not passed(n, patterns)}
    return {name: value for name, value in env.items() if name not in withheld}, tuple(sorted(withheld))


def withheld_note(command: str, withheld: Iterable[str]) -> str:
    """A line for the tool result when `command` mentions a withheld variable ("" when it does not)."""
    mentioned = [n for n in withheld if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", command)]
    if not mentioned:
        return ""
    names = ", ".join(mentioned)
    listed = ", ".join(f'"{n}"' for n in mentioned)
    return (f"[zeph: {names} {'is' if len(mentioned) == 1 else 'are'} not passed to commands (it looks like a secret); "
            f"to pass {'it' if len(mentioned) == 1 else 'them'}, the user sets [tools.sandbox] pass_env = [{listed}]]")
