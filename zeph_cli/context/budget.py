"""The token budget of one request, derived from config and the model's window.

Invariant: pure arithmetic; `context_budget_tokens = 0` means the model's
window (auto) unless `auto_budget` is off, in which case there is no budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..tokens import Calibration, TokenCounter

RESPONSE_RESERVE_FRACTION = 0.20


@dataclass(frozen=True)
class Budget:
    """The context's token budget, the reply's reserve and the compaction thresholds."""
    total: int  # 0 = unlimited
    reserved_for_response: int
    soft_threshold: float
    hard_threshold: float

    @property
    def available(self) -> int:
        """Tokens the prompt may use (total minus the response reserve); 0 = unlimited."""
        return max(self.total - self.reserved_for_response, 0) if self.total else 0


def compute_budget(
    *,
    configured_tokens: int,
    auto_budget: bool,
    window: int,
    soft_threshold: float,
    hard_threshold: float,
) -> Budget:
    total = configured_tokens or (window if auto_budget else 0)
    reserved = int(total * RESPONSE_RESERVE_FRACTION)
    return Budget(total, reserved, soft_threshold, hard_threshold)


# Where a window came from (`ModelProfile.window_source`), by the start of its text.
_SERVER_SET = ("server: ", "learned: ")  # a server's own setting, or what its errors and replies taught
_LOCAL = "local model n_ctx"
_GUESS = "default guess"


_OLLAMA_CONTEXT = ("give the model a larger num_ctx (PARAMETER num_ctx in its Modelfile: zeph reads it, and "
                   "without one uses at most 8,192 tokens)")
_SERVER_CONTEXT = "give the model's server a larger context (llama.cpp's llama-server: -c/--ctx-size; llama-cpp-python: --n_ctx)"
_LOCAL_CONTEXT = "raise n_ctx of the local provider ([[llm.providers]] n_ctx)"


def more_room(budget: int, window: int, window_source: str, kind: str = "") -> str:
    """What gives a request more room, given where the limit is: zeph's own budget below the window, a
    server's context setting (Ollama's: zeph sends the window as num_ctx), the embedded model's n_ctx, or the
    model itself (its window is what it is). `kind`: the provider's (ollama, local, compatible…)."""
    guess = not window_source or window_source.startswith(_GUESS)
    if budget and budget < window:
        if guess:
            return "raise [memory] context_budget_tokens if the model's window is larger (zeph does not know it)"
        return f"raise [memory] context_budget_tokens (the model's window is {window:,})"
    if kind == "ollama" or "ollama" in window_source:
        return _OLLAMA_CONTEXT
    if kind == "local" or window_source.startswith(_LOCAL):
        return _LOCAL_CONTEXT
    if window_source.startswith(_SERVER_SET):
        return _SERVER_CONTEXT
    if guess:
        return (f"set [memory] context_budget_tokens to the model's window if it is larger than the {window:,} "
                "tokens zeph assumes")
    return "use a model with a larger window"


def server_room(kind: str, budget: int, window: int) -> str:
    """What gives room when the server's own window ran out before zeph's budget did (it stopped a reply)."""
    if kind == "ollama":  # zeph sends its budget as num_ctx: a larger budget is a larger window, up to the model's
        return ("raise [memory] context_budget_tokens (zeph sends it as num_ctx)" if budget and budget < window
                else _OLLAMA_CONTEXT)
    if kind == "local":
        return _LOCAL_CONTEXT
    return _SERVER_CONTEXT


class RequestBudget(NamedTuple):
    """One request's budget as the assembler takes it: the limits, how tokens are counted (the counter and
    the model's calibration), the model's window and the tools the request offers with their schemas' tokens."""
    limits: Budget
    counter: TokenCounter
    calibration: Calibration = Calibration()  # never changed: one shared default
    window: int = 0
    tools_tokens: int = 0  # raw estimate of the offered tools' schemas
    tools: frozenset[str] = frozenset()  # the offered tools, by name

    @property
    def available(self) -> int:
        return self.limits.available
