"""MCP servers (official `mcp` SDK): started when a turn needs tools, their tools offered as
namespaced tools under the same permission policy as built-in ones, their prompts listed.

Invariant: the `mcp` SDK is imported only inside functions that start or talk to a server, so
`zeph --help` and a `zeph ask` without `[[mcp.servers]]` never load it.
"""
