"""The argument grammar of operator declarations: what each part of an argument is.

Every operator of :mod:`nlq.mql.registry` declares, per kind, the shape of its
argument as a term of this grammar, and every stage declares how the
documents after it are formed from what its argument introduces (an
:class:`Output`). The scoped walk (:mod:`nlq.mql.scope`) interprets these
terms; so do the analyzer, the forbidden-operator scan and the field reader,
which all stand on that walk. A declaration is a value, nothing runs here:

    >>> LOOKUP = Keys({"from": COLLECTION, "localField": FIELD, "foreignField": Foreign(FIELD),
    ...                "let": Vars(EXPR, into=("pipeline",)), "pipeline": Foreign(PIPELINE), "as": JOINED})
    >>> binds(LOOKUP), sorted(introduces(LOOKUP))
    (True, ['as'])

Leaves (a term that is one of these names):

    EXPR           an aggregation expression
    FILTER         a query filter (`$match`)
    PIPELINE       a sub-pipeline, over the documents of the current context
    FIELD          a field path (or a list of them) written without `$`, read from the document
    SORT           `{path: 1 | -1 | {$meta: ...}}`: the paths are read
    PROJECTION     a `$project` specification; its value is the projected document
    ACCUMULATOR    `{$acc: argument}` of `$group`/`$bucket` output
    WINDOW         `{$fn: argument, window: {...}}` of `$setWindowFields` output
    COLLECTION     a collection name; its documents become the context's joined documents
    NAME           a string naming a new field (its value unknown)
    JOINED         a string naming a new field that holds the joined documents
    JOINED_NAME    a string naming a new field inside each joined document
    REMOVED        a string naming a field the stage removes
    ROW_LIMIT      a cap on the number of rows (`$limit`)
    DATA           plain data: no operator, no path
    DOCUMENT_DATA  plain data of a query operator that applies to the whole document (`$comment`)
    COMPARISON     `[a, b]` compared (`$eq` in an expression): a literal against a path is recorded
    MEMBERSHIP     `[a, [literals]]` (`$in` in an expression)
    ENTRIES        an object whose `{k, v}` entries are the value (`$objectToArray`)
    GET_FIELD      `{field, input}` of `$getField`: the value is that field of `input`
    LITERAL        a literal compared with the field of the condition (`$eq` in a query)
    LITERALS       a list of literals compared with that field (`$in`, `$all`)
    CONDITION      a condition on the same field (`$not`)
    ELEMENT_MATCH  a condition on the elements of the field, or a filter over them (`$elemMatch`)
    GEOMETRY       a geometry specifier whose `$` keys are query operators (`$geoWithin`)
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Term:
    """One part of an argument; `kind` names what the walk does with it."""

    @property
    def kind(self) -> str:
        return type(self).__name__.lower()

    def children(self) -> tuple:
        return ()


@dataclass(frozen=True)
class Leaf(Term):
    name: str

    @property
    def kind(self) -> str:
        return self.name.lower()

    def __repr__(self) -> str:
        return self.name


(EXPR, FILTER, PIPELINE, FIELD, SORT, PROJECTION, ACCUMULATOR, WINDOW, COLLECTION, NAME, JOINED, JOINED_NAME,
 REMOVED, ROW_LIMIT, DATA, DOCUMENT_DATA, COMPARISON, MEMBERSHIP, ENTRIES, GET_FIELD, LITERAL, LITERALS,
 CONDITION, ELEMENT_MATCH, GEOMETRY) = (Leaf(n) for n in (
    "EXPR FILTER PIPELINE FIELD SORT PROJECTION ACCUMULATOR WINDOW COLLECTION NAME JOINED JOINED_NAME REMOVED "
    "ROW_LIMIT DATA DOCUMENT_DATA COMPARISON MEMBERSHIP ENTRIES GET_FIELD LITERAL LITERALS CONDITION "
    "ELEMENT_MATCH GEOMETRY").split())


@dataclass(frozen=True)
class Keys(Term):
    """An object with known keys; any other key is `rest`. A non-object is malformed."""

    keys: dict
    rest: Term = EXPR

    def __hash__(self):
        return id(self)

    def children(self) -> tuple:
        return (*self.keys.values(), self.rest)


@dataclass(frozen=True)
class Fields(Term):
    """An object whose keys are new fields, each value a `value` (or `named[key]`); when the key of
    an enclosing :class:`Keys` holding it is absent, the fields `otherwise` are introduced."""

    value: Term
    named: dict = field(default_factory=dict)
    otherwise: tuple = ()

    def __hash__(self):
        return id(self)

    def children(self) -> tuple:
        return (self.value, *self.named.values())


@dataclass(frozen=True)
class Items(Term):
    """A list of `item`; with `alternatives`, each item is one branch of a disjunction (`$or`)."""

    item: Term
    alternatives: bool = False

    def children(self) -> tuple:
        return (self.item,)


@dataclass(frozen=True)
class Positional(Term):
    """A list whose i-th element is `items[i]` (then `rest`)."""

    items: tuple
    rest: Term = EXPR

    def children(self) -> tuple:
        return (*self.items, self.rest)


@dataclass(frozen=True)
class Either(Term):
    """By the argument's type: a string, a list, an object, or anything else."""

    str: Term | None = None
    list: Term | None = None
    dict: Term | None = None
    other: Term | None = None

    def children(self) -> tuple:
        return tuple(t for t in (self.str, self.list, self.dict, self.other) if t is not None)

    def pick(self, value) -> Term | None:
        t = type(value)
        chosen = self.str if t is str else self.list if t is list else self.dict if t is dict else None
        return chosen if chosen is not None else self.other


@dataclass(frozen=True)
class Shorthand(Term):
    """A string stands for `{key: string}` (`{$unwind: "$a"}` is `{$unwind: {path: "$a"}}`)."""

    key: str
    term: Term

    def children(self) -> tuple:
        return (self.term,)


@dataclass(frozen=True)
class Value(Term):
    """The operator's value (an expression's result, a stage's output document) has this part's shape;
    several Value parts make a value that may be any of them."""

    term: Term

    def children(self) -> tuple:
        return (self.term,)


@dataclass(frozen=True)
class Into(Term):
    """This part's value becomes the new field `name` (`$sortByCount` groups into `_id`)."""

    name: str
    term: Term

    def children(self) -> tuple:
        return (self.term,)


@dataclass(frozen=True)
class Foreign(Term):
    """Read in the joined documents (of the COLLECTION named before); a PIPELINE here replaces them
    with its output."""

    term: Term

    def children(self) -> tuple:
        return (self.term,)


@dataclass(frozen=True)
class Vars(Term):
    """An object of `{name: value}`: each name is bound to its value's shape as `$$name` in the sibling
    keys `into` (with the names `extra` bound to unknown values)."""

    value: Term
    into: tuple
    extra: tuple = ()

    def children(self) -> tuple:
        return (self.value,)


@dataclass(frozen=True)
class Bound(Term):
    """This part's value (an array: its elements' shape) is bound as `$$<name>` in the sibling keys
    `into`; the name is the sibling key `name_key` (default `default`); `extra` names are bound too,
    to unknown values (`$reduce`'s `$$value`)."""

    term: Term
    into: tuple
    name_key: str | None = "as"
    default: str = "this"
    extra: tuple = ()

    def children(self) -> tuple:
        return (self.term,)


@dataclass(frozen=True)
class Output:
    """How the documents after a stage are formed.

    keep   the input documents, unchanged in shape
    add    the input documents with the introduced fields (and without the removed ones)
    new    new documents of only the introduced fields (and the `fixed` ones)
    value  the documents are the Value part of the argument
    union  the input documents or the joined ones
    open   unknown (whatever the stage outputs, every path may exist)
    """

    mode: str
    fixed: tuple = ()

    def __post_init__(self):
        if self.mode not in ("keep", "add", "new", "value", "union", "open"):
            raise ValueError(f"unknown stage output mode {self.mode!r}")


KEEP, ADD, NEW, VALUE, UNION, OPEN = (Output(m) for m in ("keep", "add", "new", "value", "union", "open"))


def terms(term: Term):
    """`term` and every term inside it."""
    yield term
    for child in term.children():
        yield from terms(child)


def binds(term: Term) -> bool:
    """The argument binds `$$variables` for a part of itself."""
    return any(isinstance(t, (Vars, Bound)) for t in terms(term))


def introduces(term: Term) -> set[str]:
    """The argument keys (or fixed names) that name new fields: `as`, `includeArrayIndex`, `_id`...;
    `*` for an object of new fields."""
    names: set[str] = set()

    def visit(t: Term, key: str | None) -> None:
        if t in (NAME, JOINED, JOINED_NAME) and key is not None:
            names.add(key)
        elif isinstance(t, Fields):
            names.add("*")
        elif isinstance(t, Into):
            names.add(t.name)
        if isinstance(t, Keys):
            for k, sub in t.keys.items():
                visit(sub, k)
        elif isinstance(t, Shorthand):
            visit(t.term, t.key)
        else:
            for sub in t.children():
                visit(sub, key)

    visit(term, None)
    return names


# Common argument shapes.
FIRST = Either(list=Positional((Value(EXPR),)), other=Value(EXPR))   # `$first: "$a"` or `$arrayElemAt: ["$a", 0]`
ANY = Either(list=Items(Value(EXPR)), other=Value(EXPR))             # `$ifNull: [...]`: any argument's value

__all__ = ["Term", "Leaf", "Keys", "Fields", "Items", "Positional", "Either", "Shorthand", "Value", "Into",
           "Foreign", "Vars", "Bound", "Output", "terms", "binds", "introduces", "FIRST", "ANY",
           "KEEP", "ADD", "NEW", "VALUE", "UNION", "OPEN"] + [
    "EXPR", "FILTER", "PIPELINE", "FIELD", "SORT", "PROJECTION", "ACCUMULATOR", "WINDOW", "COLLECTION", "NAME",
    "JOINED", "JOINED_NAME", "REMOVED", "ROW_LIMIT", "DATA", "DOCUMENT_DATA", "COMPARISON", "MEMBERSHIP",
    "ENTRIES", "GET_FIELD", "LITERAL", "LITERALS", "CONDITION", "ELEMENT_MATCH", "GEOMETRY"]
