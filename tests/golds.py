"""The gold corpora the gate and repair are measured on: TEND v1 (../shared) and the fixture tasks.

    corpus = fixture_golds()          # Corpus(backend, tasks, indexes)
    corpus = tend_v1_golds()          # None when ../shared/tend-v1 is absent

Each task carries `query` (its parsed gold). Indexes are built with the
default sample, as `nlq index` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from nlq import importers, index, io
from nlq.backends import EmbeddedBackend
from nlq.mql.mongosh import parse_query
from tests.conftest import FIXTURES, TEND_V1, WORLDS


@dataclass
class Corpus:
    name: str
    backend: EmbeddedBackend
    tasks: list
    indexes: dict


def _corpus(name: str, backend, tasks: list) -> Corpus:
    for task in tasks:
        task["query"] = parse_query(task.get("gold") or task["gold_mql"])
    dbs = sorted({t["db"] for t in tasks})
    return Corpus(name, backend, tasks, {doc["db"]: doc for doc in index.build(backend, dbs)})


@lru_cache(maxsize=None)
def fixture_golds() -> Corpus:
    tasks = [r for path in sorted((FIXTURES / "tasks").glob("*.jsonl")) for r in io.read_records(str(path))]
    return _corpus("fixtures", EmbeddedBackend(WORLDS), tasks)


@lru_cache(maxsize=None)
def tend_v1_golds() -> Corpus | None:
    if not (TEND_V1 / "test.jsonl").exists():
        return None
    tasks = list(importers.run(str(TEND_V1 / "test.jsonl"), "tend-v1"))
    return _corpus("tend-v1", EmbeddedBackend(TEND_V1 / "mongodb_data"), tasks)
