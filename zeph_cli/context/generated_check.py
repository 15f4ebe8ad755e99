"""The checks a generated session summary or user profile passes before it is stored or sent.

Invariant: pure (no I/O; the stemmer is computation). Text is compared in `text_units`: words, and
character bigrams in scripts written without spaces (Chinese, Japanese, Korean, Thai), so a faithful
summary in those is judged as one in English is. A text is accepted only when it is about the
user and the session: not empty, not its own instructions repeated, not a copy of one message of
the session (a reply or the user's own), not code (mostly code, or a fenced code block), asking no
one a question, not generic assistant text, and most of its content words (stop words and the words a summary uses to talk about
a user or a session left aside) come from what the user wrote. A rejection names the first check
that failed, in words a user can act on (`zeph profile show`, `zeph profile sessions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .text_units import bigrams, content_runs, units

SHINGLE = 4  # words per shingle when comparing a text with a message or the instructions
COPY_SHARE = 0.6  # of a text's shingles found in one message: a copy of it
ECHO_SHARE = 0.3  # of a text's shingles found in its instructions: an echo
ECHO_RUN = 8  # this many words in a row from the instructions: an echo
CODE_SHARE = 0.6  # of a text's characters on code lines: code, not a summary
MIN_CONTENT_WORDS = 3  # fewer content words than this: says nothing about the user
GROUNDED_SHARE = 0.5  # of the content words, from what the user wrote
QUOTE_CHARS = 80  # of the rejected text, quoted in the reason

_FENCE = re.compile(r"```.*?(```|\Z)", re.DOTALL)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_SENTENCE_END = (".", "!", "?", "。", "！", "？")
_CODE_LINE = re.compile(
    r"^\s*(```|\$ |>>> |#include|import |from \S+ import |def |class |return\b|if .*:\s*$|for .*:\s*$|"
    r"(pub |async )?fn |let |const |var |function\b|SELECT\b|INSERT\b|CREATE\b|[{}\[\]()]+;?\s*$)"
    r"|[;{}]\s*$|^\s*[\w.\[\]'\"]+\s*(=|\+=|->|=>)\s*\S|\w\([^)]*\)\s*$",
    re.IGNORECASE,
)
# What an assistant says to whoever it talks to, never what a summary of a user says.
_BOILERPLATE = re.compile(
    r"\b(i['’]?m|i am|we['’]?re) (here|happy|glad|always here) to (help|assist)|\bhere to help\b|"
    r"\bhow (can|may|could) i (help|assist)|\b(help|assist) you with\b|\bfeel free to\b|\blet me know if\b|"
    r"\bhope (this|that|it) helps\b|\bas an ai\b|\blanguage model\b|\bwhatever (your|you) need|"
    r"\bdon['’]?t hesitate\b|\bis there anything else\b|\b(i['’]?d|i would) be (happy|glad) to\b|"
    r"\bi['’]?m sorry\b|\bi apologi[sz]e\b|\bgreat question\b|\bcertainly!|\bsure!|\bof course!",
    re.IGNORECASE,
)
# The same in Chinese, Japanese and Korean (no word boundaries there).
_BOILERPLATE_CJK = re.compile(
    r"(很|非常)?乐意(为你|为您|帮助|帮忙|效劳)|(我|我们)(可以|能|会)(帮|为)(你|您)|请随时|随时(告诉|问|提问|联系)|"
    r"(还有|有)(什么|任何)(其他)?(问题|需要)|希望(这|以上|这些)?(内容|信息|回答)?(对你|对您)?有(所)?帮助|"
    r"作为(一个)?(ai|人工智能|语言模型)|不客气|很高兴(为你|为您|帮助|能帮|见到)|"
    r"お手伝い(します|できます|いたします|させて)|お気軽に|お役に立て|喜んで(お手伝い|お答え)|(ai|言語モデル)として|"
    r"何か(ご質問|お困り|あれば)|도와\s?드리|도움이\s?되|언제든(지)?\s|편하게\s?(물어|질문)|궁금한\s?(점|것)",
    re.IGNORECASE,
)

# English function words: they say nothing about the user either way.
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
either even ever every few for from further get gets got had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's however i i'd i'll i'm i've if in into is
isn't it it's its itself just let's like made make makes many may me might more most much must mustn't my
myself need needs no nor not now of off often on once one only or other others ought our ours ourselves out
over own per quite rather really same shall shan't she she'd she'll she's should shouldn't since so some
still such than that that's the their theirs them themselves then there there's these they they'd they'll
they're they've this those though through thus to too toward towards under until up upon us use used uses
using very via was wasn't way we we'd we'll we're we've well were weren't what what's whatever when when's
where where's whether which while who who's whom whose why why's will with within without won't would
wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves
""".split())

# The words a summary or a profile uses to talk about a user and a session: neither evidence that it is
# about this user nor that it is not.
META_WORDS = frozenset("""
user users user's person people assistant assistants session sessions conversation conversations chat chats
thread discussion discussed discussing discuss discusses talk talked talking topic topics subject subjects
question questions asked asking ask asks answer answers answered explain explained explaining explanation
want wants wanted wanting wish wishes interested interest interests interesting prefer prefers preferred
preference preferences like likes liked goal goals aim aims plan plans planned planning decide decided
decision decisions open still pending unresolved resolved current currently recent recently long-term
stable background focus focused focuses work works worked working project projects task tasks help helped
helping learn learns learned learning know knows knew understand understands understanding try tries tried
trying seek seeks sought look looks looking looked mention mentioned mentions say says said tell told
describe described summary summarize summarized profile note notes new old first last next later earlier
general specific various several different particular certain example examples thing things something
information detail details idea ideas way ways tip tips advice guidance step steps also
""".split())


@dataclass(frozen=True)
class Verdict:
    """Whether a generated text may be stored and sent, and if not, why (one line)."""

    ok: bool
    reason: str = ""

    @staticmethod
    def accept() -> "Verdict":
        return Verdict(True)


@dataclass(frozen=True)
class Said:
    """What the text may draw on: the user's messages and the replies (each whole), the instructions it
    was made with (the summarizer's prompt without the data it was given, the blocks' prefaces), and text
    already accepted about the user (the current profile: its words count as the user's, and keeping it
    is no copy)."""

    user: Sequence[str]
    replies: Sequence[str] = ()
    instructions: Sequence[str] = ()
    known: Sequence[str] = ()


def words(text: str) -> list[str]:
    """The text's words and, in scripts without spaces, character bigrams, in order."""
    return units(text)


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer  # type: ignore[import-untyped]  # pure Python; loaded when a generated text is first checked

    return snowballstemmer.stemmer("english")


def stems(items: Iterable[str]) -> list[str]:
    return _stemmer().stemWords(list(items))


def content_words(text: str) -> list[str]:
    """The words that could say something about the user: no stop words, no words about users and
    sessions in general, no bare numbers of one digit, each once; in scripts without spaces, the bigrams
    of what is left once particles, endings, function characters and words about users are cut out."""
    seen: dict[str, None] = {}
    for piece, unspaced in content_runs(text):
        if unspaced:
            for gram in bigrams(piece, single=False):  # one character alone says too little
                seen.setdefault(gram, None)
            continue
        word = piece
        bare = word.removesuffix("'s")
        if bare in STOP_WORDS or bare in META_WORDS or (bare.isdigit() and len(bare) < 2) or len(bare) < 2:
            continue
        seen.setdefault(bare, None)
    return list(seen)


def _shingles(tokens: Sequence[str], size: int = SHINGLE) -> set[tuple[str, ...]]:
    if len(tokens) < size:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1)}


def _share_in(text_shingles: set[tuple[str, ...]], other: Sequence[str]) -> float:
    if not text_shingles:
        return 0.0
    return len(text_shingles & _shingles(other)) / len(text_shingles)


def _longest_run(tokens: Sequence[str], other: Sequence[str]) -> int:
    """The most words of `tokens` in a row that also appear in a row in `other`."""
    best = 0
    previous = [0] * (len(other) + 1)
    for a in tokens:
        current = [0] * (len(other) + 1)
        for j, b in enumerate(other, 1):
            if a == b:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1].rstrip() + "…"


def _code_line(line: str) -> bool:
    """A line that reads as code; a sentence (five words or more, ending as one) never does."""
    if len(words(line)) >= 5 and line.rstrip().endswith(_SENTENCE_END):
        return False
    return bool(_CODE_LINE.search(line))


def code_share(text: str) -> float:
    """The share of `text`'s characters in fenced blocks or on lines that read as code."""
    total = len("".join(text.split()))
    if not total:
        return 0.0
    fenced = sum(len("".join(m.group(0).split())) for m in _FENCE.finditer(text))
    rest = _FENCE.sub("\n", text)
    coded = sum(len("".join(line.split())) for line in rest.splitlines() if _code_line(line))
    return (fenced + coded) / total


_PERSONAL = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "my", "you", "you're", "your", "we", "our", "us"})
_PERSONAL_CJK = re.compile("[我你您咱]|私|僕|あなた|저는|제가|나는|당신")


def asks(text: str) -> str:
    """The first sentence that asks someone something (a question in the first or second person), "" when none:
    a block sent with every turn that asks a question gets it answered again and again."""
    for sentence in _SENTENCE.findall(_FENCE.sub(" ", text)):
        sentence = sentence.strip()
        if sentence.endswith(("?", "？")) and (_PERSONAL & set(words(sentence)) or _PERSONAL_CJK.search(sentence)):
            return sentence
    return ""


def boilerplate(text: str) -> str:
    """The first phrase of generic assistant talk in `text` ("" when none)."""
    match = _BOILERPLATE.search(text) or _BOILERPLATE_CJK.search(text)
    return match.group(0).strip() if match else ""


def grounding(text: str, user: Sequence[str]) -> tuple[int, int]:
    """(content words of `text` the user also wrote, content words of `text`), compared by stem."""
    mine = content_words(text)
    if not mine:
        return 0, 0
    theirs = set(stems(content_words("\n".join(user))))
    found = sum(stem in theirs for stem in stems(mine))
    return found, len(mine)


def _echo(tokens: Sequence[str], instructions: Sequence[str]) -> bool:
    own = _shingles(tokens)
    for item in instructions:
        other = words(item)
        if _share_in(own, other) >= ECHO_SHARE or _longest_run(tokens, other) >= ECHO_RUN:
            return True
    return False


def _form(text: str, what: str) -> Verdict | None:
    """A rejection for what the text is, whatever it was made from: code, a question, assistant talk."""
    if code_share(text) >= CODE_SHARE:
        return Verdict(False, f"code, not a {what}: “{_quote(text)}”")
    if _FENCE.search(text):  # asked for plain sentences: a code block is a reply's, not a summary's
        return Verdict(False, f"holds a code block, as a reply does, not a {what}: “{_quote(text)}”")
    question = asks(text)
    if question:
        return Verdict(False, f"asks a question (“{_quote(question)}”) instead of saying what is known: “{_quote(text)}”")
    phrase = boilerplate(text)
    if phrase:
        return Verdict(False, f"generic assistant text (“{phrase}”), not about the user: “{_quote(text)}”")
    return None


def check_generated(text: str, said: Said, *, what: str = "summary") -> Verdict:
    """Whether `text` (a session summary or a profile, already cleaned of markup) may be kept."""
    if not text.strip():
        return Verdict(False, "empty")
    tokens = words(text)
    if _echo(tokens, said.instructions):
        return Verdict(False, f"repeats its own instructions: “{_quote(text)}”")
    if len(tokens) >= SHINGLE:
        own = _shingles(tokens)
        for role, messages in (("a reply of the session", said.replies), ("a message the user wrote", said.user)):
            if any(_share_in(own, words(message)) >= COPY_SHARE for message in messages):
                return Verdict(False, f"copies {role} instead of summarizing: “{_quote(text)}”")
    rejected = _form(text, what)
    if rejected is not None:
        return rejected
    found, total = grounding(text, [*said.user, *said.known])
    if total < MIN_CONTENT_WORDS:
        return Verdict(False, f"says nothing about the user ({total} content word{'s' * (total != 1)}): “{_quote(text)}”")
    if found < total * GROUNDED_SHARE:
        return Verdict(
            False, f"not about what the user wrote: {found} of its {total} content words come from the user's "
            f"messages (at least half must): “{_quote(text)}”"
        )
    return Verdict.accept()


def check_stored(text: str, *, what: str = "summary", instructions: Sequence[str] = ()) -> Verdict:
    """The checks that need nothing but the text and its instructions, for a generated text stored before the
    others existed: it is not sent unless it passes them."""
    if not text.strip():
        return Verdict(False, "empty")
    if _echo(words(text), instructions):
        return Verdict(False, f"repeats its own instructions: “{_quote(text)}”")
    return _form(text, what) or Verdict.accept()
