"""Aggregation: count, sum, average, min, max, coordinated statistics, rounding, HAVING."""

from __future__ import annotations

import re

from nlq.methods.rules.vocabulary import (ADJECTIVE_ENDINGS, AGG_WORDS, COUNT_PATTERNS, DISTINCT_WORDS, GROUP_PATTERNS,
                                          STATISTICS, STOPWORDS, WORD_NUMBERS)
from nlq.methods.rules.ir import Field, Filter, IR, Mention
from nlq.methods.rules.schema import split_name
from nlq.methods.rules.question import Question, names_documents, quantity_noun, to_number, word_match
from nlq.methods.rules.grounding import array_named, array_phrase, counted_noun, element_numbers, own_quantity
from nlq.methods.rules.ordering import entity_limit, ranks_all


def detect_rounding(q: Question, consumed: set[int]) -> int | None:
    """'rounded to 2 decimals', 'rounded to one decimal place', 'to the nearest whole number'."""
    m = ROUNDING.search(q.text.lower())
    if not m:
        return None
    consumed.update(range(q.word_at(m.start()), q.word_at(m.end())))
    if m.group("whole"):
        return 0
    return 1 if m.group("n") in ("a", "an") else to_number(m.group("n"))


ROUNDING = re.compile(r"\b(?:rounded|round(?:ing)?)\s+(?:off\s+)?(?:to\s+)?"
                      r"(?:the\s+nearest\s+(?P<whole>whole|integer|unit)"
                      r"|(?P<n>\d+|" + "|".join(WORD_NUMBERS) + r"|a|an)\s+(?:decimal|digit|place)s?)")


def aggregate_conditions(q: Question, ir: IR, mentions: list[Mention]) -> list[tuple[int, str, object]]:
    """'jobs whose average salary is above 8000': a comparison right after an
    aggregated field constrains the aggregate of each group (SQL's HAVING), not
    the documents. Those filters move out of `ir.filters`."""
    conditions = []
    for f in list(ir.filters):
        if f.op not in ("$gt", "$gte", "$lt", "$lte") or f.size or f.relative or f.branch:
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


def per_document(q: Question, lower: str, collection: str) -> bool:
    """'of each film', 'for every school', "each film's title and its maximum price", 'the
    titles of the films and the highest price for each': a grouping phrase names the
    collection's own documents, or ends the question (each of the things just named)."""
    for m in list(GROUP_PATTERNS.finditer(lower)) + list(re.finditer(r"\b(?:each|every)\s+", lower)):
        if names_collection(q, q.word_at(m.end()), collection):
            return True
    return bool(re.search(r"\b(?:for|of) (?:each|every)(?: one)?\s*[?.!]?\s*$", lower))


def names_collection(q: Question, at: int, collection: str) -> bool:
    """The words from `at` name the collection's documents: its name's last word, perhaps after
    its other words ('each transaction type' for `Ref_Transaction_Types`)."""
    name = split_name(collection)
    while at < len(q.stems) and any(word_match(q.stems[at], w) >= 0.85 for w in name[:-1]) \
            and not word_match(q.stems[at], name[-1]) >= 0.85:
        at += 1
    return at < len(q.stems) and bool(name) and word_match(q.stems[at], name[-1]) >= 0.85


# Words that name a statistic only of the numeric field right after them ('the overall capacity',
# 'the cumulative followers', 'the typical price'); elsewhere they say nothing ('the overall number of').
ADJACENT_STATISTICS = {"overall": "$sum", "cumulative": "$sum", "typical": "$avg"}


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
        if op is None and word in ADJACENT_STATISTICS and any(mm.start == i + 1 and mm.field.numeric for mm in mentions):
            op = ADJACENT_STATISTICS[word]  # 'the overall student capacity', 'the typical price'
        if op is None or i in consumed:
            continue
        # (a field of numbers before one of numbers spelled as text: 'the total amount in pounds')
        near = [mm for mm in mentions if mm.start > i and mm.start - i <= 4 and mm.field.measurable]
        target = next((mm for mm in near if mm.field.numeric), near[0] if near else None)
        counted = i + 3 if q.raw[i + 1:i + 3] in (["number", "of"], ["count", "of"]) else i + 1
        # ('the most drama workshop groups' counts the elements of an array named in several words;
        # 'the highest roller coaster' measures one)
        counting = word in COUNTING or counted > i + 1
        phrase = _counted_phrase(q, i, counted, counting, op in ("$max", "$min"), target, fields, named, entities,
                                 consumed, ir.collection, {a for mm in mentions for a in mm.field.arrays})
        if target is not None and phrase is not None:
            used.add(target.start)  # (the identifier names the elements counted: it is not shown)
            target = None
        measure = element_measure(q, counted, phrase[0], fields) if phrase is not None and not counting else None
        if measure is not None:
            # 'the average fee', `csu_fees` holding a `CampusFee`: a number of each element, not the array's size
            target, phrase = Mention(measure, counted, phrase[1], 1.0), None
        skipped = phrase[2] if phrase is not None else -1
        array, array_end = phrase[:2] if phrase is not None else (None, counted + 1)
        if op in ("$avg", "$sum") and array is not None:
            # 'average number of chapters', 'average readership': the size of each document's array
            if (op, array) not in ir.aggregates:
                ir.aggregates.append((op, array))
            consumed.update(range(i + 1, counted + 1))
            used.update(m.start for m in mentions if m.start == counted)
            continue
        if op in ("$max", "$min") and i + 1 < len(q.raw) and AGG_WORDS.get(q.raw[i + 1]) in ("$sum", "$avg") \
                and q.text[q.spans[i][1]:q.spans[i + 1][0]].strip() == "" and not _named_statistic(target, i + 1, mentions):
            rank_aggregate = -1 if op == "$max" else 1  # 'the highest total sales' ranks the total
            continue
        # ('the most gas stations that opened after 2000': the entity right after 'most' is counted,
        # the numeric field named later in its clause is no measure of the superlative)
        counted_entity = i + 1 in entities or q.raw[i + 1:i + 2] == ["number"]
        key = _most_of_entity(q, i, mentions, entities, fields, used, consumed, ir.collection) \
            if op in ("$max", "$min") and (target is None or counted_entity and target.start > i + 1) \
            and array is None else None
        if key is None and op in ("$max", "$min") and array is not None:
            key = _value_of_elements(q, i, mentions, array, used)
            if key is not None:
                consumed.update(set(range(i + 1, array_end)) - {skipped})  # 'the most drama workshop groups'
        if key is not None:
            # 'which genre has the most books': the value of a field shared by the most documents
            ir.group_by.append(key.field)
            used.add(key.start)
            tally = next(iter(own_quantity(array, fields)), None)
            if tally is not None:  # 'the year the most degrees were awarded': the tallies summed per value
                ir.aggregates.append(("$sum", tally))
                ir.sort = ir.sort or [(tally, -1 if op == "$max" else 1)]
            else:
                ir.count = True
                ir.sort = ir.sort or [("count", -1 if op == "$max" else 1)]
            ir.limit = ir.limit or entity_limit(q, entities, mentions) or 1  # 'the three regions with the most'
            continue
        if op in ("$max", "$min") and array is not None:
            if not ir.sort and op == "$min":
                # 'the department with the fewest members': among those that have some, as a count
                # per document of its elements does (a document without any forms no group)
                ir.filters.append(Filter(array, "$gt", 0, size=True))
            ir.sort = ir.sort or [(("size", array), -1 if op == "$max" else 1)]  # 'the most players'
            ir.limit = ir.limit or entity_limit(q, entities, mentions) or 1
            consumed.update(set(range(i + 1, array_end)) - {skipped})  # (a qualifier skipped stays unread)
            continue
        if target is None and op in ("$avg", "$sum") and q.raw[i - 1:i] in (["on"], ["in"]):
            # 'how old is each gender on average', 'how many hours were played in total': the measure
            # came first, the statistic closes the clause
            before = [mm for mm in mentions if mm.end <= i and mm.field.numeric and mm.start not in used
                      and mm.field.words[-1:] != ("id",) and mm.start not in consumed]
            target = before[-1] if before else _summed_count(q, ir, mentions, i)
            if target is not None and q.raw[target.start - 2:target.start] == ["how", "many"] \
                    and not _other_counts(q, target.start - 2):
                ir.count = ir.count_asked = False  # 'how many faculty, in total': the quantity's total
        back = _measured_before(q, i, mentions, used) if target is None and op in ("$max", "$min") else None
        if back is not None and not ir.group_by:
            # 'the product priced the highest', 'the employees paid the least': the measure came first
            ir.sort = ir.sort or [(back.field, -1 if op == "$max" else 1)]
            ir.limit = ir.limit or entity_limit(q, entities, mentions) or 1
            used.add(back.start)
            consumed.add(i)
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
                # 'which 2 ships ...'; 'sorted with the highest revenue first' keeps every row
                ir.limit = ir.limit or entity_limit(q, entities, mentions) or (None if ranks_all(q) else 1)

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


def _named_statistic(target: Mention | None, at: int, mentions: list[Mention]) -> bool:
    """The statistic word at `at` names a stored number itself ('the maximum total score', a `Total`;
    'the greatest average attendance', an `Average`): the mention starting there, no other number
    named right after it that the word would total or average instead."""
    return target is not None and target.start == at and target.field.numeric \
        and not any(m.start == target.end and m.field.numeric for m in mentions)


def element_measure(q: Question, at: int, array: Field, fields: list[Field]) -> Field | None:
    """The stored number of each element a statistic word names by its array's name ('the
    average fee', each of `csu_fees` holding a `CampusFee`; 'the average rating', each `Rating`
    holding its `stars`): of the elements' numbers (no identifier, no year), the one whose name
    shares the most of the words said from `at` on ('booking counts': `booked_count`, not
    `booked_amount`), else the only one. None when the elements hold no such number, or several
    the words do not tell apart: the array's size is meant ('the average readership')."""
    numbers = element_numbers(array, fields)
    said = [s for s in q.stems[at:at + 3] if s not in STOPWORDS]
    shared = {f.mql: sum(any(word_match(s, w) >= 0.85 for s in said) for w in f.words) for f in numbers}
    best = max(shared.values(), default=0)
    named = [f for f in numbers if shared[f.mql] == best]
    return named[0] if len(named) == 1 else None


def _summed_count(q: Question, ir: IR, mentions: list[Mention], i: int) -> Mention | None:
    """'how many tickets were, on average, bought': the stored quantity 'how many' summed
    (`count_quantities`), which the statistic closing the clause measures instead."""
    for m in mentions:
        if m.end <= i and q.raw[m.start - 2:m.start] == ["how", "many"] and ("$sum", m.field) in ir.aggregates:
            ir.aggregates.remove(("$sum", m.field))
            return m
    return None


def _other_counts(q: Question, at: int) -> bool:
    """A count phrase other than the one at word `at` that counts: not a statistic's quantity
    ('the largest number of tickets')."""
    starts = [q.word_at(c.start()) for c in COUNT_PATTERNS.finditer(q.text.lower())]
    return any(k != at and not (k and (q.raw[k - 1] in AGG_WORDS or q.raw[k - 1] in STATISTICS)) for k in starts)


# Superlatives that count ('the most players', 'the fewest members'), not measure ('the highest').
COUNTING = frozenset({"most", "least", "fewest"})


def _counted_phrase(q: Question, start: int, at: int, counting: bool, ranking: bool, target: Mention | None,
                    fields: list[Field], named: set[int], entities: set[int], consumed: set[int],
                    collection: str, read_in: set[str] = frozenset()) -> tuple[Field, int, int] | None:
    """(array, end, skipped) of the array whose elements the statistic at `start` counts: named by
    the phrase at `at` ('the most drama workshop groups'), by the identifier its elements hold
    (`_referenced_elements`), or past one qualifier that names nothing stored ('the most insurance
    policies': `Policies`; `skipped` is that word's position, else -1). Not when the phrase names
    the collection's own documents ('the party with the most people' in `people`). An array
    nested in another is counted when the other is one of `read_in`, the arrays the question's
    fields are read in (`_nested_phrase`)."""
    qualifier = _free_qualifier(q, at, named | entities | consumed, bare=at == start + 1)
    if target is not None:
        said = target.start == at or qualifier and target.start == at + 1
        found = _referenced_elements(q, target, fields) if ranking and counting and said \
            and target.start not in entities else None
        skipped = at if target.start == at + 1 else -1
    elif not counting:
        found, skipped = _single(array_named(q, at, fields), at), -1
    else:
        found, skipped = array_phrase(q, at, fields) or _nested_phrase(q, at, fields, read_in), -1
        if found is None and qualifier:
            found, skipped = array_phrase(q, at + 1, fields), at
    if found is None or names_documents(q, found[1] - 1, collection):
        return None
    return found[0], found[1], skipped


def _nested_phrase(q: Question, at: int, fields: list[Field], read_in: set[str]) -> tuple[Field, int] | None:
    """(array, end) of an array nested in another that the phrase at `at` names, when the array it
    is in is one the question's fields are read in ('the name of the department with the most
    students', `DEPARTMENT.STUDENT` beside `DEPARTMENT.DEPT_NAME`): its size is a property of
    each of those elements, as a top-level array's is of each document. Not an array of the same
    name nested elsewhere (`Accounts.Financial_Transactions` for an invoice's transactions)."""
    inside = [f for f in fields if f.kind == "array" and f.mql.rpartition(".")[0] in read_in]
    return array_phrase(q, at, inside, top_level=False)


def _free_qualifier(q: Question, at: int, read: set[int], bare: bool) -> bool:
    """The word at `at` is a plain word no field, entity or earlier pass reads ('insurance');
    right after a bare superlative, no adjective it forms one with ('the most expensive')."""
    word = q.raw[at] if at + 1 < len(q.raw) else ""
    adjective = word.endswith(ADJECTIVE_ENDINGS) and not word.endswith("ed")  # ('the most logged problems')
    return at not in read and word.isalpha() and word not in STOPWORDS and word not in AGG_WORDS \
        and word not in COUNT_HEADS and not (bare and adjective)


def _referenced_elements(q: Question, target: Mention, fields: list[Field]) -> tuple[Field, int] | None:
    """(array, end) when a counting superlative names an array's elements by the identifier
    they hold, its 'id' unsaid ('the most mailshots', each element of `Mailshot_Customers`
    holding a `mailshot_id`): the elements are counted, not their identifiers ranked."""
    said = set(q.raw[target.start:target.end])
    if not target.field.arrays or "id" not in target.field.words or said & IDENTIFIER_WORDS:
        return None
    array = next((f for f in fields if f.kind == "array" and f.mql == target.field.arrays[-1]), None)
    return (array, target.end) if array is not None else None


# Words that say an identifier itself ('the highest id').
IDENTIFIER_WORDS = frozenset({"id", "ids", "identifier", "identifiers", "number", "code"})


def _single(array: Field | None, at: int) -> tuple[Field, int] | None:
    """(array, end) of an array named by the one word at `at`."""
    return (array, at + 1) if array is not None else None


def coordinated_aggregates(q: Question, mentions: list[Mention], consumed: set[int], used: set[int],
                           counted: set[int] | None = None, fields: list[Field] = ()) -> list[tuple[str, Field]]:
    """'the maximum, minimum and average capacity', 'total and minimum
    enrollment': statistic words joined by 'and' or commas share the field named
    right after them (none of them ranks documents). The field is numeric, or any
    ordered value when every word is an extreme ('the maximum and minimum share',
    stored as text). A count phrase in the run or right after it ('the minimum and
    maximum number of bathrooms', 'the maximum and total number of followers') names
    the field's quantity: its first word goes to `counted` (it counts nothing). With no such
    field, the run may name an array whose elements hold the number (`element_measure`)."""
    found = []
    i = 0
    while i < len(q.raw):
        end = _statistics_run(q, i)
        ops = [RUN_STATISTICS.get(q.raw[k]) or AGG_WORDS[q.raw[k]] for k in range(i, end + 1) if _is_statistic(q, k)]
        target = next((m for m in mentions if end < m.start <= end + 4 and m.start not in used
                       and (m.field.numeric or m.field.kind == "scalar" and set(ops) <= {"$max", "$min"}
                            and m.share == 1.0 and "id" not in m.field.words)),
                      None) if end > i and not _read_elsewhere(q, i, end, consumed) else None
        if target is None and end > i and not _read_elsewhere(q, i, end, consumed):
            target = _measure_of_elements(q, end + 1, fields)  # 'the max, min and average booking counts'
        if target is None:
            i = max(i + 1, end)
            continue
        for op in ops:
            if (op, target.field) not in found:
                found.append((op, target.field))
        consumed.update(range(i, end + 1))
        used.add(target.start)
        used.update(m.start for m in mentions if i <= m.start <= end)  # a field named 'Average' is not shown
        if counted is not None:
            counted.update(c for c in range(i, target.start) if q.raw[c] in COUNT_HEADS)
        i = end + 1
    return found


def _measure_of_elements(q: Question, at: int, fields: list[Field]) -> Mention | None:
    """The element number (`element_measure`) of the array named at `at` (past 'the')."""
    at += q.raw[at:at + 1] == ["the"]
    array = array_named(q, at, list(fields), top_level=False)
    measure = element_measure(q, at, array, fields) if array is not None else None
    return Mention(measure, at, at + 1, 1.0) if measure is not None else None


def _read_elsewhere(q: Question, i: int, end: int, consumed: set[int]) -> bool:
    """A word of the run another pass already read ('the most and least common': its
    'least' ranks counts), other than a count phrase's word ('total number')."""
    return any(k in consumed and q.raw[k] not in COUNT_HEADS for k in range(i, end + 1))


# The first words of a count phrase ('number of', 'count of', 'total number').
COUNT_HEADS = frozenset({"number", "numbers", "count", "total"})


# Words that name a statistic only beside other statistics ('the average, peak and cumulative
# revenues', 'the top and bottom shares', 'the least and most number of'): they join a run but
# never make one alone ('most', 'least', 'fewest': the form 'maximum number of' is read in, paraphrase.py).
RUN_STATISTICS = {**ADJACENT_STATISTICS, "most": "$max", "least": "$min", "fewest": "$min", "top": "$max",
                  "peak": "$max", "bottom": "$min"}


def _is_statistic(q: Question, k: int) -> bool:
    """A word of a statistics run: 'maximum', 'average', ... or one of RUN_STATISTICS."""
    return q.raw[k] in STATISTICS or q.raw[k] in RUN_STATISTICS


def _statistics_run(q: Question, i: int) -> int:
    """The last word of a run of statistic words starting at `i` ('maximum,
    minimum and average', 'the average and the largest'), or `i` when no other
    statistic is joined to it."""
    if not _is_statistic(q, i):
        return i
    j = i
    while j + 1 < len(q.raw):
        gap = q.text[q.spans[j][1]:q.spans[j + 1][0]]
        step = 3 if q.raw[j + 2:j + 3] == ["the"] else 2  # the article repeated after 'and'
        if q.raw[j + 1] == "and" and j + step < len(q.raw) and _is_statistic(q, j + step):
            j += step
        elif "," in gap and _is_statistic(q, j + 1):
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


def top_group(q: Question, ir: IR, mentions: list[Mention], used: set[int], fields: list[Field] = ()) -> None:
    """'top 5 sellers by total sales': the field named after 'top N' is the group
    key of the aggregate, and groups rank by it; 'top 5 items by total quantity',
    where `items` is an array, groups per element (`element_key`)."""
    m = re.search(r"\btop\s+(?:\d+|" + "|".join(WORD_NUMBERS) + r")\s+", q.text.lower())
    if m is None or not ir.aggregates or ir.group_by:
        return
    at = q.word_at(m.end())
    key = next((mm for mm in mentions if mm.start == at and mm.start not in used and not mm.field.numeric), None)
    if key is not None:
        ir.group_by.append(key.field)
        used.add(key.start)
        ir.sort = [(ir.aggregates[0][1], -1)]
        return
    array = array_named(q, at, list(fields), top_level=False)
    element = element_key(array, fields) if array is not None else None
    measured = ir.aggregates[0][1]
    if element is not None and (measured is None or array.mql in measured.arrays):
        ir.group_by.append(element)  # the elements the measure is taken over, ranked by it
        used.add(at)
        ir.sort = [(measured, -1)] if measured is not None else [("count", -1)]


def element_key(array: Field, fields) -> Field | None:
    """What names one element of an array: the element itself (an array of
    scalars), else the element's own name, title or identifier (not a number
    when a text label exists)."""
    inside = [f for f in fields if f.kind == "scalar" and f.arrays == array.arrays]
    scalar = next((f for f in inside if f.path == array.path + "[]"), None)
    if scalar is not None:
        return scalar
    for word in ("name", "title", "id", "code"):
        named = [f for f in inside if f.words and f.words[-1] == word]
        if named:
            return min(named, key=lambda f: (f.numeric, len(f.words), f.mql))
    return None


def _value_of_elements(q: Question, i: int, mentions: list[Mention], array: Field, used: set[int]) -> Mention | None:
    """'which origin do the most flights leave from', where origin is a field of each flight:
    the value shared by the most elements of the array — a count per value, not a
    ranking of documents by their array's size."""
    if q.raw[i] not in ("most", "least", "fewest") and q.raw[i + 1:i + 2] != ["number"]:
        return None
    before = [m for m in mentions if m.end <= i and m.start not in used and m.field.kind == "scalar"
              and array.mql in m.field.arrays]
    return before[-1] if before else None


def _most_of_entity(q: Question, i: int, mentions: list[Mention], entities: set[int], fields: list[Field],
                    used: set[int], consumed: set[int] = frozenset(), collection: str = "") -> Mention | None:
    """The field before 'most <documents>' ('which genre has the most books',
    'in which year were most of the books printed'), when the superlative counts the
    collection's own documents rather than an array's elements."""
    if q.raw[i] not in ("most", "least", "fewest") and q.raw[i + 1:i + 2] != ["number"]:
        return None  # 'the highest tower' measures; 'the highest number of towers' counts
    j = i + 1
    while j < len(q.raw) and (q.raw[j] in ("number", "of", "the") or j in consumed and j not in entities):
        j += 1  # ('the most female students': a literal read before the entity)
    if j not in entities or array_named(q, j, fields, top_level=False) is not None \
            and not names_documents(q, j, collection):
        return None
    before = [m for m in mentions if m.end <= i and m.start not in used and m.field.kind != "array"]
    return before[-1] if before else None


# Words that may close a clause after a trailing superlative ('priced the highest of all').
CLAUSE_CLOSERS = frozenset({"and", "or", "of", "among", "in", "on", "overall", "ever", "but", "while"})


def _measured_before(q: Question, i: int, mentions: list[Mention], used: set[int]) -> Mention | None:
    """The measure a trailing superlative ranks by: 'priced the highest', 'whose height is
    the greatest', 'paid the least' — a numeric field named just before the superlative
    (at most 'is the' between), with no noun after it."""
    if i + 1 < len(q.raw) and q.raw[i + 1] not in CLAUSE_CLOSERS:
        return None
    j = i - 1 if i and q.raw[i - 1] == "the" else i
    j -= 1 if j and q.raw[j - 1] in ("is", "are", "was", "were") else 0
    return next((m for m in mentions if m.end == j and m.field.measurable and m.start not in used), None)


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
    """'the ship with the highest tonnage' sorts; 'the highest tonnage' aggregates, and so
    does 'the maximum low temperature and average precipitation': a field another statistic
    word measures is no column shown beside a ranked document."""
    # 'the maximum enrollment across all schools': what follows 'all' is the domain, not a column
    measured = _measured_by_statistics(q, mentions)
    others = [m for m in mentions if m.field.mql != target.field.mql and m.start not in used
              and q.raw[m.start - 1:m.start] != ["all"] and m.start not in measured]
    return bool(others) or any(q.raw[j] in ("with", "whose", "has", "have", "having", "that", "who")
                               for j in range(max(0, i - 3), i))


def _measured_by_statistics(q: Question, mentions: list[Mention]) -> set[int]:
    """The numeric mentions (by start) a statistic word stands before ('the average
    precipitation', 'the lowest consider rate'): at most four words before it, no other
    mention between."""
    out = set()
    for k, word in enumerate(q.raw):
        if word not in STATISTICS:
            continue
        after = next((m for m in mentions if m.start > k), None)
        if after is not None and after.start - k <= 4 and after.field.numeric:
            out.add(after.start)
    return out


def count_quantities(q: Question, ir: IR, mentions: list[Mention], entities: set[int], used: set[int],
                     fields: list[Field] = ()) -> None:
    """'how many goals did X score', 'how many pages were printed': the counted noun is
    a numeric field (a quantity each document stores), so the answer is its sum; so is the
    number its array's elements store under the array's own name ('how many degrees', each of
    `degrees` holding its `Degrees`: `tallied`)."""
    counts = list(re.finditer(r"\bhow many\b", q.text.lower()))
    summed = 0
    for c in counts:
        at = q.word_at(c.end())
        # 'how many furniture components': the noun the phrase ends on names a stored quantity
        head = counted_noun(q, at)
        m = next((m for m in mentions if (m.start == at or m.start == head and quantity_noun(m.field)
                                          and not DISTINCT_WORDS & set(q.raw[at:head]))
                  and m.share == 1.0 and m.field.measurable
                  and m.start not in entities and "id" not in m.field.words), None)
        tally = tallied(q, at, fields) if m is None else None
        if m is not None or tally is not None:
            f = m.field if m is not None else tally
            if ("$sum", f) not in ir.aggregates:
                ir.aggregates.append(("$sum", f))
            used.update([m.start] if m is not None else [])
            summed += 1
    if summed and summed == len(counts) and not COUNT_PATTERNS.search(re.sub(r"\bhow many\b", "", q.text.lower())):
        ir.count = False


def tallied(q: Question, at: int, fields: list[Field]) -> Field | None:
    """The number each element of the array named at `at` stores under the array's own name
    (`degrees[].Degrees`, `faculty[].Faculty`): the elements are tallies, what they count is it."""
    array = array_named(q, at, list(fields), top_level=False)
    return next(iter(own_quantity(array, fields)), None)


def averaged_count(q: Question, count: re.Match, mentions: list[Mention], fields: list[Field]) -> bool:
    """'the average number of enrollees', 'the mean number of chapters': a statistic of
    a stored quantity or of an array's size, not a count of documents."""
    at = q.word_at(count.start())
    if not count.group().endswith("of") or at == 0 or AGG_WORDS.get(q.raw[at - 1]) not in ("$avg", "$sum"):
        return False
    after = q.word_at(count.end())
    after += q.raw[after:after + 1] in (["the"], ["a"])
    return array_named(q, after, fields) is not None or any(
        m.start == after and m.field.numeric and "id" not in m.field.words for m in mentions)


def count_per_value(lower: str, ir: IR) -> None:
    """'how many open and how many closed tickets': one count per witnessed
    value, so the values' field is a group key."""
    if len(re.findall(r"\bhow many\b", lower)) < 2:
        return
    f = next((f for f in ir.filters if f.op == "$in"), None)
    if f is not None and f.field not in ir.group_by:
        ir.group_by.append(f.field)


# Words that add up the two numbers named after them ('the combined checking and savings balance');
# after the strict ones, two fields of their own names ('the sum of adults and kids') too.
SUM_WORDS = frozenset({"total", "combined", "sum", "added"})
_STRICT_SUMS = (["sum", "of"], ["combined"], ["total", "of"], ["added"])
# How far after the sum word the two numbers are named.
SUM_REACH = 8


def summed_fields(q: Question, fields: list[Field]) -> tuple[Field, int, int] | None:
    """'the lowest total checking and saving balance', 'the combined balance from checking and
    savings', 'the sum of adults and kids': one number added to another of the same document,
    as a field of kind "sum" (its `parts`), with the phrase's span [start, end). The two are
    parallel fields (one name said once, what holds each joined by 'and') or, after 'sum of' or
    'combined', siblings said by their own names ('the total A and B' may be two totals)."""
    numbers = [f for f in fields if f.kind == "scalar" and f.numeric and "id" not in f.words]
    for i, word in enumerate(q.raw):
        if word not in SUM_WORDS:
            continue
        end = min(len(q.raw), i + SUM_REACH)
        strict = any(q.raw[i:i + len(p)] == p for p in _STRICT_SUMS)
        for k in range(i + 2, end - 1):
            if q.raw[k] != "and":
                continue
            after = k + 1 + (q.raw[k + 1] == "the")
            pair = _added(q, numbers, k - 1, after, range(i + 1, end), strict)
            if pair is not None:
                return _sum_field(*pair), i, end
    return None


def _added(q: Question, numbers: list[Field], left: int, right: int, span: range, strict: bool):
    """The two numbers named at `left` and `right`, on either side of an 'and', or None."""
    said = lambda k, w: k < len(q.stems) and bool(w) and word_match(q.stems[k], w[-1]) >= 0.85
    for a in numbers:
        for b in numbers:
            if a is b:
                continue
            parallel = a.words == b.words and said(left, a.context) and said(right, b.context) and any(
                word_match(q.stems[k], a.words[-1]) >= 0.85 for k in span)
            sibling = strict and a.mql.rpartition(".")[0] == b.mql.rpartition(".")[0] and said(left, a.words) \
                and said(right, b.words)
            if parallel or sibling:
                return a, b
    return None


def _sum_field(a: Field, b: Field) -> Field:
    arrays = tuple(dict.fromkeys(a.arrays + b.arrays))
    words = ("total",) + (a.words if a.words == b.words else a.words + b.words)
    return Field(a.collection, f"{a.path}+{b.path}", f"{a.mql}+{b.mql}", arrays, "sum", a.type, words, (),
                 present=min(a.present, b.present), parts=(a, b))
