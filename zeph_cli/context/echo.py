"""Whether a reply repeats an injected block verbatim (recall, saved memories, the user profile, session
summaries): such a reply is the block coming back, not something the user or the model said.

Invariant: pure. Text is compared in lower-cased `text_units` (words, and character bigrams in
scripts written without spaces: a bigram counts as a word); a reply echoes a block when runs of at
least RUN_WORDS consecutive units found in that block cover at least ECHO_SHARE of the reply's units,
or one such run is at least LONG_RUN units long. A reply that quotes a line of a block and goes on with
its own answer is not an echo. A reply written as recall entries (`imitates_recall_entries`: lines that
open like "- [2026-11-28 · "title" · user]", copied or made up) counts as bringing back the recall block
whatever its words: the small embedded model writes such lines after seeing the block, and recalled
later they feed the block's shape back into every turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .text_units import units

# The per-turn blocks whose text a reply must not bring back into recall.
ECHO_BLOCKS = ("semantic recall", "memory", "user profile", "recent conversations")
RUN_WORDS = 8
ECHO_SHARE = 0.5
LONG_RUN = 40
RECALL_FORMAT = "recall entry format"  # the name a reply written as recall entries is marked with
# A line opening like a recall entry (context/recall_block.render_entry): "- [YYYY-MM-DD · …", after any
# list marker, numbering, emphasis or quote sign.
_ENTRY_HEAD = re.compile(r"^[\s>*_+\-\d.]*\[\d{4}-\d{2}-\d{2} · ", re.MULTILINE)


def echoed_blocks(reply: str, blocks: Mapping[str, str]) -> tuple[str, ...]:
    """The names of the blocks (name → text) that `reply` repeats verbatim, in `blocks` order."""
    said = units(reply)
    if len(said) < RUN_WORDS:
        return ()
    found = []
    for name, text in blocks.items():
        words = units(text)
        if len(words) < RUN_WORDS:
            continue
        grams = {tuple(words[i : i + RUN_WORDS]) for i in range(len(words) - RUN_WORDS + 1)}
        covered = [False] * len(said)
        for i in range(len(said) - RUN_WORDS + 1):
            if tuple(said[i : i + RUN_WORDS]) in grams:
                covered[i : i + RUN_WORDS] = [True] * RUN_WORDS
        longest = run = 0
        for c in covered:
            run = run + 1 if c else 0
            longest = max(longest, run)
        if sum(covered) >= ECHO_SHARE * len(said) or longest >= LONG_RUN:
            found.append(name)
    return tuple(found)


def imitates_recall_entries(reply: str) -> bool:
    """Whether `reply` is written as recall entries: two or more of its lines open like one, or its only
    non-blank line does (a reply quoting one entry among lines of its own is not)."""
    heads = len(_ENTRY_HEAD.findall(reply))
    lines = sum(1 for line in reply.splitlines() if line.strip())
    return heads >= 2 or (heads == 1 and lines == 1)


def echoes(reply: str, blocks: Mapping[str, str]) -> tuple[str, ...]:
    """Why `reply` is an echo: the blocks it repeats verbatim (`echoed_blocks`), then RECALL_FORMAT when it is
    written as recall entries; () when it is neither."""
    return echoed_blocks(reply, blocks) + ((RECALL_FORMAT,) if imitates_recall_entries(reply) else ())
