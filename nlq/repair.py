"""The `repair` stage (SAG §III-E, Algorithm 1): gate, execute, and vote in result space.

    for record in run(records, backend, indexes):
        record["prediction"], record["repair"]["vote_share"]

Without a model, each record's `prediction` and every entry of its optional
`candidates` list (other runs' predictions, say; `extra_candidates` adds
them from other files by `id`) is one candidate. Each candidate is parsed,
checked by the admissibility gate (:mod:`nlq.gate`), executed read-only and
diagnosed (:mod:`nlq.feedback`). The executed results are clustered by
order-insensitive result equivalence under the scorer's row identity
(:func:`nlq.normexec.prepare`: equal multisets of rows); candidates the gate
admits vote, or, when the gate admits none, every executed candidate. The
largest cluster wins; ties go to fewer violations, then a non-empty result,
then the earlier candidate; within the cluster the candidate with the fewest
violations (then the earliest) is selected.

The record gains

    repair = {violations, rounds, attempts, clusters, vote_share, rows, ms, original}

(`violations` of the selected candidate, `clusters` = [{members, size,
rows, violations}] largest first, `vote_share` = winner size / voters,
`rows` = its row count, `original` = the input prediction; with a model
also `usage`) and `prediction`
becomes the selected candidate, so `nlq score` after `repair` scores the
repaired answer. When no candidate parses and executes, `prediction` is null
and the record gets a typed failure `no_valid_candidate` naming each
candidate's problem; with `min_vote`, a winner below that share abstains
(`abstained`). A record that failed upstream passes through unchanged.

With a model (:class:`Loop`), each of `attempts` attempts decodes up to
`rounds` candidates, feeding back the previous candidate and its violations,
keeps its best one (executed, fewest violations, non-empty, later round), and the
attempts' best candidates vote as above; `rounds` in the report is the
largest round a voter came from.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from nlq import feedback, gate, io
from nlq.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.errors import BackendError, NlqError, UnknownDatabaseError, failure
from nlq.mql import analyze
from nlq.mql.mongosh import parse_query
from nlq.normexec import prepare
from nlq.score import submitted_query

STAGE = "repair"
NO_VALID_CANDIDATE = "no_valid_candidate"
ABSTAINED = "abstained"


@dataclass
class Options:
    """What repair does to each candidate (the knockouts of the paper's Table V among them)."""

    timeout: float = DEFAULT_TIMEOUT
    max_rows: int = DEFAULT_MAX_ROWS
    gate: bool = True          # run the admissibility gate
    bisection: bool = True     # localize empty results
    contract: bool = False     # check a candidate's declared output contract
    min_vote: float | None = None


@dataclass
class Candidate:
    """One candidate and what was found out about it."""

    position: int                      # 0 = the prediction, then candidates in order
    submitted: object                  # the prediction object (or text) as given
    query: object = None               # the parsed Query
    violations: list = field(default_factory=list)   # gate + execution feedback (Violation)
    admissible: bool = False           # no gate violation
    rows: list | None = None           # executed result
    problem: str | None = None         # why it could not run (parse error, exec error...)
    round: int = 0                     # the repair round that produced it (model loop)
    attempt: int = 0

    @property
    def executed(self) -> bool:
        return self.rows is not None

    def rank(self) -> tuple:
        """Best first within one attempt: executed, fewer violations, non-empty, later round."""
        return (not self.executed, len(self.violations), not self.rows, -self.round)


def evaluate(submitted, position: int, record: dict, backend, index: dict, options: Options) -> Candidate:
    """Parse, gate, execute and diagnose one candidate of a record."""
    candidate = Candidate(position, submitted)
    source = submitted_query(submitted)
    if source is None:
        candidate.problem = "no query submitted"
        return candidate
    try:
        candidate.query = parse_query(source)
        analyze.check_forbidden(candidate.query)
    except BackendError:
        raise
    except NlqError as exc:
        candidate.problem = f"{exc.type}: {feedback.concise(exc.message)}"
        kind = "forbidden" if exc.type == "forbidden_operator" else "parse"
        candidate.violations = [gate.Violation(kind, candidate.problem, None)]
        return candidate
    question = record.get("question") or ""
    if options.gate:
        candidate.violations = gate.run(candidate.query, index, question)
    candidate.admissible = not candidate.violations
    ran = feedback.execute(candidate.query, backend, record["db"], timeout=options.timeout,
                           max_rows=options.max_rows)
    contract = submitted.get("contract") if options.contract and isinstance(submitted, dict) else None
    candidate.violations += feedback.diagnose(candidate.query, ran, backend, record["db"], question=question,
                                              contract=contract, bisection=options.bisection,
                                              timeout=options.timeout, max_rows=options.max_rows)
    if ran.error is not None:
        candidate.problem = f"{ran.error['type']}: {feedback.concise(ran.error['message'])}"
    else:
        candidate.rows = ran.rows
    return candidate


@dataclass
class Vote:
    winner: Candidate | None
    clusters: list            # [[Candidate, ...], ...] largest (best) first
    voters: int


def result_key(rows: list):
    """Order-insensitive identity of a result under the scorer's row identity."""
    return frozenset(prepare(rows).counts.items())


def vote(candidates: list[Candidate]) -> Vote:
    """The largest result cluster among the voters (see the module docstring)."""
    executed = [c for c in candidates if c.executed]
    voters = [c for c in executed if c.admissible] or executed
    groups: dict = {}
    for c in voters:
        groups.setdefault(result_key(c.rows), []).append(c)
    for members in groups.values():
        members.sort(key=lambda c: (len(c.violations), c.position))
    clusters = sorted(groups.values(), key=lambda m: (-len(m), min(len(c.violations) for c in m),
                                                      not m[0].rows, min(c.position for c in m)))
    return Vote(clusters[0][0] if clusters else None, clusters, len(voters))


def _candidates(record: dict) -> list:
    listed = record.get("candidates")
    extra = listed if isinstance(listed, list) else []
    return [record.get("prediction")] + extra


def _summary(vote_: Vote) -> list[dict]:
    return [{"members": [c.position for c in members], "size": len(members),
             "rows": len(members[0].rows), "violations": min(len(c.violations) for c in members)}
            for members in vote_.clusters]


def repair_record(record: dict, backend, index: dict, options: Options) -> dict:
    """One record with `repair` added and `prediction` replaced (LLM-free)."""
    started = time.perf_counter()
    candidates = [evaluate(s, i, record, backend, index, options) for i, s in enumerate(_candidates(record))]
    return finish(record, candidates, vote(candidates), started, options, rounds=0, attempts=len(candidates))


def finish(record: dict, candidates: list[Candidate], vote_: Vote, started: float, options: Options, *,
           rounds: int, attempts: int) -> dict:
    """The output record of a vote: `repair`, the new `prediction`, or a typed failure."""
    winner = vote_.winner
    share = round(len(vote_.clusters[0]) / vote_.voters, 4) if winner is not None else 0.0
    report = {"violations": [v.to_json() for v in winner.violations] if winner else [],
              "rounds": rounds, "attempts": attempts, "clusters": _summary(vote_), "vote_share": share,
              "rows": len(winner.rows) if winner else None, "ms": round((time.perf_counter() - started) * 1000, 3),
              "original": record.get("prediction")}
    out = {**record, "repair": report}
    if winner is None:
        problems = "; ".join(f"candidate {c.position}: {c.problem or 'not executed'}" for c in candidates)
        out["prediction"] = None
        out["failure"] = failure(STAGE, NO_VALID_CANDIDATE, f"no candidate parses and executes ({problems})")
        return out
    if options.min_vote is not None and share < options.min_vote:
        out["prediction"] = None
        out["failure"] = failure(STAGE, ABSTAINED, f"the largest result cluster holds {share:.0%} of the votes, "
                                 f"below --min-vote {options.min_vote:g}")
        return out
    chosen = winner.submitted
    out["prediction"] = dict(chosen) if isinstance(chosen, dict) else {"mql": chosen}
    return out


# -- the model loop (Algorithm 1) ----------------------------------------------------------------

DEFAULT_ROUNDS = 6
DEFAULT_ATTEMPTS = 3


def feedback_message(candidate: Candidate) -> str:
    """The repair turn after a candidate: the candidate itself and its concrete violations."""
    if candidate.query is not None:
        shown = io.dumps({"collection": candidate.query.collection, "pipeline": candidate.query.pipeline}).decode()
    else:
        shown = str(candidate.submitted)[:2000]
    problems = "\n".join(f"- [{v.check}] {v.message}" for v in candidate.violations) or \
        f"- {candidate.problem or 'it could not be run'}"
    return (f"Your previous candidate:\n{shown}\n\nIt has these problems:\n{problems}\n\n"
            "Return a corrected pipeline in the same format. Use only paths and stored values that exist.")


@dataclass
class Loop:
    """Algorithm 1 with a model: per attempt up to `rounds` decodes, each gated, executed and diagnosed,
    the next one seeing the previous candidate and its violations; the attempt keeps its best
    candidate (fewest violations, non-empty, later round), and the attempts vote in result space.

    `model.chat(messages) -> reply` (reply.text), `messages(record, index) -> [chat messages]` (the
    method's prompt: card, witnesses, question), `decode(text, collections) -> prediction object`.
    With `start_from_prediction`, the record's own prediction is round 1 of the first attempt.
    """

    model: object
    messages: object
    decode: object
    rounds: int = DEFAULT_ROUNDS
    attempts: int = DEFAULT_ATTEMPTS
    start_from_prediction: bool = False
    chat_options: dict = field(default_factory=dict)

    def solve(self, record: dict, backend, index: dict, options: Options) -> tuple[list, list, dict]:
        """(best candidate per attempt, every candidate, usage) of one record."""
        collections = sorted(index.get("collections") or {})
        best, every = [], []
        usage = {"calls": 0, "rounds": 0}
        for attempt in range(self.attempts):
            conversation = list(self.messages(record, index))
            tried: list[Candidate] = []
            for round_ in range(1, self.rounds + 1):
                if attempt == 0 and round_ == 1 and self.start_from_prediction and record.get("prediction"):
                    submitted, text = record["prediction"], None
                else:
                    try:
                        reply = self.model.chat(conversation, **self.chat_options)
                    except BackendError:
                        raise
                    except NlqError as exc:  # a model failure ends this attempt
                        failed = Candidate(len(every), None, problem=f"{exc.type}: {feedback.concise(exc.message)}",
                                           round=round_, attempt=attempt)
                        every.append(failed)
                        break
                    usage["calls"] += 1
                    for key, value in (getattr(reply, "usage", None) or {}).items():
                        if isinstance(value, (int, float)):
                            usage[key] = usage.get(key, 0) + value
                    text = reply.text
                    try:
                        submitted = self.decode(text, collections)
                    except NlqError as exc:
                        submitted = text
                        candidate = Candidate(len(every), text, problem=f"{exc.type}: {feedback.concise(exc.message)}",
                                              round=round_, attempt=attempt)
                        candidate.violations = [gate.Violation("parse", candidate.problem, None)]
                        tried.append(candidate)
                        every.append(candidate)
                        conversation += [{"role": "assistant", "content": text},
                                         {"role": "user", "content": feedback_message(candidate)}]
                        continue
                candidate = evaluate(submitted, len(every), record, backend, index, options)
                candidate.round, candidate.attempt = round_, attempt
                tried.append(candidate)
                every.append(candidate)
                usage["rounds"] += 1
                if not candidate.violations:
                    break
                shown = text if text is not None else io.dumps(submitted).decode()
                conversation += [{"role": "assistant", "content": shown},
                                 {"role": "user", "content": feedback_message(candidate)}]
            if tried:
                best.append(min(tried, key=lambda c: (c.rank(), c.position)))
        return best, every, usage

    def __call__(self, record: dict, backend, index: dict, options: Options) -> dict:
        started = time.perf_counter()
        best, every, usage = self.solve(record, backend, index, options)
        out = finish(record, every, vote(best), started, options, rounds=max((c.round for c in best), default=0),
                     attempts=self.attempts)
        out["repair"]["usage"] = usage
        return out


def index_for(indexes: dict[str, dict], db) -> dict:
    if db in indexes:
        return indexes[db]
    known = ", ".join(sorted(indexes)) or "none"
    raise UnknownDatabaseError(f"no grounding index for database {db!r} (indexes loaded: {known})",
                               hint="build one with `nlq index --data DIR --db DB`")


def extra_candidates(records: Iterable[dict], runs: list[str]) -> Iterator[dict]:
    """Each record with the `prediction` of every other run's record of the same `id` appended to
    its `candidates` (other runs are read whole first: this buffers them, not the stream)."""
    by_id: list[dict] = []
    for path in runs:
        found = {}
        for other in io.read_records(path, stage=STAGE):
            if other.get("id") is not None and "prediction" in other:
                found.setdefault(other["id"], other["prediction"])
        by_id.append(found)
    for record in records:
        more = [found[record["id"]] for found in by_id if record.get("id") in found]
        if more:
            listed = record.get("candidates") if isinstance(record.get("candidates"), list) else []
            record = {**record, "candidates": listed + more}
        yield record


def run(records: Iterable[dict], backend, indexes: dict[str, dict], *, options: Options | None = None,
        loop=None) -> Iterator[dict]:
    """Add `repair` to each record (see the module docstring); `loop` is the model loop, when a model
    is given (:func:`nlq.methods.sag.repair_loop`)."""
    options = options or Options()
    for record in records:
        if io.has_failure(record):
            yield record
            continue
        try:
            if not isinstance(record.get("db"), str):
                raise UnknownDatabaseError("the record names no database (a string `db` field)")
            index = index_for(indexes, record["db"])
            if loop is not None:
                yield loop(record, backend, index, options)
            else:
                yield repair_record(record, backend, index, options)
        except BackendError:
            raise
        except NlqError as exc:
            yield {**record, "prediction": None, "failure": exc.to_failure(STAGE)}
        except Exception as exc:  # noqa: BLE001 - a bug must not lose the record
            yield {**record, "prediction": None, "failure": failure(STAGE, "internal_error",
                                                                    f"{type(exc).__name__}: {exc}")}


__all__ = ["Options", "Candidate", "evaluate", "vote", "Vote", "result_key", "repair_record", "finish", "run",
           "extra_candidates", "STAGE"]
