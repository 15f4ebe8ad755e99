"""The skills feature."""
