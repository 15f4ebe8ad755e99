"""The compactor on its own: plain fakes for the summarizer and the context, a real SQLite store.

These are the small-window cases that broke before: summaries that grow when the
summarizer compresses little, no soft tier under small budgets, a summarizer
that is down, compaction every turn, and compaction touching the running turn.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zeph_cli.agent.compactor import CompactionDeps, Compactor
from zeph_cli.config import Config
from zeph_cli.context.assembler import HistoryItem, PromptLayer
from tests.assembly import assemble
from zeph_cli.context.budget import compute_budget
from zeph_cli.context.compaction import COMPACTION_SUMMARY, summary_cap
from zeph_cli.errors import ProviderError
from zeph_cli.agent.events import CompactionFinished
from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.tokens import count_message, default_counter

COUNTER = default_counter()
FACT = re.compile(r"FACT-[A-Z0-9]+")
FIXED = "You are a test assistant. " * 40  # about 250 tokens of fixed prompt


class Session:
    """A conversation in a real store, with the history and report the agent would compute."""

    def __init__(self, tmp_path: Path, budget: int, summarize, **memory) -> None:
        self.config = Config()
        self.config.memory.context_budget_tokens = budget
        for key, value in memory.items():
            setattr(self.config.memory, key, value)
        self.store = ConversationStore(open_database(tmp_path / "zeph.db"))
        self.conversation = self.store.create_conversation(provider="fake", model="fake", cwd=str(tmp_path), title="t")
        self.pinned: int | None = None
        self.calls: list[str] = []

        async def counted(prompt: str, *, max_tokens: int = 2048, purpose: str = "summary") -> str:
            self.calls.append(prompt)
            return await summarize(prompt, max_tokens)

        self.compactor = Compactor(
            CompactionDeps(
                store=self.store,
                config=self.config,
                counter=lambda: COUNTER,
                summarize=counted,
                history=self.history,
                report=self.report,
                pinned=lambda: self.pinned,
            )
        )

    def history(self, conversation) -> list[HistoryItem]:
        return [
            HistoryItem(r.message, count_message(COUNTER, r.message), r.id, r.metadata)
            for r in self.store.history(conversation.id, agent_visible=True)
        ]

    def report(self, conversation):
        memory = self.config.memory
        budget = compute_budget(configured_tokens=memory.context_budget_tokens, auto_budget=False, window=0,
                                soft_threshold=memory.soft_compaction_threshold, hard_threshold=memory.hard_compaction_threshold)
        return assemble([PromptLayer("base prompt", FIXED)], self.history(conversation), budget, COUNTER,
                        window=budget.total, pinned_id=self.pinned)[1]

    def add(self, message: Message) -> int:
        return self.store.add_message(self.conversation.id, message, token_count=count_message(COUNTER, message),
                                      token_counter=COUNTER.name).id

    def turn(self, i: int, *, tool_output: str | None = None) -> None:
        fact = f" Remember this code for later: FACT-T{i}Q." if i % 4 == 0 else ""
        self.pinned = self.add(Message.user(f"Turn {i}: what about step {i}?{fact}"))
        if tool_output is not None:
            self.add(Message("assistant", (ToolCallPart(f"c{i}", "read_file", {"path": f"f{i}.txt"}),)))
            self.add(Message("tool", (ToolResultPart(f"c{i}", tool_output, name="read_file"),)))
        self.add(Message.assistant(f"Step {i}: " + " ".join(f"detail {i}.{k} is settled" for k in range(25))))
        self.pinned = None

    async def before_request(self) -> list:
        self.compactor.start_turn()
        return [e async for e in self.compactor.before_request(self.conversation)]

    def summaries(self) -> list:
        return [r for r in self.store.history(self.conversation.id, agent_visible=True) if r.metadata.get(COMPACTION_SUMMARY)]

    def close(self) -> None:
        self.store.close()


def transcript_of(prompt: str) -> str:
    found = re.search(r"<(conversation|summary)[^>]*>\n(.*)\n</\1>", prompt, re.S)
    return found.group(2) if found else prompt


async def barely_compressing(prompt: str, max_tokens: int) -> str:
    """Like a small local model: returns ~90% of what it is given, ignoring the length asked for."""
    words = transcript_of(prompt).split()
    return " ".join(words[: int(len(words) * 0.9)])


async def faithful(prompt: str, max_tokens: int) -> str:
    facts = sorted(set(FACT.findall(prompt)))
    return f"1. User Intent: a long session.\n6. User Messages: planted {', '.join(facts) or 'none'}."


async def failing(prompt: str, max_tokens: int) -> str:
    raise ProviderError("fake: HTTP 500", provider="fake", status=500)


def down_while(state: dict):
    """A summarizer that fails with the API's HTTP 500 while `state["down"]`, else answers faithfully."""

    async def summarize(prompt: str, max_tokens: int) -> str:
        if state["down"]:
            raise ProviderError("fake: HTTP 500", provider="fake", status=500)
        return await faithful(prompt, max_tokens)

    return summarize


@pytest.fixture
def session_factory(tmp_path):
    made: list[Session] = []

    def make(budget: int, summarize, **memory) -> Session:
        made.append(Session(tmp_path, budget, summarize, **memory))
        return made[-1]

    yield make
    for session in made:
        session.close()


async def test_a_summarizer_that_barely_compresses_never_grows_the_summary_past_its_slot(session_factory):
    session = session_factory(4000, barely_compressing)
    peaks = []
    for i in range(36):
        session.turn(i)
        await session.before_request()
        report = session.report(session.conversation)
        peaks.append(report.used_tokens)
        # the slot: what the budget has below the soft line after the fixed layers, at least the 15% share
        below_soft = int(report.capacity * session.config.memory.soft_compaction_threshold) - report.fixed_tokens
        cap = max(summary_cap(report.capacity, report.fixed_tokens, session.config.memory.compression.max_summary_tokens),
                  below_soft)
        for summary in session.summaries():
            assert count_message(COUNTER, summary.message) - 4 <= cap  # 4: the message framing
    assert session.summaries(), "compaction never ran"
    assert max(peaks) <= session.report(session.conversation).capacity
    # what it copied states no fact: it shares the slot's floor, and the summary says what it left out
    report = session.report(session.conversation)
    floor = summary_cap(report.capacity, report.fixed_tokens, session.config.memory.compression.max_summary_tokens)
    (summary,) = session.summaries()[-1:]
    assert count_message(COUNTER, summary.message) - 4 <= floor
    note = summary.message.content.splitlines()[-1]
    assert note.startswith("[cut to fit the summary's slot:") and "zeph sessions show" in note


async def test_a_summary_in_its_own_words_that_fits_its_slot_is_stored_whole(session_factory):
    handlers = [f"- The handler in src/api/handler_{n}.py returns 404 for a missing tenant since build {4500 + n}."
                for n in range(40)]

    async def thorough(prompt: str, max_tokens: int) -> str:
        return "\n".join(["## 3. Files & Code", *handlers])

    session = session_factory(8000, thorough)
    for i in range(14):
        session.turn(i)
    events = [e async for e in session.compactor.compact(session.conversation)]
    assert any(isinstance(e, CompactionFinished) and e.result.summary_id for e in events)
    (summary,) = session.summaries()
    report = session.report(session.conversation)
    floor = summary_cap(report.capacity, report.fixed_tokens, session.config.memory.compression.max_summary_tokens)
    assert count_message(COUNTER, summary.message) > floor  # above the floor: informative lines use the room
    lines = summary.message.content.splitlines()
    assert [line for line in lines if line.startswith("- The handler")] == handlers
    assert not any(line.startswith("[cut to fit") for line in lines)


async def test_condensing_a_summary_keeps_the_fact_lines_the_condensed_one_dropped(session_factory):
    facts = [f"- FACT-K{n:03d} = amber-{n * 7}" for n in range(30)]

    async def verbose(prompt: str, max_tokens: int) -> str:
        if prompt.startswith("The conversation summary below is too long"):
            return "1. User Intent: a long session."  # condensed: the facts are gone
        return "\n".join(["1. User Intent: a long session.", *facts, *(["Filler about nothing much at all."] * 3),
                          *[f"- step {n}: " + "we talked a while about the weather " * 6 for n in range(40)]])

    session = session_factory(4000, verbose)
    for i in range(12):
        session.turn(i)
    events = [e async for e in session.compactor.compact(session.conversation)]
    assert any(isinstance(e, CompactionFinished) and e.result.summary_id for e in events)
    assert any(p.startswith("The conversation summary below is too long") for p in session.calls)
    (summary,) = session.summaries()
    lines = summary.message.content.splitlines()
    assert [line for line in lines if line.startswith("- FACT-")] == facts  # verbatim, in order
    assert "Filler about nothing much at all." not in lines


async def test_compaction_waits_for_its_cooldown_instead_of_running_every_turn(session_factory):
    session = session_factory(4000, barely_compressing, compaction_cooldown_turns=2)
    hard_turns = []
    for i in range(30):
        session.turn(i)
        events = await session.before_request()
        if any(isinstance(e, CompactionFinished) and e.result.kind == "hard" for e in events):
            hard_turns.append(i)
    assert len(hard_turns) >= 2
    assert all(b - a >= 2 for a, b in zip(hard_turns, hard_turns[1:]))


async def test_a_summarizer_that_is_down_keeps_the_planted_facts(session_factory):
    session = session_factory(8000, failing)
    planted = []
    for i in range(40):
        session.turn(i)
        if i % 4 == 0:
            planted.append(f"FACT-T{i}Q")
        await session.before_request()
    assert session.summaries()
    sent = "\n".join(r.message.content for r in session.store.history(session.conversation.id, agent_visible=True))
    kept = [fact for fact in planted if fact in sent]
    assert len(kept) >= 0.8 * len(planted), (kept, planted)
    (summary,) = session.summaries()[-1:]
    assert summary.metadata.get("provisional") is True and summary.metadata["method"] == "metadata"
    assert summary.message.content.splitlines()[1] == "[metadata summary — LLM compaction unavailable]"


async def test_the_soft_tier_prunes_under_a_small_budget_before_any_summary(session_factory):
    session = session_factory(8000, faithful)  # prune_protect_tokens stays at its default of 40,000
    output = "\n".join(f"row {n}: " + "value " * 10 for n in range(120))  # about 1,800 tokens
    for i in range(3):
        session.turn(i, tool_output=output)
    events = await session.before_request()
    soft = [e.result for e in events if isinstance(e, CompactionFinished) and e.result.kind == "soft"]
    assert soft and soft[0].outputs_pruned >= 1
    assert session.calls == []  # no LLM call was needed
    rows = [r for r in session.store.history(session.conversation.id, agent_visible=True) if r.role == "tool"]
    assert any("read_overflow(id=" in r.message.tool_results[0].content for r in rows)


async def test_compaction_never_touches_the_running_turn(session_factory):
    session = session_factory(4000, faithful, compaction_preserve_tail=0)
    for i in range(10):
        session.turn(i)
    session.pinned = session.add(Message.user("the question of the running turn FACT-PINNED"))
    session.add(Message("assistant", (ToolCallPart("cx", "read_file", {"path": "x"}),)))
    session.add(Message("tool", (ToolResultPart("cx", "x" * 3000, name="read_file"),)))
    events = [e async for e in session.compactor.compact(session.conversation)]
    assert any(isinstance(e, CompactionFinished) and e.result.summary_id for e in events)
    visible = session.store.history(session.conversation.id, agent_visible=True)
    assert [r.role for r in visible[-3:]] == ["user", "assistant", "tool"]
    assert visible[-3].id == session.pinned and "x" * 3000 in visible[-1].message.tool_results[0].content


def test_the_summary_slot_is_the_smaller_of_its_share_and_max_summary_tokens():
    # Spec allocation table: summaries 15% of what the prompt budget leaves after the fixed layers.
    assert summary_cap(6400, 2000, 4000) == int(4400 * 0.15)
    assert summary_cap(200_000, 2000, 4000) == 4000
    assert summary_cap(1200, 1500, 4000) == 64  # a floor that still holds a few lines
    assert summary_cap(0, 2000, 4000) == 4000  # no budget: max_summary_tokens


def test_cutting_a_summary_keeps_identifiers_paths_and_numbers_first_in_their_order():
    from zeph_cli.context.compaction import cut_summary

    text = "\n".join([
        "The user greeted the assistant warmly.",
        "The parser lives in src/parser/lexer.rs and was rewritten.",
        "We talked about the weather for a while.",
        "The release code is FACT-R2D2 and ships on 2026-12-01.",
        "Everyone agreed it was a nice conversation overall.",
    ])
    cut = cut_summary(text, 54, COUNTER)
    assert COUNTER.count(cut) <= 54
    assert cut.splitlines() == ["The parser lives in src/parser/lexer.rs and was rewritten.",
                                "The release code is FACT-R2D2 and ships on 2026-12-01.",
                                "[cut to fit the summary's slot: 3 of 5 lines left out]"]  # never silently
    cut = cut_summary(text, 40, COUNTER)
    assert COUNTER.count(cut) <= 40 and cut.splitlines()[0] == "The release code is FACT-R2D2 and ships on 2026-12-01."


def test_a_preserved_tail_too_big_for_the_soft_threshold_gives_its_oldest_groups_to_the_summary():
    from zeph_cli.context.compaction import compaction_range

    history = [HistoryItem(Message.user(f"m{i}"), 100, i + 1) for i in range(10)]
    middle, tail = compaction_range(history, 4)
    assert len(tail) == 4  # the spec's tail of 4 messages
    middle, tail = compaction_range(history, 4, tail_tokens=250)
    assert [i.id for i in tail] == [9, 10] and len(middle) == 8
    middle, tail = compaction_range(history, 4, keep_from=7, tail_tokens=0)
    assert [i.id for i in tail] == [8, 9, 10]  # never into the running turn
    middle, tail = compaction_range(history, 4, tail_tokens=0)
    assert [i.id for i in tail] == [10]  # the newest message always stays


async def test_summary_chunks_are_sized_to_the_summarizers_window(session_factory):
    from zeph_cli.context.compaction.ranges import CHUNK_TOKENS

    session = session_factory(0, faithful)  # no budget: compaction on demand only
    for i in range(40):
        session.turn(i)
    assert await session.compactor._chunk_tokens("summary", 512) == (CHUNK_TOKENS, 0)  # window unknown

    async def window(purpose: str) -> int:
        return 2048

    session.compactor.deps.summarizer_window = window
    assert await session.compactor._chunk_tokens("summary", 512) == (2048 - 512 - 600, 2048)
    [e async for e in session.compactor.compact(session.conversation)]
    chunk_prompts = [p for p in session.calls if "<conversation part=" in p]
    assert len(chunk_prompts) > 1
    assert all(COUNTER.count(p) + 512 <= 2048 for p in chunk_prompts)  # every call fits the summarizer


def test_cutting_a_summary_of_plain_prose_keeps_what_fits_instead_of_nothing():
    from zeph_cli.context.compaction import cut_summary

    prose = "The user said their name is Alice. " + "They like quiet evenings by the sea. " * 40
    cut = cut_summary(prose, 100, COUNTER)
    assert cut and COUNTER.count(cut) <= 100


async def test_the_cooldown_holds_across_processes(session_factory, tmp_path):
    session = session_factory(4000, faithful)
    for i in range(40):
        session.turn(i)
        events = await session.before_request()
        if any(isinstance(e, CompactionFinished) and e.result.summary_id for e in events):
            break
    else:
        raise AssertionError("no compaction in 40 turns")
    session.turn(100)
    fresh = Compactor(session.compactor.deps)  # `zeph ask -c`: a new process, nothing in memory
    fresh.start_turn()
    assert fresh._in_cooldown(session.conversation)  # 1 user turn since the summary, cooldown 2
    session.turn(101)
    assert not fresh._in_cooldown(session.conversation)


async def test_the_hard_tier_prunes_outputs_a_summary_would_take_in_before_calling_the_summarizer(session_factory):
    # Both outputs sit in the protected window (30% of the prompt budget), so the soft tier keeps them; the
    # hard tier's first step protects only the preserved tail, and that alone brings usage under the hard line.
    session = session_factory(8000, faithful, compaction_preserve_tail=2)
    output = "word " * 900
    capacity = session.report(session.conversation).capacity
    i = 0
    while session.report(session.conversation).context_tokens < 0.9 * capacity - 1900:
        session.turn(i)
        i += 1
    session.turn(i, tool_output=output)
    session.turn(i + 1, tool_output=output)
    usage = session.report(session.conversation).context_tokens
    assert 0.9 * capacity < usage <= capacity  # the hard tier is due
    events = await session.before_request()
    finished = [e.result for e in events if isinstance(e, CompactionFinished)]
    assert [(r.kind, r.outputs_pruned) for r in finished] == [("soft", 1)]
    assert session.calls == [] and not session.summaries()
    tools = [r for r in session.store.history(session.conversation.id, agent_visible=True) if r.role == "tool"]
    assert "read_overflow(id=" in tools[0].message.tool_results[0].content
    assert tools[1].message.tool_results[0].content == output  # the preserved tail keeps its output


@pytest.mark.parametrize("share, summarized", [(0.93, False), (1.05, True)])
async def test_a_running_turn_over_the_hard_line_waits_for_its_end_unless_the_request_would_not_fit(
    session_factory, share, summarized
):
    session = session_factory(4000, faithful, compaction_cooldown_turns=0)
    for i in range(6):
        session.turn(i)
    session.pinned = session.add(Message.user("the running turn reads a big file"))
    session.add(Message("assistant", (ToolCallPart("cx", "read_file", {"path": "x"}),)))
    report = session.report(session.conversation)
    words = int(share * report.capacity) - report.context_tokens  # " word" is one token
    session.add(Message("tool", (ToolResultPart("cx", "word " * words, name="read_file"),)))
    usage = session.report(session.conversation).context_tokens
    assert usage > 0.9 * report.capacity and (usage > report.capacity) == summarized
    events = [e async for e in session.compactor.before_request(session.conversation)]
    hard = [e for e in events if isinstance(e, CompactionFinished) and e.result.kind == "hard"]
    assert bool(hard) == summarized and len(session.calls) == int(summarized)


async def test_a_summary_cut_at_its_reply_cap_fits_the_slot_without_a_condensing_call(session_factory):
    async def verbose(prompt: str, max_tokens: int) -> str:
        """Talks until the server stops it at max_tokens, as a real one does (" step" is one token)."""
        return " ".join(["step"] * max_tokens)

    session = session_factory(4000, verbose)
    for i in range(12):
        session.turn(i)
    events = [e async for e in session.compactor.compact(session.conversation)]
    assert any(isinstance(e, CompactionFinished) and e.result.summary_id for e in events)
    assert len(session.calls) == 1


async def test_a_provisional_summary_is_redone_from_its_originals_once_the_summarizer_answers(session_factory):
    state = {"down": True}
    recovering = down_while(state)

    # The hard line high enough that no hard compaction takes the provisional summary in before its redo.
    session = session_factory(4000, recovering, compaction_cooldown_turns=2, hard_compaction_threshold=0.97)
    turn = 0
    while not session.summaries():
        session.turn(turn)
        await session.before_request()
        turn += 1
    (provisional,) = session.summaries()
    assert provisional.metadata["provisional"] is True and provisional.metadata["redo_wait_turns"] == 2
    compacted = provisional.metadata["summary_of"]

    session.turn(turn)  # one turn later: still waiting, no call
    calls = len(session.calls)
    assert not [e for e in await session.before_request() if isinstance(e, CompactionFinished)]
    assert len(session.calls) == calls

    session.turn(turn + 1)  # the wait is over but the summarizer is still down: the wait doubles
    await session.before_request()
    assert len(session.calls) == calls + 1
    (still,) = [s for s in session.summaries() if s.id == provisional.id]
    assert still.metadata["redo_wait_turns"] == 4

    state["down"] = False
    for k in range(2, 6):
        session.turn(turn + k)
        events = await session.before_request()
        redone = [e.result for e in events if isinstance(e, CompactionFinished) and e.result.kind == "redo"]
        if redone:
            break
    assert k == 5 and len(redone) == 1 and redone[0].messages_compacted == len(compacted)
    newest = [s for s in session.summaries()]
    assert provisional.id not in [s.id for s in newest]
    summary = next(s for s in newest if s.metadata["summary_of"] == [provisional.id])
    assert "provisional" not in summary.metadata and summary.metadata["method"] == "single"
    planted = {f"FACT-T{i}Q" for i in range(0, turn) if i % 4 == 0 and any(f"FACT-T{i}Q" in p for p in session.calls[-1:])}
    assert planted and all(fact in summary.message.content for fact in planted)
    assert "detail 1.7 is settled" in session.calls[-1]  # made from the originals, not the provisional text
    assert "detail 1.7 is settled" not in provisional.message.content


async def test_when_pruning_is_not_enough_the_summary_reads_the_outputs_whole(session_factory):
    session = session_factory(8000, faithful, compaction_preserve_tail=2)
    capacity = session.report(session.conversation).capacity
    i = 0
    while session.report(session.conversation).context_tokens < 0.9 * capacity - 800:
        session.turn(i)
        i += 1
    session.turn(i, tool_output="FACT-OUT1Q " + "word " * 900)  # pruning it alone leaves usage over the line
    session.turn(i + 1, tool_output="word " * 900)
    assert session.report(session.conversation).context_tokens > 0.9 * capacity
    events = await session.before_request()
    assert [e.result.kind for e in events if isinstance(e, CompactionFinished)] == ["hard"]
    assert any("FACT-OUT1Q" in prompt for prompt in session.calls)  # not a pruned placeholder


async def test_a_summary_made_after_an_outage_reads_what_the_provisional_ones_only_sampled(session_factory):
    state = {"down": True}
    recovering = down_while(state)

    session = session_factory(4000, recovering, compaction_cooldown_turns=1)
    turn = 0
    while len(session.store.history(session.conversation.id)) < 3 or sum(
        1 for r in session.store.history(session.conversation.id) if r.metadata.get("provisional")
    ) < 2:  # two provisional summaries, the second taking in the first
        session.turn(turn)
        await session.before_request()
        turn += 1
    state["down"] = False
    failed_calls = len(session.calls)
    for k in range(turn, turn + 16):
        session.turn(k)
        await session.before_request()
        if len(session.calls) > failed_calls and not any(s.metadata.get("provisional") for s in session.summaries()):
            break
    made = session.calls[failed_calls:]
    assert made and any("detail 1.7 is settled" in prompt for prompt in made)  # turn 1, under both provisionals
