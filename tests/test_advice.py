"""Advice that works when followed: each limit a reply or the tools ran into is named by the setting that
would lift it — zeph's llm.max_tokens, zeph's budget, the server's context or the model itself."""

from __future__ import annotations

import pytest

from tests.agent_helpers import close_agents  # noqa: F401  (autouse: the agents a test builds are closed after it)
from tests.cli_helpers import err, out, run_zeph
from tests.fakes import llamacpp_wire, openai_wire
from zeph_cli.agent.replies import LengthStop, length_stop_notice
from zeph_cli.context.budget import more_room


def _stop(**changes) -> LengthStop:
    facts = dict(sent_cap=1_024, configured_cap=1_024, reply_tokens=1_024, prompt_tokens=700, budget=8_192,
                 window=8_192, window_from_model=True, reported=True)
    return LengthStop(**{**facts, **changes})


# ---- the length stop, case by case ---------------------------------------------------------------


def test_a_reply_that_used_its_whole_cap_names_llm_max_tokens():
    assert length_stop_notice(_stop(max_tokens_setting=1_024)) == (
        "the reply stopped at its length limit of 1,024 tokens: raise llm.max_tokens for longer replies")


def test_a_reply_the_server_stopped_short_of_its_cap_names_the_servers_context():
    notice = length_stop_notice(_stop(reply_tokens=279, prompt_tokens=745, kind="compatible"))
    assert notice.startswith("the server stopped the reply after about 279 tokens, short of its 1,024-token limit")
    assert "(1,024 tokens with the prompt, as it reported)" in notice
    assert "-c/--ctx-size" in notice and "--n_ctx" in notice and "llm.max_tokens" not in notice
    ollama = length_stop_notice(_stop(reply_tokens=279, kind="ollama", budget=4_096, window=8_192))
    assert "raise [memory] context_budget_tokens (zeph sends it as num_ctx)" in ollama  # zeph sets Ollama's window
    local = length_stop_notice(_stop(reply_tokens=279, kind="local"))
    assert "n_ctx of the local provider" in local and "llama-server" not in local


def test_counted_replies_are_judged_with_room_for_another_tokenizer():
    """zeph's count of a reply that really filled its 1,024-token cap can be a fifth lower: still the cap."""
    assert "llm.max_tokens" in length_stop_notice(_stop(reply_tokens=820, reported=False, max_tokens_setting=1_024))
    notice = length_stop_notice(_stop(reply_tokens=279, reported=False))
    assert notice.startswith("the server stopped the reply") and "as it reported" not in notice


def test_a_cap_the_budget_squeezed_names_what_would_give_it_room():
    squeezed = dict(sent_cap=300, configured_cap=4_096, reply_tokens=300, prompt_tokens=700)
    own_budget = length_stop_notice(_stop(**squeezed, budget=1_024, window=8_192))
    assert own_budget.startswith("the reply stopped at 300 tokens, all that the 1,024-token context budget left "
                                 "after the 700-token prompt")
    assert own_budget.endswith("raise [memory] context_budget_tokens (the model's window is 8,192)")
    server = length_stop_notice(_stop(**squeezed, budget=1_024, window=1_024, kind="compatible"))
    assert server.endswith("or give the model's server a larger context (llama.cpp's llama-server: -c/--ctx-size; "
                           "llama-cpp-python: --n_ctx)") and "context_budget_tokens" not in server
    guessed = length_stop_notice(_stop(**squeezed, budget=1_024, window=8_192, window_from_model=False))
    assert "if the model's server has a larger context, raise [memory] context_budget_tokens" in guessed


def test_half_a_small_window_is_the_most_zeph_asks_for():
    notice = length_stop_notice(_stop(sent_cap=512, configured_cap=512, reply_tokens=512, window=1_024))
    assert notice.startswith("the reply stopped at 512 tokens, half of the model's 1,024-token window, the most zeph "
                             "asks for: for longer replies, give the model's server a larger context")


@pytest.mark.parametrize(("budget", "window", "source", "advice"), [
    (4_000, 8_192, "server: llama.cpp /props n_ctx", "raise [memory] context_budget_tokens (the model's window is 8,192)"),
    (1_024, 1_024, "server: llama.cpp /props n_ctx", "give the model's server a larger context (llama.cpp's llama-server"),
    (8_192, 8_192, "server: ollama /api/show context_length 131072, capped at 8192", "give the model a larger num_ctx"),
    (1_024, 1_024, "learned: the server's context-length error", "give the model's server a larger context"),
    (2_048, 2_048, "local model n_ctx", "raise n_ctx of the local provider ([[llm.providers]] n_ctx)"),
    (200_000, 200_000, "model table", "use a model with a larger window"),
    (8_192, 8_192, "default guess (unknown model)", "set [memory] context_budget_tokens to the model's window if"),
    (4_000, 8_192, "default guess (unknown model)", "raise [memory] context_budget_tokens if the model's window is larger"),
])
def test_more_room_names_where_the_limit_is(budget, window, source, advice):
    assert more_room(budget, window, source).startswith(advice)


# ---- through the real zeph ------------------------------------------------------------------------


def test_a_reply_cut_by_llama_cpp_pythons_window_says_to_raise_the_servers_context(fake_server, compatible):
    """llama-cpp-python's server at --n_ctx 1024 ends a reply with finish_reason "length" when prompt and reply
    fill its window, whatever max_tokens said, and streams no usage."""
    fake_server.queue(llamacpp_wire.python_server_text_stream(["Rome was founded, ", "legend says, in 753"],
                                                              finish_reason="length"))
    result = run_zeph("ask", "Tell me about Rome.", env=compatible)
    assert result.returncode == 0, err(result)
    assert out(result) == "Rome was founded, legend says, in 753\n"
    (warning,) = [line for line in err(result).splitlines() if line.startswith("zeph: warning:")]
    assert warning.startswith("zeph: warning: the server stopped the reply after about ")
    assert "--n_ctx" in warning and "llm.max_tokens" not in warning


def test_tools_that_cannot_fit_a_servers_small_window_point_at_the_server(fake_server, compatible, tmp_path):
    """A llama.cpp server that says it serves 1,024 tokens: zeph's budget is that window, so raising
    context_budget_tokens would change nothing; the server's context is what to raise."""
    fake_server.route("/props", llamacpp_wire.llama_server_props(n_ctx=1_024))
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["Hi."])))
    result = run_zeph("ask", "hello", env=compatible, cwd=tmp_path)
    assert result.returncode == 0, err(result)
    (warning,) = [line for line in err(result).splitlines() if "running without tools" in line]
    assert "give the model's server a larger context (llama.cpp's llama-server: -c/--ctx-size" in warning
    assert "context_budget_tokens" not in warning


# ---- a server that leaves the tool schemas out -------------------------------------------------------


def test_a_report_far_below_the_request_with_tools_means_they_were_left_out():
    from zeph_cli.context.tool_fit import server_left_out_tools

    assert server_left_out_tools(3_129, 1_824, 1_305)  # what llama-cpp-python reported for such a request
    assert not server_left_out_tools(3_129, 1_824, 2_900)  # it saw them (its tokenizer counts a little less)
    assert not server_left_out_tools(3_129, 300, 2_700)  # schemas too small a part to tell
    assert not server_left_out_tools(3_129, 0, 1_000)
    assert not server_left_out_tools(3_129, 1_824, 12)  # a figure that matches nothing tells nothing


def test_a_server_that_left_the_tools_out_is_said_once_and_offered_no_tools_again(fake_server, compatible, tmp_path):
    """llama-cpp-python's server with its model's own chat template drops `tools` from the request and reports
    the prompt it evaluated: zeph sees the gap, says so once, and stops offering tools that turn on."""
    def reply(prompt_tokens: int):
        return openai_wire.json_response(openai_wire.completion(content="I read the file: it says hello.",
                                                                usage=(prompt_tokens, 9, 0)))

    fake_server.queue(reply(400), reply(400))
    first = run_zeph("ask", "--no-stream", "What does notes.txt say?", env=compatible, cwd=tmp_path)
    assert first.returncode == 0, err(first)
    (warning,) = [line for line in err(first).splitlines() if line.startswith("zeph: warning:")]
    assert warning.startswith("zeph: warning: running without tools: compatible at ")
    assert "left the tool schemas out: it counted 400 prompt tokens" in warning and "--chat_format" in warning
    second = run_zeph("ask", "--no-stream", "-c", "And now?", env=compatible, cwd=tmp_path)
    assert second.returncode == 0 and "left the tool schemas out" not in err(second)  # said once


async def test_after_the_server_left_the_tools_out_the_next_request_offers_none(fake_server, tmp_path):
    from tests.test_agent import collect, make_agent

    fake_server.queue(*[openai_wire.stream_response(openai_wire.text_chunks(["Made up."], usage=(400, 3, 0)))] * 2)
    agent = make_agent(fake_server, tmp_path)
    conversation = agent.new_conversation("hello")
    await collect(agent, conversation, "What does notes.txt say?")
    await collect(agent, conversation, "And the other file?")
    first, second = [r.json for r in fake_server.requests_to("/v1/chat/completions")]
    assert first.get("tools") and not second.get("tools")
    assert "left the tool schemas out" in (agent.tools_unavailable or "")
