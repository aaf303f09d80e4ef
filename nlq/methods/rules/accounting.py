"""The parts of a question the reading does not use that state a constraint.

    constraints(q, grounded, missed, ir, heads, loose) -> [{"word", "kind", "at"}]   at: word position
    describe(unresolved)                                 -> "'9' (a value), ..." for messages

A reading that leaves a verb unplaced ('produced', 'opened') usually still
answers the question; one that leaves a constraint unplaced answers another
question: "how many sales had a satisfaction of 9" without its `9` counts
every sale. A word states a constraint when it is, and no pass used it:

- `value`: a number ('9', '1990'), a word written with a capital inside the
  sentence ('California'), or a quoted literal — a value some field should
  equal;
- `comparison`: a comparative ('more', 'older', 'over', 'before', 'between')
  before 'than', a number or a value — a bound some field should respect;
- `reference`: a word that names data of the database (a field or a
  collection) elsewhere than where the reading looked — a qualifier on data
  the reading does not touch;
- `negation`: 'not', 'never', 'without'... when no part of the reading
  denies anything;
- `operation`: a statistic named by its own word ('average', 'minimum')
  that the reading does not compute (or computes for fewer of the fields named after
  such words: 'the average score and average employee number' as one average), an order's direction ('descending')
  or an order itself ('sorted', 'in the order of') that nothing of it sorts
  by, a superlative ('the fewest', 'the most', 'top') when the reading ranks
  nothing — it neither picks the first rows of an order, nor sorts as asked,
  nor takes a maximum or a minimum —, a count ('how many', 'the number of')
  the reading does not count, a distinct word after a count ('how many
  different cities') when it counts no distinct values, or a grouping ('for
  each', 'per') when it summarizes all the documents as one ('how many reviews
  does each director have' counted over every review);
- `qualifier`: a word no pass placed standing before a word naming the data
  ('premium customers') or after a copula ending the clause ('that are open');
- `output`: a noun phrase listed with a shown field that names no field
  ('the names and outcomes of battles' with no field for 'outcomes':
  `outputs.unlisted_outputs`, added by `passes.read_coverage`).

A word is used when some pass put its position in `State.consumed` or it
lies in a mention or an entity span (`passes.read_coverage`): a pass that
reads a word must record it there, or the word counts as left out.

The list is the record's `prediction.unresolved`; a reading with any is never
reported as confident (`confidence.confidence` keeps it below the
recommended threshold) and `nlq ask` abstains on it unless told otherwise.
"""

from __future__ import annotations

import re

from nlq.methods.rules.ir import IR
from nlq.methods.rules.question import Question
from nlq.methods.rules.vocabulary import (AGG_WORDS, FIELD_COMPARATIVES, NEGATIONS, STOPWORDS, SUPERLATIVES,
                                          WORD_NUMBERS)
from nlq.witness import QUOTED

KINDS = ("value", "comparison", "reference", "negation", "operation", "qualifier", "output")

# Comparatives and bounds: with 'than', a number or a value after them they state a comparison.
COMPARATIVES = frozenset(
    "more less fewer greater higher lower larger smaller bigger older younger longer shorter earlier later "
    "heavier lighter taller cheaper over under above below exceeding exceeds exceed before after since "
    "between within beyond".split()) | set(FIELD_COMPARATIVES)
# Bounds whose other side may be data named right after them ('a budget below the invested amount').
NOUN_BOUNDS = frozenset({"above", "below", "beneath", "exceeding"})  # (not "under": "fall under each type")
# Words a capital does not make a value ('I').
_NOT_VALUES = frozenset({"i"})
_SENTENCE_END = re.compile(r"[.?!;:]\s*$")


def constraints(q: Question, grounded: set[int], missed: set[int], ir: IR | None = None,
                heads: frozenset = frozenset(), loose: frozenset = frozenset(),
                asked: dict[int, str] | None = None) -> list[dict]:
    """The unused words of `q` (positions not in `grounded`) that state a constraint,
    in question order; `missed` are the unused positions whose word names data elsewhere,
    `loose` the content words no pass placed, `heads` the positions of words naming data;
    with the reading's `ir`, also a negation no filter of it denies, a statistic or an
    order it does not compute, and the operations `asked` (position of the phrase's last
    word -> "count" or "group") it does not carry out."""
    found: dict[int, str] = {}
    quoted = _quoted_positions(q)
    negated = ir is not None and denies(ir)
    repeated = uncomputed_repeats(q, ir, loose) if ir is not None else set()
    for i, word in enumerate(q.raw):
        if i in repeated:
            found[i] = "operation"  # 'the average score and average staff': one average computed of two
            continue
        if ir is not None and word in DIRECTIONS and not any(d == DIRECTIONS[word] for _, d in ir.sort):
            found[i] = "operation"  # 'in descending order' read, yet nothing sorts that way
            continue
        if ir is not None and not carried_out((asked or {}).get(i), ir):
            found[i] = "operation"  # 'how many' that counts nothing, 'for each' over one total
            continue
        if ir is not None and word in RANKING_WORDS and unordered_limit(ir) and q.raw[i - 1:i] != ["at"]:
            found[i] = "operation"  # 'the three least populated' read as any three rows, in no order
            continue
        if i in grounded:
            continue
        if _unit_of_number(q, i):
            continue  # '4.5 mmol/L', '120 km/h': the number's unit, no value of its own
        if i in quoted or _is_number(word) or _capitalized(q, i) and word not in STOPWORDS:
            found[i] = "value"
        elif word in COMPARATIVES and _bound_follows(q, i, heads):
            found[i] = "comparison"
        elif i in missed:
            found[i] = "reference"
        elif ir is not None and word in STRICT_NEGATIONS and not negated:
            found[i] = "negation"
        elif ir is not None and word in STATISTIC_WORDS and STATISTIC_WORDS[word] not in computed(ir):
            found[i] = "operation"
        elif ir is not None and word in RANKING_WORDS and not ranks(ir):
            # 'the wrestler with the fewest days held' read without its 'fewest' lists every wrestler
            # ('at least', 'at most' left unread are a bound, not a ranking; 'at least one' only
            # says that some exists, which a condition on the elements already requires)
            if q.raw[i - 1:i] != ["at"]:
                found[i] = "operation"
            elif q.raw[i + 1:i + 2] not in (["one"], ["a"], ["an"], ["1"]):
                found[i] = "comparison"
        elif ir is not None and asks_order(q, i) and not sorts(ir):
            found[i] = "operation"  # 'sorted by name' read, yet the rows come in no asked order
        elif i in loose and _qualifies(q, i, heads):
            found[i] = "qualifier"
    return [{"word": q.raw[i], "kind": kind, "at": i} for i, kind in sorted(found.items())]


# Negations that deny: some filter of the reading must say no ('other' and 'outside' set aside more loosely).
STRICT_NEGATIONS = frozenset(NEGATIONS - {"other", "outside", "non"})
# Statistics named by one unambiguous word ('most', 'top', 'least' also rank, so they are not here).
STATISTIC_WORDS = {w: op for w, op in AGG_WORDS.items() if op in ("$avg", "$sum", "$min", "$max")
                   and w in ("average", "avg", "mean", "total", "sum", "maximum", "max", "minimum", "min")} | {
    "minimal": "$min", "maximal": "$max", "peak": "$max"}  # (their adjectives: 'the minimal follower count')
_DENYING_OPS = frozenset({"$ne", "$nin", "$not"})
# Words that state the order's direction and nothing else.
DIRECTIONS = {"descending": -1, "decreasing": -1, "ascending": 1, "increasing": 1}


def denies(ir: IR) -> bool:
    """Some part of the reading says no: a negated comparison, an absence, an empty array, an anti-join."""
    return bool(ir.anti_joins) or any(f.op in _DENYING_OPS or f.op == "$exists" and not f.value
                                      or f.value in (None, False, 0) and not isinstance(f.value, float) and f.op == "$eq"
                                      or f.size and f.op in ("$eq", "$lt", "$lte") for f in ir.filters) or (
        len(ir.having) == 2 and ir.having[0] in ("$eq", "$lt", "$lte") and ir.having[1] in (0, 1))


def computed(ir: IR) -> set[str]:
    """The statistics the reading computes ('$max' and '$min' also by ranking: 'the maximum price' sorts)."""
    ops = {op for op, _ in ir.aggregates}
    if ir.sort and ir.limit:
        ops |= {"$max", "$min"}
    if ir.count:
        ops.add("$sum")  # 'the total number of': the count is the total
    return ops


# Statistics one word names and a reading computes once per naming ('the average score and average age').
REPEATABLE = ("average", "avg", "mean", "maximum", "max", "minimum", "min")


def uncomputed_repeats(q: Question, ir: IR, loose: frozenset = frozenset()) -> set[int]:
    """The positions of the statistic words naming more statistics of their kind than the reading
    computes, all but the first ones ('the average score and average employee number' read as one
    average): each field named after such a word asks for a statistic of its own ('the highest average
    gpa ... and the average gpa' names one), so one computed for fewer fields leaves the others out
    (one computed not at all is the single word's own case, read below)."""
    out: set[int] = set()
    for op in ("$avg", "$max", "$min"):
        said, named = [], set()
        for i, w in enumerate(q.raw):
            if w in REPEATABLE and STATISTIC_WORDS.get(w) == op and q.raw[i - 1:i] != ["on"]:
                what = _named_after(q, ir, i, loose)
                if what is not None and what not in named:  # 'the average gpa ... the average GPA': one
                    named.add(what)
                    said.append(i)
        made = sum(1 for o, _ in ir.aggregates if o == op) + sum(
            1 for f in ir.filters if f.average and f.statistic == op)
        if op in ("$max", "$min") and ir.sort and ir.limit:
            made += 1  # 'the maximum price' read by ranking
        if made:
            out.update(said[made:])
    return out


def _named_after(q: Question, ir: IR, i: int, loose: frozenset) -> str | None:
    """What the statistic word at `i` is of: the field a mention right after it names ('average
    [base] price', 'the mean age'), else the first content word after it when no pass placed it
    ('the average employee number' where no field is called so), else None (nothing named: the
    statistic is not said twice; a number follows: 'an average of 150' is a bound)."""
    after = [m for m in ir.mentions if i < m.start <= i + 3]
    if after:
        return min(after, key=lambda m: m.start).field.mql
    for j in range(i + 1, len(q.raw)):
        if _is_number(q.raw[j]):
            return None
        if q.raw[j] not in STOPWORDS:
            return q.stems[j] if j in loose else None
    return None


# Words that rank: superlatives ('fewest', 'most', 'tallest') and 'top'.
RANKING_WORDS = SUPERLATIVES | {"top"}


def ranks(ir: IR) -> bool:
    """The reading ranks: it keeps the first rows of an order, sorts as the question asks (not
    by the default order), takes a maximum or a minimum, or keeps each group's top document
    (a limit alone, over rows in no order, ranks nothing)."""
    return sorts(ir) or any(op in ("$max", "$min") for op, _ in ir.aggregates)


def unordered_limit(ir: IR) -> bool:
    """The reading keeps the first rows of nothing: a limit over rows no key orders ('the top 3'
    read as any three) or over the one row of statistics over every document — unless it is the one row of a maximum or minimum over all documents
    (a maximum per group ranks no group; one row holds no top 3)."""
    extreme = any(op in ("$max", "$min") for op, _ in ir.aggregates) and not ir.group_by and ir.limit == 1
    return ir.limit is not None and (not sorts(ir) or one_row(ir)) and not extreme


def one_row(ir: IR) -> bool:
    """The reading's statistics summarize every document as one row ('which game has the highest
    total hours' read as the total over all games): an order of it ranks nothing."""
    return bool(ir.aggregates) and not ir.group_by and not (ir.distinct and ir.outputs)


def carried_out(operation: str | None, ir: IR) -> bool:
    """The reading does what an asked `operation` says (None: nothing asked): a "count" counts
    (documents, elements, per group, or ranks by a count; not the one row of statistics over every
    document, which is always one); a "distinct" count counts distinct
    values; a "group" forms groups, or sizes
    arrays per document, or summarizes nothing (so 'the name of each player' lists them)."""
    if operation == "count":
        if ir.count and one_row(ir):
            return False  # 'the highest number of final tables' as a maximum, then its one row counted
        return bool(ir.count or ir.sizes or ir.having or ir.conditions) or any(
            op in ("$sum", "$count") for op, _ in ir.aggregates) or any(
            k == "count" or isinstance(k, tuple) for k, _ in ir.sort)
    if operation == "distinct":  # 'how many different cities': distinct values counted, overall or per group
        return ir.distinct_count is not None or ir.distinct and bool(ir.outputs) and not ir.group_by
    if operation == "group":
        return not (ir.count or ir.aggregates) or bool(
            ir.group_by or ir.sizes or ir.presort or ir.conditions or ir.having or ir.expand)
    return True


def sorts(ir: IR) -> bool:
    """The reading orders its rows as the question asks (not only by the default order)."""
    return bool(ir.sort) and not ir.default_sort or bool(ir.presort)


# Words that ask for an order by themselves; 'order' does after a word saying which order
# ('in alphabetical order', 'in order of', 'in the order of', 'order by'), not as a noun ('in any order').
ORDER_WORDS = frozenset({"sorted", "sort", "ordered", "arranged", "alphabetically", "alphabetical", "ranked"})
ORDER_KINDS = frozenset({"in", "alphabetical", "ascending", "descending", "increasing", "decreasing", "reverse",
                         "chronological", "numerical", "numeric"})


def asks_order(q: Question, i: int) -> bool:
    """The word at `i` asks for an order ('sorted', 'in descending order', 'order the results by'),
    not 'order' the noun ('made an order')."""
    word, before, after = q.raw[i], q.raw[i - 1:i], q.raw[i + 1:i + 2]
    if word in ORDER_WORDS:
        return True
    return word == "order" and (bool(before) and before[0] in ORDER_KINDS or "by" in q.raw[i + 1:i + 4]
                                or q.raw[max(0, i - 2):i] == ["in", "the"] and after == ["of"])


COPULAS = frozenset({"is", "are", "was", "were", "be", "been", "being"})


def _qualifies(q: Question, i: int, heads: frozenset) -> bool:
    """'premium customers', 'theaters that are open', 'sales that were refunded': an adjective
    before a word naming the data (`heads`: the entity and field mentions), or a word after a
    copula that ends the clause ('were made in Denver' carries its constraint in what follows)."""
    word = q.raw[i]
    if not word.isalpha() or word in STOPWORDS or len(word) < 3 or word.endswith("ly"):
        return False
    if i + 1 in heads and not word.endswith(("ed", "ing")):  # participles mostly carry the relation
        return True
    return i > 0 and q.raw[i - 1] in COPULAS and (i + 1 == len(q.raw) or q.raw[i + 1] in CLAUSE_ENDS)


CLAUSE_ENDS = COPULAS | {"and", "or", "but"}


def _is_number(word: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", word))


def _unit_of_number(q: Question, i: int) -> bool:
    """The word is the part after '/' of a unit written right after a number ('4.5 mmol/L')."""
    return i >= 2 and q.raw[i].isalpha() and _is_number(q.raw[i - 2]) and q.text[q.spans[i - 1][1]:q.spans[i][0]] == "/"


def _capitalized(q: Question, i: int) -> bool:
    """The word is written with a capital where a sentence does not start."""
    start, end = q.spans[i]
    text = q.text[start:end]
    if not text[:1].isupper() or q.raw[i] in _NOT_VALUES or not any(c.isalpha() for c in text):
        return False
    return i > 0 and not _SENTENCE_END.search(q.text[:start])


def _bound_follows(q: Question, i: int, heads: frozenset = frozenset()) -> bool:
    """'older than', 'over 50', 'before 1990', 'after Monaco', 'below the invested amount' (`heads`:
    the positions of words naming data): a comparison's other side follows."""
    for j in range(i + 1, min(len(q.raw), i + 4)):
        word = q.raw[j]
        if word == "than" or _is_number(word) or word in WORD_NUMBERS or _capitalized(q, j) or (
                q.raw[i] in NOUN_BOUNDS and j in heads):
            return True
        if word not in STOPWORDS:
            return False
    return False


def _quoted_positions(q: Question) -> set[int]:
    out: set[int] = set()
    for m in QUOTED.finditer(q.text):
        out.update(i for i, (s, e) in enumerate(q.spans) if s >= m.start() and e <= m.end())
    return out


def describe(unresolved: list[dict]) -> str:
    """`'9' (a value), 'over' (a comparison)`: the words a reading left out, for a message."""
    names = {"value": "a value", "comparison": "a comparison", "reference": "names other data",
             "negation": "a negation", "operation": "an operation", "qualifier": "a qualifier",
             "output": "an output"}
    return ", ".join(f"'{u['word']}' ({names.get(u['kind'], u['kind'])})" for u in unresolved)
