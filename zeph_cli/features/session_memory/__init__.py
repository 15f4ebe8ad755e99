"""Session summaries and the user profile: made in the background after a reply (`service.py`, or the
worker process `worker.py` for `zeph ask`), kept in the digest tables (`store.py`), shown and edited by
`zeph profile` (`commands.py`).

Invariant: nothing here delays a reply or reaches a provider except through the side jobs it is given.
"""
