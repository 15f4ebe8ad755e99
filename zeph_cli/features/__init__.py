"""Features: each one's sources, tools and commands in its own package."""
