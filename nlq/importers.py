"""Benchmark records -> nlq task records (SPEC §1), one output per input record.

    >>> to_task({"record_id": 7, "db_id": "clinic", "nl_queries": ["How many?"],
    ...          "MQL": "db.p.countDocuments({})"}, "tend-v1")["id"]
    'clinic/7'

Formats:

- ``tend-v1`` (TEND v1, JSONL): ``{record_id, db_id, nl_queries, ref_sql, MQL}``.
  `question` is ``nl_queries[0]``, `paraphrases` the other phrasings.
- ``tend-native`` (the MongoDB-native TEND release, a JSON array):
  ``{record_id, db_id, NLQ, NLQ_colloquial, MQL}``. `question` is ``NLQ``,
  `paraphrases` ``[NLQ_colloquial]``.

Either file may be a JSON array or JSONL. The task record is
``{id: "<db_id>/<record_id>", db, question, paraphrases, gold_mql, labels}``;
`gold_mql` is the MQL text as is (not parsed here), `labels` holds the
benchmark name, the record's `db_id` and every field the conversion did not
consume (e.g. `ref_sql`). A record lacking a required field, or a malformed
line, becomes a failure record at its place.

With `paraphrases=True` (`nlq import --paraphrases`) each record becomes one
task per phrasing instead — id ``<db_id>/<record_id>/p<k>``, `question` the
k-th phrasing, `labels.paraphrase` = k (1 is the canonical phrasing),
`paraphrases` empty (no phrasing sees another) — so robustness to wording is
measured like any other slice (`nlq report --by labels.paraphrase`). This is
the one stage that yields more records than it reads.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import orjson

from nlq.errors import InputError, failure
from nlq.io import Line, from_extjson, iter_lines, open_input

STAGE = "import"


def _tend_v1(record: dict) -> tuple[str, list[str]]:
    queries = record["nl_queries"]
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) for q in queries):
        raise InputError("nl_queries must be a non-empty list of strings")
    return queries[0], list(queries[1:])


def _tend_native(record: dict) -> tuple[str, list[str]]:
    question = record["NLQ"]
    if not isinstance(question, str):
        raise InputError("NLQ must be a string")
    colloquial = record.get("NLQ_colloquial")
    return question, [colloquial] if isinstance(colloquial, str) and colloquial else []


# format -> (fields the record must have, fields consumed, question/paraphrases reader)
FORMATS = {
    "tend-v1": (("record_id", "db_id", "nl_queries", "MQL"), {"record_id", "db_id", "nl_queries", "MQL"}, _tend_v1),
    "tend-native": (("record_id", "db_id", "NLQ", "MQL"), {"record_id", "db_id", "NLQ", "NLQ_colloquial", "MQL"},
                    _tend_native),
}


def to_task(record: dict, fmt: str) -> dict:
    """One benchmark record as a task record; InputError when it cannot be converted."""
    required, consumed, read_question = FORMATS[fmt]
    missing = [k for k in required if k not in record]
    if missing:
        raise InputError(f"{fmt} record lacks {', '.join(missing)}")
    db, record_id, mql = record["db_id"], record["record_id"], record["MQL"]
    if not isinstance(db, str) or not db:
        raise InputError("db_id must be a non-empty string")
    if not isinstance(record_id, (str, int)) or isinstance(record_id, bool):
        raise InputError("record_id must be a string or an integer")
    if not isinstance(mql, str):
        raise InputError("MQL must be a string")
    question, paraphrases = read_question(record)
    labels = {"benchmark": fmt, "db_id": db}
    labels.update((k, v) for k, v in record.items() if k not in consumed)
    return {"id": f"{db}/{record_id}", "db": db, "question": question, "paraphrases": paraphrases,
            "gold_mql": mql, "labels": labels}


def convert(lines: Iterable[Line], fmt: str, *, strict: bool = False, where: str = "line") -> Iterator[dict]:
    """Task records from parsed input lines; a bad line or record becomes a failure record.

    A failure record names its position (`{where: N}`) and, when known, the
    task `id`.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    for line in lines:
        try:
            if line.error is not None:
                raise InputError(line.error)
            yield to_task(line.record, fmt)
        except InputError as exc:
            if strict:
                raise InputError(f"{where} {line.number}: {exc}") if line.error is None else exc
            out = {"id": _id_of(line.record), where: line.number,
                   "failure": failure(STAGE, "malformed_input" if line.error else exc.type, str(exc))}
            yield {k: v for k, v in out.items() if v is not None}


def _id_of(record) -> str | None:
    if isinstance(record, dict) and "db_id" in record and "record_id" in record:
        return f"{record['db_id']}/{record['record_id']}"
    return None


def read_benchmark(source="-") -> tuple[str, Iterator[Line]]:
    """The records of a JSON array file or a JSONL file ('-' = stdin), as numbered lines.

    Returns `(where, lines)`: where is "line" for JSONL (numbers are line
    numbers) and "item" for a JSON array (numbers are 1-based positions).
    """
    with open_input(source) as stream:
        data = stream.read()
    first_line = data.lstrip().split(b"\n", 1)[0]
    if first_line[:1] == b"[":
        try:
            items = from_extjson(orjson.loads(data))
        except (orjson.JSONDecodeError, InputError) as exc:
            try:
                orjson.loads(first_line)
            except orjson.JSONDecodeError:
                raise InputError(f"malformed JSON array: {exc}") from None
            items = None  # JSONL whose first line happens to be an array
        if isinstance(items, list):
            return "item", (Line(i, item) if isinstance(item, dict) else
                            Line(i, None, f"item {i}: expected a JSON object, got {type(item).__name__}")
                            for i, item in enumerate(items, start=1))
    return "line", iter_lines(data.splitlines(keepends=True))


def per_phrasing(tasks: Iterable[dict]) -> Iterator[dict]:
    """One task per phrasing of each task record (failure records pass unchanged).

        >>> [(t["id"], t["question"], t["labels"]["paraphrase"]) for t in per_phrasing(
        ...     [{"id": "d/1", "question": "A?", "paraphrases": ["B?"], "labels": {}}])]
        [('d/1/p1', 'A?', 1), ('d/1/p2', 'B?', 2)]
    """
    for task in tasks:
        if "failure" in task:
            yield task
            continue
        for k, question in enumerate([task["question"], *task.get("paraphrases", [])], start=1):
            yield {**task, "id": f"{task['id']}/p{k}", "question": question, "paraphrases": [],
                   "labels": {**task.get("labels", {}), "paraphrase": k}}


def run(source="-", fmt: str = "tend-v1", *, strict: bool = False, paraphrases: bool = False) -> Iterator[dict]:
    """`nlq import`: task records from a benchmark file (read whole: arrays need it);
    with `paraphrases`, one task per phrasing (`per_phrasing`)."""
    where, lines = read_benchmark(source)
    tasks = convert(lines, fmt, strict=strict, where=where)
    return per_phrasing(tasks) if paraphrases else tasks


__all__ = ["FORMATS", "to_task", "convert", "per_phrasing", "read_benchmark", "run"]
