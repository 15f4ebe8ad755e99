"""Cross-session summaries and the user profile end to end, through the real `zeph ask` and the
wire-level fake model: six turns in session A make a summary request, sent by a detached worker
after `zeph ask` has printed the reply and exited (summarizing delays neither), and session B is sent A's digest as
<recent_conversation_memory> and the profile as <user_profile_memory>, among the per-turn blocks before the running turn."""

from __future__ import annotations

import json
import re
import threading
import time

from tests.chat_wire import chat_requests
from tests.cli_helpers import db_rows_safe, err, out, run_zeph
from tests.fakes.server import RecordedRequest
from tests.scripted_model import completion, prompt_of, text_reply

DIGEST = "The user is designing a tokenizer for the Zeta language; keywords are still open."
PROFILE = "- Works on the Zeta tokenizer and its keywords\n- Designs languages"


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
        result = run_zeph("ask", *(["-c"] if n > 1 else []), f"Zeta tokenizer keywords question {n}", env=compatible)
        assert result.returncode == 0, err(result)
    assert "digest" not in model.kinds  # five user turns: too few

    # The sixth turn: zeph ask prints the reply and exits while the summary request is still
    # unanswered — a detached worker process makes the summary, and waits for it, not the command.
    result = run_zeph("ask", "-c", "Zeta tokenizer keywords question 6", env=compatible)
    assert result.returncode == 0, err(result)
    assert "Reply to Zeta tokenizer keywords question 6." in out(result)
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
    assert "Zeta tokenizer keywords question 1" in prompt_of(summary_request.json) and "Reply to Zeta tokenizer keywords question 6." in prompt_of(summary_request.json)

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
    assert re.search(r'- "Zeta tokenizer keywords question 1" \(\d{4}-\d\d-\d\d, this project\): ' + re.escape(DIGEST), contents[recent_at])
    assert "- Works on the Zeta tokenizer and its keywords" in contents[profile_at]
    assert model.kinds.count("digest") == 1  # B has one user turn: not summarized

    # zeph context (of B, the latest session) shows both blocks.
    result = run_zeph("context", env=compatible)
    assert re.search(r"^\s*recent conversations\s+\d+.*1 session", out(result), re.MULTILINE), out(result)
    assert re.search(r"^\s*user profile\s+\d+.*auto", out(result), re.MULTILINE), out(result)

    # Another turn in A, within the interval: no new summary, and A is not sent its own digest.
    assert run_zeph("ask", "--session", "1", "Zeta tokenizer keywords question 7", env=compatible).returncode == 0
    assert not any("<recent_conversation_memory>" in (m["content"] or "") for m in chat_requests(fake_server)[-1].json["messages"])
    assert model.kinds.count("digest") == 1

    # zeph profile shows the profile and the summaries.
    result = run_zeph("profile", "show", env=compatible)
    assert out(result).strip() == PROFILE and "(auto)" in err(result)
    result = run_zeph("profile", "sessions", env=compatible)
    assert result.returncode == 0 and "* #1" in out(result) and DIGEST in out(result)


CODE_REPLY = "```python\nimport zeta\ntokens = zeta.tokenize(source)\n```"
GOOD_DIGEST = "The user designs the tokenizer of the Zeta language; how keywords are tokenized is still open."
BOILERPLATE = "I'm here to help you with whatever your needs are. Feel free to ask me anything!"


class Checked:
    """Chat replies echo the prompt but for the code question; session summaries copy the session's last
    reply when it is code, else are a good summary; the profile update is assistant boilerplate."""

    def __call__(self, request: RecordedRequest):
        body = request.json
        if body.get("stream"):
            asked = body["messages"][-1]["content"]
            return text_reply(CODE_REPLY if "show the code" in asked else f"Reply to {asked}.")
        prompt = prompt_of(body)
        if prompt.startswith("Write what the conversation below is about"):
            return completion(CODE_REPLY if "import zeta" in prompt else GOOD_DIGEST)
        if prompt.startswith("You maintain a short profile"):
            return completion(BOILERPLATE)
        return None


def _wait_for(sql: str, deadline: float) -> list[dict]:
    while time.monotonic() < deadline:
        rows = db_rows_safe(sql)
        if rows:
            return rows
        time.sleep(0.3)
    raise AssertionError(f"nothing came of {sql}")


def test_a_copied_reply_and_a_boilerplate_profile_are_discarded_and_zeph_profile_says_why(fake_server, compatible):
    env = {**compatible, "ZEPH_MEMORY_SEMANTIC_ENABLED": "false", "ZEPH_MEMORY_CROSS_SESSION_ENABLED": "true",
           "ZEPH_MEMORY_CROSS_SESSION_MIN_USER_TURNS": "2"}
    fake_server.respond_with(Checked())
    deadline = time.monotonic() + 60
    # Session 1: a good summary; the profile update made from it is boilerplate.
    for n, prompt in enumerate(["How should the Zeta language tokenizer handle keywords?",
                                "Should Zeta keywords be reserved in the tokenizer?"]):
        assert run_zeph("ask", *(["-c"] if n else []), prompt, env=env).returncode == 0
    _wait_for("select 1 from user_profile where discarded != ''", deadline)
    # Session 2: its last reply is code, and its summary copies it.
    for n, prompt in enumerate(["How do I call the Zeta tokenizer from Python?", "Please show the code."]):
        assert run_zeph("ask", *(["-c"] if n else []), prompt, env=env).returncode == 0
    _wait_for("select 1 from session_digests where conversation_id = 2 and discarded != ''", deadline)

    result = run_zeph("profile", "show", env=env)
    assert result.returncode == 0 and out(result) == ""  # nothing was kept
    assert re.search(r"the last automatic update \(.+ UTC\) was discarded: generic assistant text \(“I'm here to "
                     r"help”\), not about the user: “I'm here to help you", err(result)), err(result)
    assert "1 session summary was discarded: zeph profile sessions says why" in err(result)
    result = run_zeph("profile", "sessions", env=env)
    text = out(result)
    assert "* #1" in text and GOOD_DIGEST in text
    assert "#2" in text and "no summary: the one made was discarded: copies a reply of the session instead of " \
                            "summarizing: “```python import zeta" in text, text
    data = json.loads(out(run_zeph("profile", "show", "--json", env=env)))
    assert data["text"] == "" and data["last_update_discarded"].startswith("generic assistant text")

    # A new session gets session 1's summary, and neither the code nor the boilerplate.
    assert run_zeph("ask", "What did we decide about keywords?", env=env).returncode == 0
    sent = "\n".join(m["content"] or "" for m in chat_requests(fake_server)[-1].json["messages"])
    assert GOOD_DIGEST in sent and "import zeta" not in sent and "here to help" not in sent
    assert "<user_profile_memory>" not in sent


def test_with_the_embedded_summarizer_summaries_and_the_profile_are_off_and_zeph_context_says_how_to_turn_them_on(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("ZEPH_MEMORY_CROSS_SESSION_ENABLED")  # the default, as a new user has it
    local = {"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MAX_TOKENS": "2"}
    assert run_zeph("ask", "hi", env=local, cwd=tmp_path, timeout=600).returncode == 0
    result = run_zeph("context", env=local, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, err(result)
    assert ("session summaries and the user profile: off — the summary model is the small embedded one "
            "(SmolLM2-135M-Instruct.Q4_1.gguf)") in out(result)
    assert 'to turn them on, configure a summary provider: [llm] summary_model = "ollama/llama3.2"' in out(result)
    assert "none are made: the summary model is the small embedded one" in err(run_zeph("profile", "sessions", env=local))
    assert "not made: the summary model is the small embedded one" in err(run_zeph("profile", "show", env=local))
    summarizer = {**local, "ZEPH_LLM_SUMMARY_MODEL": "ollama/llama3.2"}  # another summary model: on
    result = run_zeph("context", env=summarizer, cwd=tmp_path, timeout=600)
    assert result.returncode == 0 and "off —" not in out(result), out(result)
    assert "none are made" not in err(run_zeph("profile", "sessions", env=summarizer))
