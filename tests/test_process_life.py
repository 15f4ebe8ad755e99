"""How the zeph process ends (process_exit.leave) and its collector while an agent is built (startup_gc)."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zeph_cli import startup_gc


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_leave_keeps_the_code_the_output_and_the_exit_handlers(tmp_path):
    marker = tmp_path / "atexit-ran"
    result = run_python(f"""
        import atexit, sys, tempfile, weakref, os
        from zeph_cli.process_exit import leave
        atexit.register(lambda: open({str(marker)!r}, "w").write("yes"))
        folder = tempfile.mkdtemp()
        class Holder: pass
        holder = Holder()
        weakref.finalize(holder, os.rmdir, folder)
        sys.stdout.write("buffered, no newline")
        sys.stderr.write("on stderr")
        print(folder, file=sys.stderr)
        leave(3)
        print("never")
    """)
    assert result.returncode == 3
    assert result.stdout == "buffered, no newline"
    assert "on stderr" in result.stderr
    assert marker.read_text() == "yes"
    folder = result.stderr.split("on stderr")[1].strip()
    assert folder and not Path(folder).exists()  # the weakref.finalize clean-up ran


def test_leave_skips_the_interpreter_teardown(tmp_path):
    marker = tmp_path / "torn-down"
    code = textwrap.dedent(f"""
        class Module:
            def __del__(self, open=open):  # builtins are gone at teardown
                open({str(marker)!r}, "w").write("yes")
        kept = Module()
    """)
    ended = run_python(code + "import sys; sys.exit(0)")
    assert ended.returncode == 0 and marker.exists()  # a normal exit frees module globals
    marker.unlink()
    left = run_python(code + "from zeph_cli.process_exit import leave; leave(0)")
    assert left.returncode == 0 and not marker.exists()


def test_leave_waits_for_a_running_thread(tmp_path):
    result = run_python("""
        import threading, time, sys
        from zeph_cli.process_exit import leave
        def late():
            time.sleep(0.3)
            print("thread finished", flush=True)
        threading.Thread(target=late).start()
        leave(4)
    """)
    assert result.returncode == 4
    assert "thread finished" in result.stdout


def test_leave_does_not_wait_for_a_thread_abandoned_at_exit():
    result = run_python("""
        import threading, time
        from zeph_cli.process_exit import abandon_at_exit, leave
        def forever():
            time.sleep(60)
            print("thread finished", flush=True)
        thread = threading.Thread(target=forever)
        abandon_at_exit(thread)
        thread.start()
        leave(5)
    """)
    assert result.returncode == 5 and "thread finished" not in result.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_cannot_be_written_makes_a_finished_command_fail():
    code = textwrap.dedent("""
        import sys
        from zeph_cli.process_exit import leave
        sys.stdout.write("a reply that does not fit")
        leave(0)
    """)
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert result.returncode == 1


def test_leave_into_a_closed_pipe_is_quiet():
    code = textwrap.dedent("""
        import sys
        from zeph_cli.process_exit import leave
        sys.stdout.write("x" * 200000)
        leave(0)
    """)
    result = subprocess.run(
        f"{sys.executable} -c '{code}' | head -c 10", shell=True, capture_output=True, text=True, timeout=60
    )
    assert result.stdout == "x" * 10
    assert "Error" not in result.stderr and "Traceback" not in result.stderr


def test_collection_is_paused_inside_and_back_on_after_even_on_an_error():
    assert gc.isenabled()
    with startup_gc.paused_collection():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with startup_gc.paused_collection():
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_embedder_stays_off():
    gc.disable()
    try:
        with startup_gc.paused_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_embedding_process_is_never_paused_before_an_agent_is_built():
    assert gc.isenabled()
    startup_gc.pause_for_start_up()
    assert gc.isenabled()


def test_zephs_own_process_is_paused_from_its_start_up_until_the_agent_is_built():
    result = run_python("""
        import gc
        from zeph_cli import startup_gc
        startup_gc.freeze_after_start_up()
        startup_gc.pause_for_start_up()
        paused = not gc.isenabled()
        with startup_gc.paused_collection(freeze=True):
            inside = not gc.isenabled()
        print(paused, inside, gc.isenabled(), gc.get_freeze_count() > 0)
    """)
    assert result.stdout.split() == ["True", "True", "True", "True"]


def test_only_zephs_own_process_freezes_what_start_up_made():
    result = run_python("""
        import gc
        from zeph_cli import startup_gc
        with startup_gc.paused_collection():
            kept = [object() for _ in range(10)]
        before = gc.get_freeze_count()
        startup_gc.freeze_after_start_up()
        with startup_gc.paused_collection():  # a chat session: never frozen, its old agent can be freed
            kept += [[] for _ in range(10)]
        session = gc.get_freeze_count()
        with startup_gc.paused_collection(freeze=True):  # zeph ask
            kept += [[] for _ in range(10)]
        print(before, session, gc.get_freeze_count() > before, gc.isenabled())
    """)
    assert result.stdout.split() == ["0", "0", "True", "True"]
