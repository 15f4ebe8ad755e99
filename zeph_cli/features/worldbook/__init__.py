"""The worldbook: entries the user writes, sent when their keywords come up in the recent messages (or
always), at a chosen place in the request; and a session's isolation switch.

Invariant: the entries live in the `worldbook_entries` table (`store.py`); a turn reads them only
through `turn.py`, and the command line and the chat app change them only through `WorldbookStore`.
"""
