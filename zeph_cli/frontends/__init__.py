"""The front ends: the command line (`cli/`) and the chat app (`tui/`), over one consumer of agent events
(`event_handler.py`) and one rendering of zeph's values (`render.py`).

Invariant: presentation only; a front end reaches the agent, the store service or a feature's service,
never a provider or SQL directly.
"""
