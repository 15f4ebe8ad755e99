"""The embedded provider: a GGUF model run in-process by llama-cpp-python.

Invariant: the model is loaded once per provider (on a thread of its own, started as soon as the config
names it: `local_loader`), generation runs on a worker
thread (one request at a time) and is stopped as soon as the consumer stops
reading; token counts come from the model's own tokenizer. The evaluated system prefix is kept
across runs in the cache dir (`local_prefix`), so a run evaluates only what follows it. There is
no HTTP: a request's `wire_tap` is handed the very arguments `create_chat_completion` gets.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .. import errors
from ..images import TEXT_ONLY, for_model
from ..messages import Message, StreamEnd, StreamEvent, TextDelta, ToolCallPart, Usage, UsageUpdate
from ..models import ModelProfile, profile_for
from ..process_exit import abandon_at_exit
from ..tokens import FunctionCounter, TokenCounter
from .base import ChatRequest, Provider
from .local_loader import ModelLoad, spec_for, take_early
from .local_prefix import PrefixOutcome, PrefixStore, common_prefix, prefix_key, prepare_prefix
from .settings import ProviderSettings

log = logging.getLogger("zeph.local")

# Small local models loop without a mild repetition penalty (llama.cpp's default is 1.0).
REPEAT_PENALTY = 1.1


def to_local_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Chat-template messages: one leading system message (chat templates of small models expect
    at most one) of the system text; each `context` message before a message (per-turn blocks, time
    landmarks, worldbook entries, compaction summaries) keeps its place as text of the user-side
    message that follows it — or, before an assistant reply, at the end of the user turn before it
    (or as its own user turn when none precedes it), so nothing the history carries comes after
    the reply it precedes — so the system message and the history before the running turn stay the
    same from turn to turn (llama.cpp reuses that prefix); trailing ones (the enhancement prompt,
    fixed for the session) end the system message; tool traffic rendered as plain text, and every
    image as its placeholder (the embedded model reads text only)."""
    messages = tuple(for_model(m, TEXT_ONLY) for m in messages)
    system: list[str] = []
    out: list[dict[str, Any]] = []
    waiting: list[str] = []  # context text for the next user-side message
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        if message.role == "context":
            waiting.append(message.content)
            continue
        if message.role == "tool":
            text = "\n".join(
                f"[tool result {r.name or r.tool_call_id}]\n{r.content}" for r in message.tool_results
            )
            role = "user"
        else:
            text = message.content
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            if calls:
                text += "".join(f"\n[called tool {c.name} with {c.arguments}]" for c in calls)
            role = message.role
        if role == "user" and waiting:
            text, waiting = "\n\n".join([*waiting, text]), []
        elif role == "assistant" and waiting:  # context before a reply (a compaction summary, an entry at depth)
            if out and out[-1]["role"] == "user":  # stays before the reply, at the end of the user turn it follows
                out[-1]["content"] = "\n\n".join([out[-1]["content"], *waiting])
            else:  # nothing of the user's before it: its own user turn, so the reply follows what it answers
                out.append({"role": "user", "content": "\n\n".join(waiting)})
            waiting = []
        out.append({"role": role, "content": text})
    # After the last message (the enhancement prompt, the same all session): at the end of the system
    # message, where a small model takes it as an instruction rather than text to continue.
    system += waiting
    if system:
        out.insert(0, {"role": "system", "content": "\n\n".join(system)})
    return out


def completion_kwargs(request: ChatRequest) -> dict[str, Any]:
    """The arguments `Llama.create_chat_completion` is called with for `request`."""
    kwargs: dict[str, Any] = {
        "messages": to_local_messages(request.messages),
        "max_tokens": request.max_tokens,
        "stream": True,
        "repeat_penalty": REPEAT_PENALTY,
    }
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    return kwargs


class LocalProvider(Provider):
    kind = "local"
    supports_tools = False

    def __init__(
        self, settings: ProviderSettings, *, n_ctx: int | None = None, prefix_cache_dir: Path | None = None
    ) -> None:
        super().__init__(settings)
        spec = spec_for(settings, n_ctx=n_ctx, prefix_cache_dir=prefix_cache_dir)
        self._n_ctx = spec.n_ctx
        # the load started as soon as the config named this model, else one run by the first to need it
        self._loading = take_early(spec) or ModelLoad(spec)
        self._llama: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._chat_formatters: dict[bool, Any] = {}
        self._prefix_cache_dir = Path(spec.prefix_dir)
        self.last_prefix: PrefixOutcome | None = None  # how the last request's system prefix got into the model

    @property
    def endpoint(self) -> str:
        return self.settings.model

    @property
    def display_model(self) -> str:
        return Path(self.settings.model).name

    def _load(self) -> Any:
        with self._load_lock:
            if self._llama is None:
                self._llama = self._loading.result()
            return self._llama

    def _count(self, text: str) -> int:
        return len(self._load().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def token_counter(self) -> TokenCounter:
        self._load()
        return FunctionCounter(f"gguf:{self.display_model}", self._count)

    async def _loaded(self) -> Any:
        """The model, waited for (or loaded, when nothing started it) on a thread the process does not wait for
        at exit: Ctrl+C while a large model loads ends zeph at once, not when the load is done."""
        if self._llama is not None:
            return self._llama
        loaded: concurrent.futures.Future = concurrent.futures.Future()

        def wait() -> None:
            try:
                loaded.set_result(self._load())
            except Exception as exc:  # noqa: BLE001 — handed to the waiter, as to_thread would
                loaded.set_exception(exc)

        thread = threading.Thread(target=wait, name="zeph-local-wait", daemon=False)
        abandon_at_exit(thread)  # not a daemon: it may run the load itself, and teardown never runs under one
        thread.start()
        return await asyncio.wrap_future(loaded)  # a loop closed meanwhile is simply not told

    async def profile(self) -> ModelProfile:
        llama = await self._loaded()
        window = int(llama.n_ctx())
        known = profile_for(self.settings.model)
        output = min(known.output_limit if known.known else 2048, window // 2)
        return ModelProfile(self.settings.model, window, output, window_source="local model n_ctx")

    def _formatter(self, llama: Any, generation_prompt: bool = True) -> Any:
        """The model's own chat template, rendered as llama.cpp renders it (None without one)."""
        if generation_prompt not in self._chat_formatters:
            template = (llama.metadata or {}).get("tokenizer.chat_template")
            if not template:
                return None
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return llama.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

            self._chat_formatters[generation_prompt] = Jinja2ChatFormatter(
                template=template,
                eos_token=text(llama.token_eos()),
                bos_token=text(llama.token_bos()),
                add_generation_prompt=generation_prompt,
            )
        return self._chat_formatters[generation_prompt]

    def _render_tokens(self, llama: Any, chat: list[dict[str, Any]], *, generation_prompt: bool = True) -> list[int]:
        prompt = self._formatter(llama, generation_prompt)(messages=chat).prompt
        return llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def _prompt_tokens(self, llama: Any, chat: list[dict[str, Any]]) -> tuple[int, list[int]]:
        """Exact prompt size and its stable prefix (the system message as the template renders it): the chat
        template rendered and tokenized as llama.cpp does; an estimate and no prefix if that fails."""
        try:
            if self._formatter(llama) is not None:
                tokens = self._render_tokens(llama, chat)
                prefix: list[int] = []
                if chat and chat[0]["role"] == "system" and len(chat) > 1:
                    system = self._render_tokens(llama, chat[:1], generation_prompt=False)
                    prefix = tokens[: common_prefix(system, tokens)]
                return len(tokens), prefix
        except Exception:  # noqa: BLE001 — template quirks: fall back to an estimate below
            pass
        return sum(self._count(m["content"]) + 4 for m in chat), []

    def _reuse_prefix(self, llama: Any, prefix: list[int]) -> None:
        """Restore or evaluate (and save) the system prefix; a failing cache only costs the saving."""
        store = None
        key = ""
        try:
            store = PrefixStore(self._prefix_cache_dir)
            key = prefix_key(self._loading.spec.prefix_identity(int(llama.n_ctx())), prefix)
        except OSError:
            store = None
        try:
            outcome = prepare_prefix(llama, prefix, store, key)
            restored, self._loading.restored_prefix = self._loading.restored_prefix, 0
            if outcome.source == "memory" and restored == len(prefix):
                outcome = PrefixOutcome("disk", outcome.prefix_tokens, 0)  # restored from disk after loading
            self.last_prefix = outcome
        except Exception as exc:  # noqa: BLE001 — llama.cpp refused the state: evaluate the prompt as if there were no cache
            llama.reset()
            self.last_prefix = PrefixOutcome("none", len(prefix), 0)
            log.info("prefix reuse failed: %s", exc)

    def _generate(self, kwargs: dict[str, Any], emit, stop: threading.Event) -> None:
        with self._run_lock:
            llama = self._load()
            chat = kwargs["messages"]
            prompt_tokens, prefix = self._prompt_tokens(llama, chat)
            if prompt_tokens + 1 > llama.n_ctx():
                raise errors.ContextLengthExceeded(
                    f"local: the prompt ({prompt_tokens} tokens) exceeds the context window "
                    f"of {llama.n_ctx()} tokens",
                    provider="local",
                    limit=int(llama.n_ctx()),
                )
            self._reuse_prefix(llama, prefix)
            completion_tokens = 0
            finish = "stop"
            for chunk in llama.create_chat_completion(**kwargs):
                if stop.is_set():
                    finish = "cancelled"
                    break
                choice = chunk["choices"][0]
                text = choice.get("delta", {}).get("content")
                if text:
                    completion_tokens += 1
                    emit(TextDelta(text))
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
            emit(UsageUpdate(Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens)))
            emit(StreamEnd(finish))

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        stop = threading.Event()
        done = object()
        kwargs = completion_kwargs(request)
        if request.wire_tap is not None:  # what llama.cpp is handed is this request's "wire"
            request.wire_tap(f"llama_cpp create_chat_completion {self.settings.model}", kwargs)

        def emit(event: Any) -> None:
            if stop.is_set():
                return  # nobody is reading any more (and the loop may be closed)
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:  # the event loop closed under an abandoned generation
                stop.set()

        def worker() -> None:
            try:
                self._generate(kwargs, emit, stop)
            except errors.ZephError as exc:
                emit(exc)
            except ValueError as exc:
                text = str(exc)
                if errors.is_context_length_message(text) or "exceed context window" in text:
                    emit(
                        errors.ContextLengthExceeded(
                            f"local: {text}", provider="local", limit=errors.context_limit_from_message(text)
                        )
                    )
                else:
                    emit(errors.BadResponse(f"local model error: {text}", provider="local"))
            except Exception as exc:  # noqa: BLE001 — llama.cpp failures must not kill the caller's loop
                emit(errors.ProviderError(f"local model error: {exc}", provider="local"))
            finally:
                emit(done)

        thread = threading.Thread(target=worker, name="zeph-local-generate", daemon=True)
        self._workers.add(thread)
        thread.start()
        try:
            while True:
                event = await queue.get()
                if event is done:
                    return
                if isinstance(event, Exception):
                    raise event
                yield event
        finally:
            stop.set()  # the worker stops at the next token; aclose() waits for it

    async def aclose(self) -> None:
        """Wait for abandoned generations to stop: freeing the model under a
        running llama.cpp call would crash the process at exit."""
        workers, self._workers = self._workers, set()
        for thread in workers:
            await asyncio.to_thread(thread.join, 30)
