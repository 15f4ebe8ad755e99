"""Embeddings from OpenAI or an OpenAI-compatible server: `/v1/embeddings` through the official SDK.

Invariant: every request is one sync `embeddings.create` call (the SDK's own retries,
`llm.max_retries`, and `llm.timeout_secs` apply) asking for float vectors; the rows
come back in input order, unit length; every failure leaves as a one-line
`EmbeddingError` (see `remote`), never as an SDK exception.
"""

from __future__ import annotations


import openai

from .... import errors
from ....providers.openai import error_text
from .client import RemoteEmbedder
from .remote import SHORT_CHARS


class OpenAIEmbedder(RemoteEmbedder):
    """`embedding_model` at `settings.base_url`, with `settings`' key, timeout and retries."""

    wire = "openai"

    def _make_client(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key=self.settings.api_key or "not-needed",
            base_url=self.settings.base_url,
            timeout=self.settings.timeout_secs,
            max_retries=self.settings.max_retries,
        )

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        try:
            return self._request(batch)
        except _TooLong as exc:
            if max(len(text) for text in batch) <= SHORT_CHARS:
                raise exc.error from None
        try:  # once more with every text cut short
            return self._request([text[:SHORT_CHARS] for text in batch])
        except _TooLong as exc:
            raise exc.error from None

    def _request(self, batch: list[str]) -> list[list[float]]:
        try:
            reply = self._sdk().embeddings.create(model=self.embedding_model, input=batch, encoding_format="float")
        except openai.APIStatusError as exc:
            text = error_text(exc.body, exc.message)
            too_long = exc.code == "context_length_exceeded" or errors.is_context_length_message(text)
            error = self._fail.status(exc.status_code, text, too_long=too_long)
            raise (_TooLong(error) if too_long else error) from None
        except openai.APITimeoutError:
            raise self._fail.timeout(self.settings.timeout_secs) from None
        except openai.APIConnectionError as exc:
            reason = errors.reason_of(exc.__cause__) if exc.__cause__ is not None else exc.message
            raise self._fail.unreachable(reason) from None
        except (openai.OpenAIError, ValueError) as exc:  # an undecodable or malformed reply
            raise self._fail.bad_reply(errors.reason_of(exc)) from None
        if isinstance(reply, str):  # the SDK hands back a body that is not JSON as text
            raise (self._fail.html_page() if "<html" in reply[:500].lower() else self._fail.bad_reply(reply[:200]))
        data = getattr(reply, "data", None)
        if not isinstance(data, list):
            raise self._fail.bad_reply(f"no embeddings in {str(reply)[:200]!r}")
        try:
            return [list(item.embedding) for item in sorted(data, key=lambda item: item.index)]
        except (AttributeError, TypeError) as exc:
            raise self._fail.bad_reply(errors.reason_of(exc)) from None


class _TooLong(Exception):
    """The endpoint said the batch does not fit the model; `error` says so to the user."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error
