"""Token usage as shown to the user: what the provider reported, or zeph's own estimate, marked.

Invariant: pure values, no I/O. A figure the provider did not report (a
compatible server streaming without usage) is never shown as 0: the input
stands in as the request's estimated tokens (its `ContextReport.used_tokens`),
the output as the reply text counted by `REPLY_ESTIMATE`, and each stand-in is
flagged so it is printed with `~` and reported as estimated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import Usage
from ..tokens import ApproximateCounter

# Streamed reply text is only estimated: counting must cost nothing per token.
REPLY_ESTIMATE = ApproximateCounter()


def reply_tokens(text: str) -> int:
    """The estimated tokens of reply text (the one counter for streamed text, CLI and chat app alike)."""
    return REPLY_ESTIMATE.count(text) if text else 0


@dataclass(frozen=True)
class ShownUsage:
    """Usage with the unreported figures estimated; `*_estimated` says which ones are."""

    input_tokens: int = 0  # every prompt token, cached ones included
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    input_estimated: bool = False
    output_estimated: bool = False

    @property
    def estimated(self) -> bool:
        return self.input_estimated or self.output_estimated

    def __add__(self, other: "ShownUsage") -> "ShownUsage":
        return ShownUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.input_estimated or other.input_estimated,
            self.output_estimated or other.output_estimated,
        )


def shown_usage(usage: Usage, request_tokens: int | None, reply_estimate: int) -> ShownUsage:
    """One request's usage: reported figures as they are, missing ones from the estimates.

    `request_tokens` is the request's own estimate (None: not known), `reply_estimate`
    the reply's; a figure stays 0 only when there is nothing to estimate it from.
    """
    input_estimated = not usage.prompt_tokens and request_tokens is not None and request_tokens > 0
    output_estimated = not usage.output_tokens and reply_estimate > 0
    return ShownUsage(
        request_tokens if input_estimated and request_tokens is not None else usage.prompt_tokens,
        reply_estimate if output_estimated else usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        input_estimated,
        output_estimated,
    )


def usage_dict(shown: ShownUsage, reported: Usage) -> dict[str, int | bool]:
    """`--json`'s usage: the reported figures, or, when the provider left them out, the estimates
    with `"estimated": true` (the JSON keys are the same either way)."""
    data: dict[str, int | bool] = dict(reported.to_dict())
    if shown.input_estimated:  # input_tokens leaves out cached tokens, as the reported figure does
        data["input_tokens"] = shown.input_tokens - shown.cache_read_tokens - shown.cache_write_tokens
    if shown.output_estimated:
        data["output_tokens"] = shown.output_tokens
    data["estimated"] = shown.estimated
    return data
