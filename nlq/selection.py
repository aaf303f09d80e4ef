"""Selection by evidence: choose among systems' answers by what their results show.

    evidence = [summarize(candidate, system_of(candidate)) for candidate in candidates]
    choice = Selector.load().choose(question, evidence)   # Choice(cluster, confidence, ...)

`nlq repair` executes every candidate of a record (its `prediction`, its
`candidates`, the other runs' predictions of the same `id`) and groups the
executed ones by result (equal multisets of rows under the scorer's row
identity, as the plain vote does). Where the plain vote takes the largest
group, selection scores each group with a small logistic model over what can
be seen without the gold:

- agreement: how many systems answered (`answered`, its log: the same share
  means more among more systems), the share of them which produced this
  result (`share`), the share that produced a result the scorer's row
  identity accepts for it but for surplus columns (`near_share`), the share
  that produced another result of as many rows (`same_rows`), how many
  other systems executed a different one
  (`others`), and how often one system repeated itself inside the group
  (`repeats`: a system's alternatives agreeing with each other are no
  independent evidence);
- per-system reliability: the summed log-odds of the member systems'
  reliability (`reliability_in`) and of the systems that disagree
  (`reliability_out`), from the table in the model file (a system it does not
  know gets the mean of the known ones);
- a calibrated confidence the candidates carry (`rules`'): its log-odds for the
  best member (`confidence_in`) and for the best candidate outside the group
  (`confidence_out`), with indicators of their presence;
- execution feedback: an empty result, a leaked synthetic `_id`, gate
  violations (path, value, limit), a join that no value witnesses;
- the result's shape against the question: one value asked (how many, what
  is the total/average/maximum ...) and one row returned or not, the N rows
  of a "top N" / "first N", a list asked and a single row returned, the
  columns the question names, an order asked and no `$sort`;
- the result itself: repeated rows (`repeated_rows`, and `repeated_distinct`
  when the question asks for distinct values), the share of systems whose
  result is the same set of rows repeated otherwise (`set_share`), values
  the pipeline built rather than read (`built`), its `$lookup` joins (`joins`).

The group with the highest probability wins; its probability, recalibrated
(Platt scaling of the winner's score, fitted out of database), is
`repair.confidence`: the probability that the chosen answer is right. The
model is a JSON file shipped with the package (`selection.json`), fitted by
`make select-fit` with cross-validation grouped by database. A system that
has no candidate for a record is no vote; a record with one candidate gets
the same model (its confidence then reads execution feedback and shape).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import asdict, dataclass, field
from importlib import resources

from nlq.errors import InputError
from nlq.text import normalize

GATE = ("path", "value", "limit")
MODEL_FILE = "selection.json"


@dataclass
class Evidence:
    """What selection knows of one candidate (nothing of the gold): its system, its result's
    identity (`cluster`, equal for equal results of one record) and shape, and its violations."""

    system: str                    # "": nothing was submitted (a run's null prediction), no vote
    position: int
    cluster: int | None            # None: it did not execute
    rows: int = 0
    columns: tuple = ()
    checks: tuple = ()             # the violation checks it raised (gate and execution feedback)
    confidence: float | None = None  # a calibrated confidence it carries
    sorted: bool = False           # the pipeline has a $sort (or a sorted find)
    limit: int | None = None       # the pipeline's last $limit
    near: tuple = ()               # the other result groups that agree with this one but for surplus columns
    distinct: int | None = None    # its distinct rows (fewer than `rows`: it repeats rows); None: not known
    set_cluster: int | None = None  # the identity of its result as a set of rows (repetitions ignored)
    built: bool = False            # it returns values it built ($concat, $toUpper, $dateToString ...), not stored ones
    joins: int = 0                 # its pipeline's `$lookup` stages

    def to_json(self) -> dict:
        out = asdict(self)
        out["columns"], out["checks"], out["near"] = list(self.columns), list(self.checks), list(self.near)
        return out

    @classmethod
    def from_json(cls, doc: dict) -> "Evidence":
        doc = {k: v for k, v in doc.items() if k in _EVIDENCE_FIELDS}  # a cache written by another version
        return cls(**{**doc, "columns": tuple(doc.get("columns") or ()), "checks": tuple(doc.get("checks") or ()),
                      "near": tuple(doc.get("near") or ())})


_EVIDENCE_FIELDS = frozenset(Evidence.__dataclass_fields__)


def pipeline_shape(pipeline) -> tuple[bool, int | None]:
    """(has a `$sort`, the last `$limit`) of a pipeline."""
    sorted_, limit = False, None
    for stage in pipeline if isinstance(pipeline, list) else ():
        if not isinstance(stage, dict) or len(stage) != 1:
            continue
        (name, arg), = stage.items()
        if name in ("$sort", "$sortByCount", "$top", "$bottom"):
            sorted_ = True
        elif name == "$limit" and isinstance(arg, int) and not isinstance(arg, bool):
            limit = arg
    return sorted_, limit


# expression operators whose value is a string built from others: an answer made of them returns values
# no document stores (a full name glued from two fields, a reformatted date)
BUILDERS = frozenset({"$concat", "$toUpper", "$toLower", "$substr", "$substrBytes", "$substrCP", "$dateToString",
                      "$toString", "$trim", "$ltrim", "$rtrim", "$replaceOne", "$replaceAll"})


def builds_values(pipeline) -> bool:
    """Whether a pipeline's output stage ($project, $addFields, $set, $group, $replaceRoot) builds
    a value with a string operator (:data:`BUILDERS`); a `$match` using one only filters."""
    def uses(value) -> bool:
        if isinstance(value, dict):
            return any(k in BUILDERS or uses(v) for k, v in value.items())
        if isinstance(value, list):
            return any(uses(v) for v in value)
        return False

    for stage in pipeline if isinstance(pipeline, list) else ():
        if isinstance(stage, dict) and len(stage) == 1:
            (name, arg), = stage.items()
            if name in ("$project", "$addFields", "$set", "$group", "$replaceRoot", "$replaceWith") and uses(arg):
                return True
    return False


def columns_of(rows: list, most: int = 50) -> tuple:
    """The top-level field names of a result's first rows, in first-seen order."""
    seen: dict = {}
    for row in rows[:most]:
        if isinstance(row, dict):
            for key in row:
                seen.setdefault(key, None)
    return tuple(seen)


# -- what the question asks for ---------------------------------------------------------------------

_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "twenty": 20}
_TOP = re.compile(r"\b(?:top|first|last|highest|lowest|largest|smallest|best|worst)\s+(\d+|"
                  + "|".join(_NUMBERS) + r")\b|\b(\d+|" + "|".join(_NUMBERS)
                  + r")\s+(?:most|least|highest|lowest|largest|smallest|oldest|youngest|best|biggest|"
                    r"latest|earliest|cheapest|longest|shortest)\b")
_ONE_VALUE = re.compile(r"^(?:how many|count|what (?:is|was|are) the (?:total|average|mean|sum|number|count|"
                        r"maximum|minimum|max|min|largest|smallest|highest|lowest)|"
                        r"(?:find|give|show|return|compute|calculate|tell me|list) (?:me )?the (?:total|average|"
                        r"mean|sum|number|count|maximum|minimum)|(?:what is|what's) the (?:total )?number)\b")
_EACH = re.compile(r"\b(?:each|every|per|for all|by (?:each|their|its)|respectively|grouped|group by|"
                   r"broken down|for different|in each|of each|and (?:their|the) (?:names?|ids?))\b")
_SUPERLATIVE = re.compile(r"\bthe (?:\w+ )?(?:most|least|highest|lowest|largest|smallest|oldest|youngest|"
                          r"greatest|fewest|longest|shortest|latest|earliest|cheapest|maximum|minimum)\b")
_LIST = re.compile(r"^(?:list|show|find all|give all|return all|which|what are)\b|\ball\b|\beach\b")
_ORDER = re.compile(r"\b(?:order(?:ed)?|sort(?:ed)?|ascending|descending|alphabetical(?:ly)?|rank(?:ed)?|"
                    r"from (?:the )?(?:highest|lowest|largest|smallest|oldest|youngest|most|least))\b")
_DISTINCT = re.compile(r"\b(?:distinct|different|unique|various)\b")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Asked:
    """What a question's wording says about the shape of its answer."""

    one_value: bool = False   # a single value (a count, a total...), no per-group breakdown
    top: int | None = None    # "top N", "first N", "N most ..."
    single: bool = False      # one row ("the ... with the highest ...")
    listing: bool = False     # a list ("list", "show all", "which ...")
    order: bool = False       # an order ("sorted by", "in descending order")
    words: frozenset = frozenset()
    distinct: bool = False    # distinct values ("the different ...", "unique")


@functools.lru_cache(maxsize=4096)
def asked(question: str) -> Asked:
    """The answer shape a question's wording asks for (see :class:`Asked`)."""
    text = normalize(question or "").lower()
    each = bool(_EACH.search(text))
    found = _TOP.search(text)
    top = None
    if found:
        word = found.group(1) or found.group(2)
        top = int(word) if word.isdigit() else _NUMBERS.get(word)
    one_value = bool(_ONE_VALUE.search(text)) and not each and top is None
    single = top is None and not one_value and not each and bool(_SUPERLATIVE.search(text))
    words = frozenset(w for w in _WORD.findall(text) if len(w) > 1)
    return Asked(one_value, top, single, bool(_LIST.search(text)) and not one_value and not single,
                 bool(_ORDER.search(text)), words, bool(_DISTINCT.search(text)))


def _column_words(name: str) -> set:
    """A column name's words: `avgPrice` -> {avg, price}, `School_ID` -> {school, id}."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(name).rsplit(".", 1)[-1])
    return {w for w in _WORD.findall(spaced.lower()) if len(w) > 1}


def _named(columns: tuple, words: frozenset) -> float:
    """The share of a result's columns some word of which the question uses (a word or its stem)."""
    names = [c for c in columns if c != "_id"]
    if not names:
        return 0.0
    stems = {w.rstrip("s") for w in words}
    hit = sum(1 for c in names if any(w in words or w.rstrip("s") in stems for w in _column_words(c)))
    return hit / len(names)


# -- features ---------------------------------------------------------------------------------------

FEATURES = ("answered", "share", "near_share", "same_rows", "others", "repeats", "reliability_in", "reliability_out", "has_confidence_in",
            "confidence_in", "has_confidence_out", "confidence_out", "empty", "leaked_id", "gate", "join",
            "one_value_match", "one_value_mismatch", "top_match", "top_mismatch", "single_match",
            "single_mismatch", "list_single", "named", "columns", "order_missing", "set_share", "repeated_rows",
            "repeated_distinct", "built", "joins")


def logit(p: float, eps: float = 0.02) -> float:
    p = min(max(p, eps), 1 - eps)
    return math.log(p / (1 - p))


def clusters_of(evidence: list[Evidence]) -> dict[int, list[Evidence]]:
    """The executed candidates grouped by result, in the order the results first appear."""
    groups: dict[int, list[Evidence]] = {}
    for e in evidence:
        if e.cluster is not None:
            groups.setdefault(e.cluster, []).append(e)
    return groups


def representative(members: list[Evidence], question: str) -> Evidence:
    """The member of a result group whose query is chosen: the fewest violations, then, when the
    question asks for an order, one that sorts (a group shares its rows, not always their order),
    then the earliest."""
    order = asked(question).order
    return min(members, key=lambda e: (len(e.checks), order and not e.sorted, e.position))


def features(question: str, evidence: list[Evidence], reliability) -> dict[int, dict[str, float]]:
    """The feature vector of each result group of one record (keyed by its `cluster`);
    `reliability(system) -> probability` is the per-system reliability."""
    groups = clusters_of(evidence)
    answered = {e.system for e in evidence if e.system}  # "": a system that gave nothing, no vote
    executed = {e.system for e in evidence if e.cluster is not None}
    want = asked(question)
    out = {}
    for key, members in groups.items():
        systems = {e.system for e in members}
        outside = executed - systems
        conf_in = [e.confidence for e in members if e.confidence is not None]
        conf_out = [e.confidence for e in evidence if e.confidence is not None and e.cluster != key]
        head = min(members, key=lambda e: (len([c for c in e.checks if c in GATE]), e.position))
        rows, one_row = head.rows, head.rows == 1
        checks = set.intersection(*(set(e.checks) for e in members))
        gate = min(sum(1 for c in e.checks if c in GATE) for e in members)
        near = {e.system for other in head.near for e in groups.get(other, ())} - systems
        same_rows = {e.system for e in evidence if e.cluster is not None and e.cluster != key and e.rows == rows} - systems
        same_set = {e.system for e in evidence if e.cluster is not None and e.cluster != key
                    and head.set_cluster is not None and e.set_cluster == head.set_cluster} - systems
        repeated = head.distinct is not None and head.distinct < rows
        out[key] = {
            "answered": math.log(max(len(answered), 1)),
            "share": len(systems) / max(len(answered), 1),
            "near_share": len(near) / max(len(answered), 1),
            "same_rows": len(same_rows) / max(len(answered), 1),
            "others": float(len(outside)),
            "repeats": math.log1p(len(members) - len(systems)),
            "reliability_in": sum(logit(reliability(s)) for s in systems),
            "reliability_out": sum(logit(reliability(s)) for s in outside),
            "has_confidence_in": float(bool(conf_in)),
            "confidence_in": logit(max(conf_in)) if conf_in else 0.0,
            "has_confidence_out": float(bool(conf_out)),
            "confidence_out": logit(max(conf_out)) if conf_out else 0.0,
            "empty": float(rows == 0),
            "leaked_id": float("leaked_id" in checks),
            "gate": float(min(gate, 2)),
            "join": float("join" in checks),
            "one_value_match": float(want.one_value and one_row),
            "one_value_mismatch": float(want.one_value and not one_row),
            "top_match": float(want.top is not None and rows == want.top),
            "top_mismatch": float(want.top is not None and rows != want.top),
            "single_match": float(want.single and one_row),
            "single_mismatch": float(want.single and not one_row),
            "list_single": float(want.listing and one_row),
            "named": _named(head.columns, want.words),
            "columns": math.log1p(len([c for c in head.columns if c != "_id"])),
            "order_missing": float(want.order and not any(e.sorted for e in members)),
            "set_share": len(same_set) / max(len(answered), 1),
            "repeated_rows": float(repeated),
            "repeated_distinct": float(repeated and want.distinct),
            "built": float(all(e.built for e in members)),
            "joins": float(min(e.joins for e in members)),
        }
    return out


# -- the model --------------------------------------------------------------------------------------

@dataclass
class Choice:
    """The selected result group of one record."""

    cluster: int | None            # None: nothing executed
    confidence: float              # calibrated probability that the chosen answer is right
    scores: dict = field(default_factory=dict)      # cluster -> raw probability
    agreed: list = field(default_factory=list)      # the systems whose candidates gave the chosen result


@dataclass
class Selector:
    """Two linear models over :data:`FEATURES`: `choice`, which group of a record to choose (a
    conditional logit: only differences within a record matter), and `weights` + `bias`, the
    logistic probability that a group is right, with the Platt scaling of the chosen group's score
    (`calibration = [a, b]`: p = sigmoid(a * score + b), or, per number of systems that answered,
    `by_answered = {"1": [a, b], "2": ...}`, the largest key serving more systems); and the
    per-system reliability table."""

    weights: dict
    bias: float
    reliability: dict
    default_reliability: float
    calibration: tuple = (1.0, 0.0)
    by_answered: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    choice: dict | None = None   # the choice model's weights (a conditional logit); None: `weights`
    single: "Selector | None" = None  # the model of records one system answered with several candidates

    def for_evidence(self, evidence: list[Evidence]) -> "Selector":
        """The model that judges `evidence`: :attr:`single` when one system answered with several
        candidates (its alternatives: one method's own readings, whose agreement and confidences
        mean other things than several systems' do), else this one."""
        if self.single is not None and len({e.system for e in evidence if e.system}) == 1 and len(evidence) > 1:
            return self.single
        return self

    def choice_of(self, name: str) -> float:
        """A feature's weight in choosing among one record's groups."""
        return (self.choice if self.choice is not None else self.weights).get(name, 0.0)

    @classmethod
    def load(cls, path: str | None = None) -> "Selector":
        """The model in `path`, or the one shipped with nlq."""
        if path is None:
            return _shipped()
        try:
            with open(path, "rb") as fh:
                return cls.from_json(json.load(fh))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"cannot read the selection model {path}: {exc}") from exc

    @classmethod
    def from_json(cls, doc: dict) -> "Selector":
        unknown = (set(doc["weights"]) | set(doc.get("choice") or {})) - set(FEATURES)
        if unknown:
            raise InputError(f"the selection model names unknown features: {', '.join(sorted(unknown))}")
        return cls(weights=dict(doc["weights"]), bias=float(doc["bias"]), reliability=dict(doc["reliability"]),
                   default_reliability=float(doc["default_reliability"]),
                   calibration=tuple(doc.get("calibration") or (1.0, 0.0)), meta=dict(doc.get("meta") or {}),
                   by_answered={str(k): tuple(v) for k, v in (doc.get("by_answered") or {}).items()},
                   choice=dict(doc["choice"]) if isinstance(doc.get("choice"), dict) else None,
                   single=cls.from_json(doc["single"]) if isinstance(doc.get("single"), dict) else None)

    def to_json(self) -> dict:
        return {"weights": dict(self.weights), "bias": self.bias, "reliability": dict(self.reliability),
                "default_reliability": self.default_reliability, "calibration": list(self.calibration),
                "by_answered": {k: list(v) for k, v in self.by_answered.items()},
                "meta": dict(self.meta), **({"choice": dict(self.choice)} if self.choice is not None else {}),
                **({"single": self.single.to_json()} if self.single is not None else {})}

    def scaling(self, evidence: list[Evidence]) -> tuple:
        """The Platt scaling for a record answered by this many systems."""
        if not self.by_answered:
            return self.calibration
        n = len({e.system for e in evidence if e.system})
        keys = sorted(int(k) for k in self.by_answered)
        fit = max((k for k in keys if k <= n), default=keys[0])
        return tuple(self.by_answered[str(fit)])

    def system_reliability(self, system: str) -> float:
        return float(self.reliability.get(system, self.default_reliability))

    def score(self, vector: dict) -> float:
        return self.bias + sum(self.weights.get(name, 0.0) * value for name, value in vector.items())

    def probability(self, question: str, evidence: list[Evidence], cluster: int) -> float:
        """The calibrated probability that the result group `cluster` is right (0 when it is no
        executed group)."""
        judge = self.for_evidence(evidence)
        if judge is not self:
            return judge.probability(question, evidence, cluster)
        vector = features(question, evidence, self.system_reliability).get(cluster)
        if vector is None:
            return 0.0
        a, b = self.scaling(evidence)
        return round(_sigmoid(a * self.score(vector) + b), 4)

    def choose(self, question: str, evidence: list[Evidence]) -> Choice:
        """The result group most likely right, with its calibrated confidence; where the choice
        model ties, the probability model decides, then more systems, then the group whose first
        candidate comes first."""
        judge = self.for_evidence(evidence)
        if judge is not self:
            return judge.choose(question, evidence)
        vectors = features(question, evidence, self.system_reliability)
        if not vectors:
            return Choice(None, 0.0)
        groups = clusters_of(evidence)
        scores = {key: self.score(v) for key, v in vectors.items()}
        picks = {key: sum(self.choice_of(name) * value for name, value in v.items()) for key, v in vectors.items()}
        best = max(scores, key=lambda k: (round(picks[k], 9), round(scores[k], 9), vectors[k]["share"],
                                          -min(e.position for e in groups[k])))
        a, b = self.scaling(evidence)
        agreed = sorted({e.system for e in groups[best]})
        return Choice(best, round(_sigmoid(a * scores[best] + b), 4),
                      {k: round(_sigmoid(s), 4) for k, s in scores.items()}, agreed)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@functools.lru_cache(maxsize=1)
def _shipped() -> Selector:
    text = resources.files("nlq").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return Selector.from_json(json.loads(text))


__all__ = ["Evidence", "Asked", "asked", "features", "representative", "FEATURES", "Selector", "Choice", "clusters_of",
           "pipeline_shape", "columns_of", "builds_values", "logit"]
