"""`make wire`: nlq's `--uri` path against an independent MongoDB-compatible server.

SecantusDB (PyPI `secantusdb`, GPL-2.0) is installed by `make wire` into its
own environment (`.venv-wire`): it is a test instrument, never a dependency
of nlq and never shipped. `python -m tests.secantus.run` starts it on
127.0.0.1, loads the fixture worlds and the shared TEND v1 databases, runs
`nlq index`, `nlq exec --tasks` and `nlq score` once with `--uri` and once with
`--data` over the same documents, and compares the two record by record.

Every disagreement is triaged in tests/secantus/verdicts.jsonl against the
MongoDB manual, the way tests/differential/ triages mongomock-ng; a verdict
never says nlq is wrong (that is a bug to fix).
"""
