"""The redaction marker, and whether a value found after a secret's name is a literal secret.

Invariant: pure string tests, no I/O. A value is a literal secret unless it is
clearly something else: empty, a reference (`$X`, `${X}`, `%X%`, `{{x}}`,
`{x}`), code (calls, subscripts, `os.environ`, `process.env`, dotted names, the
variable's own name), a placeholder (`<…>`, `[…]`, `your_…`, `…_here`, `xxxx`,
`changeme`), `null`/booleans/type names, a number of up to 5 digits, or the
marker itself.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# Values that name no secret: types, literals of other kinds, placeholders.
_NOT_SECRETS = frozenset({
    "none", "null", "nil", "true", "false", "yes", "no", "on", "off", "undefined",
    "str", "string", "bytes", "int", "integer", "number", "bool", "boolean", "any", "object",
    "optional", "secretstr", "required", "changeme", "change_me", "change-me", "changeit",
    "placeholder", "example", "dummy", "todo", "tbd", "redacted", "secret", "password", "token",
})
# `$X`, `${X}`, `$(cmd)`, `%X%`, `{{ x }}`, `{x}` (format strings, f-strings).
_REFERENCE = re.compile(r"^\$|\$[{(]|%[A-Za-z_]\w*%|\{\{|\{[A-Za-z_][\w.]*\}")
_CODE_MARKERS = ("(", ")", "[", "]", "{", "}", "<", ">", "environ", "getenv", "process.env", "import.meta")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_PLACEHOLDER_BODY = re.compile(r"(?:[a-z]{1,4}[-_])?[x*._…-]+")  # xxxx, sk-xxxx, xxx…


def is_literal_secret(value: str, *, quoted: bool, name: str) -> bool:
    """False for values that are clearly no secret: empty, references, code, placeholders."""
    lowered = value.strip().lower()
    if not any(c.isalnum() for c in lowered) or REDACTED.lower() in lowered:
        return False
    if lowered in _NOT_SECRETS or _REFERENCE.search(value):
        return False
    if lowered.startswith("your") or lowered.endswith(("_here", "-here")) or _PLACEHOLDER_BODY.fullmatch(lowered):
        return False
    if (lowered[0], lowered[-1]) in (("<", ">"), ("[", "]")):  # <your-key>, [PAD], </s>
        return False
    if lowered.isdigit() and len(lowered) <= 5:  # counts and limits (`max_token = 4096`)
        return False
    if name and lowered == name.lstrip("-").rsplit(".", 1)[-1].lower():  # `token=token`
        return False
    if quoted:
        return True
    return not any(marker in lowered for marker in _CODE_MARKERS) and not _DOTTED_NAME.fullmatch(value)
