"""Anchored summaries: reading a reply (Markdown headings or JSON), validation, one retry with the error,
the fall back to the nine sections, and the merge pass of a chunked summary."""

from __future__ import annotations

import itertools
import json

from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.compaction.anchored import (
    ANCHORED_HEADER,
    anchored_merge_prompt,
    anchored_prompt,
    read_anchored,
    retry_prompt,
)
from zeph_cli.context.compaction.markers import SUMMARY_MARKER
from zeph_cli.context.compaction.prompts import compaction_prompt, merge_prompt, render_transcript
from zeph_cli.context.compaction.summarizer import summarize_range
from zeph_cli.errors import ProviderConnectionError
from zeph_cli.messages import Message
from zeph_cli.tokens import FunctionCounter, count_message

WORDS = FunctionCounter("words", lambda text: len(text.split()))
_ids = itertools.count(1)

VALID = (
    "## Session Intent\nFix the login bug in src/auth.py\n\n## Files Modified\n- src/auth.py: check_token()\n\n"
    "## Decisions Made\nNone.\n\n## Open Questions\n- Rotate keys?\n\n## Next Steps\n- Run pytest tests/test_auth.py"
)
NO_NEXT_STEPS = "## Session Intent\nFix the login bug\n\n## Next Steps\nNone."


def item(message: Message) -> HistoryItem:
    return HistoryItem(message, count_message(WORDS, message), next(_ids), {})


def history() -> list[HistoryItem]:
    return [item(Message.user("fix login in src/auth.py")), item(Message.assistant("on it: check_token() is wrong"))]


def scripted(*replies: str | Exception):
    """A summarizer answering the given replies in order; it records the prompts it was sent."""
    prompts: list[str] = []
    pending = list(replies)

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        reply = pending.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    summarize.prompts = prompts  # type: ignore[attr-defined]
    return summarize


# ---- reading and validating a reply --------------------------------------------------------------


def test_markdown_reply_is_read_section_by_section():
    summary, problem = read_anchored(VALID)
    assert problem == ""
    assert summary.session_intent == "Fix the login bug in src/auth.py"
    assert summary.files_modified == ("src/auth.py: check_token()",)
    assert summary.decisions_made == ()  # "None." is nothing to report
    assert summary.next_steps == ("Run pytest tests/test_auth.py",)


def test_markdown_headings_as_small_models_write_them():
    reply = "Here you go.\n# 1. Session Intent:\nFix login\n**Next Steps**\n1. run the tests\n2. commit"
    summary, problem = read_anchored(reply)
    assert problem == "" and summary.next_steps == ("run the tests", "commit")


def test_json_is_read_when_markdown_was_asked_for_and_the_other_way_round():
    raw = json.dumps({"session_intent": "Fix login", "next_steps": ["run tests"]})
    assert read_anchored(raw, "markdown")[0].next_steps == ("run tests",)
    assert read_anchored(f"```json\n{raw}\n```", "json")[0].session_intent == "Fix login"
    assert read_anchored(VALID, "json")[0].next_steps == ("Run pytest tests/test_auth.py",)


def test_validation_names_what_is_wrong_in_the_terms_of_the_format_asked_for():
    assert read_anchored("just prose")[1].startswith("the reply has none of the headings ## Session Intent")
    assert read_anchored("just prose", "json") == (None, "the reply is not a JSON object")
    assert read_anchored(NO_NEXT_STEPS) == (None, "Next Steps is empty")
    assert read_anchored('{"session_intent": "", "next_steps": []}', "json") == (
        None, "session_intent and next_steps are empty")


def test_a_copied_template_is_not_a_summary():
    template = "\n".join(f"## {h}\n<what it holds>" for h in
                         ("Session Intent", "Files Modified", "Decisions Made", "Open Questions", "Next Steps"))
    assert read_anchored(template) == (None, "Session Intent and Next Steps are empty")


def test_retry_prompt_states_the_error_after_the_request():
    prompt = retry_prompt("REQUEST", "Next Steps is empty")
    assert prompt.startswith("REQUEST\n\n") and "could not be used: Next Steps is empty." in prompt


# ---- the summarizer: first try, retry with the error, fall back ----------------------------------


async def test_a_valid_first_reply_is_rendered_under_both_headers():
    summarize = scripted(VALID)
    outcome = await summarize_range(history(), summarize, counter=WORDS, anchored=True)
    assert outcome.anchored and outcome.anchored_try == "first" and outcome.attempts == 1
    assert outcome.text.startswith(f"{SUMMARY_MARKER}\n{ANCHORED_HEADER}\n\n## Session Intent\nFix the login bug")
    assert summarize.prompts == [anchored_prompt(render_transcript(history()))]


async def test_an_invalid_reply_is_asked_again_once_with_the_error():
    summarize = scripted("I cannot summarize that.", VALID)
    outcome = await summarize_range(history(), summarize, counter=WORDS, anchored=True)
    assert outcome.anchored and outcome.anchored_try == "retry" and outcome.attempts == 2
    first = anchored_prompt(render_transcript(history()))
    assert summarize.prompts[1] == retry_prompt(first, read_anchored("I cannot summarize that.")[1])
    assert outcome.errors[0].startswith("anchored summary (first try): the reply has none of the headings")


async def test_two_invalid_replies_fall_back_to_the_nine_sections():
    summarize = scripted(NO_NEXT_STEPS, "", "## 1. User Intent\nFix login")
    outcome = await summarize_range(history(), summarize, counter=WORDS, anchored=True)
    assert not outcome.anchored and outcome.anchored_try == "fallback" and outcome.attempts == 3
    assert outcome.text == f"{SUMMARY_MARKER}\n## 1. User Intent\nFix login"
    assert "could not be used: Next Steps is empty." in summarize.prompts[1]
    assert summarize.prompts[2] == compaction_prompt(render_transcript(history()))
    assert outcome.errors == (
        "anchored summary (first try): Next Steps is empty",
        "anchored summary (retry try): the reply was empty",
        "the anchored summary failed validation twice; asked for the nine-section summary",
    )


async def test_a_failing_summarizer_still_ends_in_the_metadata_summary():
    summarize = scripted(ProviderConnectionError("down"))
    outcome = await summarize_range(history(), summarize, counter=WORDS, anchored=True)
    assert outcome.method == "metadata" and outcome.attempts == 1 and outcome.anchored_try == ""
    assert outcome.text.startswith(f"{SUMMARY_MARKER}\n") and ANCHORED_HEADER not in outcome.text


async def test_sections_format_never_asks_for_anchored_sections():
    summarize = scripted("nine sections")
    outcome = await summarize_range(history(), summarize, counter=WORDS)
    assert outcome.anchored_try == "" and summarize.prompts == [compaction_prompt(render_transcript(history()))]


async def test_chunked_summaries_merge_into_an_anchored_summary():
    long = [item(Message.user(f"step {n}: " + "word " * 30)) for n in range(6)]
    chunk_replies = ["part summary"] * 10
    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        if prompt.startswith("Below are summaries"):  # the anchored merge
            return "not yet" if sum(p.startswith("Below are summaries") for p in prompts) == 1 else VALID
        return chunk_replies.pop()

    outcome = await summarize_range(long, summarize, counter=WORDS, chunk_tokens=80, anchored=True)
    assert outcome.method == "chunked" and outcome.anchored and outcome.anchored_try == "retry"
    merges = [p for p in prompts if p.startswith("Below are summaries")]
    chunks = len(prompts) - len(merges)
    assert chunks > 1 and merges[0] == anchored_merge_prompt(["part summary"] * chunks)
    assert outcome.text.startswith(f"{SUMMARY_MARKER}\n{ANCHORED_HEADER}\n")


async def test_a_chunked_merge_that_fails_twice_merges_in_nine_sections():
    long = [item(Message.user(f"step {n}: " + "word " * 30)) for n in range(6)]
    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return "no headings" if prompt.startswith("Below are summaries") else "part summary"

    outcome = await summarize_range(long, summarize, counter=WORDS, chunk_tokens=80, anchored=True)
    assert outcome.method == "chunked" and outcome.anchored_try == "fallback"
    partials = ["part summary"] * (len(prompts) - 3)
    assert prompts[-1] == merge_prompt(partials)


# ---- the compactor: the configured format, the header kept when the summary is cut ----------------


async def test_the_compactor_asks_for_the_configured_format_and_a_cut_keeps_the_anchored_header(tmp_path):
    from tests.test_compactor_unit import Session

    filler = [f"- we talked a while about the weather and how the morning went, part {word}"
              for word in ("one two three four five six seven eight nine ten eleven twelve " * 4).split()]

    async def anchored_summarizer(prompt: str, max_tokens: int) -> str:
        assert "\n## Next Steps\n" in prompt  # the anchored request, not the nine sections
        return "\n".join(["## Session Intent", "Settle the steps of a long session.", "## Files Modified",
                          "- src/steps.py: settle_step()", *filler, "## Next Steps", "- Settle step 12"])

    session = Session(tmp_path, 4000, anchored_summarizer)
    session.config.memory.compression.summary_format = "anchored"
    try:
        for i in range(12):
            session.turn(i)
        [_ async for _ in session.compactor.compact(session.conversation)]
        (summary,) = session.summaries()
        text = summary.message.content
        assert text.startswith("[compaction summary]\n[anchored summary]\n")
        assert text.splitlines()[-1].startswith("[cut to fit the summary's slot:")  # it was cut
        assert "- src/steps.py: settle_step()" in text
        # cut hard (a slot of 45 tokens), the header stays under the marker as the marker stays first
        from zeph_cli.agent.compactor import _Room

        body = text.removeprefix("[compaction summary]\n")
        cut = session.compactor._cut(text, body, 45, _Room(None, lambda line: True))
        assert cut.startswith("[compaction summary]\n[anchored summary]\n")
        assert cut.splitlines()[-1].startswith("[cut to fit the summary's slot:")
    finally:
        session.close()
