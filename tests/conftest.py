"""Shared fixtures: every test runs with its own config dir, data dir and no API keys."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.fakes.server import FakeServer

# A suite started in the background by a shell without job control (`nohup … &`, a CI step run that way)
# inherits SIGINT ignored, and every zeph it starts would too: the Ctrl+C tests would then test nothing but
# the shell. Each test process takes Python's own handler back, so the processes it starts get the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

PROVIDER_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OLLAMA_HOST",
    "ZEPH_CONFIG",
    "ZEPH_HOME",
)


def isolate(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Point every zeph location at directories under `root` and clear provider keys (what each test
    runs under; a module's shared fixture sets itself up under the same, in a MonkeyPatch.context())."""
    for name in list(os.environ):
        if name.startswith("ZEPH_") or name in PROVIDER_ENV:
            monkeypatch.delenv(name, raising=False)
    home = root / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(root / "xdg-data"))
    monkeypatch.setenv("ZEPH_HOME", str(root / "zeph-home"))
    # A session's sixth `zeph ask` would start a detached summary worker whose request could take a
    # reply queued for the test; the tests of session summaries switch them back on.
    monkeypatch.setenv("ZEPH_MEMORY_CROSS_SESSION_ENABLED", "false")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """Point every zeph location at a temporary directory and clear provider keys."""
    isolate(monkeypatch, tmp_path)
    yield tmp_path
    _close_the_log()


def _close_the_log() -> None:
    """No test's log destination outlives it (the log handler is process-wide)."""
    import logging

    root = logging.getLogger("zeph")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()


@pytest.fixture
def fake_server():
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def compatible(fake_server):
    """Environment selecting an OpenAI-compatible server (the fake one)."""
    return {
        "ZEPH_LLM_PROVIDER": "compatible",
        "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
        "ZEPH_LLM_MODEL": "gpt-4o",
        "ZEPH_LLM_MAX_RETRIES": "0",
    }


@pytest.fixture
def evaluated(monkeypatch):
    """The number of tokens each evaluation of the embedded model (llama.cpp) took, in order."""
    from zeph_cli.providers.local_loader import import_llama_cpp

    llama_cpp = import_llama_cpp()  # as zeph imports it (OpenMP's settings are read once per process)

    calls: list[int] = []
    real = llama_cpp.Llama.eval

    def eval_counting(self, tokens):
        calls.append(len(tokens))
        return real(self, tokens)

    monkeypatch.setattr(llama_cpp.Llama, "eval", eval_counting)
    return calls
