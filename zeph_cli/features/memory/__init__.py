"""Memory across sessions: embedders, vector indexes, recall of past messages and long-term memories.

Invariant: nothing here is imported by `zeph --help`, and numpy, wordllama's
files and qdrant-client are imported only by the code paths that need them.
"""
