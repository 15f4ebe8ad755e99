"""The embedded model, loaded on a thread of its own while the rest of start-up runs.

Invariant: a `ModelLoad` imports llama_cpp and loads its model exactly once, on its own thread, then
restores the most recently saved system prefix that was written for that model (a guess the request
checks: a prefix that turns out different is replaced as before). Whoever waits on it gets the model or
the one-line `ProviderUnavailable` the load failed with, every time it asks. A load started early
(`start_early`, as soon as the config says the provider is local) is handed to at most one provider,
and only to one whose `LoadSpec` is the same; otherwise it is never used. The thread is not a daemon,
so the interpreter's teardown never runs under a load in llama.cpp; a command that ends without the
model leaves at once, without teardown (`process_exit.abandon_at_exit`). Loading never redirects the process's output
(what zeph prints meanwhile reaches the terminal) and llama.cpp logs nothing.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from .. import errors
from ..paths import cache_dir
from ..process_exit import abandon_at_exit
from .settings import ProviderSettings

log = logging.getLogger("zeph.local")

DEFAULT_N_CTX = 8192

_early: dict["LoadSpec", "ModelLoad"] = {}
_early_lock = threading.Lock()


@dataclass(frozen=True)
class LoadSpec:
    """Everything a load depends on: the same spec gives the same model in the same state."""

    model: str
    n_ctx: int
    threads: int
    device: str
    prefix_dir: str  # where saved prefixes are kept ("" for none)

    def prefix_identity(self, n_ctx: int) -> dict[str, Any]:
        """What a saved prefix of this model depends on (`local_prefix.model_identity`): the one definition
        both the restore after loading and a request's own prefix key use."""
        from .local_prefix import model_identity

        return model_identity(self.model, n_ctx, {"device": self.device})


def spec_for(
    settings: ProviderSettings, *, n_ctx: int | None = None, prefix_cache_dir: Path | None = None
) -> LoadSpec:
    """What loading this provider's model depends on (an early load is used only when it is the same)."""
    return LoadSpec(
        model=settings.model,
        n_ctx=n_ctx or int(settings.extra.get("n_ctx") or DEFAULT_N_CTX),
        threads=default_threads(),
        device=settings.extra.get("device", ""),
        prefix_dir=str(prefix_cache_dir or cache_dir() / "local-prefix"),
    )


def default_threads() -> int:
    return max(os.cpu_count() or 1, 1)


def machine_is_busy() -> bool:
    """Other work keeps every core busy (the 1-minute load average is at least the number of cores; False
    where there is none)."""
    try:
        return os.getloadavg()[0] >= (os.cpu_count() or 1)
    except (OSError, AttributeError):
        return False


# How long (in spins) a llama.cpp thread that waits for another spins before it sleeps (OpenMP's
# GOMP_SPINCOUNT). OpenMP's default spins 300 times longer: a little faster alone, but when something else
# wants the cores (a second model, a build) a waiting thread keeps the core the awaited one needs, and each
# of the hundreds of steps of a token waits for the scheduler. Measured on 2 cores, 64 tokens: alone 0.72 s
# (default) against 0.82 s (this); beside a second model 3.7-183 s against 2.9 s; beside two busy processes
# over 60 s against 1.8 s (`python benchmarks/local_threads.py`).
BOUNDED_SPIN = "1000"


def thread_wait_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The OpenMP settings llama.cpp's library should load with: sleep at once when every core is busy,
    else spin briefly (`BOUNDED_SPIN`); nothing when the user set either variable."""
    if "OMP_WAIT_POLICY" in environ or "GOMP_SPINCOUNT" in environ:
        return {}
    if machine_is_busy():
        return {"OMP_WAIT_POLICY": "PASSIVE"}
    return {"GOMP_SPINCOUNT": BOUNDED_SPIN}


def import_llama_cpp() -> Any:
    """llama_cpp, its libraries loaded with `thread_wait_environment` (OpenMP reads it as they load, once per
    process), quiet (`_quiet_without_redirecting`) and its models kept off AMX (`keep_weights_off_amx`). The settings are taken back once the libraries are loaded
    (a tenth of a second), so the commands zeph runs later do not inherit them."""
    chosen = thread_wait_environment(os.environ) if "llama_cpp" not in sys.modules else {}
    os.environ.update(chosen)
    try:
        import llama_cpp
    finally:
        for name in chosen:
            os.environ.pop(name, None)
    _quiet_without_redirecting()
    keep_weights_off_amx(llama_cpp)
    return llama_cpp


def builds_with_amx(llama_cpp: Any) -> bool:
    """Whether this llama.cpp build multiplies on Intel AMX tiles (built natively on a Sapphire Rapids-class
    CPU): its system info says `AMX_INT8 = 1`."""
    try:
        info = llama_cpp.llama_print_system_info()
    except AttributeError:  # pragma: no cover - every 0.3 release has it
        return False
    text = info.decode(errors="replace") if isinstance(info, bytes) else str(info)
    return "AMX_INT8 = 1" in text


def keep_weights_off_amx(llama_cpp: Any) -> None:
    """Models this process loads keep their weights in llama.cpp's plain CPU buffers when the build uses AMX.

    llama.cpp's AMX matrix multiplication crashes the process (SIGSEGV in `ggml_backend_amx_mul_mat`) on
    some AMX machines the first time a model whose weights were repacked for it evaluates a prompt
    (ggml-org/llama.cpp#20824, still open); it happened with SmolLM2 on every request. Loading without
    llama.cpp's extra buffer types (`use_extra_bufts = false`, as llama.cpp's `--no-extra-bufts`) keeps the
    weights off AMX. llama-cpp-python's `Llama` takes no such option, so its default model parameters are
    wrapped, once per process, in `import_llama_cpp`. On a build without AMX nothing changes.
    """
    low_level: Any = getattr(llama_cpp, "llama_cpp", None)
    defaults = getattr(low_level, "llama_model_default_params", None)
    if defaults is None or getattr(defaults, "keeps_weights_off_amx", False) or not builds_with_amx(llama_cpp):
        return

    def without_extra_buffers() -> Any:
        params = defaults()
        if any(name == "use_extra_bufts" for name, *_ in type(params)._fields_):
            params.use_extra_bufts = False
        return params

    without_extra_buffers.keeps_weights_off_amx = True  # type: ignore[attr-defined]
    without_extra_buffers.__wrapped__ = defaults  # type: ignore[attr-defined]
    low_level.llama_model_default_params = without_extra_buffers


def gpu_layers(device: str) -> int:
    """llama.cpp's n_gpu_layers for a configured `device`: "cpu" keeps every layer on the CPU, "cuda" and
    "metal" offload all of them (a build without that backend runs them on the CPU); unset: llama.cpp's 0."""
    return -1 if device in ("cuda", "metal") else 0


class ModelLoad:
    """One load of one model, on its own thread (`start`), or on the caller's when nothing started it."""

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        self.restored_prefix = 0  # tokens of the saved prefix put into the model after loading
        self._llama: Any = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._imported = threading.Event()  # llama_cpp is imported (or the load ended): only C work is left
        self._started = False
        self._lock = threading.Lock()

    def start(self) -> "ModelLoad":
        with self._lock:
            if not self._started:
                thread = threading.Thread(target=self._run, name="zeph-local-load", daemon=False)
                abandon_at_exit(thread)  # a command that ends without the model does not wait for it
                thread.start()  # when no thread can be started, the first to ask for the model loads it
                self._started = True
        return self

    def result(self) -> Any:
        """The loaded model (waiting for the load; running it here when nothing started it)."""
        with self._lock:
            run_here = not self._started
            self._started = True
        if run_here:
            self._run()
        self._done.wait()
        if self._error is not None:
            raise self._error
        if self._llama is None:  # the load was interrupted (Ctrl+C while it ran here)
            raise errors.ProviderUnavailable(f"loading the model {self.spec.model} was interrupted")
        return self._llama

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait_until_imported(self, timeout: float | None = None) -> None:
        """Wait until the load's Python part (importing llama_cpp and numpy, about 0.13 s) is over, or the load
        ended. Python code on two threads takes turns on one interpreter lock, while llama.cpp's own loading
        runs without it: a caller that waits here before its own imports runs them beside that C work,
        instead of slowing the import every later step of the load waits for."""
        self._imported.wait(timeout)

    def _run(self) -> None:
        try:
            self._llama = self._load_model()
        except errors.ProviderUnavailable as exc:
            self._error = exc
        except Exception as exc:  # noqa: BLE001 — never lost on a thread: the waiter gets it
            self._error = errors.ProviderUnavailable(f"cannot load the model {self.spec.model}: {exc}")
        else:
            self._restore_latest_prefix()
        finally:
            self._done.set()
            self._imported.set()  # after `done`: a waiter woken by a load that ended sees it ended

    def _load_model(self) -> Any:
        try:
            Llama = import_llama_cpp().Llama
        except ImportError as exc:  # pragma: no cover - resolve_settings checks first
            raise errors.ProviderUnavailable(f"llama-cpp-python cannot be imported: {exc}") from None
        self._imported.set()
        spec = self.spec
        try:
            return Llama(
                model_path=spec.model,
                n_ctx=spec.n_ctx,
                n_threads=spec.threads,
                n_threads_batch=spec.threads,
                n_gpu_layers=gpu_layers(spec.device),
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise errors.ProviderUnavailable(f"cannot load the model {spec.model}: {exc}") from None

    def _restore_latest_prefix(self) -> None:
        if not self.spec.prefix_dir:
            return
        from .local_prefix import PrefixStore, restore_latest

        try:
            identity = self.spec.prefix_identity(int(self._llama.n_ctx()))
            self.restored_prefix = restore_latest(self._llama, PrefixStore(Path(self.spec.prefix_dir)), identity)
        except Exception as exc:  # noqa: BLE001 — only a head start is lost: the request evaluates its prefix
            log.info("no saved prefix restored after loading: %s", exc)
            self._llama.reset()
            self.restored_prefix = 0


class _NoRedirect:
    """Stands in for llama_cpp's `suppress_stdout_stderr`, which points the whole process's standard output and
    error at /dev/null while a model loads: with the load on a thread of its own, that would swallow what
    zeph prints meanwhile (an error, a warning)."""

    def __init__(self, disable: bool = True) -> None:
        pass

    def __enter__(self) -> "_NoRedirect":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        return None


_silent_log: Any = None  # llama.cpp keeps a pointer to it: it lives as long as the process


def _quiet_without_redirecting() -> None:
    """llama.cpp's own log goes nowhere (zeph reports what fails in one line of its own), and loading a model
    no longer redirects the process's output."""
    global _silent_log
    import ctypes

    import llama_cpp

    if _silent_log is None:
        _silent_log = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_silent_log, ctypes.c_void_p(0))
    for name in ("llama_cpp.llama", "llama_cpp._internals"):
        module: Any = sys.modules.get(name)
        if module is not None and hasattr(module, "suppress_stdout_stderr"):
            module.suppress_stdout_stderr = _NoRedirect


def start_early(spec: LoadSpec) -> ModelLoad:
    """Start loading `spec` now, for the provider that will ask for it (at most one load per spec)."""
    with _early_lock:
        load = _early.get(spec)
        if load is None:
            load = _early[spec] = ModelLoad(spec)
    return load.start()


def take_early(spec: LoadSpec) -> ModelLoad | None:
    """The early load of exactly `spec`, handed over once (None when none was started)."""
    with _early_lock:
        return _early.pop(spec, None)
