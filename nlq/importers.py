"""Benchmark records -> nlq task records, one output per input record.

    >>> to_task({"record_id": 7, "db_id": "clinic", "nl_queries": ["How many?"],
    ...          "MQL": "db.p.countDocuments({})"}, "tend-v1")["id"]
    'clinic/7'

Formats:

- ``tend-v1`` (TEND v1, JSONL): ``{record_id, db_id, nl_queries, ref_sql, MQL}``.
  `question` is ``nl_queries[0]``, `paraphrases` the other phrasings.
- ``tend-native`` (the MongoDB-native TEND release, a JSON array):
  ``{record_id, db_id, NLQ, NLQ_colloquial, MQL}``. `question` is ``NLQ``,
  `paraphrases` ``[NLQ_colloquial]``.

- ``mapped`` (any system's predictions, see :func:`map_record`): a record
  holding a question, a db and a predicted query under any field names,
  named with ``--map TARGET=FIELD``.

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

from io import BytesIO
from typing import Iterable, Iterator

import orjson

from nlq.errors import InputError, InputTooDeep, UnmatchedTaskError, failure
from nlq.io import (DEFAULT_MAX_NESTING, DEFAULT_MAX_RECORD_BYTES, Line, iter_lines, open_input,
                    strip_bom)

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


# --- any system's predictions ------------------------------------------------------

MAP_TARGETS = ("id", "question", "db", "prediction", "collection", "method", "gold", "labels")
# Where each target is looked for when --map does not name it.
MAP_DEFAULTS = {"id": ("id",), "question": ("question",), "db": ("db",), "prediction": ("prediction",),
                "collection": (), "method": (), "gold": ("gold", "gold_mql"), "labels": ("labels",)}


def parse_map(specs) -> dict:
    """`["question=nl,db=db_id", "prediction=out.mql"]` -> `{"question": "nl", ...}` (dotted sources).

    Raises InputError on an unknown target, a malformed pair or a target named twice."""
    mapping: dict = {}
    for spec in specs:
        for pair in filter(None, (p.strip() for p in spec.split(","))):
            target, sep, source = (x.strip() for x in pair.partition("="))
            if not sep or not target or not source:
                raise InputError(f"--map {pair!r}: expected TARGET=FIELD", hint="e.g. --map question=nl,db=db_id")
            if target not in MAP_TARGETS:
                raise InputError(f"--map {pair!r}: unknown target {target!r} (one of {', '.join(MAP_TARGETS)})")
            if target in mapping:
                raise InputError(f"--map names {target!r} twice")
            mapping[target] = source
    return mapping


_ABSENT = object()


def _field(record: dict, path: str):
    """The value at a dotted path; None when a field on the way is null (`prediction.mql` of a
    record whose `prediction` is null is no submission, not a missing field)."""
    value = record
    for part in path.split("."):
        if value is None:
            return None
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _known_id(record, mapping: dict) -> str | None:
    """The id a record names (the mapped field, or `id`), None when it names none."""
    if not isinstance(record, dict):
        return None
    value, _ = _source(record, "id", mapping)
    if value is not _ABSENT and value is not None:
        return str(value)
    return None


def _source(record: dict, target: str, mapping: dict) -> tuple[object, str | None]:
    """The value for a target and the field it came from (`_ABSENT`, None when nowhere)."""
    paths = (mapping[target],) if target in mapping else MAP_DEFAULTS[target]
    for path in paths:
        value = _field(record, path)
        if value is not _ABSENT:
            return value, path
    return _ABSENT, None


def _as_prediction(value, collection, method) -> dict | None:
    """A predicted query in any of the forms systems publish, as a prediction nlq scores."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        prediction = {"mql": value}
    elif isinstance(value, list):
        if not isinstance(collection, str) or not collection:
            raise InputError("the prediction is a bare pipeline and no collection is mapped",
                             hint="add --map collection=FIELD")
        prediction = {"collection": collection, "pipeline": value}
    elif isinstance(value, dict) and (isinstance(value.get("mql"), str) or "pipeline" in value):
        prediction = dict(value)
        if "pipeline" in prediction and "collection" not in prediction and isinstance(collection, str):
            prediction["collection"] = collection
    else:
        raise InputError(f"the prediction is a {type(value).__name__}, not a query "
                         "(expected mongosh or JSON text, a pipeline list or {collection, pipeline})")
    if method is not None:
        prediction["method"] = method
    return prediction


def map_record(record: dict, mapping: dict, *, number: int, method: str | None = None) -> dict:
    """Another system's record as a task record with `prediction`, by a field mapping.

        >>> map_record({"nl": "How many?", "db_id": "clinic", "pred": "db.p.countDocuments({})"},
        ...            {"question": "nl", "db": "db_id", "prediction": "pred"}, number=3)["prediction"]
        {'mql': 'db.p.countDocuments({})'}

    `mapping` names, per target (:data:`MAP_TARGETS`), the dotted field it is
    read from; an unmapped target is looked for under its own name
    (:data:`MAP_DEFAULTS`). `question`, `db` and `prediction` are required
    (a null prediction is a no-submission); `id` defaults to `<db>/<number>`;
    `gold` (mongosh text or `{collection, pipeline}`) becomes `gold_mql` or
    `gold`; `method` (or the `method` argument) is recorded in the
    prediction; the record's top-level fields that no target consumed go to
    `labels`.
    """
    values, used = {}, set()
    for target in MAP_TARGETS:
        value, path = _source(record, target, mapping)
        if value is not _ABSENT:
            values[target] = value
            used.add(path.split(".")[0])
    missing = [t for t in ("question", "db", "prediction") if t not in values]
    if missing:
        raise InputError(f"record lacks {', '.join(f'{t} (field {mapping.get(t, t)!r})' for t in missing)}",
                         hint="name the fields with --map question=FIELD,db=FIELD,prediction=FIELD")
    db, question = values["db"], values["question"]
    if not isinstance(db, str) or not db:
        raise InputError("db must be a non-empty string")
    if not isinstance(question, str) or not question:
        raise InputError("question must be a non-empty string")
    record_method = method if method is not None else values.get("method")
    task = {"id": str(values["id"]) if "id" in values else f"{db}/{number}", "db": db, "question": question}
    gold = values.get("gold")
    if isinstance(gold, str):
        task["gold_mql"] = gold
    elif isinstance(gold, dict):
        task["gold"] = gold
    labels = dict(values["labels"]) if isinstance(values.get("labels"), dict) else {}
    labels.update((k, v) for k, v in record.items() if k not in used)
    task["labels"] = labels
    task["prediction"] = _as_prediction(values["prediction"], values.get("collection"), record_method)
    return task


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


class TaskIndex:
    """Task records to join predictions with: by id, else by (db, question) ignoring case and spacing."""

    def __init__(self, tasks):
        self.by_id: dict = {}
        self.by_question: dict = {}
        for task in tasks:
            if "failure" in task or not isinstance(task.get("question"), str):
                continue
            self.by_id[str(task.get("id"))] = task
            key = (task.get("db"), _normalized(task["question"]))
            self.by_question[key] = None if key in self.by_question else task  # None: ambiguous

    def join(self, mapped: dict, has_id: bool) -> dict:
        """The task the mapped record answers, with the record's prediction; InputError when none."""
        task = self.by_id.get(mapped["id"]) if has_id else None
        if task is None:
            key = (mapped["db"], _normalized(mapped["question"]))
            if key in self.by_question and self.by_question[key] is None:
                raise UnmatchedTaskError(f"the question matches several tasks of db {mapped['db']}")
            task = self.by_question.get(key)
        if task is None:
            raise UnmatchedTaskError(f"no task of db {mapped['db']} has this id or question")
        joined = {k: v for k, v in task.items() if k != "prediction"}
        joined["prediction"] = mapped["prediction"]
        return joined


def convert_mapped(lines: Iterable[Line], mapping: dict, *, tasks: TaskIndex | None = None,
                   method: str | None = None, strict: bool = False, where: str = "line") -> Iterator[dict]:
    """Task records with `prediction` from another system's records; bad ones become failure records."""
    for line in lines:
        try:
            if line.error is not None:
                raise InputError(line.error)
            mapped = map_record(line.record, mapping, number=line.number, method=method)
            yield tasks.join(mapped, _source(line.record, "id", mapping)[1] is not None) if tasks else mapped
        except InputError as exc:
            if strict:
                raise InputError(f"{where} {line.number}: {exc}") if line.error is None else exc
            out = {"id": _known_id(line.record, mapping) if line.error is None else None, where: line.number,
                   "failure": failure(STAGE, "malformed_input" if line.error else exc.type, str(exc))}
            yield {k: v for k, v in out.items() if v is not None}


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
                   "failure": failure(STAGE, line.type if line.error else exc.type, str(exc))}
            yield {k: v for k, v in out.items() if v is not None}


def _id_of(record) -> str | None:
    if isinstance(record, dict) and "db_id" in record and "record_id" in record:
        return f"{record['db_id']}/{record['record_id']}"
    return None


def read_benchmark(source="-", *, max_nesting: int = DEFAULT_MAX_NESTING,
                   max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> tuple[str, Iterator[Line]]:
    """The records of a JSON array file or a JSONL file ('-' = stdin), as numbered lines.

    Returns `(where, lines)`: where is "line" for JSONL (numbers are line
    numbers) and "item" for a JSON array (numbers are 1-based positions).
    Each item or line is bounded by the reader's limits (see `nlq.io.iter_lines`).
    """
    with open_input(source) as stream:
        data = strip_bom(stream.read())
    first_line = data.lstrip().split(b"\n", 1)[0]
    if first_line[:1] == b"[":
        try:
            items = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            try:
                orjson.loads(first_line)
            except orjson.JSONDecodeError:
                raise InputError(f"malformed JSON array: {exc}") from None
            items = None  # JSONL whose first line happens to be an array
        if isinstance(items, list):
            return "item", _items(items, max_nesting, max_record_bytes)
    # lines end at b"\n" only: a bare \r is whitespace inside a JSON text, not a line break
    return "line", iter_lines(BytesIO(data), max_nesting=max_nesting, max_record_bytes=max_record_bytes)


def _items(items: list, max_nesting: int, max_record_bytes: int) -> Iterator[Line]:
    """The items of a JSON array as numbered lines, each read as one JSONL line would be."""
    for i, item in enumerate(items, start=1):
        try:
            text = orjson.dumps(item)
        except TypeError:  # orjson writes at most 254 levels
            yield Line(i, None, f"item {i}: nested more than {max_nesting} levels deep", InputTooDeep.type)
            continue
        line = next(iter_lines(BytesIO(text), max_nesting=max_nesting, max_record_bytes=max_record_bytes))
        yield Line(i, line.record, line.error and line.error.replace("line 1:", f"item {i}:", 1), line.type)


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


def run(source="-", fmt: str = "tend-v1", *, strict: bool = False, mapping: dict | None = None,
        tasks: str | None = None, method: str | None = None, max_nesting: int = DEFAULT_MAX_NESTING,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES, paraphrases: bool = False) -> Iterator[dict]:
    """`nlq import`: task records from a benchmark file (read whole: arrays need it);
    with `paraphrases`, one task per phrasing (`per_phrasing`).

    With `mapping` (the `mapped` format) the input is another system's
    predictions, optionally joined with the task records of the file `tasks`.
    Every line or item is bounded by the reader's limits (see `nlq.io.iter_lines`).
    """
    where, lines = read_benchmark(source, max_nesting=max_nesting, max_record_bytes=max_record_bytes)
    if fmt != "mapped":
        converted = convert(lines, fmt, strict=strict, where=where)
        return per_phrasing(converted) if paraphrases else converted
    index = None
    if tasks is not None:
        from nlq.io import read_records

        index = TaskIndex(read_records(tasks, stage=STAGE, max_nesting=max_nesting,
                                       max_record_bytes=max_record_bytes))
    return convert_mapped(lines, mapping or {}, tasks=index, method=method, strict=strict, where=where)


__all__ = ["FORMATS", "MAP_TARGETS", "to_task", "convert", "per_phrasing", "read_benchmark", "parse_map", "map_record",
           "TaskIndex", "convert_mapped", "run"]
