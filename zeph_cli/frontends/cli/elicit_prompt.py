"""Asking the user on the terminal for a server's form (MCP elicitation), for `zeph ask`.

Invariant: presentation only, on the terminal the approver asks on (its input and output, and its lock:
one question at a time). First whether to answer at all (yes / decline / cancel), then one question a field;
an answer the field does not take (`form_values`) is said in one line and the field asked again. The
server's words are shown, never run. End of input is cancel.
"""

from __future__ import annotations

from typing import Any

from ..form_values import FormError, choice_labels, choice_value, default_text, field_hint, field_label, text_value
from .approval_prompt import TerminalApprover, read_line_or_end
from .stderr import clear_status
from ..printable import printable
from ...tools.elicitation import ElicitationAnswer, ElicitationField, ElicitationRequest

YES = ("y", "yes")
NO = ("n", "no")


class TerminalElicitor:
    """The `Elicitor` of `zeph ask` on a terminal."""

    def __init__(self, terminal: TerminalApprover) -> None:
        self.terminal = terminal

    def write(self, text: str) -> None:
        """Write to the terminal; a server's control characters (escape sequences) are shown as `?`."""
        self.terminal.out.write(printable(text))
        self.terminal.out.flush()

    async def ask(self, question: str) -> str | None:
        """One line of answer to `question` (None: the input ended)."""
        self.write(question)
        return await read_line_or_end(self.terminal.in_fd)

    async def __call__(self, request: ElicitationRequest) -> ElicitationAnswer:
        async with self.terminal.asking:
            clear_status()  # a running tool's progress line
            return await self._ask(request)

    async def _ask(self, request: ElicitationRequest) -> ElicitationAnswer:
        head = [f"  asked by sub-agent: {request.asker}"] if request.asker else []
        head.append(f"MCP server {request.server_id} asks you:")
        head.extend("  " + line for line in (request.message.strip() or "(no message)").splitlines())
        self.write("\n".join(head) + "\n")
        what = "answer" if request.fields else "accept"
        first = ((await self.ask(f"{what.capitalize()}? [y]es / [d]ecline / [C]ancel: ")) or "").strip().lower()
        if first in ("d", "decline", *NO):
            return ElicitationAnswer("decline")
        if first not in YES:
            return ElicitationAnswer("cancel")
        content: dict[str, Any] = {}
        for field in request.fields:
            value = await self._field(field)
            if value is _CANCELLED:
                return ElicitationAnswer("cancel")
            if value is not None:
                content[field.name] = value
        return ElicitationAnswer("accept", content)

    async def _field(self, field: ElicitationField) -> Any:
        """The field's value, asked until it is one the field takes (`_CANCELLED` when the input ended)."""
        if field.description:
            self.write(f"  {' '.join(field.description.split())}\n")
        if field.kind == "enum":
            labels = choice_labels(field)
            self.write("".join(f"    {n}) {label}\n" for n, label in enumerate(labels, 1)))
        while True:
            line = await self.ask(self._question(field))
            if line is None:
                return _CANCELLED
            try:
                return self._value(field, line)
            except FormError as exc:
                self.write(f"  {exc}\n")

    @staticmethod
    def _question(field: ElicitationField) -> str:
        label = field_label(field)
        if field.kind == "boolean":
            default = "Y/n" if field.default is True else "y/N"
            return f"{label} [{default}]: "
        if field.kind == "enum":
            labels = choice_labels(field)
            default = f" [{labels[field.choices.index(field.default)]}]" if field.default in field.choices else ""
            return f"{label} (number or value){default}: "
        hint = field_hint(field)
        default = default_text(field)
        return f"{label}{f' ({hint})' if hint else ''}{f' [{default}]' if default else ''}: "

    @staticmethod
    def _value(field: ElicitationField, line: str) -> Any:
        typed = line.strip()
        if field.kind == "boolean":
            if not typed:
                return bool(field.default)
            if typed.lower() in YES:
                return True
            if typed.lower() in NO:
                return False
            raise FormError(f"{field.title or field.name}: answer y or n")
        if field.kind == "enum":
            if not typed:
                return choice_value(field, field.default if field.default in field.choices else None)
            labels = choice_labels(field)
            if typed.isdigit() and 1 <= int(typed) <= len(field.choices):
                return field.choices[int(typed) - 1]
            if typed in labels and typed not in field.choices:
                return field.choices[labels.index(typed)]
            return choice_value(field, typed)
        if not line.strip() and default_text(field):
            line = default_text(field)
        return text_value(field, line)


_CANCELLED = object()
