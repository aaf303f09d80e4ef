"""One question, one answer: index (cached), witness, generate, execute.

    record = ask.run("How many patients are there?", EmbeddedBackend("fixtures/worlds"), "clinic")
    record["execution"]["rows"]   # [{"count": 900}]

The same stages as `nlq index | nlq witness | nlq generate | nlq exec`, for a
single question. With `also` (other methods), each of them answers too and
their predictions are the record's `candidates`, chosen among by `nlq
repair`'s selection (LLM-free, `repair.agreed` naming the methods that gave
the chosen result). With `repair=True` the prediction goes through `nlq repair`
(:func:`nlq.repair.run`: admissibility gate, read-only execution, result-space
vote; with a `model`, the SAG repair loop starting from the prediction) before
it runs. The record that comes back is the task record those stages
would write (`db`, `question`, `witnesses`, `prediction` or a typed
`failure`, `execution = {rows_count, ms, error, rows}`) plus `explain`: how the
grounding index was obtained, the card lines of the fields the pipeline reads,
the pipeline as mongosh text (after `use <db>`, so it pastes into mongosh)
and the time each step took.

The grounding index of a `--data` database is cached in the user cache folder
(`$XDG_CACHE_HOME/nlq/index/`, by default `~/.cache/nlq/index/`; the data
folder may be read-only), under a key made of the SHA-256 of the database's
files, the index parameters and the index code: changed data, other
parameters or another nlq build give a new key, so a stale index is never
reused. A MongoDB database is sampled afresh on every call: a server's
content has no cheap hash.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Callable

import orjson

from nlq import __version__, card, execute, generate, io, probe, witness
from nlq import repair as repair_stage
from nlq import index as grounding
from nlq import text as text_module
from nlq.errors import AbstainedError, BackendError, ModelConfigError, NlqError, NoAnswerError, failure
from nlq.mql import serialize
from nlq.mql.fields import read_paths
from nlq.methods.rules.accounting import describe
from nlq.mql.mongosh import parse_query

STAGE = "ask"
SHOWN_MATCHES = 3  # witness matches listed per witness by explain_text


def cache_root() -> Path:
    """The user cache folder of nlq: `$XDG_CACHE_HOME/nlq`, else `~/.cache/nlq`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nlq"


def index_key(backend, db: str, params: dict) -> str | None:
    """The cache key of `db`'s grounding index, or None when the backend cannot hash its content."""
    content_hash = getattr(backend, "content_hash", None)
    if content_hash is None:
        return None
    code = hashlib.sha256()
    # the backend's module too: it decides what the documents look like (the `_id` an
    # embedded collection's documents are given)
    for module in (grounding, text_module, sys.modules.get(type(backend).__module__)):
        if getattr(module, "__file__", None):
            code.update(Path(module.__file__).read_bytes())
    key = {"nlq": __version__, "code": code.hexdigest(), "db": db, "data": content_hash(db), "params": params}
    return hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()


def grounding_index(backend, db: str, *, cache: bool = True, sample: int = grounding.DEFAULT_SAMPLE,
                    seed: int = grounding.DEFAULT_SEED, max_depth: int = grounding.DEFAULT_MAX_DEPTH,
                    warn: Callable[[str], None] | None = None) -> tuple[dict, dict]:
    """`(index document, {source, path})` of `db`: read from the cache when its key is there,
    else built (and saved when `cache`). `source` is `cache`, `built` or `built_uncached`.

    A cache folder that cannot be written is reported through `warn` and the index is
    still built; an unreadable cache file is rebuilt."""
    params = {"sample": sample, "seed": seed, "max_depth": max_depth}
    key = index_key(backend, db, params) if cache else None
    path = cache_root() / "index" / f"{db}-{key[:24]}.json" if key else None
    if path is not None and path.is_file():
        try:
            return io.loads(path.read_bytes()), {"source": "cache", "path": str(path)}
        except (OSError, ValueError, NlqError):
            pass  # unreadable or truncated: build it again below
    index, = grounding.build(backend, [db], **params)
    if path is None:
        return index, {"source": "built_uncached", "path": None}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(grounding.dumps(index))  # = io.dumps(index), faster
        os.replace(partial, path)  # atomic: a concurrent reader sees the whole file or none
    except OSError as exc:
        if warn is not None:
            warn(f"cannot write the index cache {path.parent}: {exc.strerror}; the index is not kept")
        return index, {"source": "built_uncached", "path": None}
    return index, {"source": "built", "path": str(path)}


def run(question: str, backend, db: str, *, method: str = "rules", repair: bool = False, cache: bool = True,
        timeout: float = 20.0, max_rows: int = 100_000, options: dict | None = None, model=None,
        warn: Callable[[str], None] | None = None,
        max_question_chars: int = witness.DEFAULT_MAX_QUESTION_CHARS, also: tuple = (),
        allow_unresolved: bool = False, more_models: tuple = (), probe_values: bool = True) -> dict:
    """The answer record of one question on `db` (see the module docstring).

    A question longer than `max_question_chars` is a typed `input_too_large` failure.

    `model` is the ChatClient of a method that calls a model (`needs_model`); `options`
    are the method's (`min_confidence`, `max_steps`, ...), as `nlq generate` passes them.
    `more_models` are further ChatClients: each answers with `method` too, every
    prediction is a candidate of the selection, and each is its own system
    (`prediction.system` = `METHOD@MODEL`), so `repair.agreed` names the models that agreed.
    `also` names further methods, answering with `model`.

    A prediction whose reading left out words stating a constraint (`unresolved`, see
    `nlq.methods.rules.accounting`) answers another question: the record abstains (the
    typed `abstained` failure, stage `ask`, with those words; the pipeline is kept, not
    run) unless `allow_unresolved`, when it runs and the words are reported through `warn`.

    With `probe_values`, the question's literals the grounding index does not hold (it reads a
    sample of each collection) are asked of the database, read-only (`nlq.probe`); what is found
    joins the witnesses (`explain.probed`), and with a method that calls no model, the values
    its reading left out are asked too and the question is read again. A prediction resting on
    a probed value is named through `warn` and its confidence kept below the threshold.

    A question that gets no pipeline keeps its typed `failure` (stage `witness` or
    `generate`); a pipeline that fails to run gets `execution.error` and the same
    object as `failure` (stage `exec`). BackendError (the database cannot be read)
    is raised."""
    started = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = round((now - since) * 1000, 3)
        return now

    index, how = grounding_index(backend, db, cache=cache, warn=warn)
    t = lap("index", started)

    def witnessed_on(index: dict) -> dict:
        found, = witness.run([{"db": db, "question": question}], {db: index}, max_question_chars=max_question_chars)
        return found

    def context_on(indexes: dict, client=model) -> generate.Context:
        return generate.Context(indexes, backend=backend, model=client,
                                **{"timeout": timeout, "max_rows": max_rows, **(options or {})})

    def probed_into(index: dict, terms: list[str]) -> tuple[dict, list[dict]]:
        """`index` with the `terms` the database holds and it does not, and what was found."""
        found = probe.probe(backend, index, terms)
        return probe.augmented(index, found), _probed(found)

    witnessed = witnessed_on(index)
    probed: list[dict] = []
    if probe_values and not io.has_failure(witnessed):  # literals the sample missed, asked of the database
        index, probed = probed_into(index, probe.literals(question, witnessed.get("witnesses") or ()))
        if probed:
            witnessed = witnessed_on(index)
    t = lap("witness", t)
    indexes = {db: index}
    context = context_on(indexes)
    record, = generate.run([witnessed], method, context, max_question_chars=max_question_chars)
    left = _left_out_words(record.get("prediction") or {}) if probe_values and model is None else []
    if left:  # words a reading left out: asked of the database too, and the question read again
        index, more = probed_into(index, probe.literals("", (), left))
        if more:
            probed += more
            indexes = {db: index}
            context = context_on(indexes)
            witnessed = witnessed_on(index)
            record, = generate.run([witnessed], method, context, max_question_chars=max_question_chars)
    others = []
    for name in also:
        other, = generate.run([witnessed], name, context, max_question_chars=max_question_chars)
        others.append(other)
    if more_models:
        if model is None:
            raise ModelConfigError("several models answer only with a method that calls a model")
        record = tag_system(record, model)
        for client in more_models:
            other, = generate.run([witnessed], method, context_on(indexes, client),
                                  max_question_chars=max_question_chars)
            others.append(tag_system(other, client))
    t = lap("generate", t)
    record = _probed_reading(record, probed, warn)
    generated = record.get("prediction") or {}
    if others:  # several systems: their predictions are candidates, selection chooses (who agreed is shown)
        record = {**record, "candidates": [o["prediction"] for o in others if o.get("prediction")]}
        repair = True
    if repair:  # the `nlq repair` stage: gate, execute, vote; the prediction becomes its winner
        loop = None
        if model is not None and not others:  # with a model, the loop of `nlq repair --model`, from this prediction
            from nlq.methods.sag import repair_loop

            loop = repair_loop(model, start_from_prediction=True)
        record, = repair_stage.run([record], backend, indexes, loop=loop,
                                   options=repair_stage.Options(timeout=timeout, max_rows=max_rows))
        t = lap("repair", t)
    record["execution"] = {"rows_count": None, "ms": None, "error": None, "rows": None}
    explain = {"index": how, "card_lines": [], "mongosh": None, "timings": timings, "probed": probed}
    prediction = record.get("prediction")
    if prediction and not io.has_failure(record):
        left_out = unresolved_of(prediction, generated if model is None else {})
        try:
            query = parse_query(prediction)
            explain["mongosh"] = f"use {db}\n{serialize.to_mongosh(query)}"
            explain["card_lines"] = card.lines_for(index, read_paths(query.collection, query.pipeline))
            if left_out and not allow_unresolved:
                raise AbstainedError(f"the reading leaves out words that state a constraint: {describe(left_out)}; "
                                     "its answer would be to another question", unresolved=left_out,
                                     hint="rephrase with the data's own names and values, or pass "
                                          "--allow-unresolved to see the answer without them")
            if left_out and warn is not None:
                warn(f"the answer leaves out {describe(left_out)}")
            backend.collections(db)  # reads an embedded database's files: timed apart from the query
            t = lap("load", t)
            rows = execute.run_query(backend, db, query, timeout=timeout, max_rows=max_rows, warn=warn)
            record["execution"].update(rows_count=len(rows), ms=round((time.perf_counter() - t) * 1000, 3),
                                       rows=rows)
        except BackendError:
            raise
        except AbstainedError as exc:
            record["failure"] = exc.to_failure(STAGE)
        except NlqError as exc:
            record["execution"]["error"] = record["failure"] = exc.to_failure("exec")
        except Exception as exc:  # noqa: BLE001 - an engine bug is this answer's failure, named
            record["execution"]["error"] = record["failure"] = failure(
                "exec", "internal_error", f"{type(exc).__name__}: {exc}")
        t = lap("exec", t)
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    record["explain"] = explain
    return record


def tag_system(record: dict, client) -> dict:
    """The record with its prediction's `system` naming the model that answered (`METHOD@MODEL`):
    the selection counts two models as two systems, one model's repetition as one."""
    prediction = record.get("prediction")
    if not isinstance(prediction, dict):
        return record
    return {**record, "prediction": {**prediction, "system": f"{prediction.get('method')}@{client.config.model}"}}


def remember(record: dict, memory) -> int:
    """Store an answered record in `memory` as a user-confirmed entry (`nlq ask --confirm`); its id."""
    from nlq.memory.stage import add_records

    added, = add_records([{**record, "confirmed": True}], memory)
    if added.get("failure"):
        raise NlqError(f"the answer cannot be remembered: {added['failure']['message']}")
    return added["memory"]["added"]


def _probed_reading(record: dict, probed: list[dict], warn) -> dict:
    """A prediction that rests on a value found only by probing: its confidence is kept below the
    recommended threshold (`probe.MAX_CONFIDENCE`: the sample missed the value, so it is rare,
    and a rare value that spells the literal may mean something else, a city named California
    for the state) and `warn` names the value and where it was found."""
    prediction = record.get("prediction")
    if not probed or not prediction:
        return record
    text = io.dumps(prediction.get("pipeline") or []).decode()
    used = [m for m in probed if io.dumps(m["stored"]).decode() in text]
    if not used:
        return record
    if warn is not None:
        warn("; ".join(f"{io.dumps(m['stored']).decode()} is not in the index's sample: found in the database as "
                       f"{m['collection']}.{m['path']} ({m['frequency']} document{'s' * (m['frequency'] != 1)})"
                       for m in used))
    confidence = prediction.get("confidence")
    if isinstance(confidence, (int, float)) and confidence > probe.MAX_CONFIDENCE:
        prediction = {**prediction, "confidence": probe.MAX_CONFIDENCE, "probed": True}
    return {**record, "prediction": prediction}


def _left_out_words(prediction: dict) -> list[str]:
    """The words a reading left out that may be stored values: those it reports as values, then
    the words it placed nowhere (rules' `ir.unresolved`, 'minneapolis' written in lower case)."""
    stated = [u["word"] for u in prediction.get("unresolved") or () if u.get("kind") == "value"]
    unplaced = (prediction.get("ir") or {}).get("unresolved") or ()
    return list(dict.fromkeys([*stated, *(w for w in unplaced if isinstance(w, str))]))


def _probed(found: dict[str, list[dict]]) -> list[dict]:
    """What `explain.probed` shows of the probed matches: {term, collection, path, stored, frequency}."""
    return [{"term": key, **{k: m[k] for k in ("collection", "path", "stored", "frequency")}}
            for key, matches in found.items() for m in matches]


def unresolved_of(prediction: dict, generated: dict) -> list[dict]:
    """The words stating a constraint the answering reading left out: the prediction's own
    `unresolved`, else (a repaired prediction, no model) those of the prediction generated."""
    found = prediction.get("unresolved")
    return list(found if found is not None else generated.get("unresolved") or [])


def check_answered(record: dict) -> None:
    """Raise NoAnswerError with the reason when the record carries a failure instead of rows."""
    problem = record.get("failure")
    if problem:
        hint = "`nlq ask --explain` shows the witnesses and the pipeline" if record.get("witnesses") else None
        if problem.get("unresolved"):
            hint = ("rephrase with the data's own names and values, or pass --allow-unresolved to see the "
                    "answer without them (`--explain` shows the pipeline)")
        raise NoAnswerError(f"no answer ({problem['stage']}: {problem['type']}): {problem['message']}", hint=hint)


def explain_text(record: dict) -> str:
    """A readable account of an answer record: witnesses, card lines, pipeline, confidence,
    timings, then the rows (one JSON line each)."""
    explain = record["explain"]
    out = [f"question: {record['question']}", f"database: {record['db']}", ""]
    witnesses = record.get("witnesses") or []
    out.append(f"witnesses ({len(witnesses)}):" if witnesses else "witnesses: none")
    for w in witnesses:
        out.append(f"  {orjson.dumps(w['term']).decode()} ({w['source']}{', hard' if w['hard'] else ''}): "
                   f"{_matches(w['matches'])}")
    out.append("")
    lines = explain["card_lines"]
    out.append("card lines used:" if lines else "card lines used: none")
    out.extend("  " + line for line in lines)
    out.append("")
    prediction = record.get("prediction")
    left_out = (prediction or {}).get("unresolved")
    if left_out:
        out += [f"left out by the reading: {describe(left_out)}", ""]
    if prediction:
        out.append(f"pipeline ({prediction.get('method')}, confidence {_confidence(prediction)}):")
        out.extend("  " + line for line in (explain["mongosh"] or "").splitlines())
        usage = prediction.get("usage")
        if isinstance(usage, dict):
            out.append(f"model: {usage.get('model_calls', 0)} call(s), {usage.get('prompt_tokens') or 0} prompt + "
                       f"{usage.get('completion_tokens') or 0} completion tokens, "
                       f"{usage.get('cache_hits', 0)} from the cache")
    else:
        out.append("pipeline: none")
    repaired = record.get("repair")
    if isinstance(repaired, dict):
        voters = sum(c.get("size", 0) for c in repaired.get("clusters", []))
        out.append(f"repair: {len(repaired.get('violations', []))} gate violation(s) on the selected candidate, "
                   f"vote share {repaired.get('vote_share') or 0:.2f} of {voters} candidate(s)")
        out.extend(f"  {v['check']}: {v['message']}" for v in repaired.get("violations", []))
        if isinstance(repaired.get("confidence"), (int, float)):
            agreed = ", ".join(str(a) for a in repaired.get("agreed") or []) or "none"
            out.append(f"selected: from {repaired.get('system')}, agreed by {agreed}; "
                       f"confidence {repaired['confidence']:.2f}")
    out.append("")
    timings = explain["timings"]
    steps = ", ".join(f"{name} {timings[name]:.1f} ms" for name in ("index", "witness", "generate", "repair", "load", "exec")
                      if name in timings)
    out.append(f"timings: {steps}; total {timings['total']:.1f} ms "
               f"(index {_INDEX_SOURCES[explain['index']['source']]})")
    problem = record.get("failure")
    if problem:
        out.append("")
        out.append(f"no answer ({problem['stage']}: {problem['type']}): {problem['message']}")
        return "\n".join(out) + "\n"
    rows = record["execution"]["rows"] or []
    out.append("")
    out.append(f"rows ({len(rows)}):")
    out.extend(io.dumps(row).decode() for row in rows)
    return "\n".join(out) + "\n"


_INDEX_SOURCES = {"cache": "read from the cache", "built": "built and cached",
                  "built_uncached": "built, not cached"}


def _confidence(prediction: dict) -> str:
    value = prediction.get("confidence")
    return "n/a" if value is None else f"{value:.2f}"


def _matches(matches: list[dict]) -> str:
    if not matches:
        return "no stored value or key"
    shown = []
    for m in matches[:SHOWN_MATCHES]:
        what = "year of" if m.get("part") == "year" else f"{m['kind']} of"
        stored = "" if m.get("part") == "year" else " " + io.dumps(m["stored"]).decode()
        found = ", found in the database" if m.get("probed") else ""
        shown.append(f"{what} {m['collection']}.{m['path']}{stored} ({m['frequency']}x{found})")
    more = len(matches) - SHOWN_MATCHES
    return "; ".join(shown) + (f"; +{more} more" if more > 0 else "")


__all__ = ["run", "check_answered", "explain_text", "grounding_index", "index_key", "cache_root"]
