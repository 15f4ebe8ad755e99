"""The full-screen terminal interface (Textual), opened by `zeph` with no arguments.

Invariant: nothing outside this package imports it except the CLI, lazily, so
`zeph --help` and `zeph ask` never load Textual; widgets reach the agent only
through the chat session service, never a provider or the store directly.
"""
