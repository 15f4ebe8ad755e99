"""zeph: a terminal AI agent whose product is context engineering."""

__version__ = "0.1.0"
