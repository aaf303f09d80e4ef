"""Recall from the memory: the entries most like a question, and a candidate adapted from them.

    nearest(memory, task, index, k)               -> [Recalled(entry, score, text, skeleton), ...]
    candidate(memory, task, index, reading)       -> {collection, pipeline, confidence, memory} | None

Similarity is read in two steps. First the words: the question's content
words (normalized as `witness` normalizes them: case, accents, singulars),
with its literals masked (a value, a number, a date or a name is what
changes between two questions of the same structure), weighed by their
rarity among the database's entries (tf-idf, cosine). Then the structure: the
entry's pipeline skeleton (its stages and operators, no field or value)
against the skeleton of the question's own reading, when the method has one
(`rules` passes its reading). `score` = 0.75 * words + 0.25 * structure.

A record is never answered from an entry of itself: an entry whose `source`
is the record's id, or the same record in another phrasing (`nlq import
--paraphrases` names phrasings `<id>/p<k>`), or whose question is the
record's question or one of its `paraphrases`, is left out (`own_entry`).

The candidate is the nearest entry's query adapted to the question
(`nlq.memory.adapt`: fields re-bound to those the question names, then
literals replaced), with a calibrated confidence: the probability that it
is right, by a logistic model over the similarity, what the adaptation
re-bound and could not carry over, and the method's own confidence in its reading
(`calibration.json` beside this module, fitted out of database by `make
calibrate-memory`).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import orjson

from nlq.errors import NlqError
from nlq.memory.adapt import adapt, literal_witnesses
from nlq.memory.rebind import Fields, joins, named_fields
from nlq.memory.store import Entry, Memory
from nlq.text import STOPWORDS, normalize, singular, tokens
from nlq.witness import find as find_witnesses

WORDS_WEIGHT = 0.75
CALIBRATION = Path(__file__).with_name("calibration.json")
_PHRASING = re.compile(r"/p\d+$")
MASK = "<lit>"


@dataclass
class Recalled:
    entry: Entry
    score: float
    words: float
    structure: float | None

    def to_json(self) -> dict:
        return {"id": self.entry.id, "kind": self.entry.kind, "question": self.entry.question,
                "score": round(self.score, 4)}


def record_group(record_id) -> str | None:
    """The id of a record's question across its phrasings ('db/7/p3' -> 'db/7')."""
    return _PHRASING.sub("", record_id) if isinstance(record_id, str) else None


def own_entry(entry: Entry, task: dict) -> bool:
    """Whether `entry` came from this very record (any phrasing of it) or states its question."""
    group = record_group(task.get("id"))
    if group is not None and record_group(entry.source) == group:
        return True
    asked = {" ".join(normalize(q).split()) for q in [task.get("question"), *(task.get("paraphrases") or [])]
             if isinstance(q, str)}
    return " ".join(normalize(entry.question).split()) in asked


def masked_words(question: str, witnesses: list[dict]) -> list[str]:
    """The question's content words, each literal one masked (see the module docstring)."""
    literal = set()
    for w in literal_witnesses(witnesses):
        literal.update(singular(t) for t in tokens(str(w["term"])))
    out = []
    for tok in tokens(question):
        word = singular(tok)
        if tok in STOPWORDS:
            continue
        out.append(MASK if word in literal or tok[:1].isdigit() else word)
    return out


def skeleton(pipeline) -> Counter:
    """The operators of a pipeline, without fields or values (`{"$match", "$group", "$sum", ...}`)."""
    found: Counter = Counter()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key.startswith("$"):
                    found[key] += 1
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(pipeline)
    return found


def _cosine(a: Counter, b: Counter, weight) -> float:
    dot = sum(weight(t) ** 2 * a[t] * b[t] for t in a.keys() & b.keys())
    na = math.sqrt(sum((weight(t) * n) ** 2 for t, n in a.items()))
    nb = math.sqrt(sum((weight(t) * n) ** 2 for t, n in b.items()))
    return dot / (na * nb) if na and nb else 0.0


def _overlap(a: Counter, b: Counter) -> float:
    keys = a.keys() | b.keys()
    return sum(min(a[k], b[k]) for k in keys) / sum(max(a[k], b[k]) for k in keys) if keys else 1.0


class _Profile:
    """The entries of one database, read for recall once per run (their words and witnesses)."""

    def __init__(self, entries: list[Entry], index: dict):
        self.entries = entries
        self.witnesses = [find_witnesses(e.question, index) for e in entries]
        self.words = [Counter(masked_words(e.question, w)) for e, w in zip(entries, self.witnesses)]
        df: Counter = Counter()
        for words in self.words:
            df.update(words.keys())
        n = len(entries)
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
        self.default_idf = math.log(1 + n) + 1.0
        self.index = index
        self.grounding = None
        self.fields: dict[int, Fields] = {}  # entry id -> what its question names

    def schema(self):
        """What `rules` reads of the index (once per database and run)."""
        if self.grounding is None:
            from nlq.methods.rules.schema import prepare

            self.grounding = prepare(self.index)
        return self.grounding

    def named(self, entry: Entry, witnesses: list[dict]) -> Fields:
        if entry.id not in self.fields:
            self.fields[entry.id] = named_fields(entry.question, witnesses, self.index, self.schema(),
                                                 entry.collection, entry.pipeline)
        return self.fields[entry.id]

    def weight(self, term: str) -> float:
        return self.idf.get(term, self.default_idf)


def profile(memory: Memory, db: str, index: dict, cache: dict | None = None) -> _Profile:
    """The recall profile of `db`'s usable entries (kept in `cache` across the records of a run)."""
    entries = memory.entries(db)
    key = (db, len(entries), entries[-1].id if entries else None)
    if cache is not None and key in cache:
        return cache[key]
    built = _Profile(entries, index)
    if cache is not None:
        cache[key] = built
    return built


def nearest(memory: Memory, task: dict, index: dict, k: int, *, reading: list | None = None,
           kinds=("answer",), cache: dict | None = None) -> list[tuple[Recalled, list]]:
    """The `k` entries of the task's database most like its question, best first, each with the
    entry question's witnesses: `[(Recalled, witnesses), ...]` (never an entry of the record itself)."""
    db = task.get("db") or index.get("db")
    if not db or k <= 0:
        return []
    known = profile(memory, db, index, cache)
    words = Counter(masked_words(task["question"], task.get("witnesses") or []))
    shape = skeleton(reading) if reading is not None else None
    scored = []
    for entry, entry_words, entry_witnesses in zip(known.entries, known.words, known.witnesses):
        if entry.kind not in kinds or own_entry(entry, task):
            continue
        text = _cosine(words, entry_words, known.weight)
        structure = _overlap(shape, skeleton(entry.pipeline)) if shape is not None else None
        total = text if structure is None else WORDS_WEIGHT * text + (1 - WORDS_WEIGHT) * structure
        scored.append((Recalled(entry, total, text, structure), entry_witnesses))
    scored.sort(key=lambda pair: (-pair[0].score, pair[0].entry.id))
    return scored[:k]


def features(recalled: Recalled, adapted, own_confidence: float | None, same_collection: bool) -> dict[str, float]:
    """What the memory candidate's calibration reads (nothing from the answer)."""
    return {
        "score": recalled.score,
        "words": recalled.words,
        "structure": recalled.structure if recalled.structure is not None else recalled.words,
        "substituted": float(len(adapted.substitutions)),
        "unmapped": float(len(adapted.unmapped)),
        "unplaced": float(len(adapted.unplaced)),
        "own": float(own_confidence) if own_confidence is not None else 0.5,
        "same_collection": float(same_collection),
        "rebound": float(len(adapted.rebound)),
        "unrebound": float(len(adapted.unrebound)),
        "unread": float(len(adapted.unread)),
    }


@functools.lru_cache(maxsize=1)
def calibration() -> dict:
    """The memory candidate's calibration model (read once; see `calibrate-memory`)."""
    from nlq.methods.rules.calibration import check

    try:
        stored = orjson.loads(CALIBRATION.read_bytes())
        check(stored)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NlqError(f"the memory calibration model {CALIBRATION.name} cannot be read: {exc}",
                       hint="reinstall nlq, or refit it with `make calibrate-memory`") from None
    return stored


def probability(signals: dict[str, float], model: dict | None = None) -> float:
    """P(the adapted entry is right) for these features, by the stored logistic model (the form of
    rules' own calibration models)."""
    from nlq.methods.rules.calibration import apply

    return round(apply(model or calibration(), signals), 3)


def candidate(memory: Memory, task: dict, index: dict, *, reading: dict | None = None,
              own_confidence: float | None = None, k: int = 3, cache: dict | None = None,
              model: dict | None = None) -> dict | None:
    """The most probable adaptation of the `k` nearest entries, as a candidate
    `{collection, pipeline, confidence, reading, memory: {entry, score, substitutions, unmapped,
    unplaced, rebound, unrebound, unread}, signals}`; None when the database has no usable entry."""
    pipeline = reading.get("pipeline") if reading else None
    best = None
    db = task.get("db") or index.get("db")
    asked: dict[tuple, Fields] = {}  # what the question names, per remembered collection and joins
    for recalled, entry_witnesses in nearest(memory, task, index, k, reading=pipeline, cache=cache):
        entry = recalled.entry
        known = profile(memory, db, index, cache)
        key = (entry.collection, tuple(sorted(joins(entry.pipeline).items())))
        if key not in asked:
            asked[key] = named_fields(task["question"], task.get("witnesses") or [], index, known.schema(),
                                      entry.collection, entry.pipeline)
        adapted = adapt(entry.question, entry_witnesses, entry.pipeline, task["question"],
                        task.get("witnesses") or [], fields=(known.named(entry, entry_witnesses), asked[key]))
        same = reading is not None and reading.get("collection") == entry.collection
        signals = features(recalled, adapted, own_confidence, same)
        p = probability(signals, model)
        if best is None or p > best["confidence"]:
            best = {"collection": entry.collection, "pipeline": adapted.pipeline, "confidence": p,
                    "reading": f"memory entry {entry.id}",
                    "memory": {"entry": entry.id, "question": entry.question, "score": round(recalled.score, 4),
                               "substitutions": adapted.substitutions, "unmapped": adapted.unmapped,
                               "unplaced": adapted.unplaced, "rebound": adapted.rebound,
                               "unrebound": adapted.unrebound, "unread": adapted.unread},
                    "signals": signals}
    return best
