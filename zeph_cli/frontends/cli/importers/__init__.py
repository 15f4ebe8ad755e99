"""Readers of other tools' chat histories, for `zeph sessions import`: JSON Lines and llm's logs.db.

Invariant: a reader only reads its source (llm's database is opened read-only) and yields
`store.imports.ImportedSession`s; what it leaves out is counted by reason in its `Skipped`, and
a line or row it cannot use is an `ImportProblem` naming where it is and which field.
"""
