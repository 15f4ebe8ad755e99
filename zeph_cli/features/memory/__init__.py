"""The memory feature."""
