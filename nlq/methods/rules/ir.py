"""The intermediate representation: fields, mentions, filters and the IR a question becomes."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    span: tuple | None = None       # (least, greatest) of its witnessed numbers, when it holds any
    numeric_text: bool = False      # strings that all spell numbers ('344'): a measure once converted
    date_form: str = ""             # its strings all write dates: "day", "time", "named" (schema._date_forms)
    parts: tuple = ()               # kind "sum": the fields it adds up ('the combined checking and savings balance')

    @property
    def mixed_numeric(self) -> bool:
        """Numbers stored alongside other types (a sentinel string, a flag)."""
        numbers = self.types & {"int", "long", "double", "decimal"}
        return bool(numbers) and bool(self.types - numbers - {"null", "missing"})

    @property
    def dated(self) -> bool:
        """It holds dates: BSON dates, or strings that write dates."""
        return self.type == "date" or bool(self.date_form)

    @property
    def ordered_dates(self) -> bool:
        """Dates that compare in date order as stored: BSON dates, ISO strings."""
        return self.type == "date" or self.date_form in ("day", "time")

    @property
    def numeric(self) -> bool:
        return self.type in ("int", "long", "double", "decimal")

    @property
    def measurable(self) -> bool:
        """A measure a superlative can rank by: numbers, or strings that spell numbers."""
        return self.numeric or self.numeric_text


@dataclass
class Mention:
    field: Field
    start: int
    end: int       # token span [start, end)
    score: float   # share of the field's words matched, plus a context bonus
    share: float = 1.0
    echo: float = 0.0  # the words it leaves out are said close by (ranks it among overlapping mentions)
    entity: bool = False  # the entity word itself, listed with its attributes: its name is shown


@dataclass
class Filter:
    field: Field
    op: str        # $eq $ne $in $nin $gt $gte $lt $lte $exists $type $regex $all; $not: a pattern, or a condition denied
    value: object
    start: int = -1
    key_of: Field | None = None  # a dynamic-map key filter: the map's field
    size: bool = False           # compare the array's size, not its elements
    average: bool = False        # compare with the field's average over all documents (value unused)
    statistic: str = "$avg"      # the statistic an `average` compares with: $avg, $max or $min
    subset: tuple = ()           # the conditions on the documents that statistic is over ('of Austin's companies')
    branch: int = 0              # 1 or 2: a side of the question's disjunction; 0: required
    other: Field | None = None   # compare with this other field of the same document (`$expr`; value unused)
    joined_by_and: bool = False  # `$in` of literals joined by 'and' ('in 2014 and 2015'), not by 'or'

    @property
    def relative(self) -> bool:
        """It compares with something computed per document (an average, another field), not a literal."""
        return self.average or self.other is not None


@dataclass
class IR:
    """What the question asks, bound to the induced schema."""

    collection: str
    collection_margin: float = 0.0
    collections: int = 1  # collections the database offers (the preferred one and its rivals)
    mentions: list[Mention] = field(default_factory=list)
    filters: list[Filter] = field(default_factory=list)
    group_by: list[Field] = field(default_factory=list)
    aggregates: list[tuple[str, Field | None]] = field(default_factory=list)  # ($sum, field) / ($count, None)
    count: bool = False
    count_asked: bool = False  # the question asks for the count ('how many'), not only ranks by it
    distinct: bool = False
    distinct_count: Field | None = None  # the field whose distinct values each group's count counts
    sort: list[tuple[object, int]] = field(default_factory=list)  # (Field | "count" | agg name, dir)
    default_sort: bool = False  # `sort` is the default order (ordering.default_order), not one the question asks
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
    members: list = field(default_factory=list)  # shown per document of each ranked group, not once per group
    conditions: list = field(default_factory=list)  # (aggregate index, operator, number) per group
    presort: list = field(default_factory=list)  # (Field, dir) before grouping: each group's $first is its top
    anti_joins: list = field(default_factory=list)  # (collection, local, foreign): no document refers here
    joins: list = field(default_factory=list)  # (alias, collection, local, foreign): its documents, $lookup'ed
    both: bool = False  # each side of the disjunction holds for some member of each group shown ('both ... and')
    grounded_share: float = 0.0
    witnesses_bound: int = 0
    unresolved: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # unresolved words that name data elsewhere in the database
    issues: list[str] = field(default_factory=list)
    constraints: list[dict] = field(default_factory=list)  # unused words stating a constraint (accounting.py)
    words: int = 0      # the question's words
    content: int = 0    # of them, not stopwords
    offered: int = 0    # the fields the chosen collection offers
    witnessed: int = 0  # the question's witnesses (bound or not)
    alternative: bool = False  # not the preferred reading (another collection, binding or variant)

    def read_fields(self) -> list[Field]:
        """Every field the reading reads: filtered, shown, grouped, sized, aggregated or sorted on."""
        return [f.field for f in self.filters] + [f.other for f in self.filters if f.other] + self.outputs + \
            self.group_by + self.sizes + [f for f in (self.distinct_count,) if f is not None] + [
            f for _, f in self.aggregates if f is not None] + [k for k, _ in self.sort if isinstance(k, Field)] + [
            k[1] for k, _ in self.sort if isinstance(k, tuple)]

    def ranks_before_grouping(self, key) -> bool:
        """'the average rating of the oldest movie': `key`, a field of the documents themselves and
        no group's key, ranks the documents and the limit picks them before their elements are
        aggregated — when every aggregate totals or averages elements of an array (nothing is
        counted; an extreme is read by the same superlatives: 'the highest support rate')."""
        return isinstance(key, Field) and key.kind == "scalar" and not key.arrays and bool(self.limit) \
            and not self.count and bool(self.aggregates) and key not in self.group_by \
            and all(op in ("$avg", "$sum") and f is not None and f.arrays and f is not key for op, f in self.aggregates)

    def to_json(self) -> dict:
        return {
            "collection": self.collection,
            "unwind": self.unwinds,
            "keys": self.bound_keys,
            "expand": self.expand,
            "filters": [{"path": f.field.mql, "op": f.op, "value": f.value, **({"size": True} if f.size else {}),
                         **({"other": f.other.mql} if f.other else {})} for f in self.filters],
            "group_by": [f.mql for f in self.group_by],
            "aggregates": [{"op": op, "path": f.mql if f else None} for op, f in self.aggregates],
            "count": self.count, "count_asked": self.count_asked, "distinct": self.distinct,
            "distinct_count": self.distinct_count.mql if self.distinct_count else None,
            "sort": [{"key": k.mql if isinstance(k, Field) else (f"$size:{k[1].mql}" if isinstance(k, tuple) else k),
                      "dir": d} for k, d in self.sort],
            "limit": self.limit, "round": self.round, "having": list(self.having),
            "conditions": [list(c) for c in self.conditions],
            "presort": [{"key": f.mql, "dir": d} for f, d in self.presort],
            "anti_joins": [list(j) for j in self.anti_joins],
            "joins": [list(j) for j in self.joins],
            "outputs": [f.mql for f in self.outputs],
            "sizes": [f.mql for f in self.sizes],
            "unresolved": self.unresolved, "missed": self.missed, "inferred": self.inferred, "issues": self.issues,
            "constraints": self.constraints,
        }


AMBIGUOUS = "the collection is ambiguous"
