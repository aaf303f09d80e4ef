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
heaviest cluster wins. When every voter carries a `confidence` (rules'
prediction and its `--candidates`, each with its calibrated probability of
being right), a cluster weighs the probability that at least one of its
members is right, their confidences combined as independent evidence
(noisy-OR: 1 - prod(1 - confidence)): a confident reading outweighs two
doubtful ones that agree with each other, two alternatives that agree can
together outweigh a weak prediction, and agreement never counts for more
than certainty. Otherwise (or in the model loop below, which keeps the
paper's majority) each voter counts one. Ties go to fewer violations, then a non-empty result, then the
earlier candidate (the prediction first); within the cluster the candidate
with the fewest violations (then the earliest) is selected.

The record gains

    repair = {violations, rounds, attempts, clusters, vote_share, rows, ms, original}

(`violations` of the selected candidate, `clusters` = [{members, size,
rows, violations}] heaviest first (with `weight`, the noisy-OR of their
confidences, when weighed), `vote_share` = the winner's share of the votes
(its size / voters, or its weight / the clusters' summed weights),
`rows` = its row count, `original` = the input prediction; `usage` when
the other candidates carry the model usage that produced them, summed, so
that a report counts every call behind the vote) and `prediction`
becomes the selected candidate, so `nlq score` after `repair` scores the
repaired answer. When no candidate parses and executes, `prediction` is null
and the record gets a typed failure `no_valid_candidate` naming each
candidate's problem; with `min_vote`, a winner below that share abstains
(`abstained`). A record that failed upstream passes through unchanged, unless
there is something to repair: its question and database, and candidates (from
other runs) or a model to solve it afresh.

With a model (:class:`Loop`), each of `attempts` attempts decodes up to
`rounds` candidates, feeding back the previous candidate and its violations
(gate and execution feedback), keeps its best one (executed, fewest
violations, non-empty, later round), and the attempts' best candidates vote
as above. `rounds` is then a list, the rounds each attempt used (an integer,
0, without a model: no candidate is decoded), and `usage = {model_calls,
prompt_tokens, completion_tokens, cache_hits, ms}` the repair stage's model
calls. `workers` records are repaired at a time.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from nlq import feedback, gate, io
from nlq.generate import ordered_map
from nlq.llm import usage as llm_usage
from nlq.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.errors import BackendError, CallBudgetExhaustedError, InputError, NlqError, UnknownDatabaseError, failure
from nlq.mql import analyze
from nlq.mql.mongosh import parse_query
from nlq.normexec import prepare
from nlq.score import submitted_query
from nlq.selection import Evidence, builds_values, columns_of, pipeline_shape, representative

STAGE = "repair"
NO_VALID_CANDIDATE = "no_valid_candidate"
ABSTAINED = "abstained"
GATE_CHECKS = ("path", "value", "limit")


@dataclass
class Options:
    """What repair does to each candidate (the knockouts of the paper's Table V among them)."""

    timeout: float = DEFAULT_TIMEOUT
    max_rows: int = DEFAULT_MAX_ROWS
    gate: bool = True          # run the admissibility gate
    checks: tuple = GATE_CHECKS  # which of its checks (by name: path, value, limit)
    bisection: bool = True     # localize empty results
    contract: bool = False     # check a candidate's declared output contract
    fail_closed: bool = False  # a `$lookup` join probe that cannot run is a violation
    min_vote: float | None = None
    # the profile elements of the gate and the loop (nlq.profiles; docs/REPRODUCTION.md)
    execute: str = "all"            # or "gate-clean": only gate-clean candidates run (Algorithm 1)
    voters: str = "admissible"      # or "attempts": every attempt's best votes, ranked by violations
    value_check: str = "literals"   # or "witnesses": the question's hard witnesses, with the omission check
    check_order: str = "together"   # or "path-first": value and limit checks only after a clean path check
    join_probe: str = "empty"       # or "gate": $lookup join edges probed in the gate (fail-open)
    id_leak: str = "objectid"       # or "synthetic" (ObjectIds and '::' keys), or "off"
    literals: str = "nlq"           # the witnesses' literal classes (for value_check="witnesses")
    hard_max: int = 3               # their hard bound
    profile: dict | None = None     # `repair.profile` = {name, overrides} (nlq.profiles.describe)
    select: str = "evidence"   # how the LLM-free stage chooses: "evidence" (nlq.selection) or "vote"
    min_confidence: float | None = None  # abstain below this repair.confidence
    selector: object = None    # a nlq.selection.Selector (None: the one shipped with nlq)

    def model(self):
        """The selection model these options use."""
        from nlq.selection import Selector
        return self.selector if self.selector is not None else Selector.load()

    def gate_checks(self) -> tuple:
        """The gate's check functions these options run (none without the gate)."""
        unknown = set(self.checks) - set(gate.NAMES.values())
        if unknown:
            raise InputError(f"unknown gate check(s) {', '.join(sorted(unknown))}; "
                             f"the gate has: {', '.join(GATE_CHECKS)}")
        return tuple(fn for fn in gate.CHECKS if gate.NAMES[fn] in self.checks) if self.gate else ()


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

    def paper_rank(self) -> tuple:
        """The paper's BestByViolations: fewer violations, then a non-empty execution (a candidate
        not run counts as not empty, as in its reference), then the later round."""
        return (len(self.violations), self.executed and not self.rows, -self.round)


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
    checks = options.gate_checks()
    if checks and options.check_order == "path-first" and gate.check_path in checks:
        found = gate.check_path(candidate.query, index, question)
        if found:
            checks, candidate.violations = (), found  # the reference's order: paths before literals
        else:
            checks = tuple(c for c in checks if c is not gate.check_path)
    if checks:
        if options.value_check == "witnesses" and gate.check_value in checks:
            candidate.violations += gate.run(candidate.query, index, question,
                                             checks=tuple(c for c in checks if c is not gate.check_value))
            candidate.violations += gate.check_witnessed(candidate.query, index, question,
                                                         witnesses_of(record, index, options))
        else:
            candidate.violations += gate.run(candidate.query, index, question, checks=checks)
    if options.gate and options.join_probe == "gate":
        candidate.violations += feedback.join_probe(candidate.query, backend, record["db"],
                                                    fail_closed=options.fail_closed, timeout=options.timeout)
    candidate.admissible = not candidate.violations
    if options.execute == "gate-clean" and candidate.violations:
        return candidate  # Algorithm 1: an inadmissible candidate is not executed (see `execute_unrun`)
    ran = feedback.execute(candidate.query, backend, record["db"], timeout=options.timeout,
                           max_rows=options.max_rows)
    contract = submitted.get("contract") if options.contract and isinstance(submitted, dict) else None
    candidate.violations += feedback.diagnose(candidate.query, ran, backend, record["db"], question=question,
                                              contract=contract, bisection=options.bisection,
                                              fail_closed=options.fail_closed, timeout=options.timeout,
                                              max_rows=options.max_rows, id_leak=options.id_leak,
                                              join_on_empty=options.join_probe == "empty")
    if ran.error is not None:
        candidate.problem = f"{ran.error['type']}: {feedback.concise(ran.error['message'])}"
    else:
        candidate.rows = ran.rows
    return candidate


def witnesses_of(record: dict, index: dict, options: Options) -> list:
    """The record's `witnesses`, or those the options' literal classes find in its question."""
    listed = record.get("witnesses")
    if isinstance(listed, list):
        return listed
    from nlq.witness import find
    return find(record.get("question") or "", index, hard_max=options.hard_max, literals=options.literals)


def execute_unrun(candidates: list[Candidate], record: dict, backend, options: Options) -> None:
    """Run the parsed candidates that the gate kept from running (`execute="gate-clean"`), for the
    vote only: their result joins the clusters and no feedback is added (the paper's reference
    executes each attempt's best candidate once more at the end)."""
    for c in candidates:
        if c.query is not None and not c.executed and c.problem is None:
            ran = feedback.execute(c.query, backend, record["db"], timeout=options.timeout, max_rows=options.max_rows)
            if ran.error is None:
                c.rows = ran.rows
            else:
                c.problem = f"{ran.error['type']}: {feedback.concise(ran.error['message'])}"


@dataclass
class Vote:
    winner: Candidate | None
    clusters: list            # [[Candidate, ...], ...] heaviest (best) first
    voters: int
    weighted: bool = False    # clusters weighed by their members' confidences (noisy-OR)
    masses: list = field(default_factory=list)  # each cluster's weight (its size, unweighted)
    total: float = 0.0        # the clusters' summed weights

    @property
    def share(self) -> float:
        """The winner's share of the votes (of the clusters' summed weights, weighted)."""
        if self.winner is None or self.total <= 0:
            return 0.0
        return round(self.masses[0] / self.total, 4)


def result_key(rows: list):
    """Order-insensitive identity of a result under the scorer's row identity."""
    return frozenset(prepare(rows).counts.items())


def confidence_of(candidate: Candidate) -> float | None:
    """The calibrated confidence a candidate carries, or None: a `confidence` in [0, 1] of a
    prediction whose `method` declares its confidences calibrated probabilities (`calibrated =
    True`, as `rules` does). Another method's confidence (SAG's vote share) is no probability of
    being right and does not weigh."""
    submitted = candidate.submitted if isinstance(candidate.submitted, dict) else {}
    value = submitted.get("confidence")
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0):
        return None
    return float(value) if _calibrated(submitted.get("method")) else None


@functools.lru_cache(maxsize=None)
def _calibrated(method) -> bool:
    """Whether the installed method named `method` declares calibrated confidences."""
    if not isinstance(method, str):
        return False
    from nlq import methods
    try:
        return getattr(methods.get(method), "calibrated", False) is True
    except NlqError:
        return False


def weights(voters: list[Candidate], weighted: bool) -> dict[int, float] | None:
    """Each voter's weight by position: its confidence when `weighted` and every voter carries
    one, else None (each voter counts one: the plain majority)."""
    if not weighted or not voters:
        return None
    found = {c.position: confidence_of(c) for c in voters}
    return None if any(w is None for w in found.values()) else found


def vote(candidates: list[Candidate], weighted: bool = False, voters: str = "admissible") -> Vote:
    """The heaviest result cluster among the voters (see the module docstring): the largest, or,
    `weighted` and with every voter carrying a confidence, the one most likely right (the
    noisy-OR of its members' confidences). `voters="attempts"`: every executed candidate votes,
    admissible or not (the paper's LargestResultCluster over the attempts' best candidates)."""
    executed = [c for c in candidates if c.executed]
    voters = executed if voters == "attempts" else [c for c in executed if c.admissible] or executed
    weight = weights(voters, weighted)
    groups: dict = {}
    for c in voters:
        groups.setdefault(result_key(c.rows), []).append(c)
    for members in groups.values():
        members.sort(key=lambda c: (len(c.violations), c.position))

    def mass(members: list[Candidate]) -> float:
        if weight is None:
            return float(len(members))
        wrong = 1.0
        for c in members:
            wrong *= 1.0 - weight[c.position]
        return round(1.0 - wrong, 9)  # rounded: float noise never outweighs the tie-breaks that follow

    clusters = sorted(groups.values(), key=lambda m: (-mass(m), min(len(c.violations) for c in m),
                                                      not m[0].rows, min(c.position for c in m)))
    total = sum(mass(m) for m in clusters)
    return Vote(clusters[0][0] if clusters else None, clusters, len(voters),
                weighted=weight is not None, masses=[mass(m) for m in clusters], total=total)


def system_of(submitted, position: int) -> str:
    """The system a candidate comes from: its prediction's `system` (`nlq ask` with several models
    names each `METHOD@MODEL`), else its `method` (two runs of one method are one system: their
    agreement is repetition, not independent evidence), else `candidate <position>`."""
    for key in ("system", "method"):
        name = submitted.get(key) if isinstance(submitted, dict) else None
        if isinstance(name, str) and name:
            return name
    return f"candidate {position}"


def evidence_of(candidates: list[Candidate]) -> list[Evidence]:
    """What selection reads of each candidate (:class:`nlq.selection.Evidence`): its system, its
    result group (equal results, equal `cluster`), its result's shape and its violations."""
    keys: dict = {}
    sets: dict = {}
    first: dict = {}
    out = []
    for c in candidates:
        counts = prepare(c.rows).counts if c.executed else None
        cluster = keys.setdefault(frozenset(counts.items()), len(keys)) if counts is not None else None
        set_cluster = sets.setdefault(frozenset(counts), len(sets)) if counts is not None else None
        if cluster is not None:
            first.setdefault(cluster, c.rows)
        sorted_, limit = pipeline_shape(c.query.pipeline) if c.query is not None else (False, None)
        rows = c.rows or []
        system = system_of(c.submitted, c.position) if c.submitted is not None else ""  # nothing given: no vote
        out.append(Evidence(system, c.position, cluster, len(rows), columns_of(rows),
                            tuple(v.check for v in c.violations), confidence_of(c), sorted_, limit,
                            distinct=len(counts) if counts is not None else None, set_cluster=set_cluster,
                            built=c.query is not None and builds_values(c.query.pipeline),
                            **_size(c.query.pipeline if c.query is not None else None)))
    near = near_results(first)
    for e in out:
        if e.cluster is not None:
            e.near = near.get(e.cluster, ())
    return out


def _size(pipeline) -> dict:
    """A pipeline's `joins` (its `$lookup` stages) for the selection's evidence."""
    stages = pipeline if isinstance(pipeline, list) else []
    return {"joins": sum(1 for s in stages if isinstance(s, dict) and "$lookup" in s)}


NEAR_ROWS = 1000  # results compared with each other up to this many rows


def near_results(results: dict) -> dict:
    """For each result group, the other groups whose result the scorer would accept for it or the
    reverse (the same rows, up to two surplus values per row, order ignored): answers that agree
    but for a helper column. Gold-free: results are compared with each other."""
    from nlq.normexec import exc

    keys = sorted(results)
    out: dict = {k: [] for k in keys}
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            ra, rb = results[a], results[b]
            if len(ra) != len(rb) or not ra or len(ra) > NEAR_ROWS:
                continue
            if exc(ra, rb) or exc(rb, ra):
                out[a].append(b)
                out[b].append(a)
    return {k: tuple(v) for k, v in out.items()}


def _candidates(record: dict) -> list:
    listed = record.get("candidates")
    extra = listed if isinstance(listed, list) else []
    return [record.get("prediction")] + extra


def _summary(vote_: Vote) -> list[dict]:
    return [{"members": [c.position for c in members], "size": len(members),
             "rows": len(members[0].rows), "violations": min(len(c.violations) for c in members),
             **({"weight": round(mass, 4)} if vote_.weighted else {})}
            for members, mass in zip(vote_.clusters, vote_.masses)]


SELECTS = ("evidence", "vote")


def select(candidates: list[Candidate], question: str, options: Options) -> Vote:
    """The result groups of the executed candidates, the one the selection model finds most likely
    right first (:mod:`nlq.selection`), its winner the group's representative (the fewest
    violations, then a sorting one when the question asks for an order, then the earliest)."""
    evidence = evidence_of(candidates)
    choice = options.model().choose(question, evidence)
    groups: dict = {}
    for c, e in zip(candidates, evidence):
        if e.cluster is not None:
            groups.setdefault(e.cluster, []).append((c, e))
    for key, members in groups.items():
        head = representative([e for _, e in members], question)
        members.sort(key=lambda m: (m[1] is not head, len(m[0].violations), m[0].position))
        groups[key] = [c for c, _ in members]
    order = sorted(groups, key=lambda k: (k != choice.cluster, -choice.scores.get(k, 0.0), k))
    clusters = [groups[k] for k in order]
    masses = [float(len(m)) for m in clusters]
    return Vote(clusters[0][0] if clusters else None, clusters, sum(len(m) for m in clusters),
                masses=masses, total=sum(masses))


def confidence(candidates: list[Candidate], winner: Candidate | None, question: str, options: Options) -> dict:
    """`confidence` (the selection model's calibrated probability that the winner's result is
    right), `system` (the winner's) and `agreed` (the systems whose candidates gave that result)."""
    if winner is None:
        return {"confidence": 0.0, "system": None, "agreed": []}
    evidence = evidence_of(candidates)
    cluster = next(e.cluster for c, e in zip(candidates, evidence) if c is winner)
    p = options.model().probability(question, evidence, cluster)
    agreed = sorted({e.system for e in evidence if e.cluster == cluster})
    return {"confidence": p, "system": system_of(winner.submitted, winner.position), "agreed": agreed}


def repair_record(record: dict, backend, index: dict, options: Options) -> dict:
    """One record with `repair` added and `prediction` replaced (LLM-free)."""
    if options.select not in SELECTS:
        raise InputError(f"unknown selection {options.select!r} (one of {', '.join(SELECTS)})")
    started = time.perf_counter()
    candidates = [evaluate(s, i, record, backend, index, options) for i, s in enumerate(_candidates(record))]
    if options.execute == "gate-clean":
        execute_unrun(candidates, record, backend, options)
    question = record.get("question") or ""
    vote_ = select(candidates, question, options) if options.select == "evidence" else \
        vote(candidates, weighted=True, voters=options.voters)
    out = finish(record, candidates, vote_, started, options, rounds=0, attempts=len(candidates))
    spent = candidates_usage([c for c in candidates if c is not vote_.winner])
    if spent is not None and "repair" in out:
        out["repair"]["usage"] = spent
    return out


def candidates_usage(candidates: list[Candidate]) -> dict | None:
    """The summed `usage` of candidates that carry one (the model calls behind other runs'
    predictions: what a vote among them cost besides the selected prediction's own), or None."""
    usages = [c.submitted["usage"] for c in candidates
              if isinstance(c.submitted, dict) and isinstance(c.submitted.get("usage"), dict)]
    if not usages:
        return None
    total: dict = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = round(total.get(key, 0) + value, 3)
    return total


def finish(record: dict, candidates: list[Candidate], vote_: Vote, started: float, options: Options, *,
           rounds: int, attempts: int) -> dict:
    """The output record of a vote: `repair`, the new `prediction`, or a typed failure."""
    winner = vote_.winner
    share = vote_.share
    voters = [c for members in vote_.clusters for c in members] or candidates
    known = confidence(voters, winner, record.get("question") or "", options)
    report = {"violations": [v.to_json() for v in winner.violations] if winner else [],
              "rounds": rounds, "attempts": attempts, "clusters": _summary(vote_), "vote_share": share,
              **known, "rows": len(winner.rows) if winner else None,
              "ms": round((time.perf_counter() - started) * 1000, 3), "original": record.get("prediction")}
    if options.profile is not None:
        report["profile"] = options.profile
    out = {**record, "repair": report}
    if winner is None:
        problems = "; ".join(f"candidate {c.position}: {c.problem or 'not executed'}" for c in candidates)
        out["prediction"] = None
        out["failure"] = failure(STAGE, NO_VALID_CANDIDATE, f"no candidate parses and executes ({problems})")
        return out
    if options.min_vote is not None and share < options.min_vote:
        out["prediction"] = None
        out["failure"] = failure(STAGE, ABSTAINED, f"the winning result cluster holds {share:.0%} of the votes, "
                                 f"below --min-vote {options.min_vote:g}")
        return out
    if options.min_confidence is not None and known["confidence"] < options.min_confidence:
        out["prediction"] = None
        out["failure"] = failure(STAGE, ABSTAINED, f"the chosen answer's confidence {known['confidence']:.2f} "
                                 f"is below --min-confidence {options.min_confidence:g}")
        return out
    chosen = winner.submitted
    out["prediction"] = dict(chosen) if isinstance(chosen, dict) else {"mql": chosen}
    return out


# -- the model loop (Algorithm 1) ----------------------------------------------------------------

DEFAULT_ROUNDS = 6
DEFAULT_ATTEMPTS = 3
KEEP_TRYING_CALLS = 100  # the paper's reference retries without end; a dead endpoint still ends the run


class NoValidCandidateError(NlqError):
    """No candidate of a record parses and executes (every attempt failed)."""

    type = NO_VALID_CANDIDATE


def shown(candidate: Candidate) -> str:
    """A candidate as the repair turn quotes it back to the model."""
    if candidate.query is not None:
        declared = candidate.submitted.get("contract") if isinstance(candidate.submitted, dict) else None
        answer = {"contract": declared} if declared is not None else {}
        answer.update(collection=candidate.query.collection, pipeline=candidate.query.pipeline)
        return io.dumps(answer).decode()
    return str(candidate.submitted)[:2000]


def problems(candidate: Candidate) -> str:
    """A candidate's violations (gate and execution feedback), one `- [check] message` line each."""
    return "\n".join(f"- [{v.check}] {v.message}" for v in candidate.violations) or \
        f"- {candidate.problem or 'it could not be run'}"


@dataclass
class Loop:
    """Algorithm 1 with a model: per attempt up to `rounds` decodes, each gated, executed and diagnosed,
    the next one seeing the previous candidate and its violations; the attempt keeps its best
    candidate (executed, fewest violations, non-empty, later round), and the attempts vote in result
    space (:func:`vote`).

    - `model.chat(messages, schema=, schema_name=, sample=) -> reply` (`reply.text`): an
      :class:`nlq.llm.ChatClient`; `sample` is the attempt number, so the cache keeps the attempts apart;
    - `messages(record, index) -> [chat messages]`: the method's prompt (card, witnesses, question);
    - `decode(text, collections) -> prediction object` (a ModelBadOutputError costs the round and is fed back);
    - `feedback(candidate) -> str`: the user turn after an inadmissible candidate;
    - `schema(collections) -> JSON schema | None`: the structured-output schema of an answer.

    With `start_from_prediction`, the record's own prediction is round 1 of the first attempt. A model
    fault (after the client's retries) ends its attempt; the attempt keeps what it had.
    """

    model: object
    messages: Callable
    decode: Callable
    feedback: Callable
    rounds: int = DEFAULT_ROUNDS
    attempts: int = DEFAULT_ATTEMPTS
    schema: Callable | None = None
    start_from_prediction: bool = False
    transport_retry: str = "end-attempt"  # or "keep-trying": a transport fault is retried, the attempt goes on

    def _chat(self, conversation: list, schema, number: int) -> str:
        """One decode; with `keep-trying`, a transport fault the client gave up on (timeouts, dropped
        connections, 429s and 5xx after its retries) is called again, up to KEEP_TRYING_CALLS times."""
        calls = 0
        while True:
            try:
                return self.model.chat(conversation, schema=schema, schema_name="answer", sample=number).text
            except NlqError as exc:
                if self.transport_retry != "keep-trying" or not getattr(exc, "transient", False) \
                        or calls >= KEEP_TRYING_CALLS:
                    raise
                calls += 1

    def attempt(self, number: int, record: dict, backend, index: dict, options: Options,
                every: list[Candidate]) -> list[Candidate]:
        """The candidates of one attempt, in round order (each is also appended to `every`)."""
        collections = sorted(index.get("collections") or {})
        schema = self.schema(collections) if self.schema is not None else None
        conversation = list(self.messages(record, index))
        tried: list[Candidate] = []
        for round_ in range(1, self.rounds + 1):
            if number == 0 and round_ == 1 and self.start_from_prediction and record.get("prediction"):
                submitted, text = record["prediction"], None
            else:
                try:
                    text = self._chat(conversation, schema, number)
                except (BackendError, CallBudgetExhaustedError):  # the run's --budget: the record stops here
                    raise
                except NlqError as exc:  # a model fault ends this attempt
                    every.append(Candidate(len(every), None, problem=f"{exc.type}: {feedback.concise(exc.message)}",
                                           round=round_, attempt=number))
                    break
                try:
                    submitted = self.decode(text, collections)
                except NlqError as exc:
                    said = getattr(exc, "feedback", None) or exc.message
                    candidate = Candidate(len(every), text, problem=f"{exc.type}: {feedback.concise(said)}",
                                          round=round_, attempt=number)
                    candidate.violations = [gate.Violation("parse", candidate.problem, None)]
                    tried.append(candidate)
                    every.append(candidate)
                    conversation += [{"role": "assistant", "content": text},
                                     {"role": "user", "content": self.feedback(candidate)}]
                    continue
            candidate = evaluate(submitted, len(every), record, backend, index, options)
            candidate.round, candidate.attempt = round_, number
            tried.append(candidate)
            every.append(candidate)
            if not candidate.violations:
                break
            conversation += [{"role": "assistant", "content": text if text is not None else io.dumps(submitted).decode()},
                             {"role": "user", "content": self.feedback(candidate)}]
        return tried

    def solve(self, record: dict, backend, index: dict, options: Options) -> tuple[list, list, list]:
        """(best candidate per attempt, every candidate, rounds used per attempt) of one record."""
        best, every, rounds = [], [], []
        for number in range(self.attempts):
            tried = self.attempt(number, record, backend, index, options, every)
            rounds.append(len(tried))
            if tried:
                rank = Candidate.paper_rank if options.voters == "attempts" else Candidate.rank
                best.append(min(tried, key=lambda c: (rank(c), c.position)))
        if options.execute == "gate-clean":
            execute_unrun(best, record, backend, options)
        return best, every, rounds

    def __call__(self, record: dict, backend, index: dict, options: Options) -> dict:
        """The record with `repair` (its `rounds` a list: the rounds each attempt used) and the
        voted `prediction`, or a typed failure."""
        started = time.perf_counter()
        best, every, rounds = self.solve(record, backend, index, options)
        out = finish(record, every, vote(best, voters=options.voters), started, options, rounds=rounds,
                     attempts=self.attempts)
        found = lessons(every)
        if found:
            out["repair"]["lessons"] = found
        return out


MAX_LESSONS = 3
# what a repair turn can teach about a database (a parse error or a forbidden operator teaches nothing of it)
LESSON_CHECKS = frozenset({"path", "value", "limit", "join", "empty", "leaked_id", "exec"})


def lessons(every: list[Candidate]) -> list[dict]:
    """What the loop learned of the database: each candidate whose violations a later round of the
    same attempt fixed, as `{violations: [messages], query: {collection, pipeline}}` (the fix)."""
    found = []
    for i, bad in enumerate(every):
        taught = [v.message for v in bad.violations if v.check in LESSON_CHECKS]
        if not taught:
            continue
        fixed = next((c for c in every[i + 1:] if c.attempt == bad.attempt and c.query is not None
                      and not c.violations and c.rows), None)
        if fixed is None:
            continue
        lesson = {"violations": taught, "query": {"collection": fixed.query.collection,
                                                  "pipeline": fixed.query.pipeline}}
        if lesson not in found:
            found.append(lesson)
    return found[:MAX_LESSONS]


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


def _repairable(record: dict, loop) -> bool:
    """Whether a record that failed upstream still has something to repair: its question and
    database, and a model loop to solve it afresh or `candidates` (other runs') to vote among."""
    if not io.has_failure(record):
        return True
    listed = record.get("candidates")
    return isinstance(record.get("db"), str) and isinstance(record.get("question"), str) and (
        loop is not None or (isinstance(listed, list) and bool(listed)))


def repair_one(record: dict, backend, indexes: dict[str, dict], options: Options, loop=None) -> dict:
    """One record through the stage (LLM-free, or with the model `loop`); never raises an NlqError
    but a BackendError. A model loop's calls are metered into `repair.usage`."""
    if not _repairable(record, loop):
        return record
    record = {k: v for k, v in record.items() if k != "failure"}
    with llm_usage.metered() as meter:
        try:
            if not isinstance(record.get("db"), str):
                raise UnknownDatabaseError("the record names no database (a string `db` field)")
            index = index_for(indexes, record["db"])
            out = loop(record, backend, index, options) if loop is not None else \
                repair_record(record, backend, index, options)
        except BackendError:
            raise
        except NlqError as exc:
            out = {**record, "prediction": None, "failure": exc.to_failure(STAGE)}
        except Exception as exc:  # noqa: BLE001 - a bug must not lose the record
            out = {**record, "prediction": None, "failure": failure(STAGE, "internal_error",
                                                                   f"{type(exc).__name__}: {exc}")}
    if loop is not None:
        target = out["repair"] if "repair" in out else out.get("failure")
        if isinstance(target, dict):
            target["usage"] = meter.as_dict()
    return out


def run(records: Iterable[dict], backend, indexes: dict[str, dict], *, options: Options | None = None,
        loop=None, workers: int = 1) -> Iterator[dict]:
    """Add `repair` to each record, in input order (see the module docstring); `loop` is the model
    loop, when a model is given (:func:`nlq.methods.sag.repair_loop`), and `workers` records are
    repaired at a time (the model's concurrency)."""
    options = options or Options()
    handle = functools.partial(repair_one, backend=backend, indexes=indexes, options=options, loop=loop)
    if workers <= 1:
        yield from map(handle, records)
    else:
        yield from ordered_map(handle, records, workers)


__all__ = ["Options", "Candidate", "evaluate", "vote", "Vote", "result_key", "repair_record", "finish", "run",
           "repair_one", "extra_candidates", "Loop", "NoValidCandidateError", "STAGE", "DEFAULT_ROUNDS",
           "DEFAULT_ATTEMPTS"]
