"""The mcp feature."""
