"""How tool schemas fit a small budget: in full, compact, or not at all.

Invariant: pure; the choice depends on the budget and the schemas only (not
on the conversation), so it is the same every turn and the prompt prefix stays
stable for provider caches. Schemas never take more than a quarter of the
prompt's share of the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

TOOLS_MAX_SHARE = 0.25

ToolForm = Literal["full", "compact", "none"]


def tool_form(capacity: int, full_tokens: int, compact_tokens: int) -> ToolForm:
    """`capacity` is the prompt's share of the budget (0 = no budget: always in full)."""
    if not capacity or full_tokens <= capacity * TOOLS_MAX_SHARE:
        return "full"
    if compact_tokens <= capacity * TOOLS_MAX_SHARE:
        return "compact"
    return "none"


def fewest_left_out(count: int, fits: Callable[[int], bool]) -> int | None:
    """The fewest of `count` tools to leave out (least wanted first) so that `fits(left_out)` holds; None
    when leaving all of them out is not enough. `fits` must only get truer as more are left out."""
    if fits(0):
        return 0
    if not count or not fits(count):
        return None
    low, high = 1, count
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


def no_tools_warning(capacity: int, compact_tokens: int, more_room: str) -> str:
    """`more_room`: what would make the budget larger (`budget.more_room`)."""
    return (
        f"running without tools: their schemas take {compact_tokens:,} tokens even in compact form, more than a "
        f"quarter of the {capacity:,}-token prompt budget; to use file and shell tools, {more_room}"
    )


def mcp_trimmed_warning(left_out: int, mcp_tools: int, capacity: int) -> str:
    return (
        f"{left_out} of {mcp_tools} MCP tools left out: with them the tool schemas take more than a quarter of the "
        f"{capacity:,}-token prompt budget; each turn offers the ones most relevant to the message "
        "(zeph context shows how many)"
    )


# A server that drops the tool schemas (llama-cpp-python's without a function-calling chat format) reports
# about the request without them. Told apart from a tokenizer that merely counts fewer tokens than zeph's:
# the schemas must be a good part of the request, and the report no more than this much above the rest.
IGNORED_TOOLS_MIN_SHARE = 0.35  # below, a tokenizer counting a fifth less than zeph's could look the same
IGNORED_TOOLS_RANGE = (0.6, 1.15)  # the report over zeph's count of the request without its tool schemas


def server_left_out_tools(request_tokens: int, tool_tokens: int, reported_prompt_tokens: int) -> bool:
    """Whether a server's reported prompt size says it never saw the request's tool schemas: the schemas
    take over a third of the request, and the report matches the request without them (from 60% of
    zeph's count, another tokenizer, to 15% above it); a report that matches neither tells nothing."""
    if tool_tokens <= 0 or reported_prompt_tokens <= 0 or tool_tokens < request_tokens * IGNORED_TOOLS_MIN_SHARE:
        return False
    low, high = IGNORED_TOOLS_RANGE
    rest = request_tokens - tool_tokens
    return rest * low <= reported_prompt_tokens <= rest * high


def tools_left_out_notice(provider: str, endpoint: str, request_tokens: int, tool_tokens: int, reported: int) -> str:
    return (
        f"{provider} at {endpoint} left the tool schemas out: it counted {reported:,} prompt tokens for a request "
        f"of about {request_tokens:,}, {tool_tokens:,} of them tool schemas, so its model cannot call tools "
        "(llama-cpp-python's server needs --chat_format chatml-function-calling, llama.cpp's llama-server --jinja)"
    )
