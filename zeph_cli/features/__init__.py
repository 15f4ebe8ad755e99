"""Features, one package each: its tables and their migrations, its turn logic, context sources, tools,
command-line commands and chat-app commands.

Invariant: a feature's heavy dependencies (numpy and the embedders, qdrant-client, the `mcp` SDK,
PyYAML) load only when the feature is used, and `zeph ask` imports no feature's commands.
"""
