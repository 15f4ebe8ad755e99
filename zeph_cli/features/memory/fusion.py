"""Ranking arithmetic for recall: the words of a text, reciprocal rank fusion, temporal decay, MMR, relevance.

Invariant: pure functions over plain values (ids, ranks, scores, unit vectors as
sequences of floats, token sets); nothing here touches the store, an index or
an embedder, and nothing imports numpy. A text's words (`terms`) are folded as
the store's FTS5 index (unicode61, remove_diacritics 1) folds its tokens, in any
script, so a word recall weighs is the word the index counts.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence

from ...context.text_units import bigrams

RRF_K = 60  # the constant of Cormack et al.'s reciprocal rank fusion, as commonly used

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be been
    being am do does did doing have has had having it its this that these those there here i me my mine we us our
    you your yours he him his she her they them their what which who whom whose when where why how can could should
    would will shall may might must not no yes so too very just also than please thanks thank ok okay hi hello hey
    all any some each more most much many few one tell say said remind recall remember again still already now""".split()
) | frozenset(
    # Conversation control: the short follow-ups of a working session ("continue", "fix it", "run the
    # tests", "looks good") name no topic, so they must never pull up other sessions' messages.
    """continue go ahead fix run test tests try do make check look looks see show sure done next start stop
    use add update change keep let lets get got need want like think know good great fine right well work
    works working it's that's thats doesn't don't didn't isn't same other another way thing things something
    ok lgtm perfect nice cool yep nope yeah""".split()
)
PARTS = re.compile(r"[.:/-]")
_TERM = re.compile(r"\w+(?:[.:/-]\w+)*")  # letters and digits of any script (and _), compounds kept whole
# The marks FTS5's unicode61 tokenizer (remove_diacritics 1, the store's) drops after a Latin letter:
# a single one of these on an ASCII base letter goes ("café" is "cafe", "Müller" "muller"); other
# scripts keep theirs ("й" stays "й").
_DIACRITIC = re.compile(r"(?<=[A-Za-z])[\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d\u032e"
                        r"\u0330\u0331](?![\u0300-\u036f])")
_NOT_LATIN_BASE = re.compile(r"[\u0300-\u036f]{2}")  # a letter with two marks keeps both (unicode61 too)
# Letters unicode61 folds beyond lower-casing (Greek final sigma and symbol variants, the long s).
_FOLDS = str.maketrans({"ς": "σ", "µ": "μ", "ſ": "s", "ẛ": "s", "ϐ": "β", "ϑ": "θ", "ϕ": "φ", "ϖ": "π",
                        "ϰ": "κ", "ϱ": "ρ", "ϵ": "ε", "ι": "ι"})
# Scripts written without spaces: unicode61 makes a whole run one token, so their words are the
# run's overlapping character pairs (the usual bigrams of CJK retrieval) and a lone character.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
CJK_STOPWORDS = frozenset("什么 怎么 为什 哪个 哪里 这个 那个 我们 你们 他们 一个 谢谢 是什 是不 不是 的是 了吗 好的 "
                          "それ これ です ます ました".split())


def fold(text: str) -> str:
    """`text` folded as the FTS5 index folds it (unicode61, remove_diacritics 1): lower-cased, one
    diacritic on a Latin letter removed, a few letter variants unified. ASCII text is only lower-cased."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text)
    if _NOT_LATIN_BASE.search(decomposed):  # keep a letter carrying two marks whole: only single ones go
        decomposed = re.sub(r"[A-Za-z][\u0300-\u036f]{2,}", lambda m: unicodedata.normalize("NFC", m.group()),
                            decomposed)
    return unicodedata.normalize("NFC", _DIACRITIC.sub("", decomposed)).lower().translate(_FOLDS)


def terms(text: str) -> set[str]:
    """The content words of `text`, folded as the FTS5 index folds them (`fold`), stopwords and
    one-letter words out; a run of CJK characters gives its character pairs (a lone one itself)."""
    found: set[str] = set()
    for word in _TERM.findall(fold(text)):
        if word.isascii() or not _CJK.search(word):
            if len(word) > 1 and word not in STOPWORDS:
                found.add(word)
            continue
        for part in re.split(f"({_CJK.pattern})", word):
            if not part or part in "._:/-":
                continue
            if not _CJK.fullmatch(part):
                part = part.strip("._:/-")
                if len(part) > 1 and part not in STOPWORDS:
                    found.add(part)
            else:
                found.update(pair for pair in bigrams(part) if pair not in CJK_STOPWORDS)  # a lone one itself
    return found


def names_something(text: str) -> bool:
    """Whether `text` has content recall can search for: a content word (`terms`), or letters of a script
    whose words FTS5 cuts into single letters (a Devanagari word's consonants): the vector leg runs for it."""
    return bool(terms(text)) or any(c.isalnum() and not c.isascii() for c in text)


def is_cjk(term: str) -> bool:
    """Whether a word of `terms` is CJK characters (a pair or a lone one): no FTS5 token of its own."""
    return bool(_CJK.fullmatch(term))


def keyword_coverage(query_terms: set[str], text: str) -> float:
    """Share of the query's content words that `text` contains (0..1): the relevance of a keyword hit."""
    if not query_terms:
        return 0.0
    found = with_parts(terms(text))
    return sum(1 for t in query_terms if term_present(t, found)) / len(query_terms)


def with_parts(found: set[str]) -> set[str]:
    """`found` and the parts of its compound words (a path's parts, as FTS5 splits it)."""
    return found | {part for word in found for part in PARTS.split(word) if part}


def term_present(term: str, found: set[str]) -> bool:
    """Whether a query word is among a text's words (`with_parts(terms(text))`): itself, as a prefix of
    one (run in running), or, for a compound word, every one of its parts."""
    if term in found or any(w.startswith(term) for w in found):
        return True
    parts = [p for p in PARTS.split(term) if p]
    return len(parts) > 1 and all(p in found for p in parts)


def reciprocal_rank_fusion(rankings: Sequence[tuple[Sequence[int], float]], k: int = RRF_K) -> dict[int, float]:
    """Σ weight / (k + rank) over the rankings (rank from 1) each id appears in."""
    fused: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, item in enumerate(ids, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def decay_factor(age_days: float, half_life_days: float) -> float:
    """Exponential attenuation: 1 for a message from now, ½ after one half-life."""
    return 0.5 ** (max(age_days, 0.0) / half_life_days)


def normalized(scores: Mapping[int, float]) -> dict[int, float]:
    """Scores divided by the best one (so the top is 1.0); empty stays empty."""
    top = max(scores.values(), default=0.0)
    return {i: (s / top if top > 0 else 0.0) for i, s in scores.items()}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def mmr(
    scores: Mapping[int, float],
    similarity: Callable[[int, int], float],
    lam: float,
    limit: int,
) -> list[int]:
    """Maximal Marginal Relevance: pick, one at a time, the id maximizing
    λ·score − (1−λ)·max similarity to those already picked. Ties keep score order."""
    remaining = sorted(scores, key=lambda i: -scores[i])
    picked: list[int] = []
    while remaining and len(picked) < limit:
        def marginal(i: int) -> float:
            redundancy = max((similarity(i, j) for j in picked), default=0.0)
            return lam * scores[i] - (1 - lam) * redundancy

        best = max(remaining, key=marginal)  # max keeps the first of equals: score order
        picked.append(best)
        remaining.remove(best)
    return picked


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Dot product of two unit vectors (the cosine); 0 for mismatched or empty ones."""
    if len(a) != len(b) or not a:
        return 0.0
    value = math.fsum(x * y for x, y in zip(a, b))
    return max(-1.0, min(1.0, value))
