"""Skills: folders with a SKILL.md (front matter + Markdown body) from the user's and the project's
skill dirs, ranked against each message; the matched ones reach the prompt, the rest are listed.

Invariant: nothing here imports the `mcp` SDK, Textual or a provider SDK; numpy only through the
embedder; PyYAML only when a SKILL.md is read.
"""
