"""gitleaks' published rules, run over every text redaction sees: vendor tokens found by their shape, and
generic keys found as a random-looking value beside a secret-ish name.

Invariant: the rules are the package's own copy of gitleaks' default configuration (`data/gitleaks.toml`,
MIT, see `data/README.md`), read once on first use and never fetched. Their patterns are Go regexps, that
is RE2 syntax, so google-re2 compiles every one unchanged and every scan is linear in its input whatever
the text (Python's backtracking `re` would need 26 of them rewritten and guarantees no bound). A text is
scanned only by the rules one of whose keywords it contains — one RE2 set pass over the text finds them —
and a rule's pattern is compiled the first time one of its keywords turns up.

A finding follows gitleaks: the secret is the rule's `secretGroup`, else the first non-empty group, else
the whole match; it is dropped when its Shannon entropy is at or below the rule's `entropy`, when a
`generic-*` secret has no digit, or when an allowlist applies, the rule's or the global one (regexes on
the secret, the match or the line; stopwords; AND or OR). Allowlists that need a path or a commit cannot
apply to a tool's output, and the rules scoped to a file path (`path = …`) are left out (`SKIPPED`).
Stricter than gitleaks, which asks only that the *file* contain a keyword: the match itself must contain
one of its rule's keywords (else one mention of `sourcegraph` would make every git SHA a token), and a
generic secret shaped like a hash or a UUID is left alone (beside `cache_key` or `etag`, it is one).
Overlapping findings become one. Pure apart from reading the data file.
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import re2  # type: ignore[import-untyped]  # google-re2: RE2 is the syntax of the rules and bounds every scan

DATA_FILE = Path(__file__).with_name("data") / "gitleaks.toml"

# Rules whose groups mark parts of a token rather than the token (the JWT header's field names, the
# repeated UUID parts of a Teams URL): the whole match is the secret.
WHOLE_MATCH_RULES = frozenset({"jwt-base64", "microsoft-teams-webhook"})

_TARGETS = ("secret", "match", "line")
# A generic value that is a digest or an identifier, not a key: hex of a hash's length, or a UUID.
_HASH_OR_UUID = re2.compile(
    rb"(?i)(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{56}|[0-9a-f]{64}|[0-9a-f]{96}|[0-9a-f]{128}"
    rb"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)


@dataclass(frozen=True)
class Allowlist:
    """When a finding is not a secret: any (or, with `needs_all`, every) of its conditions holds."""

    target: str  # what `regexes` are matched against: "secret", "match" or "line"
    regexes: tuple[str, ...]
    stopwords: tuple[bytes, ...]  # lower-case; one inside the secret allows it
    needs_all: bool
    needs_path_or_commit: bool  # names paths or commits: a condition no tool output can meet

    def allows(self, secret: bytes, match: bytes, line: bytes) -> bool:
        if self.needs_all and self.needs_path_or_commit:
            return False
        checks = []
        if self.regexes:
            target = {"secret": secret, "match": match, "line": line}[self.target]
            checks.append(any(_compiled(pattern).search(target) for pattern in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.needs_all else any(checks)


@dataclass(frozen=True)
class Rule:
    """One gitleaks rule as loaded: its pattern (RE2 syntax) and the checks a finding must pass."""

    id: str
    pattern: str
    keywords: tuple[bytes, ...]  # lower-case
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    skipped: tuple[tuple[str, str], ...]  # (rule id, why it is left out)
    global_allowlist: Allowlist
    keywords: tuple[bytes, ...]
    keyword_rules: tuple[tuple[int, ...], ...]  # keyword index -> indices of the rules naming it
    keyword_set: re2.Set


def load(path: Path = DATA_FILE) -> RuleSet:
    """The rules of a gitleaks configuration file, with those a tool's output cannot use left out."""
    with path.open("rb") as file:
        config = tomllib.load(file)
    rules: list[Rule] = []
    skipped: list[tuple[str, str]] = []
    for raw in config.get("rules", []):
        rule_id = raw["id"]
        if "path" in raw:
            skipped.append((rule_id, "scoped to files named like " + raw["path"]))
            continue
        if "regex" not in raw:
            skipped.append((rule_id, "matches file names only"))
            continue
        rules.append(
            Rule(
                id=rule_id,
                pattern=raw["regex"],
                keywords=tuple(keyword.lower().encode() for keyword in raw.get("keywords", ())),
                entropy=float(raw.get("entropy", 0.0)),
                secret_group=int(raw.get("secretGroup", 0)),
                allowlists=tuple(_allowlist(entry) for entry in raw.get("allowlists", ())),
            )
        )
    # Generic rules last, so a vendor rule names the secret when both find it.
    rules.sort(key=lambda rule: rule.id.startswith("generic"))
    keywords = sorted({keyword for rule in rules for keyword in rule.keywords})
    index = {keyword: position for position, keyword in enumerate(keywords)}
    keyword_rules: list[list[int]] = [[] for _ in keywords]
    for position, rule in enumerate(rules):
        for keyword in rule.keywords:
            keyword_rules[index[keyword]].append(position)
    return RuleSet(
        rules=tuple(rules),
        skipped=tuple(skipped),
        global_allowlist=_allowlist(config.get("allowlist", {})),
        keywords=tuple(keywords),
        keyword_rules=tuple(tuple(positions) for positions in keyword_rules),
        keyword_set=_keyword_set(keywords),
    )


def _allowlist(raw: dict) -> Allowlist:
    target = raw.get("regexTarget", "secret")
    if target not in _TARGETS:
        raise ValueError(f"unknown regexTarget {target!r} in {DATA_FILE.name}")
    return Allowlist(
        target=target,
        regexes=tuple(raw.get("regexes", ())),
        stopwords=tuple(word.lower().encode() for word in raw.get("stopwords", ())),
        needs_all=raw.get("condition", "OR").upper() == "AND",
        needs_path_or_commit=bool(raw.get("paths") or raw.get("commits")),
    )


def _keyword_set(keywords: Iterable[bytes]) -> re2.Set:
    options = re2.Options()
    options.max_mem = 64 << 20  # the set's DFA for ~240 literals fits well within this
    keyword_set = re2.Set.SearchSet(options)
    for keyword in keywords:
        keyword_set.Add(re2.escape(keyword))
    keyword_set.Compile()
    return keyword_set


@cache
def rule_set() -> RuleSet:
    """The package's gitleaks rules, loaded on first use (two threads at once may both load them: harmless)."""
    return load()


@cache
def _compiled(pattern: str):  # -> re2._Regexp
    return re2.compile(pattern.encode())


def find_secrets(text: str) -> list[tuple[int, int]]:
    """The spans (character offsets, sorted, non-overlapping) of the secrets the rules find in `text`."""
    rules = rule_set()
    data = text.encode("utf-8", "surrogatepass")
    matched = rules.keyword_set.Match(data.lower())
    if not matched:
        return []
    wanted = sorted({position for keyword in matched for position in rules.keyword_rules[keyword]})
    spans: list[tuple[int, int]] = []
    for position in wanted:
        rule = rules.rules[position]
        spans.extend(_rule_findings(rule, data, rules.global_allowlist))
    return _char_spans(text, data, _merged(spans))


def _rule_findings(rule: Rule, data: bytes, global_allowlist: Allowlist) -> Iterable[tuple[int, int]]:
    for match in _compiled(rule.pattern).finditer(data):
        whole = match.group(0)
        lowered = whole.lower()
        if not any(keyword in lowered for keyword in rule.keywords):
            continue
        start, end = _secret_span(rule, match)
        secret = data[start:end]
        if not secret or b"[REDACTED]" in secret:
            continue
        if rule.entropy and shannon_entropy(secret.decode("utf-8", "replace")) <= rule.entropy:
            continue
        if rule.id.startswith("generic") and (not any(48 <= byte <= 57 for byte in secret) or _HASH_OR_UUID.fullmatch(secret)):
            continue
        line = _line(data, match.start(), match.end())
        if any(allowlist.allows(secret, whole, line) for allowlist in (*rule.allowlists, global_allowlist)):
            continue
        yield start, end


def _secret_span(rule: Rule, match) -> tuple[int, int]:
    if rule.id in WHOLE_MATCH_RULES:
        return match.span(0)
    if rule.secret_group:
        return match.span(rule.secret_group)
    for group in range(1, len(match.groups()) + 1):
        start, end = match.span(group)
        if start >= 0 and end > start:
            return start, end
    return match.span(0)


def _line(data: bytes, start: int, end: int) -> bytes:
    """The whole lines the match spans, as gitleaks' `line` target sees them."""
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    return data[line_start : len(data) if line_end < 0 else line_end]


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`, as gitleaks computes it."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(count / size * math.log2(count / size) for count in Counter(value).values())


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _char_spans(text: str, data: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte offsets into `data` (the UTF-8 of `text`) as offsets into `text`."""
    if len(data) == len(text):  # ASCII: one byte a character
        return spans

    def chars(offset: int) -> int:
        while True:  # an offset inside a character's bytes counts from its first byte
            try:
                return len(data[:offset].decode("utf-8", "surrogatepass"))
            except UnicodeDecodeError as error:
                offset = error.start

    return [(chars(start), chars(end)) for start, end in spans]


def redact_rule_set(text: str, marker: str) -> tuple[str, int]:
    """`text` with every secret the rules find replaced by `marker`, and how many were."""
    spans = find_secrets(text)
    if not spans:
        return text, 0
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        pieces.append(text[position:start])
        pieces.append(marker)
        position = end
    pieces.append(text[position:])
    return "".join(pieces), len(spans)
