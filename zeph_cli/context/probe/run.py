"""Running one compaction probe: two model calls, scored into a verdict.

Invariant: `run_probe` never raises an ordinary exception; any failure or the
whole-probe timeout becomes an "Error" result (fail open: compaction proceeds),
and only a "HardFail" result blocks compaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...config import ProbeConfig
from ..assembler import HistoryItem
from .parsing import ProbeQuestion, parse_answers, parse_questions
from .prompts import answer_prompt, question_prompt
from .scoring import Verdict, average, score_answer, verdict

# User-facing messages, worded as the spec words them.
VALIDATING_MESSAGE = "Validating compaction quality…"
REJECTED_MESSAGE = "Compaction rejected: summary quality below threshold. Original context preserved."
COMPACTED_MESSAGE = "Context compacted successfully."

MIN_QUESTIONS = 2

Ask = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class QuestionOutcome:
    question: str
    expected: str
    actual: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "expected": self.expected, "actual": self.actual, "score": self.score}


@dataclass(frozen=True)
class ProbeResult:
    """A probe's outcome; `detail` (not in the dump) says why it was skipped or failed."""

    score: float
    threshold: float
    hard_fail_threshold: float
    verdict: Verdict
    model: str
    duration_ms: int
    questions: tuple[QuestionOutcome, ...] = ()
    detail: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The `{id:04}-compaction-probe.json` debug-dump shape."""
        return {
            "score": self.score,
            "threshold": self.threshold,
            "hard_fail_threshold": self.hard_fail_threshold,
            "verdict": self.verdict,
            "model": self.model,
            "duration_ms": self.duration_ms,
            "questions": [q.to_dict() for q in self.questions],
        }


def blocks_compaction(result: ProbeResult) -> bool:
    return result.verdict == "HardFail"


def user_message(result: ProbeResult) -> str:
    """What the user sees after a probed compaction (SoftFail is a log warning only)."""
    return REJECTED_MESSAGE if blocks_compaction(result) else COMPACTED_MESSAGE


def _unanswered(questions: Sequence[ProbeQuestion]) -> tuple[QuestionOutcome, ...]:
    return tuple(QuestionOutcome(q.question, q.expected, "", 0.0) for q in questions)


async def run_probe(
    items: Sequence[HistoryItem],
    summary: str,
    ask: Ask,
    config: ProbeConfig,
    *,
    model: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> ProbeResult:
    """Probe `summary` against the original `items`: questions from the items,
    answers from the summary only, scored and judged against `config`'s thresholds.

    `ask` sends one prompt to the probe model and returns its reply; `model`
    names that model in the result (default: `config.model`). Fewer than two
    usable questions skip the probe ("Skipped"); a failure or running past
    `config.timeout_secs` for both calls together gives "Error".
    """
    started = clock()
    questions: list[ProbeQuestion] = []

    def result(kind: Verdict, score: float, outcomes: tuple[QuestionOutcome, ...], detail: str = "") -> ProbeResult:
        duration_ms = max(round((clock() - started) * 1000), 0)
        return ProbeResult(
            score, config.threshold, config.hard_fail_threshold, kind,
            model or config.model, duration_ms, outcomes, detail,
        )

    timeout = asyncio.timeout(config.timeout_secs)
    try:
        async with timeout:
            questions = parse_questions(await ask(question_prompt(items, config.max_questions)), config.max_questions)
            if len(questions) < MIN_QUESTIONS:
                detail = f"only {len(questions)} usable question(s) could be generated; at least {MIN_QUESTIONS} are needed"
                return result("Skipped", 0.0, _unanswered(questions), detail)
            answers = parse_answers(await ask(answer_prompt(summary, questions)), len(questions))
    except Exception as exc:  # noqa: BLE001 — fail open: compaction proceeds without validation
        if isinstance(exc, TimeoutError) and timeout.expired():
            detail = f"the probe did not finish within {config.timeout_secs}s"
        else:
            detail = f"the probe model call failed: {type(exc).__name__}: {exc}"
        return result("Error", 0.0, _unanswered(questions), detail)
    outcomes = tuple(
        QuestionOutcome(q.question, q.expected, a, score_answer(q.expected, a)) for q, a in zip(questions, answers)
    )
    score = average([o.score for o in outcomes])
    return result(verdict(score, config.threshold, config.hard_fail_threshold), score, outcomes)
