"""The worldbook feature."""
