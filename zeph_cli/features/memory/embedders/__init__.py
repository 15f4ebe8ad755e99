"""Embedders turn texts into unit vectors: the embedded one (offline) or a provider's endpoint."""
