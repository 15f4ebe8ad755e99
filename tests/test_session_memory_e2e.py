"""Cross-session summaries and the user profile end to end, through the real `zeph ask` and the
wire-level fake model: six turns in session A make a summary request, sent by a detached worker
after `zeph ask` has printed the reply and exited (summarizing delays neither), and session B is sent A's digest as
<recent_conversation_memory> and the profile as <user_profile_memory>, among the per-turn blocks before the running turn."""

from __future__ import annotations

import re
import threading
import time

from tests.chat_wire import chat_requests
from tests.cli_helpers import err, out, run_zeph
from tests.fakes.server import RecordedRequest
from tests.scripted_model import completion, prompt_of, text_reply

DIGEST = "The user is designing a tokenizer for the Zeta language; keywords are still open."
PROFILE = "- Works on the Zeta language\n- Prefers short answers"


class Model:
    """Chat replies echo the prompt; the digest is answered only once `released` is set."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.held_until_released = False
        self.kinds: list[str] = []

    def __call__(self, request: RecordedRequest):
        body = request.json
        if body.get("stream"):
            self.kinds.append("chat")
            return text_reply(f"Reply to {body['messages'][-1]['content']}.")
        prompt = prompt_of(body)
        if prompt.startswith("Write what the conversation below is about"):
            self.kinds.append("digest")
            self.held_until_released = self.released.wait(20)
            return completion(DIGEST)
        if prompt.startswith("You maintain a short profile"):
            self.kinds.append("profile")
            return completion(PROFILE)
        self.kinds.append("other")
        return None


def _wait_for_digest(env: dict, deadline: float) -> bool:
    """The worker has stored the profile (its last step), as `zeph profile show` sees it."""
    while time.monotonic() < deadline:
        if run_zeph("profile", "show", env=env).stdout.strip():
            return True
        time.sleep(0.3)
    return False


def test_a_long_session_is_summarized_in_the_background_and_sent_to_the_next_session(fake_server, compatible):
    compatible = {**compatible, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false",  # no embedder to load: a faster test
                  "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "true"}
    model = Model()
    fake_server.respond_with(model)
    for n in range(1, 6):
        result = run_zeph("ask", *(["-c"] if n > 1 else []), f"Zeta question {n}", env=compatible)
        assert result.returncode == 0, err(result)
    assert "digest" not in model.kinds  # five user turns: too few

    # The sixth turn: zeph ask prints the reply and exits while the summary request is still
    # unanswered — a detached worker process makes the summary, and waits for it, not the command.
    result = run_zeph("ask", "-c", "Zeta question 6", env=compatible)
    assert result.returncode == 0, err(result)
    assert "Reply to Zeta question 6." in out(result)
    deadline = time.monotonic() + 30
    while "digest" not in model.kinds and time.monotonic() < deadline:
        time.sleep(0.1)
    assert model.kinds.count("digest") == 1 and not model.released.is_set()  # asked for after the command ended
    model.released.set()
    while model.kinds.count("profile") < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert model.held_until_released  # the digest was answered only after zeph ask had exited
    assert _wait_for_digest(compatible, deadline), "the worker stored no summary"
    assert model.kinds.count("digest") == 1 and model.kinds.count("profile") == 1
    summary_request = next(r for r in chat_requests(fake_server) if not r.json.get("stream"))
    assert "Zeta question 1" in prompt_of(summary_request.json) and "Reply to Zeta question 6." in prompt_of(summary_request.json)

    # Session B: A's digest and the profile, in ETOS order after the time block, before the history.
    result = run_zeph("ask", "What did we do last time?", env=compatible)
    assert result.returncode == 0, err(result)
    messages = chat_requests(fake_server)[-1].json["messages"]
    contents = [m["content"] or "" for m in messages]
    time_at = next(i for i, c in enumerate(contents) if c.startswith("<time>"))
    recent_at = next(i for i, c in enumerate(contents) if c.startswith("<recent_conversation_memory>"))
    profile_at = next(i for i, c in enumerate(contents) if c.startswith("<user_profile_memory>"))
    assert time_at < recent_at == profile_at - 1 < len(contents) - 1
    assert contents[-1] == "What did we do last time?"
    assert re.search(r'- "Zeta question 1" \(\d{4}-\d\d-\d\d, this project\): ' + re.escape(DIGEST), contents[recent_at])
    assert "- Works on the Zeta language" in contents[profile_at]
    assert model.kinds.count("digest") == 1  # B has one user turn: not summarized

    # zeph context (of B, the latest session) shows both blocks.
    result = run_zeph("context", env=compatible)
    assert re.search(r"^\s*recent conversations\s+\d+.*1 session", out(result), re.MULTILINE), out(result)
    assert re.search(r"^\s*user profile\s+\d+.*auto", out(result), re.MULTILINE), out(result)

    # Another turn in A, within the interval: no new summary, and A is not sent its own digest.
    assert run_zeph("ask", "--session", "1", "Zeta question 7", env=compatible).returncode == 0
    assert not any("<recent_conversation_memory>" in (m["content"] or "") for m in chat_requests(fake_server)[-1].json["messages"])
    assert model.kinds.count("digest") == 1

    # zeph profile shows the profile and the summaries.
    result = run_zeph("profile", "show", env=compatible)
    assert out(result).strip() == PROFILE and "(auto)" in err(result)
    result = run_zeph("profile", "sessions", env=compatible)
    assert result.returncode == 0 and "* #1" in out(result) and DIGEST in out(result)
