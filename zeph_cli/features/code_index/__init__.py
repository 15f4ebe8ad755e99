"""The code index: the project's code parsed with tree-sitter into chunks for retrieval (`<code_context>`)
and tags for a map of the project (`<repo_map>`).

Invariant: grammars come only from their installed wheels (nothing is downloaded); nothing here is
imported by `zeph --help` or by a `zeph ask` that does not use the index.
"""
