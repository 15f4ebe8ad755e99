"""The embedded model loads on a thread of its own, once, and the first request uses that load (real SmolLM2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.cli_helpers import ZEPH, assert_one_line_error, db_rows_safe, err, run_zeph
from tests.held_imports import held_import_env
from zeph_cli import errors
from zeph_cli.config import load_config
from zeph_cli.messages import Message, ReplyBuilder
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.providers.base import ChatRequest
from zeph_cli.providers.local import LocalProvider
from zeph_cli.providers import start_for_config
from zeph_cli.providers.local_loader import (
    BOUNDED_SPIN,
    ModelLoad,
    import_llama_cpp,
    spec_for,
    start_early,
    take_early,
    thread_wait_environment,
)
from zeph_cli.providers.local_prefix import SUFFIX

N_CTX = 2048
SYSTEM = "You are a terse assistant in a terminal. " + " ".join(f"Rule {i}: answer in plain words." for i in range(4))


@pytest.fixture
def loads(monkeypatch):
    """The threads each llama.cpp model load ran on, in order."""
    threads: list[str] = []
    llama_cpp = import_llama_cpp()  # as zeph imports it (OpenMP's settings are read once per process)
    real = llama_cpp.Llama.__init__

    def counting(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(llama_cpp.Llama, "__init__", counting)
    return threads


def settings():
    return resolve_settings(load_config(env={}).config, env={})


async def reply(provider: LocalProvider, question: str = "Say hi.") -> str:
    request = ChatRequest(messages=(Message.system(SYSTEM), Message.user(question)), max_tokens=4, temperature=0.0)
    builder = ReplyBuilder()
    async for event in provider.stream(request):
        builder.add(event)
    return builder.content


async def test_the_early_load_is_the_one_the_provider_uses(loads, tmp_path):
    spec = spec_for(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)
    early = start_early(spec)
    assert start_early(spec) is early  # asked twice: still one load
    provider = LocalProvider(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)
    assert take_early(spec) is None  # handed over to that provider, to no other
    try:
        await provider.profile()
        provider.token_counter().count("hello")
        assert (await reply(provider)).strip()
        assert (await reply(provider, "Again?")).strip()
        assert loads == ["zeph-local-load"]  # once, on the loading thread, never again by a request
    finally:
        await provider.aclose()


async def test_an_early_load_of_another_model_setup_is_not_used(loads, tmp_path):
    start_early(spec_for(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path / "elsewhere"))
    provider = LocalProvider(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)
    try:
        await provider.profile()
        assert len(loads) == 2  # its own load: another prefix dir is another load
    finally:
        take_early(spec_for(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path / "elsewhere")).result()
        await provider.aclose()


async def test_a_new_process_starts_with_the_saved_prefix_already_restored(tmp_path, evaluated):
    first = LocalProvider(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)
    answer = await reply(first)
    assert first.last_prefix.source == "evaluated"
    prefix = first.last_prefix.prefix_tokens
    await first.aclose()

    evaluated.clear()
    start_early(spec_for(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path))
    second = LocalProvider(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)
    assert await reply(second) == answer
    assert second.last_prefix.source == "disk" and second.last_prefix.prefix_tokens == prefix
    assert 0 < sum(evaluated) < 30  # only the question and what follows it
    await second.aclose()


async def test_a_prefix_saved_for_another_context_size_is_not_restored(tmp_path, evaluated):
    first = LocalProvider(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)
    await reply(first)
    await first.aclose()
    evaluated.clear()
    other = LocalProvider(settings(), n_ctx=N_CTX * 2, prefix_cache_dir=tmp_path)
    assert (await reply(other)).strip()
    assert other.last_prefix.source == "evaluated"  # restored nothing after loading; evaluated it instead
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 2
    await other.aclose()


def test_a_failed_load_gives_the_same_one_line_error_to_every_waiter(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\x00" * 64)
    config = load_config(env={"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(bogus)}).config
    load = ModelLoad(spec_for(resolve_settings(config, env={}), prefix_cache_dir=tmp_path)).start()
    with pytest.raises(errors.ProviderUnavailable) as first:
        load.result()
    with pytest.raises(errors.ProviderUnavailable) as again:
        load.result()
    assert str(first.value) == str(again.value)
    assert "bogus.gguf" in str(first.value) and "\n" not in str(first.value)


def test_starting_early_never_raises_and_leaves_other_providers_alone(tmp_path):
    config = load_config(env={"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(tmp_path / "nope.gguf")}).config
    assert start_for_config(config, {}) is None  # the missing file is the provider's to report
    assert start_for_config(load_config(env={"ZEPH_LLM_PROVIDER": "anthropic"}).config, {}) is None
    assert not [t for t in threading.enumerate() if t.name == "zeph-local-load" and t.is_alive()]


def test_waiting_for_the_import_returns_once_llama_cpp_is_imported_or_the_load_failed(tmp_path, monkeypatch):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\x00" * 64)
    config = load_config(env={"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(bogus)}).config
    spec = spec_for(resolve_settings(config, env={}))
    load = start_for_config(config, {}, {})
    assert load is take_early(spec)  # the load started is the one returned
    load.wait_until_imported(timeout=60)
    assert load._imported.is_set()
    with pytest.raises(errors.ProviderUnavailable, match="bogus.gguf"):
        load.result()

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # importing it now fails, as without llama-cpp-python
    failing = ModelLoad(replace(spec, prefix_dir=str(tmp_path / "other"))).start()
    failing.wait_until_imported(timeout=60)  # returns: the load ended without the import
    assert failing.done
    with pytest.raises(errors.ProviderUnavailable, match="llama-cpp-python cannot be imported"):
        failing.result()


def test_a_load_whose_thread_cannot_start_is_run_by_the_first_to_ask(tmp_path, monkeypatch):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\x00" * 64)
    config = load_config(env={"ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(bogus)}).config
    real_start = threading.Thread.start

    def refused(thread):
        if thread.name == "zeph-local-load":
            raise RuntimeError("can't start new thread")
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", refused)
    assert start_for_config(config, {}) is None  # logged, never raised
    load = take_early(spec_for(resolve_settings(config, env={})))
    outcome: list[BaseException] = []
    asking = threading.Thread(target=lambda: outcome.append(pytest.raises(errors.ProviderUnavailable, load.result).value),
                              daemon=True)
    real_start(asking)
    asking.join(60)
    assert not asking.is_alive()  # it did not wait for a load nobody runs
    assert "bogus.gguf" in str(outcome[0])


def test_waiting_for_the_import_does_not_wait_for_llama_cpp_to_load_the_model(tmp_path, monkeypatch):
    """The wait ends once llama_cpp is imported: the model's own loading (C) is left to run beside the caller."""
    gate = threading.Event()

    class HeldInC:  # stands in for llama.cpp loading the model until the test lets it end
        def __init__(self, **kwargs):
            gate.wait(60)
            raise ValueError("stopped by the test")

    monkeypatch.setattr(import_llama_cpp(), "Llama", HeldInC)
    load = ModelLoad(spec_for(settings(), n_ctx=N_CTX, prefix_cache_dir=tmp_path)).start()
    try:
        load.wait_until_imported(timeout=30)
        assert load._imported.is_set() and not load.done  # the load cannot end before the gate opens
    finally:
        gate.set()
    with pytest.raises(errors.ProviderUnavailable, match="stopped by the test"):
        load.result()


EARLY_START_IMPORTS = """
import os
import sys
import threading
from zeph_cli.config import load_config
from zeph_cli.providers import start_for_config
from zeph_cli.providers.local_loader import spec_for, start_early
HEAVY = ("asyncio", "zeph_cli.providers.base", "zeph_cli.messages", "zeph_cli.tokens")
print(sorted(m for m in HEAVY if m in sys.modules))
on_main = []  # what this thread imports while starting the load (the load's own thread imports llama_cpp)
sys.addaudithook(lambda event, args: on_main.append(args[0]) if event == "import" and threading.current_thread() is threading.main_thread() else None)
load = start_for_config(load_config(env={"ZEPH_LLM_PROVIDER": "local"}).config, {})
print(load is not None, sorted(m for m in HEAVY if m in on_main))
sys.stdout.flush()
os._exit(0)
"""


def test_starting_the_load_early_needs_no_event_loop_or_adapter_protocol():
    """What choosing the provider and starting the load imports runs before the load can start; the rest of
    zeph's imports run beside llama.cpp's loading."""
    result = subprocess.run([sys.executable, "-c", EARLY_START_IMPORTS], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "True []"]


def test_zeph_ask_lets_the_model_load_import_llama_cpp_before_it_imports_the_agent(tmp_path):
    """Python on two threads takes turns: `zeph ask` waits while the load imports llama_cpp (and numpy), then
    imports the agent while llama.cpp loads the model in C."""
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF" + b"\x00" * 64)  # fails after the import: the order is seen in a few seconds
    # The load's import of llama_cpp takes 2 s longer (running its module, which holds no lock other imports
    # need): a `zeph ask` that did not wait for it would import the agent first.
    env = {**os.environ, "ZEPH_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "ZEPH_LLM_PROVIDER": "local", "ZEPH_LLM_MODEL": str(bogus),
           **held_import_env(tmp_path / "site", "llama_cpp", 2, off_main_thread=True)}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "zeph_cli", "ask", "hi"], capture_output=True,
                            text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 2 and "cannot load the model" in result.stderr
    order = [line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")]
    assert order.index("llama_cpp") < order.index("zeph_cli.frontends.cli.ask_command")


def test_ctrl_c_while_the_model_loads_keeps_the_prompt(tmp_path):
    marker = tmp_path / "loading"  # llama.cpp's loading of the model is held 90 s once it starts
    env = {**os.environ, "ZEPH_LLM_PROVIDER": "local",
           **held_import_env(tmp_path / "site", "llama_cpp.llama", 90, marker=marker, hold_class="Llama")}
    proc = subprocess.Popen([ZEPH, "ask", "a question typed with care"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    database = Path(os.environ["ZEPH_HOME"]) / "zeph.db"  # opened once the command line is parsed and imported
    deadline = time.time() + 60
    while not (marker.exists() and database.exists()) and time.time() < deadline:
        time.sleep(0.02)
    assert marker.exists() and database.exists()
    time.sleep(0.5)  # zeph goes on to wait for the model (a signal before that keeps the prompt the same way)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)  # zeph leaves without waiting for the held load to end
    assert proc.returncode == 130, stderr
    (line,) = stderr.splitlines()
    assert line.startswith("zeph: interrupted; your prompt is not in the database; it is kept in ")
    assert Path(line.rsplit(" ", 1)[1]).read_text() == "a question typed with care\n"
    assert db_rows_safe("select id from conversations") == []  # no session started for -c to continue


@pytest.mark.parametrize("content", [b"GGUF" + b"\x00" * 64, b"not a model at all\n"])
def test_zeph_ask_on_a_model_that_cannot_load_says_so_in_one_line_and_keeps_the_prompt(tmp_path, content):
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(content)
    result = run_zeph("ask", "my carefully typed question", env={"ZEPH_LLM_PROVIDER": "local",
                                                                  "ZEPH_LLM_MODEL": str(bogus)})
    first = assert_one_line_error(result, 2, "broken.gguf")
    assert first.startswith("zeph: error: cannot load the model")
    assert err(result).count("cannot load the model") == 1
    assert len(err(result).splitlines()) == 2  # the error and where the prompt is kept: no llama.cpp log
    kept = Path(err(result).splitlines()[1].rsplit(" ", 1)[1])
    assert kept.read_text() == "my carefully typed question\n"


def test_a_provider_built_from_settings_starts_no_load_of_its_own_until_asked(loads):
    provider = create_provider(settings())
    assert loads == []
    assert not provider._loading.done


def test_a_load_interrupted_on_the_callers_thread_is_reported_not_returned_as_nothing(tmp_path, monkeypatch):
    load = ModelLoad(spec_for(settings(), prefix_cache_dir=tmp_path))

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(load, "_load_model", interrupted)
    with pytest.raises(KeyboardInterrupt):
        load.result()
    with pytest.raises(errors.ProviderUnavailable, match="interrupted"):
        load.result()


WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


@pytest.mark.parametrize("load_average, user_choice, chosen", [
    (3.0, {}, {"OMP_WAIT_POLICY": "PASSIVE"}),  # every core busy: threads sleep while they wait for each other
    (1.4, {}, {"GOMP_SPINCOUNT": BOUNDED_SPIN}),  # a core to spare: spin briefly, then sleep
    (0.2, {}, {"GOMP_SPINCOUNT": BOUNDED_SPIN}),  # idle: the same, in case something starts meanwhile
    (3.0, {"OMP_WAIT_POLICY": "ACTIVE"}, {}),  # the user's choice stands
    (0.2, {"GOMP_SPINCOUNT": "30000"}, {}),
    (3.0, {"GOMP_SPINCOUNT": "10"}, {}),
])
def test_how_threads_wait_follows_the_machine_s_load(monkeypatch, load_average, user_choice, chosen):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (load_average, load_average, load_average))
    assert thread_wait_environment(user_choice) == chosen
    assert 0 < int(BOUNDED_SPIN) < 300_000  # shorter than OpenMP's own default spin


LIBRARIES_LOAD_WITH = """
import json, os, sys
os.getloadavg = lambda: (float(sys.argv[1]),) * 3
os.cpu_count = lambda: 2
from zeph_cli import errors
from zeph_cli.providers.local_loader import LoadSpec, ModelLoad
try:  # zeph's own path: the load imports llama_cpp, then fails on the missing model file
    ModelLoad(LoadSpec(sys.argv[2], 2048, 2, "", "")).result()
except errors.ProviderUnavailable:
    pass
print(json.dumps({name: os.environ[name] for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if name in os.environ}))
"""


@pytest.mark.parametrize("load_average, user_choice, read", [  # what OpenMP says it read (unset: 300,000 spins)
    (0.2, {}, {"GOMP_SPINCOUNT": BOUNDED_SPIN}),
    (3.0, {}, {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"}),
    (3.0, {"OMP_WAIT_POLICY": "ACTIVE"}, {"OMP_WAIT_POLICY": "ACTIVE"}),
])
def test_openmp_reads_that_choice_as_llama_cpp_loads_and_it_is_taken_back(tmp_path, load_average, user_choice, read):
    env = {name: value for name, value in os.environ.items() if name not in WAIT_VARIABLES}
    result = subprocess.run(
        [sys.executable, "-c", LIBRARIES_LOAD_WITH, str(load_average), str(tmp_path / "missing.gguf")],
        env={**env, **user_choice, "OMP_DISPLAY_ENV": "VERBOSE"},  # OpenMP prints what it read as it loads
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for name, value in read.items():
        assert f"{name} = '{value}'" in result.stderr
    assert json.loads(result.stdout) == user_choice  # taken back: the commands zeph runs do not inherit it


PRINTS_WHILE_LOADING = """
import sys
from zeph_cli.config import load_config
from zeph_cli.providers import resolve_settings
from zeph_cli.providers.local_loader import ModelLoad, spec_for
load = ModelLoad(spec_for(resolve_settings(load_config(env={}).config, env={}), prefix_cache_dir=sys.argv[1])).start()
printed = 0
while not load.done:
    printed += 1
    print(f"line {printed}", file=sys.stderr, flush=True)
load.result()
print(printed)
"""


def test_what_zeph_prints_while_the_model_loads_reaches_the_terminal(tmp_path):
    """llama_cpp points the process's output at /dev/null while it loads a model; the load runs beside zeph."""
    result = subprocess.run([sys.executable, "-c", PRINTS_WHILE_LOADING, str(tmp_path)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    printed = int(result.stdout.split()[-1])
    assert printed > 0
    assert result.stderr.splitlines() == [f"line {n}" for n in range(1, printed + 1)]


# ---- AMX: weights kept in plain CPU buffers ----------------------------------------------------------


def _llama_cpp_reporting(system_info: bytes):
    """The real llama_cpp's parameter struct, behind a module that reports `system_info` as its build."""
    from types import SimpleNamespace

    real = import_llama_cpp()
    defaults = real.llama_cpp.llama_model_default_params
    defaults = getattr(defaults, "__wrapped__", defaults)
    low_level = SimpleNamespace(llama_model_default_params=defaults)
    return SimpleNamespace(llama_print_system_info=lambda: system_info, llama_cpp=low_level)


def test_an_amx_build_loads_without_extra_buffer_types():
    from zeph_cli.providers.local_loader import keep_weights_off_amx

    module = _llama_cpp_reporting(b"CPU : SSE3 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 |")
    assert module.llama_cpp.llama_model_default_params().use_extra_bufts  # llama.cpp's default
    keep_weights_off_amx(module)
    wrapped = module.llama_cpp.llama_model_default_params
    assert wrapped().use_extra_bufts is False
    keep_weights_off_amx(module)  # once per process: a second import wraps nothing more
    assert module.llama_cpp.llama_model_default_params is wrapped


def test_a_build_without_amx_loads_as_llama_cpp_defaults():
    from zeph_cli.providers.local_loader import keep_weights_off_amx

    module = _llama_cpp_reporting(b"CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 0 | OPENMP = 1 |")
    original = module.llama_cpp.llama_model_default_params
    keep_weights_off_amx(module)
    assert module.llama_cpp.llama_model_default_params is original


def test_the_real_build_is_read_for_amx():
    """The check reads what this llama.cpp says of itself (on an AMX machine built natively: AMX_INT8 = 1)."""
    from zeph_cli.providers.local_loader import builds_with_amx

    llama_cpp = import_llama_cpp()
    amx = "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode()
    assert builds_with_amx(llama_cpp) == amx
    assert (llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is False) == amx  # as zeph loads
