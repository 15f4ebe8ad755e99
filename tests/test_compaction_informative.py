"""What compaction keeps when something must go: the extractive fallback on lines, a summary cut to its
slot least informative lines first and never silently, fact lines carried through a second summary, and
the size of the summary slot. Pure functions, the real tokenizer."""

from __future__ import annotations

import random

import pytest

from zeph_cli.context.assembler import HistoryItem, PromptLayer
from tests.assembly import assemble
from zeph_cli.context.budget import compute_budget
from zeph_cli.context.compaction.extractive import CUT_NOTE, cut_summary, extractive_summary
from zeph_cli.context.compaction.informative import CARRIED_HEADER, base_score, carry_facts, pairs, strip_repeated
from zeph_cli.context.compaction.markers import COMPACTION_SUMMARY, SUMMARY_MARKER
from zeph_cli.context.compaction.slot import recall_room, summary_cap, summary_slot
from zeph_cli.context.recall_block import RECALL_HEADER, RECALL_PREFIX, render_entry
from zeph_cli.context.compaction.summarizer import summarize_range
from zeph_cli.messages import Message
from zeph_cli.tokens import count_message, default_counter

COUNTER = default_counter()
PARAGRAPH = (
    "We are building the import tool for the billing service. It reads the monthly export, checks each row "
    "against the ledger and writes a report. The team wants it to be simple to run from a terminal."
)
WORDS = (
    "the a to of and in that is for it this with as on be we can should will file function test error config "
    "value return call make sure check change update read write path module class import build run output line"
).split()
FIXED_AT_4K = 1124  # the prompt layers and tool schemas zeph sends at a 4k budget (ContextReport.fixed_tokens)


def history(messages: list[Message]) -> list[HistoryItem]:
    return [HistoryItem(m, count_message(COUNTER, m), n) for n, m in enumerate(messages, 1)]


def sd_fact(n: int) -> str:
    return f"sd-{n}={'q'}{(n * 37) % 100}"


def filler(rng: random.Random, sentences: int = 4) -> str:
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(sentences))


# ---- the extractive fallback (the summarizer is down) ---------------------------------------------


@pytest.mark.parametrize("glue", ["\n", " "], ids=["fact-on-its-own-line", "fact-glued-to-the-paragraph"])
def test_the_extractive_fallback_keeps_the_fact_lines_not_the_paragraph_every_turn_repeats(glue):
    # 40 turns at a 4k budget: `turn N.`, a line `FACT: sd-N=qM`, then the same paragraph every turn.
    rng = random.Random(5)
    messages = []
    for n in range(40):
        messages += [Message.user(f"turn {n}.\nFACT: {sd_fact(n)}{glue}{PARAGRAPH}"), Message.assistant(filler(rng))]
    items = history(messages)
    middle, tail = items[:-3], items[-3:]
    # the slot a 4k budget gives: its prompt budget (3,200) to the soft line (60%), less the fixed layers and
    # the history kept verbatim (context.compaction.slot)
    slot = int(3200 * 0.6) - FIXED_AT_4K - sum(i.tokens for i in tail) - 16

    summary = extractive_summary(middle, slot, COUNTER)

    assert COUNTER.count(f"{SUMMARY_MARKER}\n{summary}") <= slot
    sent = summary + "\n".join(i.message.content for i in tail)
    assert sum(sd_fact(n) in sent for n in range(40)) >= 32
    kept = summary.split("Kept sentences", 1)[1]
    assert kept.count("monthly export") <= 1  # the repeated paragraph went first: one copy at most
    facts = [line for line in kept.splitlines() if "sd-" in line]
    assert facts == sorted(facts, key=lambda line: int(line.split("sd-")[1].split("=")[0]))  # in their order
    assert "of 2" in kept.splitlines()[0] and "zeph sessions show" in kept.splitlines()[0]  # says what it left


def test_text_an_earlier_message_said_is_dropped_from_the_later_copies_only():
    units = [
        (f"user: FACT: sd-1=q37 {PARAGRAPH[:56]}", 0),
        (f"user: FACT: sd-2=q74 {PARAGRAPH[:56]}", 1),
        ("user: Remember this code for later: FACT-R2D2.", 2),  # a short phrase said again is not boilerplate
        ("user: Remember this code for later: FACT-C3PO.", 3),
        ("user: nothing repeated here at all today", 4),
    ]
    assert strip_repeated(units) == [units[0][0], "user: FACT: sd-2=q74", *[u for u, _ in units[2:]]]
    assert strip_repeated([(PARAGRAPH, 0), (PARAGRAPH, 1)]) == [PARAGRAPH, ""]


# ---- a summary cut to its slot --------------------------------------------------------------------


def long_summary(rng: random.Random, facts: int = 60) -> str:
    lines = ["## 1. User Intent", "A long working session about the billing importer.", "## 6. User Messages"]
    for n in range(facts):
        lines.append(f"- FACT-K{n:03d} = amber-{(n * 7919) % 1000}")
        if n % 3 == 0:
            lines.append(f"- {filler(rng, 1)}")  # filler between the facts
        if n % 10 == 0:
            lines.append("- The user thanked the assistant for the help so far.")  # said again and again
    lines += ["## 9. Next Step", "Answer the next question."]
    return "\n".join(lines)


def test_a_cut_summary_loses_its_least_informative_lines_first_and_says_how_much_went():
    text = long_summary(random.Random(2))
    cap = 700
    assert COUNTER.count(text) > cap

    cut = cut_summary(text, cap, COUNTER)

    assert COUNTER.count(cut) <= cap
    lines = cut.splitlines()
    assert all(f"- FACT-K{n:03d} = amber-{(n * 7919) % 1000}" in lines for n in range(60))  # verbatim, all
    assert lines.count("- The user thanked the assistant for the help so far.") <= 1
    assert [line for line in lines if line.startswith("- FACT-")] == [
        line for line in text.splitlines() if line.startswith("- FACT-")
    ]  # in their order
    assert "## 6. User Messages" in lines  # the heading over what was kept
    note = lines[-1]
    assert note.startswith(CUT_NOTE) and "tokens) left out, the least informative first" in note
    assert "zeph sessions show" in note
    dropped = len([line for line in text.splitlines() if not line.startswith("#")]) - len(
        [line for line in lines[:-1] if not line.startswith("#")]
    )
    assert f"{dropped} of " in note


def test_a_summary_that_fits_is_not_cut():
    text = long_summary(random.Random(2), facts=5)
    assert cut_summary(text, COUNTER.count(text), COUNTER) == text


def handler_lines(count: int = 40) -> list[str]:
    """Lines that state facts without a key = value pair or a code: a path, a status, a build number."""
    return [f"- The handler in src/api/handler_{n}.py returns 404 for a missing tenant since build {4500 + n}."
            for n in range(count)]


def test_a_summary_within_its_slot_keeps_every_informative_line_whatever_the_floor():
    text = "## 3. Files & Code\n" + "\n".join(handler_lines())
    assert 700 < COUNTER.count(text) < 3000  # over the floor, within the slot

    assert cut_summary(text, 3000, COUNTER, others_tokens=300) == text


def test_a_summary_over_its_slot_keeps_paths_and_numbers_over_filler():
    rng = random.Random(4)
    filler_lines = [f"- {filler(rng, 1)}" for _ in range(40)]
    lines = [line for pair in zip(handler_lines(), filler_lines) for line in pair]
    text = "\n".join(lines)
    handlers = "\n".join(handler_lines())
    cap = COUNTER.count(handlers) + 100  # room for the handler lines and the note, not for the filler

    cut = cut_summary(text, cap, COUNTER, others_tokens=300)

    assert COUNTER.count(cut) <= cap
    kept = cut.splitlines()
    assert [line for line in kept if "handler" in line] == handler_lines()  # every one, verbatim, in order
    assert len(kept) - 1 - 40 <= 4  # the filler went first: what is left of it fits the few spare tokens
    assert kept[-1].startswith(CUT_NOTE)


def test_lines_that_carry_nothing_stay_within_the_floor():
    rng = random.Random(5)
    bland = [f"- {filler(rng, 1)}".replace("1", "") for _ in range(60)]
    text = "\n".join(["- The parser lives in src/parser/lexer.rs since build 4512.", *bland])
    floor = COUNTER.count(text) // 4

    # the caller leaves the bland lines out of the room above the floor, as it does text copied from tools
    cut = cut_summary(text, COUNTER.count(text) + 50, COUNTER, facts=lambda line: "lexer" in line,
                      others_tokens=floor)

    assert cut.splitlines()[0] == "- The parser lives in src/parser/lexer.rs since build 4512."
    assert COUNTER.count(cut) <= floor + COUNTER.count(cut.splitlines()[0]) + 4
    assert cut.splitlines()[-1].startswith(CUT_NOTE)


# ---- summarizing a summary again --------------------------------------------------------------------


def test_a_second_summary_keeps_the_earlier_ones_fact_lines_verbatim_unless_it_states_them():
    earlier = "\n".join([
        "## Files & Code", "- FACT-K001 = red-1", "- FACT-K002 = blue-2", "- The parser lives in src/parser/lexer.rs.",
        "- We chatted about the weather.",
    ])
    new = "## Current Work\n- FACT-K002 = blue-3 (changed since)\n- The lexer in src/parser/lexer.rs was rewritten."
    carried = carry_facts([earlier], new)
    assert carried.startswith(new)
    assert carried.endswith(f"{CARRIED_HEADER}\n- FACT-K001 = red-1")  # dropped: back verbatim
    assert "blue-2" not in carried  # the key is in the new summary with a later value: it wins
    assert "weather" not in carried  # not a fact line
    assert carry_facts([earlier], new + "\n- FACT-K001 = red-1") == new + "\n- FACT-K001 = red-1"


def test_a_key_mentioned_without_its_value_does_not_state_the_fact():
    earlier = "- timeout = 30s\n- db port: 5433"

    vague = carry_facts([earlier], "We still need to fix the timeout; the db port is unknown.")
    assert vague.endswith(f"{CARRIED_HEADER}\n- timeout = 30s\n- db port: 5433")
    # the same value, or a later value for the same key, states it
    assert carry_facts([earlier], "The timeout is 30s and the db port is 5433.").count(CARRIED_HEADER) == 0
    assert carry_facts([earlier], "- timeout = 45s\n- db port: 5434") == "- timeout = 45s\n- db port: 5434"
    # a line without a pair needs its path and numbers, not half its words
    path_line = "- The handler in src/api/handler_7.py returns 404 since build 4507."
    assert carry_facts([path_line], "The handler returns 404 for a missing tenant.").endswith(path_line)
    assert carry_facts([path_line], "src/api/handler_7.py: 404 since build 4507.").count(CARRIED_HEADER) == 0


async def test_summarizing_a_range_with_an_earlier_summary_keeps_the_fact_lines_the_summarizer_dropped():
    earlier = f"{SUMMARY_MARKER}\n## 6. User Messages\n- FACT-K007 = teal-3\n- deploy_key: ABC-123"
    items = [
        HistoryItem(Message.context(earlier), 30, 1, {COMPACTION_SUMMARY: True}),
        *history([Message.user("turn 8: what next?"), Message.assistant("Run the importer.")]),
    ]

    async def forgetful(prompt: str) -> str:
        return "## 1. User Intent\nRun the importer.\n## 9. Next Step\nRun it."

    outcome = await summarize_range(items, forgetful, counter=COUNTER)
    assert outcome.method == "single"
    assert outcome.text.endswith(f"{CARRIED_HEADER}\n- FACT-K007 = teal-3\n- deploy_key: ABC-123")


# ---- the summary slot ---------------------------------------------------------------------------------


def test_the_summary_slot_takes_what_the_kept_history_leaves_below_the_soft_line():
    capacity, fixed = 6400, 2000
    floor = summary_cap(capacity, fixed, 4000)
    assert floor == int(4400 * 0.15)  # the spec's 15% share: the floor
    # 3,840 below the soft line (60%), minus the fixed layers, the history kept and a little slack
    assert summary_slot(capacity, fixed, 4000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=400) == 3840 - 2000 - 400 - 16
    assert summary_slot(capacity, fixed, 4000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=1500) == floor  # never below it
    assert summary_slot(capacity, fixed, 1000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=0) == 1000  # max_summary_tokens
    # tool outputs are pruned as newer ones come, but with them the context stays below the hard line
    slot = summary_slot(capacity, fixed, 4000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=1700,
                        prunable_tokens=1500)
    assert slot == 3840 - 2000 - 200 - 16
    slot = summary_slot(capacity, fixed, 4000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=2600,
                        prunable_tokens=2500)
    assert slot == 5440 - 2000 - 2600 - 16  # 5% of the budget below the hard line
    slot = summary_slot(capacity, fixed, 4000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=4000,
                        prunable_tokens=3900)
    assert slot == floor
    assert summary_slot(0, fixed, 4000, soft_threshold=0.6, hard_threshold=0.9, kept_tokens=0) == 4000  # no budget


def test_the_summary_slot_leaves_semantic_recall_its_room():
    total = 8000
    budget = compute_budget(configured_tokens=total, auto_budget=False, window=total, soft_threshold=0.6,
                            hard_threshold=0.9)
    layers = [PromptLayer("base prompt", "You are zeph. " * 200)]
    rng = random.Random(6)
    recent = history([Message.user(filler(rng, 6)), Message.assistant(filler(rng, 6))])
    entries = [render_entry(100 + n, "user", "2026-01-02", "", filler(rng, 12)) for n in range(5)]
    _, bare = assemble(layers, recent, budget, COUNTER, window=total)
    wanted = COUNTER.count("\n".join([RECALL_HEADER, *(entry.text for entry in entries)])) + 4
    reserve = recall_room(bare.capacity, bare.fixed_tokens, wanted)
    assert reserve == wanted  # within its share
    assert recall_room(bare.capacity, bare.fixed_tokens, 0) == 0  # recall found nothing: no room kept

    def recalled(slot: int, turns: int = 0) -> int:
        """Entries in the recall block beside a summary of `slot` tokens, the history kept verbatim and
        `turns` more turns of history since the compaction."""
        summary_text = f"{SUMMARY_MARKER}\n" + "\n".join(f"- FACT-K{n:03d} = teal-{n}" for n in range(2000))
        lines = summary_text.splitlines()
        while count_message(COUNTER, Message.context("\n".join(lines))) > slot - 16:
            lines.pop()
        summary = Message.context("\n".join(lines))
        later = [Message.user(filler(rng, 6)) if n % 2 == 0 else Message.assistant(filler(rng, 6))
                 for n in range(2 * turns)]
        items = [HistoryItem(summary, count_message(COUNTER, summary), 1, {COMPACTION_SUMMARY: True})]
        items += [HistoryItem(m, count_message(COUNTER, m), n) for n, m in enumerate([*(i.message for i in recent), *later], 2)]
        messages, report = assemble(layers, items, budget, COUNTER, window=total, recall=entries)
        assert report.used_tokens <= report.capacity
        block = next((m.content for m in messages if m.content.startswith(RECALL_PREFIX)), "")
        return block.count("\n- [")

    kept = sum(item.tokens for item in recent)
    slot = summary_slot(bare.capacity, bare.fixed_tokens, 4000, soft_threshold=0.6, hard_threshold=0.9,
                        kept_tokens=kept, recall_tokens=reserve)
    assert slot > summary_cap(bare.capacity, bare.fixed_tokens, 4000)  # above its floor
    assert recalled(slot) == 5  # a summary the size of its slot leaves recall its room
    # the turns after a compaction grow the history past the soft line: recall keeps its entries until the
    # context nears the hard line, where the next compaction comes
    assert recalled(slot, turns=4) == 5


def test_a_huge_token_does_not_stall_compaction():
    import string
    import threading

    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "-_"

    def jwt() -> str:
        return ".".join("".join(rng.choice(alphabet) for _ in range(5000)) for _ in range(3))

    messages = [Message.user(f"token {n}: Bearer {jwt()} and key=value{n}") for n in range(5)]
    messages.append(Message.user("x" * 16000 + "== and a-" * 4000))
    done: dict[str, str] = {}

    def run() -> None:
        done["extractive"] = extractive_summary(history(messages), 500, COUNTER)
        done["cut"] = cut_summary("\n".join(m.content for m in messages), 300, COUNTER, others_tokens=100)
        done["pairs"] = str(pairs("x" * 16000 + "==") + pairs("a." * 8000 + ": 1"))
        done["score"] = str(base_score("a/" * 8000) + base_score("A-" * 8000 + "1"))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=60)  # a bound for a hang, not for speed: linear work takes well under a second
    assert not worker.is_alive(), "compaction's scoring took over a minute on 100 KB of long tokens"
    assert COUNTER.count(done["cut"]) <= 300
    assert COUNTER.count(done["extractive"]) <= 500
