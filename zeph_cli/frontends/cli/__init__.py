"""The `zeph` command line (Typer): the app (`app.py`), `zeph ask`, its output, and the command groups that
are not a feature's (a feature's commands live in its package and are registered by `app.py`).

Invariant: `zeph ask` imports no command group's module, and neither `zeph --help` nor `zeph ask`
imports Textual or an SDK it does not use.
"""
