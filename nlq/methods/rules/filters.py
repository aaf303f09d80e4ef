"""Filter passes: comparisons, text patterns, null vs missing, empty arrays, flags, anti-joins, `$or`."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from nlq.methods.rules.vocabulary import (AGG_WORDS, BETWEEN, COMPARATORS, DISTINCT_WORDS, FIELD_COMPARATIVES,
                                          IRREGULAR_PARTICIPLES, MONTHS, NEGATIONS, NUMBER, OR_BOUND, OR_MORE,
                                          SETTING_ASIDE, STOPWORDS, SYNONYMS)
from nlq.methods.rules.ir import Field, Filter, Mention
from nlq.methods.rules.schema import identifier, join_edge, split_name
from nlq.methods.rules.question import (Question, denial_of, is_year, maybe_number, names_documents, plain_word,
                                        to_number, word_match)
from nlq.methods.rules.grounding import (TEMPORAL_COMPARATORS, array_derived, array_named, array_of_subject, array_phrase, element_numbers,
                                         measure_field,
                                         in_named_array, number_fits, object_named, stored_number,
                                         year_field)


def detect_anti_join(q: Question, index: dict, collection: str, consumed: set[int],
                     literals: set[int] = frozenset()) -> list[tuple[str, str, str]]:
    """'authors that have no books', 'customers with no orders': another
    collection, named after a negation and linked by a join edge of the index,
    has no document referring to this one — unless a literal comes between ('do
    not have a cat pet' denies the cat, detect_absence). Returns (collection, local
    path, foreign path) for a `$lookup` whose result must be empty."""
    joins = []
    for other in index.get("collections", {}):
        words = split_name(other)
        if other == collection or not words:
            continue
        for i in range(len(q.stems)):
            negation = denial_of(q, i)
            if i in consumed or negation is None or word_match(q.stems[i], words[-1]) < 0.8 or any(
                    k in literals and not any(word_match(q.stems[k], w) >= 0.8 for w in words)
                    for k in range(negation + 1, i)):
                continue
            edge = join_edge(index, collection, other)
            if edge is not None:
                joins.append((other, *edge))
                consumed.update(range(max(0, i - 3), i + 1))
            break
    return joins


def joined_anti_joins(anti_joins: list[tuple], joins: list[tuple], fields: list[Field]) -> tuple[list, list[Filter]]:
    """'movies not reviewed by Chris Jackson': an anti-join to a collection the reading
    also joins (the reviewers, for the name) is that join's array left empty, on the join's
    own `$lookup` — not a second one: (the anti-joins left, an empty-array filter per
    joined one). denied_elements then denies the conditions on the joined documents
    instead (no reviewer named Chris Jackson), wherever the question says them."""
    joined = {other: alias for alias, other, _, _ in joins}
    arrays = {f.mql: f for f in fields if f.kind == "array"}
    left = [j for j in anti_joins if joined.get(j[0]) not in arrays]
    empty = [Filter(arrays[joined[j[0]]], "$eq", 0, size=True) for j in anti_joins if joined.get(j[0]) in arrays]
    return left, empty


def detect_numbered(q: Question, index: dict, collection: str, fields: list[Field], entities: set[int],
                    plural: set[int], consumed: set[int]) -> list[Filter]:
    """'student 1004', 'the student numbered 1004', 'employee no. 7': a singular noun
    naming the collection's documents, then a whole number, names one document by
    its identifier."""
    key = identifier(index, collection, fields)
    head = split_name(collection)[-1:]
    if key is None or not key.numeric or not head:
        return []
    filters = []
    for i in sorted(entities):
        if i in plural or i in consumed or word_match(q.stems[i], head[0]) < 0.85:
            continue
        j = i + 1
        while j < len(q.raw) and q.raw[j] in ("numbered", "number", "no", "num", "#", "id", "with", "the"):
            j += 1
        if j < len(q.raw) and j not in consumed and re.fullmatch(r"\d+", q.raw[j]) and (
                j == i + 1 or q.raw[j - 1] in ("numbered", "number", "no", "num", "#", "id")):
            filters.append(Filter(key, "$eq", int(q.raw[j]), i))
            consumed.update(range(i + 1, j + 1))
    return filters


def denied_elements(filters: list[Filter], fields: list[Field], joins: list[tuple] = ()) -> list[Filter]:
    """'not steered by any captain with Midshipman rank', 'never booked with an amount
    higher than 200': an array denied (detect_absence's empty array) and then conditions
    on its elements mean that no element meets them all, not an empty array (`$not` of
    an `$elemMatch` on the array: documents without the array qualify too, and the array
    stays whole). A literal in another collection joined through the array ('dorms that
    do not have amenity TV Lounge', amenities joined by the dorm's `Has_amenity`) is
    denied the same way, on the joined documents. A literal the binding already denied
    (`$ne`, `$nin`: the negation governs it too) is met in its positive form; one denied
    outside the array ('students who do not live in HKG', a city of the student) is what
    the negation denies: the array is not also empty."""
    out = list(filters)
    for empty in [f for f in filters if f.size and f.op == "$eq" and f.value == 0]:
        through = _joined_through(empty.field.mql, joins)
        later = [f for f in out if not f.size and not f.branch and f.start > empty.start
                 and f.op in POSITIVE and f.field.kind != "array" and f.other is None]
        conditions = [f for f in later if empty.field.mql in f.field.arrays or f.field.arrays[:1] in through]
        if not conditions and any(f.op in ("$ne", "$nin") for f in later):
            out.remove(empty)  # the negation is read once
        if not conditions:
            continue
        out = [f for f in out if f is not empty and all(f is not c for c in conditions)]
        groups: dict[str, list[Filter]] = {}
        for c in conditions:
            groups.setdefault(empty.field.mql if empty.field.mql in c.field.arrays else c.field.arrays[0], []).append(c)
        for array, met in groups.items():
            field = next(f for f in fields if f.mql == array and f.kind == "array")
            out.append(Filter(field, "$not", {"$elemMatch": _element_match(array, met)}, met[0].start))
    return out


def _element_match(array: str, conditions: list[Filter]) -> dict:
    """The `$elemMatch` document one element of `array` meeting every condition satisfies
    (two bounds on one field join in one operator document)."""
    match: dict = {}
    for c in conditions:
        op, path = POSITIVE[c.op], c.field.mql[len(array) + 1:]
        if op == "$eq":
            match.setdefault(path, c.value)
        elif isinstance(match.get(path, {}), dict):
            match.setdefault(path, {})[op] = c.value
    return match


# The condition an element filter states, as an element no denied array may hold meets it.
POSITIVE = {"$eq": "$eq", "$in": "$in", "$gt": "$gt", "$gte": "$gte", "$lt": "$lt", "$lte": "$lte",
            "$ne": "$eq", "$nin": "$in"}


def _joined_through(array: str, joins) -> set[tuple[str]]:
    """The aliases (as 1-tuples, an `arrays` prefix) of the joins whose edge goes through
    the elements of `array`, on either side."""
    return {(alias,) for alias, _, local, foreign in joins
            if local.startswith(array + ".") or foreign.startswith(array + ".")}


# Words naming sorts of a thing ('three or fewer types of wines' counts the wines).
KINDS = frozenset({"types", "kinds", "sorts", "varieties", "different", "distinct", "separate", "individual"})


# Comparators that place a thing in time, never compare a count.
TEMPORAL = frozenset({"before", "after", "since", "from", "until", "earlier", "later"})


def q_plural(q: Question) -> set[int]:
    """Word positions holding a plural (the normalizer changed the word)."""
    return {i for i, (r, st) in enumerate(zip(q.raw, q.stems)) if r != st}


def _array_phrase(q: Question, at: int, fields: list[Field]) -> tuple[Field | None, int]:
    """The top-level array a noun phrase starting at `at` names, and the phrase's end: 'two
    flights' -> flight[], 'two journal committees' -> journal_committee[] (its last word names
    the array, the one before is the rest of its name)."""
    for top_level in (True, False):  # ('accounts with at least 4 transactions': each account's own)
        array = array_named(q, at, fields, top_level)
        if array is not None:
            return array, at + 1
        array = array_named(q, at + 1, fields, top_level)
        if array is not None and any(word_match(q.stems[at], w) >= 0.85 for w in array.words[:-1]):
            return array, at + 2
    return None, at


def counted_before(q: Question, at: int) -> tuple[int, int] | None:
    """'the number of players is more than one', 'where the count of students is below 3':
    the comparison at word `at` follows a count phrase. Returns (the phrase's first word,
    the counted noun's word), or None."""
    if at >= len(q.raw) or q.raw[at] in TEMPORAL:  # 'the most number of wines before 2010' dates the wines
        return None
    k = at - 1 if at and q.raw[at - 1] in ("is", "are", "was", "were", "be") else at
    noun = k - 1
    if noun < 2:
        return None
    of = noun - 1 - (q.raw[noun - 1] in ("the", "their", "its", "his", "her"))
    if q.raw[of] != "of" or q.raw[of - 1] not in ("number", "numbers", "count", "total") or of - 1 < 0:
        return None
    return of - 1, noun


def size_bounds(array: Field, op: str, value, at: int) -> list[Filter]:
    """The filters 'N <elements>' compares an array's size with; an upper bound ('at most two
    enrollments', 'fewer than 3 members') counts among the documents that have some, as a
    count per document of its elements does (a document without any forms no group)."""
    bound = [Filter(array, op, value, at, size=True)]
    if isinstance(value, int) and not isinstance(value, bool) and (op == "$lt" and value > 1
                                                                   or op == "$lte" and value > 0):
        bound.append(Filter(array, "$gte", 1, at, size=True))
    return bound


def detect_comparisons(q: Question, fields: list[Field], mentions: list[Mention],
                       consumed: set[int], used: set[int], years: dict | None = None,
                       counted: set[int] | None = None) -> list[Filter]:
    """Numeric comparisons ('more than 50', 'before 1850', 'between 2 and 5',
    'at least two flights') bound to the nearest numeric field mentioned, to the
    field the comparator names ('older' -> age), to the size of an array
    entity named right after the number, or, for a year, to where the witness
    found it stored (`years`: term -> field; a date field compares its year)."""
    lower = q.text.lower()
    numeric = [m for m in mentions if m.field.measurable or m.field.years]
    filters = []
    taken = set(consumed)  # phrases an earlier stage read (a HAVING count)
    bounded: set[tuple[int, str]] = set()  # (mention, direction) of the bounds read so far
    phrases = comparison_phrases(q)
    for at, op, value, char_end in phrases:
        if at in taken:
            continue
        after = q.word_at(char_end)
        after += 2 if q.raw[after:after + 1] and q.raw[after] in KINDS and q.raw[after + 1:after + 2] == ["of"] else 0
        array, end = _array_phrase(q, after, fields)
        if array is not None:
            filters += size_bounds(array, op, value, at)
            consumed.update(range(at, end))
            continue
        # ('more than one event' is as plural as 'two events')
        element = next((m for m in mentions if m.start == after and len(m.field.arrays) == 1
                        and "id" in m.field.words and (after in q_plural(q) or value == 1
                                                       or m.end in q_plural(q))), None)
        array = next((f for f in fields if element and f.mql == element.field.arrays[0] and f.kind == "array"), None)
        if array is not None and isinstance(value, int):
            # 'enrolled in at least two courses', each enrolment holding a course id: how many elements
            filters += size_bounds(array, op, value, at)
            consumed.update(range(at, after + 1))
            used.add(element.start)
            continue
        count = counted_before(q, at)
        # ('the count of ratings higher than 3 stars': a numeric field named right after the number is
        # what is compared, not the size of the counted array)
        unit = next((m for m in numeric if m.start == after and m.start not in used), None)
        if (op, value) == ("$gte", 1) and unit is None and any(other > at for other, *_ in phrases):
            continue  # 'at least one reading above 4.5': that one exists; the bound after says which
        array = array_named(q, count[1], fields) if count and unit is None else None
        if array is not None:  # 'where the number of players is more than one': the array's size
            filters += size_bounds(array, op, value, at)
            consumed.update(range(count[0], after))
            if counted is not None:
                counted.add(count[0])
            continue
        mention, target = None, None
        if re.search(r"\byear\b", lower[q.spans[at][0]:char_end]):  # 'before the year of 2010' names its field
            target = year_field(q, at, fields)
        if target is None:
            # a percentage: '90%', '10 percent', 'the black population percentage exceeds 10'
            percent = re.match(r"\s*(?:%|percent\b|per cent\b)", q.text[char_end:]) is not None or bool(
                {"percentage", "percent", "proportion"} & set(q.raw[max(0, at - 2):at]))
            # (a field of years written as text compares with a year only: 'over 100 registered memberships')
            # (a field one bound already holds takes no second bound the same way: 'a base price exceeding
            # 160 and more than 2 guests' leaves the 2 to another field, or unread)
            comparable = [m for m in numeric if (m.field.measurable or is_year(str(value)))
                          and (m.start, DIRECTION[op]) not in bounded]
            mention, target = _comparison_field(q, at, value, comparable, fields, percent)
            if mention is not None:  # the fields named between it and the comparator qualify it
                used.update(m.start for m in numeric if mention.end <= m.start and m.end <= at)
        if target is None and after < len(q.raw) and q.raw[after] in UNIT_MEASURES:
            # 'mountains that rise above 5000 meters', 'cinemas that hold more than 300 people': the unit
            # names the measure
            target = next((f for f in map(lambda w: measure_field(fields, w), UNIT_MEASURES[q.raw[after]])
                           if f is not None), None)
        if target is None and at > 0 and q.raw[at - 1] == "for" and (
                after >= len(q.raw) or q.raw[after] in PRICE_CLAUSE_ENDS):
            target = measure_field(fields, "price")  # 'available for under 50': what it costs
        if target is None and str(value) in (years or {}):
            target = years[str(value)]
            if target.type == "date":
                filters.append(Filter(target, *_year_bound(op, value), at))
                consumed.update(range(at, after))
                continue
        if target is None:
            target = _other_bound_of(q, at, op, filters) or _sole_measure(q, at, fields)
        if target is None:
            continue
        if mention is not None:
            used.add(mention.start)
            bounded.add((mention.start, DIRECTION[op]))
        filters.append(Filter(target, op, stored_number(target, value), at))
        consumed.update(range(at, after))
    # (a size's lower bound said once: 'between one and three notes' already holds some)
    return [f for k, f in enumerate(filters) if not (f.size and any(
        g.size and g.field is f.field and g.op == f.op and g.value == f.value for g in filters[:k]))]


def _sole_measure(q: Question, at: int, fields: list[Field]) -> Field | None:
    """'customers who have loans greater than 3000': a comparator right after a noun naming
    an array's elements compares their only measure (a number that is no identifier nor year)."""
    k = at - 1 - (at > 1 and q.raw[at - 1] in ("is", "are", "was", "were"))
    array = array_named(q, k, fields, top_level=False) if k >= 0 else None
    measures = element_numbers(array, fields) if array is not None else []
    return measures[0] if len(measures) == 1 else None


def _other_bound_of(q: Question, at: int, op: str, filters: list[Filter]) -> Field | None:
    """'taller than 200 or lower than 190': a comparison naming no field, said right after
    a bound the other way ('or', 'and' between), bounds that bound's field too."""
    last = next((f for f in reversed(filters) if not f.size and f.op in DIRECTION), None)
    if last is None or DIRECTION[last.op] in (DIRECTION[op], "eq") or not 0 < at - last.start <= 4:
        return None
    between = q.raw[last.start + 1:at]
    return last.field if between and between[-1] in ("or", "and", "but") and all(
        maybe_number(w) is not None or w in ("or", "and", "but", "than", "either") for w in between) else None


# The way a comparison bounds its field: from below, from above, or to one value.
DIRECTION = {"$gt": "up", "$gte": "up", "$lt": "down", "$lte": "down", "$eq": "eq"}


# Units after a number, and the measures they are of (a field named by one of them).
UNIT_MEASURES = {
    **dict.fromkeys(("meters", "metres", "meter", "metre", "feet", "foot", "ft", "m"),
                    ("height", "elevation", "altitude", "length", "distance")),
    **dict.fromkeys(("centimeters", "centimetres", "cm", "millimeters", "millimetres", "mm", "inches", "in"),
                    ("height", "length", "width")),
    **dict.fromkeys(("kilometers", "kilometres", "km", "miles", "mi"), ("distance", "length")),
    **dict.fromkeys(("dollars", "euros", "usd", "eur"), ("price", "cost", "salary", "amount")),
    **dict.fromkeys(("kilograms", "kg", "kilos", "tons", "tonnes", "pounds", "lbs"), ("weight", "tonnage")),
    **dict.fromkeys(("people", "persons", "seats", "guests", "spectators"), ("capacity", "seats")),
    **dict.fromkeys(("minutes", "hours", "seconds", "mins"), ("duration", "time", "length")),
    **dict.fromkeys(("points",), ("points", "score")),
}


# Words that may follow a bare amount ('sold for under 50 that ...'): no unit, so a price.
PRICE_CLAUSE_ENDS = frozenset({"and", "or", "that", "which", "who", "with", "in", "at", "from", "each", "apiece"})


def comparison_phrases(q: Question) -> list[tuple[int, str, object, int]]:
    """Every 'more than N', 'between N and M', 'N or more' in the question, as
    (word index, operator, number, character end), in question order."""
    lower = q.text.lower()
    found: list[tuple[int, str, object, int]] = []
    for m in BETWEEN.finditer(lower):
        at = q.word_at(m.start())
        low, high = (m.group("n"), m.group("m")) if m.group("n") else (m.group("y"), m.group("z"))
        found.append((at, "$gte", to_number(low), m.end()))
        found.append((at, "$lte", to_number(high), m.end()))
    for pattern, op in COMPARATORS:
        phrase = r"\b(?:" + pattern + r")\s+(?:the\s+|a\s+)?(?:year\s+(?:of\s+)?)?" + NUMBER + r"\b"
        for m in re.finditer(phrase, lower):
            at = q.word_at(m.start())
            if not any(a == at for a, *_ in found):
                found.append((at, op, to_number(m.group("n")), m.end()))
    for m in OR_BOUND.finditer(lower):
        op = "$gte" if m.group(2) in OR_MORE else "$lte"
        # ('from 2001 or earlier': the number's own 'or earlier' says the bound, not the 'from' before it)
        found = [f for f in found if not (f[0] < q.word_at(m.start()) and f[3] == m.start("n") + len(m.group("n")))]
        found.append((q.word_at(m.start()), op, to_number(m.group("n")), m.end()))
    # ('no more than 200' holds 'more than 200': the longest phrase ending on a number reads it)
    first = {end: min(a for a, *_, e in found if e == end) for *_, end in found}
    return sorted((f for f in found if f[0] == first[f[3]]), key=lambda x: x[0])


# Comparators that name their own measure, whatever field a unit after the number names.
OWN_MEASURES = {"older": "age", "younger": "age", "taller": "height", "cheaper": "price", "heavier": "weight",
                "lighter": "weight"}


AVERAGE_COMPARISON = re.compile(r"\b(?:(?P<gt>more|greater|higher|larger|bigger|longer|older|taller|heavier|above|over)"
                                r"|(?P<lt>less|fewer|lower|smaller|shorter|younger|lighter|cheaper|below|under))"
                                r"(?:\s+than)?\s+(?:the\s+)?(?:(?P<stat>average|mean|maximum|minimum|largest|smallest"
                                r"|highest|lowest|greatest|biggest)|(?P<every>every|all))\b")

# The statistic a comparison names ('less than the largest balance'); 'than every' ('older than every
# engineer') is above the maximum, below the minimum.
COMPARED_STATISTICS = {"average": "$avg", "mean": "$avg", "maximum": "$max", "largest": "$max", "highest": "$max",
                       "greatest": "$max", "biggest": "$max", "minimum": "$min", "smallest": "$min", "lowest": "$min"}


# Comparatives that name their own measure when no field is named ('people shorter than average'),
# the first one the collection has ('shorter': a river's length, else a person's height).
COMPARED_MEASURES = {**{w: (m,) for w, m in OWN_MEASURES.items()}, "shorter": ("length", "height"),
                     "longer": ("length",)}


def detect_average_comparisons(q: Question, mentions: list[Mention], fields: list[Field], consumed: set[int],
                               used: set[int]) -> list[Filter]:
    """'salary more than the average', 'smaller than the average enrollment':
    the field named before the comparator (or right after 'average') is compared
    with its own average over all documents; with none named, the comparator's own
    measure ('students younger than average': their age)."""
    numeric = [m for m in mentions if m.field.numeric]
    filters = []
    for found in AVERAGE_COMPARISON.finditer(q.text.lower()):
        at, end = q.word_at(found.start()), q.word_at(found.end())
        after = next((m for m in numeric if end <= m.start <= end + 1), None)
        before = [m for m in numeric if m.end <= at and at - m.end <= 6]
        target = after or (max(before, key=lambda m: m.end) if before else None)
        field = target.field if target else None
        word = q.raw[at] if at < len(q.raw) else ""
        if field is None:
            field = next(filter(None, (measure_field(fields, w) for w in COMPARED_MEASURES.get(word, ()))), None)
        if field is None or at in consumed:
            continue
        op = "$gt" if found.group("gt") else "$lt"
        statistic = COMPARED_STATISTICS.get(found.group("stat")) or ("$max" if op == "$gt" else "$min")
        filters.append(Filter(field, op, None, at, average=True, statistic=statistic))
        consumed.update(range(at, end))
        used.update(m.start for m in mentions if m.field is field and abs(m.start - at) <= 8)
    return filters


def detect_having(q: Question, mentions: list[Mention], fields: list[Field], entities: set[int],
                  consumed: set[int], used: set[int], counted: set[int] | None = None
                  ) -> tuple[Field, str, object] | None:
    """'authors who have more than 2 books', 'majors where the number of students is
    below 3': the number compares how many of the collection's own documents share a
    value of the field named before it — a count per value, then a condition on that
    count (SQL's HAVING)."""
    for at, op, value, char_end in comparison_phrases(q):
        after = q.word_at(char_end)
        if after not in entities and after + 1 in entities and after < len(q.raw) and (
                q.raw[after].endswith("ed") or q.raw[after] in KINDS or q.raw[after] in ("active", "current")):
            after += 1  # 'fewer than three enrolled students': a modifier before the counted entity
        count = counted_before(q, at)
        unnamed = False
        if after in entities or after < len(q.raw) and q.raw[after] in DOCUMENT_WORDS:
            # ('parties with at least two records': the words for any collection's documents)
            start, end = at, after + 1
        elif count is not None and count[1] in entities:
            start, end, after = count[0], after, count[1]
        elif _unnamed_count(q, after, value, mentions, fields):
            start, end, unnamed = at, after + 1, True
        else:
            continue
        array = array_named(q, after, fields, top_level=False)
        if array is not None and not _own_documents(q, after, array):
            continue
        # ('policy types used by more than 2 customers': a value of the documents' elements, the
        # documents holding it counted, when the counted noun names the documents themselves)
        before = [m for m in mentions if m.end <= start and m.start not in used and m.field.kind != "array"
                  and (not m.field.arrays or after in entities and m.field.kind == "scalar")
                  and not (unnamed and _holds_number(m.field, value))]
        if before and unnamed and any(before[-1].end <= other < start for other, *_ in comparison_phrases(q)):
            continue  # 'a price exceeding 160 and more than 2 guests': the field's own bound comes between
        if before:
            consumed.update(range(start, end))
            used.add(before[-1].start)
            if counted is not None and start != at:
                counted.add(start)
            return before[-1].field, op, value
    return None


# Words after a number that measure rather than count ('older than 30 years', 'over 2 hours').
MEASURE_NOUNS = frozenset({"year", "month", "week", "day", "hour", "minute", "second", "time", "percent",
                           "degree", "point", "dollar", "euro", "unit", "star"})


def _unnamed_count(q: Question, at: int, value, mentions: list[Mention], fields: list[Field]) -> bool:
    """'birth places common to at least two individuals', 'grades with 4 or more students' in
    `Highschooler`: a whole number before a plural noun (or 'one' before any noun) that names
    no field, array, unit or measure of the data counts the documents themselves."""
    documents = max((f.present for f in fields if not f.arrays), default=0)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= documents:
        return False  # (no group counts more documents than the collection holds)
    if value == 1 and q.raw[max(0, at - 3):at - 1] == ["at", "least"]:
        return False  # 'patients with at least one reading above 4.5': that some exists, no count of them
    if q.raw[at:at + 1] and q.raw[at] in KINDS and q.raw[at + 1:at + 2] == ["of"]:
        at += 2  # 'three or fewer types of wines': the noun after
    if at >= len(q.raw):
        return False
    word, stem = q.raw[at], q.stems[at]
    if not word.isalpha() or word in STOPWORDS or word in UNIT_MEASURES or stem in MEASURE_NOUNS:
        return False
    if word == stem and value != 1 or word.endswith(("ing", "ed", "ly")):
        return False
    named = any(m.start <= at < m.end for m in mentions) or any(
        f.words and word_match(stem, f.words[-1]) >= 0.85 for f in fields)
    return not named and _array_phrase(q, at, fields)[0] is None


def _holds_number(f: Field, value) -> bool:
    """The field's own numbers reach the compared one: a comparison of the field, not a count."""
    return f.measurable and (f.span is None or f.span[0] <= value <= f.span[1])


def _own_documents(q: Question, at: int, array: Field) -> bool:
    """'the countries having more than 4 addresses' in `Addresses`, beside its `Customer_Addresses`:
    the word names the collection's own documents, and the array only in part (the rest of the
    array's name is not said before it)."""
    head = split_name(array.collection)[-1:]
    if not head or word_match(q.stems[at], head[0]) < 0.85 or len(array.words) < 2:
        return False
    return at == 0 or not any(word_match(q.stems[at - 1], w) >= 0.85 for w in array.words[:-1])


# Words that name a collection's documents, whatever the collection holds.
DOCUMENT_WORDS = frozenset({"record", "records", "entry", "entries", "row", "rows", "document", "documents"})


def _year_bound(op: str, year: int) -> tuple[str, datetime]:
    """A comparison with a year, on a date: 'after 1990' is from 1 January 1991."""
    first = datetime(year + (op in ("$gt", "$lte")), 1, 1, tzinfo=timezone.utc)
    return ("$gte" if op in ("$gt", "$gte") else "$lt"), first


def _measures(f: Field, measure: str) -> bool:
    """The field is named by the measure word or a synonym of it ('cost' for 'price')."""
    return bool(set(SYNONYMS.get(measure, (measure,))) & set(f.words))


def _comparison_field(q: Question, at: int, value, numeric: list[Mention], fields: list[Field],
                      percent: bool = False):
    """(mention, field) a comparison at word `at` constrains, or (None, None):
    the nearest field mentioned before it, else after it, that the number fits
    (`grounding.number_fits`: 'a White population over 90%' is `White`)."""
    word = q.raw[at] if at < len(q.raw) else ""
    fits = lambda m: number_fits(m.field, value, word in TEMPORAL_COMPARATORS, percent)
    # the comparator word names no field; an identifier is compared only when right before it
    before = sorted((m for m in numeric if m.end <= at and at - m.end <= (1 if "id" in m.field.words else 6)),
                    key=lambda m: -m.end)
    after = sorted((m for m in numeric if m.start > at and m.start - at <= 4), key=lambda m: m.start)
    if len(before) > 1 and before[1].end == before[0].start and in_named_array(q, before[1].field, fields) \
            and not in_named_array(q, before[0].field, fields):
        before[:2] = before[1::-1]  # 'budget entries ... a budgeted amount over 3000': the budget's, not an endowment's
    own = measure_field(fields, OWN_MEASURES[word]) if word in OWN_MEASURES else None
    # ('the earnings of players taller than 200': the comparator's own measure, not the field before
    # it, unless that field is one of the measure: 'whose height is taller than 190')
    if own is not None and not (before and _measures(before[0].field, OWN_MEASURES[word])):
        return (after[0] if after else None), own  # 'drivers older than 40 years': 'years' the unit
    # 'more than 2000 distance', 'at least 100 share count': the field named right after the number
    number = next((i for i in range(at + 1, min(at + 5, len(q.raw))) if maybe_number(q.raw[i]) == value), None)
    unit = [m for m in after if number is not None and m.start == number + 1 and "id" not in m.field.words]
    fitting = next((m for m in unit + before + after if fits(m)), None)
    if fitting is None and (before or after) and word in TEMPORAL_COMPARATORS and is_year(str(value)):
        year = year_field(q, at, fields)
        if year is not None and year.years:
            return None, year  # 'the prices of wines made before 2010': the year of the wine
    # (a field of years takes no number that is not one: 'from 2001 or before that are over 3000')
    loose = [m for m in before + after if not (m.field.years and not is_year(str(value)))]
    if fitting is not None or loose:
        m = fitting or loose[0]
        return m, m.field
    measure = {"older": "age", "younger": "age", "before": "year", "after": "year", "since": "year",
               "earlier": "year", "later": "year", "longer": "length", "shorter": "length",
               "taller": "height", "higher": "height", "cheaper": "price",
               "heavier": "weight", "lighter": "weight"}.get(word)
    if measure is None and isinstance(value, int) and 1000 <= value <= 2100:
        measure = "year"
    if measure is None and at > 0 and q.raw[at - 1] in ("is", "are", "was", "were", "aged") \
            and word in ("over", "under", "above", "below"):
        measure = "age"  # 'drivers that are under 40', with no measure named: how old they are
    if measure == "year" and is_year(str(value)):
        return None, year_field(q, at, fields)
    return None, measure_field(fields, measure) if measure else None


# Words a negation reaches over to the array it empties ('not listed as participants in any elections').
ABSENCE_REACH = 9


def detect_absence(q: Question, fields: list[Field], consumed: set[int], literals: set[int] = frozenset(),
                   others: tuple[str, ...] = ()) -> list[Filter]:
    """'without any allergies', 'never received a complaint', 'has no players', 'an
    empty stock', 'whose record list is empty': the named array entity is empty
    (missing counts as empty). A literal said first is what the negation denies ('does
    not own a cat as a pet': no pet is a cat), not the array after it. With no array
    named, one the verb or activity denied derives from ('movies that have not been
    rated', `Rating`: `array_derived`) — unless another collection is named after it (its
    object: 'not visited any museums', the anti-join's), `others` the last words of their names."""
    filters = []
    for at, word in enumerate(q.raw):
        if word not in NEGATIONS and word != "empty" or word in SETTING_ASIDE or at in consumed:
            continue
        subject = _subject_before(q, at)
        window = []
        for j in range(at + 1, min(at + (3 if word == "empty" else ABSENCE_REACH), len(q.raw))):
            if j in literals and array_phrase(q, j, fields) is None:
                break  # (not a word of the array's own name: 'no red flags', `red_flags`)
            if set(q.text[q.spans[j - 1][1]:q.spans[j][0]]) & set(".?!;"):
                break  # the sentence ends ('... any fault log? List the asset model.')
            window.append(j)
        found = next(((j, a) for j in window if j not in consumed for a in (
            array_of_subject(q, j, fields, subject) or array_named(q, j, fields)
            or _inside_named(q, j, fields, at),) if a is not None), None)
        if found is None and word != "empty":  # (a noun naming an array comes first: 'not visited any museums')
            found = next(((j, a) for j in window if j not in consumed
                          for a in (array_derived(q, j, fields),) if a is not None and not any(
                              word_match(q.stems[k], w) >= 0.8 for k in window if k > j for w in others)), None)
        if found is not None:
            j, array = found
            filters.append(Filter(array, "$eq", 0, at, size=True))
            consumed.update(range(at, j + 1))
            continue
        # 'whose record list is empty': the array named just before
        for j in range(at - 1, max(-1, at - 4), -1) if word == "empty" else ():
            array = array_named(q, j, fields)
            if array is not None and j not in consumed and all(
                    w in ("is", "are", "was", "were", "list", "lists", "set") for w in q.raw[j + 1:at]):
                filters.append(Filter(array, "$eq", 0, j, size=True))
                consumed.update(range(j, at + 1))
                break
    return filters


def _inside_named(q: Question, j: int, fields: list[Field], at: int) -> Field | None:
    """The nested array the word at `j` names, inside arrays each named before the negation
    at `at` ('documents with the type code CV that do not have expenses': each document's
    own `Documents.Documents_with_Expenses`), or None."""
    array = array_named(q, j, fields, top_level=False)
    if array is None or "." not in array.mql:
        return None
    outer = [f for f in fields if f.kind == "array" and f.mql in array.arrays and f.mql != array.mql]
    named = {a.mql for i in range(at) for a in (array_named(q, i, fields, top_level=False),) if a is not None}
    return array if outer and all(f.mql in named for f in outer) else None


RELATIVES = frozenset({"who", "that", "which", "whose"})


def _subject_before(q: Question, at: int) -> int:
    """The word a relative clause around `at` is said of ('customers who do not have ...':
    customers), or the subject right before the auxiliary the negation follows ('how many
    apartments do not have ...': apartments) or before 'without', 'with no', or -1."""
    for j in range(at - 1, max(0, at - 4), -1):  # (a first 'which' asks: 'which assets did not ...')
        if q.raw[j] in RELATIVES:
            return j - 1
    if at >= 2 and q.raw[at - 1] in AUXILIARIES:
        subject = at - 2
    elif at >= 1 and q.raw[at] == "without":  # 'apartments without any facilities'
        subject = at - 1
    elif at >= 2 and q.raw[at - 1:at + 1] == ["with", "no"]:  # 'apartments with no facilities'
        subject = at - 2
    else:
        return -1
    return subject if q.raw[subject] not in STOPWORDS else -1  # (not 'logs and do not have')


# Verbs a negation follows in a clause ('apartments do not have', 'products were not ordered').
AUXILIARIES = frozenset({"do", "does", "did", "is", "are", "was", "were", "have", "has", "had"})


# ('users who have posted tweets', 'customers who have taken a loan': a participle may name the act)
HAVING_SOME = re.compile(r"\b(?:that|who|which)\s+(?:currently\s+|still\s+|actually\s+|already\s+|do\s+|does\s+)?"
                         r"(?:has|have|had|own|owns|contain|contains|include|includes)\s+"
                         r"(?:(?:[a-z]{3,}ed|" + "|".join(IRREGULAR_PARTICIPLES) + r")\s+)?"
                         r"(?:any\s+|some\s+|at least one\s+|one or more\s+|an?\s+)?")


# 'how many employees have certificates', 'employees with certificates': the collection's
# documents, said right before 'have' or 'with'
SUBJECT_HAVING = re.compile(r"\b(?P<subject>[a-z]+)\s+(?:has|have|had|with)\s+(?:any\s+|some\s+|an?\s+)?")


def _documents_having(q: Question, fields: list[Field]) -> list[re.Match]:
    """The 'have' ('with') phrases whose subject is the word naming the collection's own documents."""
    return [m for m in SUBJECT_HAVING.finditer(q.text.lower())
            if fields and names_documents(q, q.word_at(m.start("subject")), fields[0].collection)]


def detect_presence(q: Question, fields: list[Field], consumed: set[int], filters: list[Filter]) -> list[Filter]:
    """'departments that have employees', 'shops that currently have some devices', 'employees
    with certificates': the named array entity has elements — unless another condition already reads it
    ('that have more than 2 employees', 'that have employees earning ...')."""
    found = []
    for m in [*HAVING_SOME.finditer(q.text.lower()), *_documents_having(q, fields)]:
        j = q.word_at(m.end())
        array = array_of_subject(q, j, fields, q.word_at(m.start()) - 1) or array_named(q, j, fields)
        if array is None or j in consumed or any(array.mql in (f.field.mql, *f.field.arrays) for f in filters):
            continue
        if j + 1 < len(q.raw) and q.raw[j + 1] in ("with", "whose", "that", "who", "which", "of", "in", "at"):
            continue  # 'have employees with salary above 10': the elements' own condition follows
        found.append(Filter(array, "$gte", 1, j, size=True))
        consumed.add(j)
    for array in fields:
        # 'students who play video games', the array `Plays_Games`: a relationship named by a verb
        # (its first word in the third person) and its object, said in the question, is a condition
        # that each document has some
        words = [w for w in split_name(array.mql) if w not in STOPWORDS]
        verb = re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", array.mql)[0].lower()
        if array.kind != "array" or "." in array.mql or len(words) < 2 or any(
                array.mql in (f.field.mql, *f.field.arrays) for f in filters + found):
            continue
        span = _in_order(q, words)
        if span is not None and not set(range(*span)) & consumed:
            found.append(Filter(array, "$gte", 1, span[0], size=True))
            if verb.endswith("s") and words[0] not in split_name(array.collection):
                consumed.update(range(*span))  # a verb and its object ('Plays_Games') say nothing else
    return found


def _in_order(q: Question, words: list[str]) -> tuple[int, int] | None:
    """The span [start, end) where the question says `words` in this order, at most two
    other words between two of them ('play video games' for Plays_Games), or None."""
    for start in range(len(q.stems)):
        at, ok = start, True
        for k, w in enumerate(words):
            reach = [j for j in range(at, min(at + (1 if k == 0 else 3), len(q.stems)))
                     if word_match(q.stems[j], w) >= 0.85]
            if not reach:
                ok = False
                break
            at = reach[0] + 1
        if ok:
            return start, at
    return None


# Words between a negation and the field it denies ('no end date yet', 'never gave an email').
ABSENCE_FILLERS = frozenset("a an any the their its his her have has had yet still to "
                            "record recorded know known state stated list listed give gave given provide provided "
                            "disclose disclosed report reported specify specified enter entered set".split())


# Phrases that say the field was never there at all, not that it holds null.
NEVER_PRESENT = re.compile(r"\b(?:never|at all|missing|absent|not collected|never collected)\b")


def detect_missing(q: Question, mentions: list[Mention], fields: list[Field], consumed: set[int],
                   used: set[int], index: dict | None = None) -> list[Filter]:
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
        modifier = j not in named and j < len(q.raw) and plain_word(q, j)
        # (a flag denied is detect_flags' `$ne: true` or `$ne` of its yes, not a missing value)
        target = next((m for m in mentions if (m.start == j or m.start == j + 1 and modifier)
                       and m.field.kind != "array" and m.field.type != "bool" and text_flag(index, m.field) is None),
                      None)
        if target is None or target.start in used or j in consumed:
            target = object_named(q, j, fields)  # 'no vitals': an embedded document
        if target is None or target.start in used or j in consumed:
            continue
        if array_named(q, j, fields, top_level=False) or array_named(q, target.end, fields, top_level=False):
            continue  # 'no captain', 'without a school bus': an empty array (detect_absence)
        if _names_a_value_after(q, target.end):
            used.add(target.start)  # (a condition's field, not an output)
            continue  # 'not headquartered in the United States': a value is denied, the field is there
        f = target.field
        absent = f.nulls == 0 or (f.missing > 0 and NEVER_PRESENT.search(q.text.lower()[q.spans[at][0]:]))
        filters.append(Filter(f, "$exists", False, at) if absent else Filter(f, "$type", "null", at))
        used.add(target.start)
        consumed.update(range(at, target.end))
    return filters


def both_bounds(q: Question, filters: list[Filter]) -> bool:
    """'the types of ships that have both ships with tonnage larger than 6000 and ships with
    tonnage smaller than 4000': two bounds on one field that no value meets at once, after
    'both', are two sides each some member must meet — marked as the two branches of a
    disjunction (the reading groups them, `IR.both`). Without 'both' too, when the two are
    said apart ('products priced higher than 4500 as well as those priced lower than 3000'):
    a conjunction no value could meet is not what was asked."""
    if any(f.branch for f in filters):
        return False
    at = q.raw.index("both") if "both" in q.raw else -1
    lows = [f for f in filters if f.op in ("$gt", "$gte") and not f.size and f.start > at]
    highs = [f for f in filters if f.op in ("$lt", "$lte") and not f.size and f.start > at]
    for low in lows:
        high = next((h for h in highs if h.field.mql == low.field.mql and _number(h.value) and _number(low.value)
                     and low.value >= h.value), None)
        if high is not None:
            first, second = sorted((low, high), key=lambda f: f.start)
            first.branch, second.branch = 1, 2
            return True
    return False


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def denied_values(filters: list[Filter]) -> list[Filter]:
    """'counties not located in the East', 'actors not aged 20': a negation before a
    field and then a literal on it denies the literal (`$ne`), not the field's presence —
    detect_missing's null-or-absent test on that field is dropped."""
    out = list(filters)
    for missing in [f for f in filters if f.op in ("$exists", "$type") and f.value in (False, "null")]:
        literal = next((f for f in out if f.field.mql == missing.field.mql and f.op in ("$eq", "$ne", "$in")
                        and 0 < f.start - missing.start <= 7), None)
        if literal is not None:
            out.remove(missing)
            if literal.op == "$eq":
                literal.op = "$ne"
            elif literal.op == "$in":
                literal.op = "$nin"
    return out


def _names_a_value_after(q: Question, at: int) -> bool:
    """A preposition and then a capitalized or quoted word follow word `at` ('in the East')."""
    if at >= len(q.raw) or q.raw[at] not in ("in", "from", "at", "on", "by", "as", "to"):
        return False
    k = at + 1 + (q.raw[at + 1:at + 2] == ["the"])
    if k >= len(q.raw):
        return False
    start, end = q.spans[k]
    word = q.text[start:end]
    return word[:1].isupper() or word[:1].isdigit() or q.text[start - 1:start] in "\"'“‘" and start > 0


def detect_flags(q: Question, mentions: list[Mention], consumed: set[int], used: set[int],
                 index: dict | None = None) -> list[Filter]:
    """A boolean field named as a predicate ('cancelled orders', 'those
    cancelled') holds true; negated ('not counting cancelled ones') it does
    not (`$ne: true` keeps the documents where the flag is false or absent). A text
    field storing only a yes and a no ('Y'/'N', 'Yes'/'No', 'T'/'F': 'students on
    scholarship', `OnScholarship`) is such a flag, its yes the true."""
    filters = []
    for m in mentions:
        true = True if m.field.type == "bool" else text_flag(index, m.field)
        if true is None or m.start in used or m.start in consumed or true is not True and _counted_here(q, m.start):
            continue
        negated = any(w in NEGATIONS for w in q.raw[max(0, m.start - 4):m.start])
        filters.append(Filter(m.field, "$ne" if negated else "$eq", true, m.start))
        used.add(m.start)
    return filters


def _counted_here(q: Question, at: int) -> bool:
    """The word at `at` is what a count phrase right before it counts ('how many acting
    statuses', 'the number of unique acting statuses'): the values named, no predicate."""
    j = at - 1
    while j >= 0 and (q.raw[j] in KINDS or q.raw[j] in DISTINCT_WORDS or q.raw[j] in ("of", "the")):
        j -= 1
    return j >= 0 and (q.raw[j] == "many" or q.raw[j] in ("number", "count") and q.raw[j + 1:j + 2] == ["of"])


# The pairs of stored texts that write a yes and a no (lowercase; the yes first).
YES_NO = (("y", "n"), ("yes", "no"), ("t", "f"), ("true", "false"))


def text_flag(index: dict | None, f: Field) -> str | None:
    """The stored yes of a text field whose witnessed values are exactly a yes and a no, or None."""
    if index is None or f.type != "string":
        return None
    stored = {m["stored"] for matches in index.get("values", {}).values() for m in matches
              if m.get("collection") == f.collection and m.get("path") == f.path and isinstance(m.get("stored"), str)}
    folded = {v.lower(): v for v in stored}
    return next((folded[yes] for yes, no in YES_NO if set(folded) == {yes, no}), None)


# verbs that say a text holds a piece of text, and the nouns naming that piece
HOLDS = (r"contains?|containing|includes?|including|featur(?:e|es|ing)|with|has|have|having|"
         r"show(?:s|ing)?|bear(?:s|ing)?|carr(?:y|ies|ying)")
PIECE = (r"letters?|words?|substrings?|strings?|characters?|text|terms?|sequences?|phrases?|segments?|parts?|"
         r"keywords?|digits?")
# the piece a text starts or ends with: 'starts with the letter A', 'beginning with the digit "2"'
EDGE_PIECE = r"letters?|words?|digits?|characters?"
TEXT_PATTERNS = [
    # (pattern, how the literal is anchored); the literal is group "s"
    (r"\b(?:starts?|starting|begins?|beginning|commenc(?:e|es|ing))\s+with\s+(?:an?\s+|the\s+)?"
     r"(?:(?:" + EDGE_PIECE + r")\b)?\s*"
     r"[\"'“‘]?(?P<s>[\w]+)[\"'”’]?", "prefix"),
    (r"\b(?:ends?|ending|finish(?:es|ing)?|conclud(?:e|es|ing))\s+with\s+(?:an?\s+|the\s+)?"
     r"(?:(?:" + EDGE_PIECE + r")\b)?\s*"
     r"[\"'“‘]?(?P<s>[\w]+)[\"'”’]?", "suffix"),
    # (anchored ones first: 'ends with the letter m' is no 'with the letter m')
    # ('the French word "Moulin"': one word may qualify the piece)
    (r"\b(?:" + HOLDS + r")\s+(?:an?\s+|the\s+)?(?:(?:[a-z]+\s+)?(?:" + PIECE + r")\b)?\s*"
     r"[\"'“‘](?P<s>[^\"'”’]+)[\"'”’]", "contains"),
    # 'feature either "x" or "y"' (not 'with either "A" or "B"': values, not pieces of text)
    (r"\b(?:contains?|containing|includes?|including|featur(?:e|es|ing))\s+either\s+(?:the\s+)?(?:(?:" + PIECE
     + r")\s+)?[\"'“‘](?P<s>[^\"'”’]+)[\"'”’]", "contains"),
    (r"\b(?:" + HOLDS + r")\s+(?:an?\s+|the\s+)?(?:" + PIECE + r")\s+(?P<s>\w+)", "contains"),
]


# Verbs that only say a document has something: with a stored value, they name it, not a piece of text.
LOOSE_HOLDERS = frozenset({"with", "has", "have", "having"})


def detect_text_filters(q: Question, mentions: list[Mention], consumed: set[int], used: set[int],
                        witnesses: list[dict] = ()) -> list[Filter]:
    """'whose name contains "a"', 'starting with M': case-insensitive regexes on
    the nearest string field mentioned before (or right after) the phrase — not 'papers
    with the "Google" institution', where a loose holder names a value stored whole."""
    strings = [m for m in mentions if m.field.type == "string"]
    whole = stored_whole(witnesses)
    filters = []
    for pattern, anchor in TEXT_PATTERNS:
        for m in re.finditer(pattern, q.text, flags=re.IGNORECASE):
            at = q.word_at(m.start())
            if at in consumed:
                continue
            end = q.word_at(m.end())
            if anchor == "contains" and _names_stored_value(q, m, at, end, whole):
                continue
            before = [mm for mm in strings if mm.end <= at and at - mm.end <= 8]
            # "have 'x' in their titles", "the word 'x' featured in their titles"
            after = [mm for mm in strings if mm.start >= end and mm.start - end <= 4]
            inside = [mm for mm in after if q.raw[end:end + 1] == ["in"] and mm.start - end <= 2]
            # 'without the letter M in their first names': the field the piece is in, named after it
            mention = inside[0] if inside else max(before, key=lambda mm: mm.end) if before else (
                min(after, key=lambda mm: mm.start) if after else None)
            valued = _value_as(q, m, strings) if anchor == "contains" else None
            if valued is not None:  # 'have "USA" as their nationality': the whole value of that field
                negated = any(w in NEGATIONS for w in q.raw[max(0, at - 2):at])
                filters.append(Filter(valued.field, "$ne" if negated else "$eq", m.group("s"), at))
                used.add(valued.start)
                consumed.update(range(at, valued.start))
                continue
            if mention is None:
                continue
            pieces = [m.group("s")]
            more = ALTERNATIVE_PIECE.match(q.text, m.end())
            if more is not None:  # 'contain "superstar" or "edu"': either piece
                pieces.append(more.group("s"))
            anchored = {"contains": "{}", "prefix": "^{}", "suffix": "{}$"}[anchor]
            regex = "|".join(anchored.format(re.escape(p)) for p in pieces)
            end = q.word_at(more.end()) if more is not None else end
            negated = any(w in NEGATIONS for w in q.raw[max(0, at - 2):at])  # 'does not contain M'
            filters.append(Filter(mention.field, "$not" if negated else "$regex", regex, at))
            used.add(mention.start)
            consumed.update(range(at, max(end, q.word_at(m.end()))))
    return filters


# 'as their', 'as one of its', 'as a': what follows a quoted literal names the field it is the value of
VALUE_AS = re.compile(r"\s+as\s+(?:(?:one\s+of\s+)?(?:their|its|his|her|the)\s+|an?\s+)?(?=\w)", re.IGNORECASE)


def stored_whole(witnesses: list[dict]) -> set[str]:
    """The quoted literals some collection stores as a whole value, spelled the same, or word
    by word ('"Olin Shivers"': a first name and a last name)."""
    def stored(w: dict) -> bool:
        return any(m.get("kind") == "value" and str(m.get("stored", "")) == str(w.get("term"))
                   for m in w.get("matches", []))
    parts = [w for w in witnesses if w.get("source") == "quoted_part"]
    out = set()
    for w in witnesses:
        if w.get("source") != "quoted":
            continue
        term = str(w.get("term"))
        pieces = [p for p in parts if str(p.get("term")) in term.split()]
        if stored(w) or pieces and len(pieces) == len(term.split()) and all(stored(p) for p in pieces):
            out.add(term)
    return out


def _names_stored_value(q: Question, m: re.Match, at: int, end: int, whole: set[str]) -> bool:
    """'with the "Google" institution': a loose holder, no word for a piece of text, and a
    literal stored whole — a value ('has "ROY" in part' is still a piece of a first name)."""
    return q.raw[at:at + 1] != [] and q.raw[at] in LOOSE_HOLDERS and m.group("s") in whole \
        and not re.search(PIECE, m.group(0), flags=re.IGNORECASE) and q.raw[end:end + 1] != ["in"]


def _value_as(q: Question, m: re.Match, strings: list[Mention]) -> Mention | None:
    """The string field a quoted literal is said to be the value of, named right after it
    ('have "USA" as their nationality'), or None ('as part of their name' is a piece of text)."""
    said = VALUE_AS.match(q.text, m.end())
    if said is None or not q.text[m.end() - 1:m.end()] in "\"'”’":
        return None
    k = q.word_at(said.end())
    return next((mm for mm in strings if mm.start == k), None)


# a second quoted piece joined by 'or' to a text pattern's
ALTERNATIVE_PIECE = re.compile(r"\s*,?\s*or\s+(?:the\s+|an?\s+)?(?:(?:" + PIECE + r")\s+)?[\"'“‘](?P<s>[^\"'”’]+)[\"'”’]",
                               re.IGNORECASE)


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


# The comparatives that need no 'than' to compare two fields ('a budgeted figure below the invested one').
_BOUNDS = frozenset({"above", "below", "beneath", "exceeding"})
# Words that end the other side of such a comparison.
_SIDE_ENDS = frozenset({"and", "or", "but", "with", "who", "which", "where", "whose", "while", "for", "by"})
# How far each side of it reaches.
SIDE_REACH = 6


def detect_field_comparisons(q: Question, mentions: list[Mention], fields: list[Field], consumed: set[int],
                             used: set[int]) -> list[Filter]:
    """'accounts whose checking balance is higher than their savings balance', 'cities whose
    temperature in March is lower than in July', 'a budgeted amount below the invested amount':
    a comparative between two stored numbers (or dates) of a document compares the two fields
    (`Filter.other`). Each side names its field by the field's own name, or only by what holds it
    when the other side says the name ('the balance in checking ... that in savings'); the two
    are siblings or parallel fields (one name in two places). A comparison after 'or' naming no
    field of its own ('lower than in July or higher than in October') has the first one's."""
    filters: list[Filter] = []
    last: tuple[Field, int] | None = None  # the left field of the last comparison, and where it ended
    for i, word in enumerate(q.raw):
        than = _than_after(q, i) if word in FIELD_COMPARATIVES and i not in consumed else None
        if than is None:
            continue
        end = _side_end(q, than + 1)
        lo = max(0, i - SIDE_REACH, last[1] if last else 0)
        left = _side_fields(q, range(lo, than), mentions, fields)
        if not left and last and all(w in _AGAIN for w in q.raw[last[1]:i]):
            left = [(last[0], True, False)]
        if any(_literal(q, k) or q.raw[k] in AGG_WORDS for k in range(than + 1, end)):
            continue  # a bound, a value or a statistic on the other side, not another field
        right = _side_fields(q, range(than + 1, end), mentions, fields)
        pair = _best_pair(left, right)
        if pair is None:
            continue
        filters.append(Filter(pair[0], FIELD_COMPARATIVES[word], None, i, other=pair[1]))
        consumed.update(k for k in range(i, end) if k in (i, than) or q.raw[k] in STOPWORDS
                        or k == than - 1 and q.raw[k] == "compared")
        start = _first_said(q, range(lo, than), pair[0], mentions)
        used.update(m.start for m in mentions if start <= m.start < end)  # (the words of both sides name no output)
        last = pair[0], end
    return filters


# Words between two comparisons of one field ('lower than in July or higher than in October').
_AGAIN = frozenset({"or", "and", "but", "either", "is", "are", "was", "were", "that", "it", "its"})


def _than_after(q: Question, i: int) -> int | None:
    """Where the other side of a comparative at `i` begins, less one: its 'than' (or 'compared
    to'), at most three words on ('higher checking balance than'); a bound's own word; or None."""
    for j in range(i + 1, min(len(q.raw), i + 5)):
        if q.raw[j] == "than" or q.raw[j] == "compared" and q.raw[j + 1:j + 2] in (["to"], ["with"]):
            return j + (q.raw[j] == "compared")
        if q.raw[j] in FIELD_COMPARATIVES or maybe_number(q.raw[j]) is not None:
            return None
    return i if q.raw[i] in _BOUNDS else None


def _side_end(q: Question, start: int) -> int:
    """The end of the other side of a comparison starting at `start`: before a clause word, after
    a word punctuation ends ('than in July, ...', 'that in savings?'), or at its reach."""
    for k in range(start, min(len(q.raw), start + SIDE_REACH)):
        if q.raw[k] in _SIDE_ENDS or q.raw[k] in FIELD_COMPARATIVES:
            return k
        if q.text[q.spans[k][1]:q.spans[k][1] + 1] in tuple(",.?!;:"):
            return k + 1
    return min(len(q.raw), start + SIDE_REACH)


def _comparable(f: Field) -> bool:
    return f.kind == "scalar" and (f.numeric or f.ordered_dates) and "id" not in f.words


def _said(q: Question, span: range, words: tuple[str, ...]) -> bool:
    """Every one of `words` is said in the span."""
    return bool(words) and all(any(word_match(q.stems[k], w) >= 0.85 for k in span) for w in words)


def _side_fields(q: Question, span: range, mentions: list[Mention], fields: list[Field]) -> list[tuple]:
    """The stored numbers one side of a comparison names, as (field, name said, holder said): its
    own name (a mention or its words), and the name of what holds it ('checking' for CHECKING.balance)."""
    named = [m.field.mql for m in mentions if m.start in span and m.end <= span.stop]
    said = [(f, f.mql in named or _said(q, span, f.words), _said(q, span, f.context[-1:]))
            for f in fields if _comparable(f)]
    return [side for side in said if side[1] or side[2]]


def _first_said(q: Question, span: range, f: Field, mentions: list[Mention]) -> int:
    """Where the span first names `f`: a mention of it, its name or what holds it (else where the span ends)."""
    return next((k for k in span if any(m.start == k and m.field.mql == f.mql for m in mentions)
                 or any(word_match(q.stems[k], w) >= 0.85 for w in f.words + f.context[-1:])), span.stop)


def _literal(q: Question, k: int) -> bool:
    """A number, or a word written with a capital inside the sentence that is no month ('than July's')."""
    start = q.spans[k][0]
    return maybe_number(q.raw[k]) is not None or k > 0 and q.text[start:start + 1].isupper() \
        and q.raw[k].split("'")[0] not in MONTHS and q.raw[k] != "i"


def _best_pair(left: list[tuple], right: list[tuple]) -> tuple[Field, Field] | None:
    """The two fields compared: siblings (one parent), each said by its name on its side; or
    parallel (one name, two parents) told apart by what holds them — a side saying the other's
    holder and not its own names the other ('the checking balance ... than the savings one')."""
    best, pair = 0.0, None
    holders = lambda side: {f.mql for f, _, holder in side if holder}
    for a, a_named, a_held in left:
        for b, b_named, b_held in right:
            parallel = a.words == b.words
            sibling = a.mql.rpartition(".")[0] == b.mql.rpartition(".")[0]
            if a is b or not (parallel or sibling) or a.numeric != b.numeric:
                continue
            if parallel and (not (a_held or b_held) or b.mql in holders(left) and not a_held
                             or a.mql in holders(right) and not b_held):
                continue
            if not parallel and not (a_named and b_named):
                continue
            score = a_named + b_named + 0.5 * (a_held + b_held)
            if score > best:
                best, pair = score, (a, b)
    return pair
