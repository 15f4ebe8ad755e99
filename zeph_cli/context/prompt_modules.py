"""The layered system prompt: which prompt modules each mode sends, in which order.

Invariant: pure. The base prompt is the mode-independent modules (core
identity, style, memory usage) and comes first; the mode prompt (the mode
module, its tool guidance and its workflow) follows the project context, so a
mode switch leaves the cached prefix before it intact. The order never depends
on overrides; a module whose text is empty (an empty override) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.modes import MODES

BASE_MODULES = ("core", "soul", "memory")
MODE_MODULES = {mode.name: mode.prompt_modules for mode in MODES.values()}
NO_TOOLS_MODULES = ("tools-none",)
MODULE_NAMES = (*BASE_MODULES, *(n for names in MODE_MODULES.values() for n in names), *NO_TOOLS_MODULES)


@dataclass(frozen=True)
class PromptModule:
    """One module of the base prompt, shipped or overridden by a file."""
    name: str
    text: str
    source: str = "shipped"  # "shipped", "user" or "project"
    path: str = ""  # the override file, when there is one


@dataclass(frozen=True)
class ComposedPrompt:
    """The base prompt composed from its modules, with what was overridden or removed."""
    text: str
    detail: str  # the modules sent, each override with its source, each removed module


def _label(module: PromptModule) -> str:
    if module.source == "shipped":
        return module.name
    if not module.text:
        return f"{module.name} removed ({module.source} {module.path})"
    return f"{module.name} ({module.source} {module.path})"


def compose(modules: dict[str, PromptModule], names: tuple[str, ...], separator: str) -> ComposedPrompt:
    chosen = [modules[name] for name in names]
    text = separator.join(m.text for m in chosen if m.text)
    return ComposedPrompt(text, ", ".join(_label(m) for m in chosen))


def base_prompt(modules: dict[str, PromptModule]) -> ComposedPrompt:
    return compose(modules, BASE_MODULES, "\n\n")


def mode_prompt(modules: dict[str, PromptModule], mode: str, *, tools: bool) -> ComposedPrompt:
    return compose(modules, MODE_MODULES[mode] if tools else NO_TOOLS_MODULES, "\n")
