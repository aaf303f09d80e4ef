"""A memory of verified answers: nlq gets better at a database the more answers a user confirms.

    from nlq.memory import Memory, Entry, nearest, candidate
    with Memory("answers.sqlite") as memory:
        memory.add(Entry(db="clinic", question="...", collection="patients", pipeline=[...], verified_by="user"))
        nearest_ = nearest(memory, task, index, k=3)

`nlq memory add|list|remove|verify` manage the file (`--memory FILE`, env
`NLQ_MEMORY`); `nlq generate --memory FILE` gives every method the entries
most like each question (`rules`: a candidate adapted from the nearest one;
the model methods: `--shots K` examples in their prompt).
"""

from nlq.memory.store import KINDS, VERIFIERS, Entry, Memory, MemoryFileError
from nlq.memory.recall import Recalled, candidate, nearest, own_entry
from nlq.memory.adapt import Adapted, adapt

__all__ = ["Memory", "Entry", "MemoryFileError", "KINDS", "VERIFIERS", "nearest", "candidate", "own_entry",
           "Recalled", "adapt", "Adapted"]
