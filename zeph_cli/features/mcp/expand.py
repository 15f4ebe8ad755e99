"""`${VAR}` references in a server's `env`, `headers` and `url`, expanded when it starts.

Invariant: a value is expanded from the environment given, never from the
config; an unset variable is an `UnsetVariable` naming the server, the key and
the variable — never any value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class UnsetVariable(Exception):
    """A `${VAR}` reference to a variable that is not set."""


def expand_table(server_id: str, table_name: str, table: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """`table` with every `${VAR}` replaced by its value in `env`."""
    return {key: _expand(server_id, f"{table_name}.{key}", value, env) for key, value in table.items()}


def expand_value(server_id: str, key: str, value: str, env: Mapping[str, str]) -> str:
    """One setting (such as `url`) with every `${VAR}` replaced by its value in `env`."""
    return _expand(server_id, key, value, env)


def _expand(server_id: str, where: str, value: str, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise UnsetVariable(f"MCP server {server_id}: {where} refers to ${{{name}}}, which is not set")
        return env[name]

    return _REFERENCE.sub(replace, value)
