"""How much a line of a conversation or of a summary tells a later turn: what compaction keeps first and
cuts last, and which lines of a summary are facts.

Invariant: pure and deterministic. A unit's score depends only on its own text and on how many sources
(messages, or a summary's lines) of its collection carry its words, never on where it stands: what the
user asked to keep, codes, key = value pairs, paths, identifiers, numbers and words rare in the collection
score most. Text said again keeps one copy: `strip_repeated` takes runs of SHINGLE_WORDS words an earlier
source said out of the later ones (a fact glued to boilerplate is freed from it), `choose` keeps a unit said
twice once. Choosing within a token budget keeps units in their original order, and the room above a
summary slot's floor goes to the units the caller lets in first (a summary's informative lines; in the
extractive fallback, the units that state facts). A fact line of an earlier summary is never dropped by
`carry_facts` unless the new summary still states it: its key with a value, or its codes, paths and
numbers — a key named without a value is not enough. Every pattern is linear in the text's length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# Codes a later turn cannot guess: FACT-AB12, ERR_42, PROJ-7, ABC123, commit hashes.
# Every pattern starts only where a token starts (a lookbehind, not \b, which also matches inside
# "a-b-c" or "a.b.c") and has no nested ambiguity: one search is linear in the text's length, so a
# 15,000-character token (a JWT, a base64 blob) costs what its length does, not its square.
_CODE = re.compile(
    r"(?<![\w-])(?=[A-Z0-9_-]*\d)(?=[A-Z0-9_-]*[A-Z])[A-Z0-9][A-Z0-9_-]{3,}\b"
    r"|(?<![\w-])[A-Z]{2,}[-_][A-Z0-9][A-Z0-9_-]*\b|\b[0-9a-f]{7,40}\b"
)
_NAME = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")  # snake_case, camelCase
_PATH = re.compile(
    r"(?<![\w.-])(?:[\w.-]+/)+[\w.-]+"
    r"|(?<![\w.-])[\w-]+\.(?:py|js|ts|tsx|rs|go|md|toml|json|ya?ml|txt|c|h|cpp|java|sh|sql|cfg|ini)\b"
)
_NUMBER = re.compile(r"\d")
# key = value (any value), or key: value when the value carries a digit (port: 5433); groups: key, value
_ASSIGNED = re.compile(r"(?<![\w=.\-/])(?=[\w.\-/]*[A-Za-z_])([\w.\-/]+)\s?=\s?([^\s=,;]+)")
_LABELLED = re.compile(r"(?<![\w.\-])([A-Za-z][\w.\-]*):\s?(?=[\w.\-/]*\d)([\w.\-/]+)")
_DECISION = re.compile(
    r"\b(decid\w*|chose|choose|agreed|must|never|always|use|using|fix\w*|error\w*|fail\w*|todo|next|plan\w*|because)\b",
    re.IGNORECASE,
)
_MEMO = re.compile(r"\b(remember|don'?t forget|do not forget|important|note that|keep in mind)\b", re.IGNORECASE)
_LABEL = re.compile(r"^(?:user|assistant|system|context|tool(?: [\w.-]+)?):\s+")  # an extractive line's speaker
_BULLET = re.compile(r"^\s*(?:[-*•]\s+|\d{1,2}[.)]\s+)")  # list markers and section numbers carry nothing
_WORD = re.compile(r"[a-z0-9](?:[\w\-]*[a-z0-9])?")
_HEADING = re.compile(r"^\s*#{1,6}\s")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each either else even ever every few for
    from further get gets got had has have having he her here hers him his how i if in into is it its itself
    just let like made make many may me might more most much must my no nor not now of off on once one only or
    other our ours out over own please same she should so some such than that the their theirs them then there
    these they this those through to too under until up upon us very want was we well were what when where
    which while who whom why will with would yes yet you your yours ok okay thanks thank sure really still
    already also again said says say tell told know think see look looks going go went come came way thing
    things something anything everything nothing lot bit good great nice fine right new old first last next
    time times day days""".split()
)

SHINGLE_WORDS = 8  # a run of this many words found in an earlier source is text said again
RARE_SHARE = 0.05  # a word in at most this share of the sources (at least 1 source) is rare in the collection
RARE_POINTS = 3  # rare words add a point each, up to this many


def body(text: str) -> str:
    """The text without its speaker label (`user: `) and list marker."""
    return _LABEL.sub("", _BULLET.sub("", text.strip(), count=1), count=1)


def split_label(text: str) -> tuple[str, str]:
    """(speaker label with its space, the rest): ("user: ", "turn 3.")."""
    label = _LABEL.match(text)
    return (label.group(), text[label.end():]) if label else ("", text)


def normalized(text: str) -> str:
    """What two units that say the same thing have in common: the body, lower-cased, single-spaced."""
    return " ".join(body(text).lower().split()).strip(" .")


def words(text: str) -> set[str]:
    """The content words of `text`: no stop words, no bare numbers, nothing shorter than 3 characters
    unless it carries a digit."""
    return {
        w for w in _WORD.findall(body(text).lower())
        if w not in STOPWORDS and not w.isdigit() and (len(w) >= 3 or any(c.isdigit() for c in w))
    }


def pairs(text: str) -> list[tuple[str, str]]:
    """The (key, value) pairs `text` states: key = value, and key: value when the value carries a digit
    (`db port: 5433` → ("port", "5433")); values without their closing punctuation."""
    text = body(text)
    found = [(k, v.rstrip(_EDGE_PUNCTUATION)) for k, v in _ASSIGNED.findall(text)]
    found += [(k, v.rstrip(_EDGE_PUNCTUATION)) for k, v in _LABELLED.findall(text)]
    return [(k, v) for k, v in found if v]


def _key_value(text: str) -> bool:
    return bool(_ASSIGNED.search(text) or _LABELLED.search(text))


def base_score(text: str) -> int:
    """What a unit carries on its own: what the user asked to keep most, then codes, key = value pairs,
    paths, identifiers, numbers and decisions."""
    text = body(text)
    return (
        5 * bool(_CODE.search(text))
        + 6 * bool(_MEMO.search(text))
        + 3 * _key_value(text)
        + 2 * bool(_PATH.search(text))
        + 2 * bool(_NAME.search(text))
        + bool(_NUMBER.search(text))
        + bool(_DECISION.search(text))
    )


def is_fact(text: str) -> bool:
    """A line a later summary must not lose: it states a code, a key and its value, a path, an identifier,
    a number (list numbering aside) or something the user asked to keep."""
    text = body(text)
    return _key_value(text) or any(p.search(text) for p in (_CODE, _PATH, _NAME, _NUMBER, _MEMO))


def is_heading(line: str) -> bool:
    return bool(_HEADING.match(line))


_TOKEN = re.compile(r"\S+")
_EDGE_PUNCTUATION = ".,;:!?\"'`()[]{}…"


def strip_repeated(units: Sequence[tuple[str, int]]) -> list[str]:
    """Each (text, source) unit's text without what an earlier source of the collection said already: runs
    of SHINGLE_WORDS words or more found there ("" when nothing else is left; a speaker label is kept with
    what is). The first copy of repeated text stays whole."""
    first_source: dict[tuple[str, ...], int] = {}
    tokens_of = []
    for text, source in units:
        label = _LABEL.match(text)
        tokens = [(m.start(), m.end(), m.group().lower().strip(_EDGE_PUNCTUATION))
                  for m in _TOKEN.finditer(text, label.end() if label else 0)]
        tokens_of.append(tokens)
        for n in range(len(tokens) - SHINGLE_WORDS + 1):
            first_source.setdefault(tuple(t[2] for t in tokens[n:n + SHINGLE_WORDS]), source)
    out = []
    for (text, source), tokens in zip(units, tokens_of):
        said = [False] * len(tokens)
        for n in range(len(tokens) - SHINGLE_WORDS + 1):
            if first_source[tuple(t[2] for t in tokens[n:n + SHINGLE_WORDS])] != source:
                said[n:n + SHINGLE_WORDS] = [True] * SHINGLE_WORDS
        if not any(said):
            out.append(text)
            continue
        pieces: list[str] = []
        start = end = None
        for (begin, finish, _), repeated in zip(tokens, said):
            if not repeated:
                start, end = (begin if start is None else start), finish
            elif start is not None:
                pieces.append(text[start:end])
                start = None
        if start is not None:
            pieces.append(text[start:end])
        rest = " … ".join(p for p in pieces if p.strip(_EDGE_PUNCTUATION + " "))
        label = _LABEL.match(text)
        out.append(f"{label.group() if label else ''}{rest}" if rest else "")
    return out


def _shingle_words(text: str) -> list[str]:
    return [w for w in (t.lower().strip(_EDGE_PUNCTUATION) for t in body(text).split()) if w]


def shingles(texts: Sequence[str]) -> set[tuple[str, ...]]:
    """Every run of SHINGLE_WORDS words in `texts`: what `copied_share` compares a line against."""
    found: set[tuple[str, ...]] = set()
    for text in texts:
        said = _shingle_words(text)
        found.update(tuple(said[n:n + SHINGLE_WORDS]) for n in range(len(said) - SHINGLE_WORDS + 1))
    return found


def copied_share(text: str, said: set[tuple[str, ...]]) -> float:
    """The share of `text`'s words that sit in a run of SHINGLE_WORDS words found in `said` (`shingles`):
    1.0 for a line copied whole, 0.0 for one said in its own words or shorter than a run."""
    found = _shingle_words(text)
    if len(found) < SHINGLE_WORDS or not said:
        return 0.0
    covered = [False] * len(found)
    for n in range(len(found) - SHINGLE_WORDS + 1):
        if tuple(found[n:n + SHINGLE_WORDS]) in said:
            covered[n:n + SHINGLE_WORDS] = [True] * SHINGLE_WORDS
    return sum(covered) / len(found)


def scores(units: Sequence[tuple[str, int]]) -> list[int]:
    """A score per (text, source) unit within its collection: `base_score`, plus a point per word rare in
    the collection (found in at most RARE_SHARE of its sources), up to RARE_POINTS."""
    word_sources: dict[str, set[int]] = {}
    unit_words = []
    for text, source in units:
        found = words(text)
        unit_words.append(found)
        for word in found:
            word_sources.setdefault(word, set()).add(source)
    total = len({source for _, source in units})
    rare_limit = max(1, int(total * RARE_SHARE))
    return [
        base_score(text) + min(sum(1 for w in found if len(word_sources[w]) <= rare_limit), RARE_POINTS)
        for (text, _), found in zip(units, unit_words)
    ]


def choose(
    units: Sequence[tuple[str, int, int]],
    budget: int,
    cost: Callable[[str], int],
    *,
    fill: bool = False,
    facts: Callable[[str], bool] | None = None,
    others_budget: int | None = None,
) -> list[int]:
    """Indices of the (text, source, bonus) units to keep within `budget` tokens (`cost` per unit), in their
    original order: the most informative first, one copy of a unit said more than once; among equals the
    shortest, then the newest. Units that score nothing come only with `fill`, newest first. With `facts`
    and `others_budget`, the units `facts` accepts come first, and the others share `others_budget` with
    them (`others_room`)."""
    points = scores([(text, source) for text, source, _ in units])
    seen: set[str] = set()
    ranked = []
    for index, ((text, _, bonus), score) in enumerate(zip(units, points)):
        key = normalized(text)
        if not key or key in seen:
            continue
        seen.add(key)
        ranked.append((score + bonus, index, text))
    ranked.sort(key=lambda r: (-r[0], len(r[2]), -r[1]))
    is_fact = facts if facts is not None and others_budget is not None else None  # None: no separate cap
    total_others = others_budget or 0
    if is_fact is not None:
        ranked = [r for r in ranked if is_fact(r[2])] + [r for r in ranked if not is_fact(r[2])]
    chosen: list[int] = []
    used = others = 0
    cap_others = total_others
    for score, index, text in ranked:
        if score <= 0 and not fill:
            continue
        spent = cost(text)
        other = is_fact is not None and not is_fact(text)
        if other and cap_others == total_others:  # the facts are in: the others get what they left
            cap_others = others_room(total_others, used)
        if used + spent > budget or (other and others + spent > cap_others):
            continue
        chosen.append(index)
        used += spent
        others += spent if other else 0
    return sorted(chosen)


def others_room(floor: int, fact_tokens: int) -> int:
    """What the lines that state no fact may take of a summary whose facts take `fact_tokens`: the slot's
    floor shared with the facts, a quarter of it at least (the summary's intent and next step)."""
    return max(floor - fact_tokens, floor // 4)


FACT_LINE_CHARS = 120  # a line that states a fact says it briefly; a longer one is prose that mentions one


def states_fact(text: str) -> bool:
    """A short unit that states what a later turn cannot guess or look up: a code, a key and its value, or
    something the user asked to keep (stricter than `is_fact`: a number, a name or a path alone is not
    enough — the workspace has its paths — and a paragraph that mentions a code is not a fact line)."""
    text = body(text)
    if len(text) > FACT_LINE_CHARS:
        return False
    return _key_value(text) or any(p.search(text) for p in (_CODE, _MEMO))


def _mentions(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w\-.]){re.escape(token)}(?![\w\-])", text, re.IGNORECASE) is not None


def _telling(text: str) -> set[str]:
    """The tokens of `text` a later summary must repeat to state what it says: codes, paths, identifiers and
    words with digits."""
    text = body(text)
    found = {m.group() for p in (_CODE, _PATH, _NAME) for m in p.finditer(text)}
    found |= {w for w in text.split() if _NUMBER.search(w)}
    return {token.strip(_EDGE_PUNCTUATION) for token in found} - {""}


def _states_pair(summary_lines: Sequence[str], key: str, value: str) -> bool:
    """Whether a line of the summary states `key` with `value`, or with another value (a later one)."""
    key = key.lower()
    for line in summary_lines:
        if not _mentions(line, key):
            continue
        if _mentions(line, value) or any(k.lower() == key or k.lower().endswith(("." + key, " " + key))
                                         for k, _ in pairs(line)):
            return True
    return False


def covered(line: str, summary: str, present: set[str] | None = None) -> bool:
    """Whether `summary` (whose content `words` are `present`, when known) still states what the fact `line`
    says: each of its key = value (or key: value) pairs, the key with its value on one line of the summary,
    or the key with a value of its own (a later value supersedes it) — the key alone is not enough; a line
    without pairs needs its codes, paths, identifiers and numbers all in the summary and, with none of
    those, at least half of its content words."""
    found_pairs = pairs(line)
    if found_pairs:
        summary_lines = summary.splitlines()
        return all(_states_pair(summary_lines, key, value) for key, value in found_pairs)
    telling = _telling(line)
    if telling:
        return all(_mentions(summary, token) for token in telling)
    found = words(line)
    present = words(summary) if present is None else present
    return not found or 2 * len(found & present) >= len(found)


CARRIED_HEADER = "Facts from the earlier summary, kept verbatim:"


def carry_facts(earlier: Sequence[str], summary: str, skip: Callable[[str], bool] = lambda line: False) -> str:
    """`summary` followed by every fact line of the `earlier` summaries it no longer states, verbatim and in
    their order (`skip`: lines that are not content, such as markers and notes)."""
    missing: list[str] = []
    present = words(summary)
    for text in earlier:
        for line in text.splitlines():
            stripped = line.strip()
            if (not stripped or is_heading(stripped) or stripped == CARRIED_HEADER or skip(stripped)
                    or not is_fact(stripped) or stripped in missing or covered(stripped, summary, present)):
                continue
            missing.append(stripped)
    if not missing:
        return summary
    return summary.rstrip() + f"\n\n{CARRIED_HEADER}\n" + "\n".join(missing)
