"""Skills: folders with a SKILL.md the user or the project wrote, matched to each message.

Invariant: importing this package imports nothing heavy; PyYAML and numpy load
only when a skill file is read or ranked.
"""
