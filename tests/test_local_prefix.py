"""The embedded model's system prefix is evaluated once and restored by later runs (real SmolLM2 model)."""

from __future__ import annotations

import os

import pytest

from zeph_cli.config import load_config
from zeph_cli.messages import Message, ReplyBuilder
from zeph_cli.paths import cache_dir
from zeph_cli.providers import resolve_settings
from zeph_cli.providers.base import ChatRequest
from zeph_cli.providers.local import LocalProvider
from zeph_cli.providers.local_prefix import SUFFIX, PrefixStore

pytestmark = pytest.mark.xdist_group("local_prefix")  # one worker runs the module (--dist loadgroup): the embedded model is loaded once

N_CTX = 2048
SYSTEM = "You are a terse assistant in a terminal. " + " ".join(f"Rule {i}: answer in plain words." for i in range(4))


@pytest.fixture(scope="module")
def model():
    """One loaded model for the module (loading is the slow part)."""
    provider = LocalProvider(resolve_settings(load_config(env={}).config, env={}), n_ctx=N_CTX)
    yield provider._load()


def local(model, directory) -> LocalProvider:
    """A provider as a new process has it: the model loaded and holding no tokens."""
    settings = resolve_settings(load_config(env={}).config, env={})
    provider = LocalProvider(settings, n_ctx=N_CTX, prefix_cache_dir=directory)
    model.reset()
    provider._llama = model
    return provider


async def reply(provider: LocalProvider, system: str = SYSTEM, question: str = "Say hi.") -> str:
    request = ChatRequest(messages=(Message.system(system), Message.user(question)), max_tokens=6, temperature=0.0)
    builder = ReplyBuilder()
    async for event in provider.stream(request):
        builder.add(event)
    return builder.content


async def test_a_second_provider_restores_the_prefix_instead_of_evaluating_it(model, tmp_path, evaluated):
    first = local(model, tmp_path)
    answer = await reply(first)
    assert first.last_prefix.source == "evaluated"
    prefix = first.last_prefix.prefix_tokens
    assert prefix > 40 and evaluated[0] == prefix  # the system message alone, evaluated first
    [saved] = list(tmp_path.glob(f"*{SUFFIX}"))
    await first.aclose()

    evaluated.clear()
    second = local(model, tmp_path)
    assert await reply(second) == answer  # the restored state is the evaluated one
    assert second.last_prefix.source == "disk"
    assert 0 < sum(evaluated) < 30  # only the question and what follows it
    assert list(tmp_path.glob(f"*{SUFFIX}")) == [saved]

    evaluated.clear()
    await reply(second, question="And again?")
    assert second.last_prefix.source == "memory"  # the model still holds it: no file read
    assert 0 < sum(evaluated) < 30

    # a changed system prompt is another prefix: evaluated, saved under a new key, the old one kept
    evaluated.clear()
    await reply(second, system=SYSTEM + " Be kind.")
    assert second.last_prefix.source == "evaluated" and evaluated[0] > prefix
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 2
    await second.aclose()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped"])
async def test_a_corrupt_saved_prefix_is_ignored_and_replaced(model, tmp_path, evaluated, damage):
    first = local(model, tmp_path)
    answer = await reply(first)
    await first.aclose()
    [saved] = list(tmp_path.glob(f"*{SUFFIX}"))
    data = saved.read_bytes()
    if damage == "garbage":
        saved.write_bytes(b"not a state")
    elif damage == "truncated":
        saved.write_bytes(data[: len(data) // 2])
    else:
        middle = len(data) // 2
        saved.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])

    evaluated.clear()
    second = local(model, tmp_path)
    assert await reply(second) == answer
    assert second.last_prefix.source == "evaluated"
    assert saved.read_bytes() == data  # rewritten whole
    await second.aclose()


async def test_an_unwritable_cache_dir_only_means_no_cache(model, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    provider = local(model, blocker / "prefix")
    assert (await reply(provider)).strip()
    assert provider.last_prefix.source == "evaluated"
    await provider.aclose()


def test_the_store_evicts_the_least_recently_used(tmp_path):
    store = PrefixStore(tmp_path, max_files=2, max_bytes=10_000)
    for n, key in enumerate(["a" * 64, "b" * 64, "c" * 64]):
        assert store.save(key, [1, 2, 3], bytes(100)) is not None
        os.utime(store.path_for(key), ns=(n * 10**9, n * 10**9))
    assert store.load("a" * 64, [1, 2, 3]) is None  # the oldest went first
    assert store.load("b" * 64, [1, 2, 3]) == bytes(100)
    assert store.load("b" * 64, [1, 2, 4]) is None  # other tokens under the same key: not used (and dropped)
    # the byte cap: a big state pushes the others out; one bigger than the cap is not kept at all
    assert store.save("d" * 64, [1], bytes(9_800)) is not None
    assert [p.name[:1] for p in store.files()] == ["d"]
    assert store.save("e" * 64, [1], bytes(20_000)) is None
    assert [p.name[:1] for p in store.files()] == ["d"]
    assert not list(tmp_path.glob("*.tmp"))


def test_the_cache_dir_follows_zeph_home_then_xdg(tmp_path):
    assert cache_dir({"ZEPH_HOME": str(tmp_path)}) == tmp_path / "cache"
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "zeph"
