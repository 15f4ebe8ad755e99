"""The session summaries and user profile feature."""
