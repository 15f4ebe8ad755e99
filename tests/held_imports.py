"""A zeph subprocess whose import of one module is held up: the real module, imported later.

Invariant: the held process runs unchanged code; only a `sitecustomize` on its PYTHONPATH installs a finder
that, for the one module named, sleeps before the module runs (or, with `hold_class`, wraps that class's
`__init__` to sleep before it runs), touching `marker` first when one is given so a test knows the hold began.
"""

from __future__ import annotations

import os
from pathlib import Path

SITECUSTOMIZE = """
import importlib.machinery, sys, threading, time
NAME, SECONDS, MARKER, OFF_MAIN_THREAD, HOLD_CLASS = {name!r}, {seconds!r}, {marker!r}, {off_main_thread!r}, {hold_class!r}
def hold():
    if MARKER:
        open(MARKER, "w").close()
    time.sleep(SECONDS)
class HeldLoader:
    def __init__(self, loader):
        self.loader = loader
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        if not HOLD_CLASS:
            hold()
        self.loader.exec_module(module)
        if HOLD_CLASS:
            cls = getattr(module, HOLD_CLASS)
            real_init = cls.__init__
            def held_init(self, *args, **kwargs):
                hold()
                real_init(self, *args, **kwargs)
            cls.__init__ = held_init
class HoldingFinder:
    def find_spec(self, name, path=None, target=None):
        if name != NAME or (OFF_MAIN_THREAD and threading.current_thread() is threading.main_thread()):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = HeldLoader(spec.loader)
        return spec
sys.meta_path.insert(0, HoldingFinder())
"""


def held_import_env(
    folder: Path, name: str, seconds: float, *, marker: Path | None = None, off_main_thread: bool = False,
    hold_class: str | None = None,
) -> dict[str, str]:
    """The environment entries that hold `name`'s import (or its `hold_class`'s construction) in a subprocess
    for `seconds`; `off_main_thread` holds only an import made on another thread."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(
        name=name, seconds=seconds, marker=str(marker) if marker else "", off_main_thread=off_main_thread,
        hold_class=hold_class or "",
    ))
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}
