"""The passes that turn a question into an IR, in order, over one explicit state.

    state = State.of(question, witnesses, index, grounding)   # words, mentions, collection
    for step in PASSES:                                        # filters ... traversal
        step(state)
    state.ir

Each pass reads and extends one `State`: the IR under construction plus the
two ledgers every pass shares — `consumed` (question words a pass has
explained) and `used` (mentions, by start, that filter, group, sort or
aggregate, so they are not also shown). The order is part of the method: a
pass sees what the earlier ones consumed ('more than 2 books' read as a
HAVING count is no longer a comparison), which is why it is one tuple here
and not spread over a function body.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace

from nlq.methods.rules.accounting import constraints, ranks
from nlq.methods.rules.aggregation import (aggregate_conditions, element_key, averaged_count, coordinated_aggregates,
                                           count_per_value, count_quantities, detect_aggregates, detect_rounding,
                                           per_document, shown_before_aggregates, summed_fields, top_group)
from nlq.methods.rules.dates import detect_dates
from nlq.methods.rules.filters import (both_bounds, denied_elements, denied_values, detect_absence, detect_anti_join,
                                       detect_average_comparisons, detect_comparisons, detect_disjunction,
                                       detect_field_comparisons, detect_flags,
                                       detect_having, detect_missing, detect_numbered, detect_presence,
                                       detect_text_filters, joined_anti_joins)
from nlq.methods.rules.grounding import (array_named, bind_bag_attributes, bind_witnesses, coded_witnesses, counted_noun,
                                         eponymous_field, number_alternatives, participle_quantities, quantity_mentions,
                                         resolve_collection, witnessed_values, witnessed_years)
from nlq.methods.rules.grouping import (detect_by_grouping, group_by_date_part, is_order_phrase, top_per_group,
                                        which_entity)
from nlq.methods.rules.ir import IR, Field, Filter, Mention
from nlq.methods.rules.joins import ASKING, asked_collection, counted_nouns, reach
from nlq.methods.rules.ordering import (ORDER_PHRASE, default_order, detect_limit, detect_order, entity_limit,
                                        orders_here, sortable, superlative_limit)
from nlq.methods.rules.outputs import (asked_place, asks_all_fields, asks_for_entity, count_grain, entity_outputs,
                                       full_names, grain_of, held_together, in_relative_clause, intent_word,
                                       listed_beside, listed_with, members_of_both, names_array, names_entity,
                                       plan_expansions, plan_unwinds, owned_twice, plural_attribute, unlisted_outputs,
                                       unrepresented, validate)
from nlq.methods.rules.question import (POSSESSIVES, Question, counts_entity, meaningful_mentions, mention_fields,
                                        name_span, names_documents, names_quantity, order_words, quantity_noun,
                                        select_mentions, word_match)
from nlq.methods.rules.schema import Grounding, identifier, prepare, repeats, split_name
from nlq.methods.rules.vocabulary import (ADJECTIVE_ENDINGS, AGG_WORDS, ASC_WORDS, COUNT_PATTERNS,
                                          DESC_WORDS, DISTINCT_PHRASES, DISTINCT_WORDS, GROUP_PATTERNS,
                                          IRREGULAR_PARTICIPLES, STATISTICS, STOPWORDS, SUPERLATIVES)


@dataclass
class State:
    """One question's reading in progress: the question, what it is grounded
    in, the IR so far, and what the passes have explained."""

    q: Question
    witnesses: list[dict]
    index: dict
    grounding: Grounding
    ir: IR
    fields: list[Field]           # the chosen collection's fields
    entities: set[int]            # word positions naming the collection or an array entity
    plural: set[int]              # word positions whose word is a plural
    mentions: list[Mention]       # the collection's non-overlapping field mentions
    consumed: set[int] = field(default_factory=set)  # question words a pass already explains
    used: set[int] = field(default_factory=set)      # mentions (by start) that filter, group, sort or aggregate
    counted: set[int] = field(default_factory=set)   # count phrases (by first word) a condition already reads
    limit_direction: int = 0      # the order 'top 3' / 'the 5 lowest' implies
    bound: list[Filter] = field(default_factory=list)  # witnessed literals bound to stored forms
    common: bool = False          # 'the most common X' ranked the counts
    ranked: list = field(default_factory=list)  # (collection, margin) best first: the other readings' collections
    variant: frozenset = frozenset()  # another reading: "identified" (an entity with its id), "ungrouped"
    grain: str | None = None      # the array a count per element counts, when no array's name says it
    unsure: set[int] = field(default_factory=set)  # words two stored numbers fit equally: left unresolved

    @property
    def lower(self) -> str:
        return self.q.text.lower()

    @property
    def collection(self) -> str:
        return self.ir.collection

    @classmethod
    def of(cls, question: str, witnesses: list[dict], index: dict, grounding: Grounding | None = None,
           collection: str | None = None, avoid: frozenset = frozenset(), variant: frozenset = frozenset()
           ) -> "State":
        """Tokenize, find every field mention, choose the collection (or take
        the one given) and keep its non-overlapping mentions (none binding a
        field in `avoid`: another field binding of the same words)."""
        q = Question.of(question)
        grounding = grounding or prepare(index)
        schema = grounding.schema
        all_mentions = mention_fields(q.stems, schema)
        ranked, entity_positions = resolve_collection(q, schema, all_mentions, witnesses)
        collection = collection or asked_collection(q, index, schema, ranked[0][0], all_mentions)
        margin = dict(ranked).get(collection, -1.0)
        fields = schema.get(collection, [])
        ir = IR(collection=collection, collection_margin=margin, collections=len(ranked),
                array_paths=frozenset(a for f in fields for a in f.arrays))
        entities = entity_positions.get(collection, set())
        plural = {i for i, (r, st) in enumerate(zip(q.raw, q.stems)) if r != st}
        meaningful = [m for m in meaningful_mentions(q, all_mentions) if m.field.mql not in avoid]
        mentions = select_mentions(meaningful, collection, entities, plural,
                                   name_span(q, collection, fields) | order_words(q), q.stems, fields)
        mentions = [m for m in mentions if not counts_entity(q, m, entities) and not imperative(q, m)]
        mentions = [owned_field(q, m, fields, collection) for m in mentions]
        mentions = [said_before(q, m, mentions) for m in mentions]
        # what only another collection explains, reached through a join edge (joins.py)
        ir.joins, fields, mentions, witnesses, named = reach(q, index, grounding, collection, fields, mentions,
                                                             meaningful, entities, witnesses)
        if ir.joins:
            entities = entities | named
            ir.array_paths = frozenset(a for f in fields for a in f.arrays)
        mentions, entities = quantity_mentions(q, fields, mentions, entities, collection)  # 'how many customers'
        # 'the number of games played': a stored number, its count phrase read
        mentions, entities, counted, unsure = participle_quantities(q, fields, mentions, entities, collection)
        ir.mentions = mentions
        ir.alternative = bool(avoid or variant or collection != ranked[0][0])
        return cls(q, witnesses, index, grounding, ir, fields, entities, plural, mentions, counted=counted,
                   ranked=ranked, variant=variant, unsure=unsure)


# Words after which a question's first word is a verb telling what to do ('Name the city ...').
_DETERMINERS = frozenset({"the", "all", "a", "an", "each", "every", "any", "those", "these"})


def imperative(q: Question, m: Mention) -> bool:
    """'Name the nominee ...': the question's first word, a verb before a determiner, names no field."""
    return m.start == 0 and m.end == 1 and q.raw[0] == "name" and len(q.raw) > 1 and q.raw[1] in _DETERMINERS


def owned_field(q: Question, m: Mention, fields: list[Field], collection: str) -> Mention:
    """'the types of forms': a one-word mention whose 'of' phrase names its owner is the field
    named by both (`form_type_code`, not another `service_type_code`), when one field is (the
    collection's own documents as the owner, 'the ids of companies', own their fields)."""
    at = m.end + 1
    if m.end - m.start != 1 or q.raw[m.end:at] != ["of"]:
        return m
    while q.raw[at:at + 1] and q.raw[at] in _DETERMINERS:
        at += 1
    owner = list(itertools.takewhile(lambda w: w.isalpha() and w not in STOPWORDS, q.stems[at:at + 3]))
    if not owner or any(word_match(o, w) >= 0.8 for o in owner for w in (*m.field.words, *split_name(collection))):
        return m
    named = [f for f in fields if f.kind == "scalar" and any(word_match(q.stems[m.start], w) >= 0.85 for w in f.words)
             and any(word_match(o, w) >= 0.8 for o in owner for w in f.words)]
    return replace(m, field=named[0]) if len(named) == 1 else m


def said_before(q: Question, m: Mention, mentions: list[Mention]) -> Mention:
    """'the card type codes, and how many customers hold each type': a word of a field named
    earlier, after 'each' or 'that', names that field again, not another partly named so."""
    if m.end - m.start != 1 or m.share >= 1.0 or q.raw[m.start - 1:m.start] not in (["each"], ["every"], ["that"]):
        return m
    earlier = [e.field for e in mentions if e.end <= m.start - 1 and e.field is not m.field
               and any(word_match(q.stems[m.start], w) >= 0.85 for w in e.field.words)]
    return replace(m, field=earlier[-1], share=1.0) if earlier else m  # (named in full by the earlier words)


def read_limits(s: State) -> None:
    """'top 3', 'rounded to 2 decimals'."""
    s.ir.limit, s.limit_direction = detect_limit(s.q, s.consumed)
    s.ir.round = detect_rounding(s.q, s.consumed)


def read_having(s: State) -> None:
    """'authors with more than 2 books': a count per value, then a condition (before comparisons)."""
    having = detect_having(s.q, s.mentions, s.fields, s.entities, s.consumed, s.used, s.counted)
    if having is not None:
        s.ir.group_by, s.ir.having = [having[0]], having[1:]
        if having[0].arrays:  # a value of the elements: the documents holding it are counted, each once
            s.ir.distinct_count = identifier(s.index, s.collection, s.fields) or next(
                iter(own_key(s.index, s.collection, s.fields)), None)


def read_filters(s: State) -> None:
    """Comparisons, text patterns, averages, null vs missing, empty arrays, anti-joins."""
    q, ir = s.q, s.ir
    ir.filters = detect_numbered(q, s.index, s.collection, s.fields, s.entities, s.plural, s.consumed)
    ir.filters += detect_dates(q, s.fields, s.mentions, s.witnesses, s.collection, s.consumed, s.used)
    ir.filters += detect_comparisons(q, s.fields, s.mentions, s.consumed, s.used,
                                     witnessed_years(s.witnesses, s.collection, s.fields, q), s.counted)
    ir.filters += detect_dates(q, s.fields, s.mentions, s.witnesses, s.collection, s.consumed, s.used, years=True)
    ir.filters += detect_text_filters(q, s.mentions, s.consumed, s.used, s.witnesses)
    ir.filters += detect_average_comparisons(q, s.mentions, s.fields, s.consumed, s.used)
    ir.filters += detect_field_comparisons(q, s.mentions, s.fields, s.consumed, s.used)
    ir.filters += detect_missing(q, s.mentions, s.fields, s.consumed, s.used, s.index)
    literals = witnessed_values(q, s.witnesses, s.collection, s.fields)  # what a negation before them denies
    others = tuple(split_name(c)[-1] for c in s.index.get("collections", {}) if c != s.collection and split_name(c))
    ir.filters += detect_absence(q, s.fields, s.consumed, literals, others)
    ir.filters += detect_presence(q, s.fields, s.consumed, ir.filters)
    ir.anti_joins = detect_anti_join(q, s.index, s.collection, s.consumed, literals)  # embedded arrays came first
    ir.anti_joins, empty = joined_anti_joins(ir.anti_joins, ir.joins, s.fields)  # one $lookup per collection
    ir.filters += empty


def read_literals(s: State) -> None:
    """Witnessed literals as equalities ($in for alternatives, $ne when denied, $or
    across 'or'), attribute-bag keys, boolean flags, directly addressed map keys."""
    q, ir, consumed, used, mentions = s.q, s.ir, s.consumed, s.used, s.mentions
    counting = {i for c in COUNT_PATTERNS.finditer(s.lower)  # 'the numbers of wines' binds no literal
                if not c.group().startswith("count")  # ('HBA1C count' may name a field)
                for i in range(q.word_at(c.start()), q.word_at(c.end()))}
    consumed.update(counting)
    witnesses = s.witnesses + coded_witnesses(q, s.index, s.collection, s.witnesses)  # 'female' -> "F"
    s.bound = bind_witnesses(q, witnesses, s.collection, s.fields, mentions, consumed, s.entities,
                             count_grain(q, s.fields, s.collection))
    for f in s.bound:
        used.update(m.start for m in mentions if m.field.mql == f.field.mql and abs(m.start - f.start) <= 4)
    # a word read as a literal names no field ('the number of audiences' names a `Num_of_Audience`)
    used.update(m.start for m in mentions if m.start in consumed and not names_counted(s, m, counting))
    ir.filters += number_alternatives(q, s.bound, consumed)
    ir.filters = denied_values(denied_elements(ir.filters, s.fields, ir.joins))
    if any(f.op == "$all" for f in ir.filters):  # 'both A and B': the conjunction an `$all` reads
        consumed.update(i for i, w in enumerate(q.raw) if w == "both")
    detect_disjunction(q, ir.filters, consumed)
    ir.both = both_bounds(q, ir.filters)
    if ir.both:
        consumed.update(i for i, w in enumerate(q.raw) if w == "both")
    ir.witnesses_bound = len(s.bound)
    bind_bag_attributes(q, ir, s.fields, s.limit_direction)
    ir.filters += detect_flags(q, mentions, consumed, used, s.index)
    ir.filters = compared_subsets(q, ir.filters)
    ir.bound_keys = {f.field.mql: f.value for f in s.bound if f.key_of is not None}


def names_counted(s: State, m: Mention, counting: set[int]) -> bool:
    """The mention names a stored quantity by its count phrase: with the noun after it ('the
    number of audiences' is `Num_of_Audience`), or by the phrase's words alone when that noun
    names nothing the documents hold ('the number of employees' of shops storing only a
    `Num_of_staff`: neither the collection, an array, nor a field)."""
    if m.start not in counting or not quantity_noun(m.field):
        return False
    if m.end - 1 not in counting:
        return m.share >= 0.8
    noun = counted_noun(s.q, m.end)
    return noun is not None and noun not in s.entities and not any(n.start <= noun < n.end for n in s.mentions) \
        and sum(bool(quantity_noun(f)) for f in s.fields if f.arrays == m.field.arrays) == 1


# Words that open a clause of their own: a value after one is no longer the compared statistic's.
CLAUSE_WORDS = frozenset({"who", "whose", "which", "that", "where", "and", "but", "while", ","})


def compared_subsets(q: Question, filters: list[Filter]) -> list[Filter]:
    """'revenue less than the lowest revenue of any manufacturer in Austin', 'ratings above the
    average of the movies directed by James Cameron': a value named after a compared statistic, in
    the same clause, says which documents that statistic is over — not which are listed."""
    compared = [f for f in filters if f.average]
    if not compared:
        return filters
    kept = []
    for f in filters:
        over = next((c for c in compared if f.op in ("$eq", "$in") and not (f.relative or f.size or f.branch)
                     and f.key_of is None and c.start < f.start
                     and not CLAUSE_WORDS & set(q.raw[c.start:f.start])), None)
        if over is None:
            kept.append(f)
        else:
            over.subset += (f,)
    return kept


def read_counts(s: State) -> None:
    """'how many', 'number of' (unless it names a stored quantity), 'distinct'."""
    q, ir, mentions = s.q, s.ir, s.mentions
    grouping = {q.word_at(m.end()) - 1 for m in GROUP_PATTERNS.finditer(s.lower)}  # 'for different investors'
    ir.distinct = any(w in DISTINCT_WORDS and i not in grouping for i, w in enumerate(q.raw)) \
        or bool(DISTINCT_PHRASES.search(s.lower))
    counts = count_phrases(s)
    # 'the range with the most number of peaks' ranks by the count; it does not ask for it
    ranking = [c for c in counts if q.raw[q.word_at(c.start()) - 1:q.word_at(c.start())] in (
        ["most"], ["least"], ["fewest"])]
    ir.count_asked = len(counts) > len(ranking)
    ir.count = bool(ir.having or counts)
    if ir.count:
        count_quantities(q, ir, mentions, s.entities, s.used, s.fields)
        count_per_value(s.lower, ir)


def count_phrases(s: State) -> list[re.Match]:
    """The count phrases that count ('how many', 'the number of'): not a field's own name, a
    phrase a condition or a statistic already reads (`counted`), a stored quantity or a compound."""
    q, mentions = s.q, s.mentions
    named = {i for m in mentions for i in range(m.start, m.end)}
    return [c for c in COUNT_PATTERNS.finditer(s.lower) if q.word_at(c.start()) not in named | s.counted
            and not names_quantity(q, c, mentions) and not averaged_count(q, c, mentions, s.fields)
            and not compound_number(q, c)]


# Words that may stand before a count's 'number of' ('the total number of', 'an equal number of').
COUNT_MODIFIERS = frozenset({"total", "overall", "combined", "whole", "entire", "exact", "approximate", "same",
                             "equal", "different", "large", "small", "big", "great", "high", "low", "greater",
                             "larger", "smaller", "higher", "lower", "such", "what", "which", "their", "its"})


def compound_number(q: Question, count: re.Match) -> bool:
    """'the telephone numbers of the departments', 'contact numbers of employees': a noun
    before 'number(s) of' makes one compound noun (a stored attribute), not a count; so
    do 'numbers' joined to other attributes ('the names and numbers of contestants')."""
    at = q.word_at(count.start())
    if not count.group().startswith("number") or at == 0:
        return False
    word = q.raw[at - 1]
    if count.group().startswith("numbers") and word == "and" and at >= 2 and q.raw[at - 2] in (
            "names", "ids", "titles", "codes"):
        return True  # 'the names and numbers of contestants': a second attribute, not a count
    return word.isalpha() and word not in STOPWORDS and word not in AGG_WORDS and word not in COUNT_MODIFIERS \
        and word not in SUPERLATIVES and not word.endswith(ADJECTIVE_ENDINGS)



def read_grouping(s: State) -> None:
    """'for each X', 'per X', 'each year', 'the most common X'."""
    q, ir, lower, mentions, used = s.q, s.ir, s.lower, s.mentions, s.used
    for m in GROUP_PATTERNS.finditer(lower):
        at = q.word_at(m.end())
        target = next((mm for mm in mentions if mm.start >= at and mm.start - at <= 2), None)
        eponym = eponymous_field(q, at, s.fields, s.collection)
        if target is None and eponym is not None and eponym not in ir.group_by:
            ir.group_by.append(eponym)  # 'for different grapes' in `grapes`: its `Grape`
        elif target is None and not is_order_phrase(lower, m.start()):
            group_by_date_part(q, at, s.fields, mentions, ir, s.consumed)
            elements = array_named(q, at, s.fields, top_level=False) if ir.count else None
            if elements is not None and at not in s.consumed and elements not in ir.group_by:
                group_by_elements(s, elements)
        named = target and set(range(target.start, target.end)) & s.entities
        if named and target.field.arrays and target.field.type != "string" and target.start not in used \
                and names_own(q, target, s.collection):
            # 'the number of products for each manufacturer' in Manufacturers: each document, by its own
            # label, not its elements' coded reference back to it (`Products.Manufacturer`, a number)
            ir.group_by += [f for f in own_label(s.index, s.collection, s.fields) if f not in ir.group_by]
            used.add(target.start)
            continue
        if named and not ir.count and not STATISTICS & set(q.raw):
            if target.field.arrays:
                used.add(target.start)  # 'the team of each player': each element, named, not shown
            continue  # 'the names of every company' in `company`: each document, no group
        if named and target.field == eponym and not ir.count and not any(
                array_named(q, j, s.fields, top_level=False) for j in range(len(q.raw)) if j != target.start):
            # 'the average market value for every company': `Company` names each document itself, and
            # nothing inside the documents is aggregated per document
            continue
        if target and target.start not in used and not is_order_phrase(lower, m.start()):
            if target.field not in ir.group_by:
                ir.group_by.append(target.field)
            used.add(target.start)
    for m in re.finditer(r"\bfor all (?:the |of the )?", lower):
        # 'the average salary for all job titles': a statistic over each value of a compound
        # attribute named in the plural — not the documents themselves ('for all companies',
        # 'for all schools' are the domain: one word may name the entity, so it never groups)
        at = q.word_at(m.end())
        target = next((mm for mm in mentions if mm.start == at), None)
        span = set(range(target.start, target.end)) if target else set()
        if target is None or target.start in used or len(span) < 2 or span <= s.entities or not span & s.plural \
                or not (ir.count or STATISTICS & set(q.raw)):
            continue
        if target.field not in ir.group_by:
            ir.group_by.append(target.field)
        used.add(target.start)
    phrased = {q.word_at(m.end()) for m in GROUP_PATTERNS.finditer(lower)}
    for m in re.finditer(r"\b(?:each|every)\s+", lower):  # 'spent each year', 'how many students play each sport'
        at = q.word_at(m.end())
        target = next((mm for mm in mentions if mm.start == at), None)
        if target is None:
            group_by_date_part(q, at, s.fields, mentions, ir, s.consumed)
        elif ir.count and at not in phrased and target.start not in used and target.field.kind == "scalar" \
                and not set(range(target.start, target.end)) & s.entities and target.field not in ir.group_by:
            ir.group_by.append(target.field)
            used.add(target.start)
    common = re.search(r"\b(?:most|least) (?:common|frequent|popular|often)\b", lower)
    s.common = bool(common)
    if common:
        at = q.word_at(common.end())
        ordering = re.match(r"\s*(?:first|last|to)\b", lower[common.end():])  # 'most common first' orders
        after = [mm for mm in mentions if mm.start >= at - 1 and mm.start not in used]
        target = None if ordering and ir.group_by else (after[0] if after else mentions[0] if mentions else None)
        if target:
            if target.field not in ir.group_by:
                ir.group_by.append(target.field)
            used.add(target.start)
        if target or ir.group_by:
            s.consumed.add(at - 2)  # its 'most' ranks the counts: no maximum of a field
            ir.sort = [("count", -1 if "most" in common.group() else 1)]
            if not ordering:
                ir.limit = ir.limit or 1  # "the most common X" is one
            ir.count = True
    else:
        most_often(s)


# 'which status code is seen the most', 'the type that appears most commonly in the records': a
# superlative closing a passive or intransitive clause, with no measure — how often, a count.
TRAILING_MOST = re.compile(r"\b(?:is|are|was|were|appears?|occurs?|\w+ed|" + "|".join(sorted(IRREGULAR_PARTICIPLES))
                           + r")\s+(?:the\s+)?(most|least)"
                           r"(?:\s+(?:commonly|frequently|often))?(?=\s*(?:[?.!,;]|$)|\s+(?:across|among|in|overall)\b)")


def most_often(s: State) -> None:
    """'which booking status code is seen the most across all bookings': the value named first
    (the one asked for), counted per value and ranked by how often it occurs."""
    q, ir = s.q, s.ir
    m = TRAILING_MOST.search(s.lower)
    if m is None or ir.group_by or ir.sort:
        return
    at, verb = q.word_at(m.start(1)), q.word_at(m.start())
    if any(mm.start <= verb < mm.end for mm in s.mentions):
        return  # 'the employees paid the least', 'the game played the most': the verb names a measure
    target = next((mm for mm in s.mentions if mm.end <= at and mm.start not in s.used and mm.field.kind == "scalar"
                   and not mm.field.measurable), None)
    if target is None:
        return
    ir.group_by.append(target.field)
    s.used.add(target.start)
    s.consumed.update(range(at, q.word_at(m.end())))
    ir.sort = [("count", -1 if m.group(1) == "most" else 1)]
    ir.limit = ir.limit or 1
    ir.count = True


def group_by_elements(s: State, elements: Field) -> None:
    """'how many sections does each course have', 'the customer id and the number of bookings
    for each customer', `courses` / `customers` arrays: a count per element. What the count
    phrase ends on inside the elements is counted (its array is the grain), not shown; the
    element's attributes the question names are the keys (else its own label, `element_key`).
    With an attribute of other data named, the elements are not what the count is per."""
    ends = {s.q.word_at(c.end()) for c in COUNT_PATTERNS.finditer(s.lower)}
    inside = [m for m in s.mentions if m.start in ends and len(m.field.arrays) > len(elements.arrays)
              and m.field.arrays[:len(elements.arrays)] == elements.arrays]
    named = [m for m in s.mentions if m.start not in s.used and m not in inside and m.field.kind == "scalar"
             and (not m.field.numeric or "id" in m.field.words)]  # an identifier, not a measure
    if any(m.field.arrays != elements.arrays for m in named):
        return
    s.ir.group_by += [m.field for m in named if m.field not in s.ir.group_by] or [elements]
    s.used.update(m.start for m in named + inside)
    if inside:
        s.grain = inside[0].field.arrays[-1]


def read_aggregates(s: State) -> None:
    """'average price', 'total and minimum enrollment'; superlatives sort; 'top 5 X by'; 'by X' groups."""
    q, ir = s.q, s.ir
    read = len(s.counted)
    ir.aggregates += coordinated_aggregates(q, s.mentions, s.consumed, s.used, s.counted, s.fields)
    if len(s.counted) > read and ir.count and not ir.having and not s.common and not count_phrases(s):
        ir.count = ir.count_asked = False  # 'the minimum and maximum number of bathrooms' measures, counts nothing
    detect_aggregates(q, ir, s.mentions, s.fields, s.entities, s.consumed, s.used, s.common,
                      per_document(q, s.lower, s.collection))
    top_group(q, ir, s.mentions, s.used, s.fields)
    if (ir.aggregates or ir.count) and "ungrouped" not in s.variant:
        ir.group_by += [f for f in detect_by_grouping(q, s.mentions, s.used, s.entities) if f not in ir.group_by]
    size_ranked(s)


def size_ranked(s: State) -> None:
    """'the customer with the greatest number of mailshots': every count phrase is a superlative's,
    which ranks the documents by their array's size — nothing is counted (with values named
    before it, they are what the count is per: `read_outputs`)."""
    q, ir = s.q, s.ir
    if not ir.count or ir.group_by or ir.having or ir.aggregates or not any(isinstance(k, tuple) for k, _ in ir.sort):
        return
    starts = [q.word_at(c.start()) for c in count_phrases(s)]
    per_value = any(m.start not in s.used and m.end <= starts[0] for m in s.mentions) if starts else True
    ranked = all(at > 0 and (q.raw[at - 1] in SUPERLATIVES or AGG_WORDS.get(q.raw[at - 1]) in ("$max", "$min"))
                 for at in starts)
    if ranked and not per_value:
        ir.count = ir.count_asked = False


def read_order(s: State) -> None:
    """'in descending order of X', 'sorted by X', 'top 3 X', measure superlatives."""
    q, ir = s.q, s.ir
    top_values(ir)
    if not ir.sort:
        ir.sort = counts_ordered(s, detect_order(q, s.lower, s.mentions, s.fields, s.used))
    if not ir.sort and s.limit_direction:
        target = next((m for m in s.mentions if m.field.measurable and m.start not in s.used), None)
        if target:
            ir.sort = [(target.field, s.limit_direction)]
            s.used.add(target.start)
    if ir.sort and ir.limit is None:
        ir.limit = entity_limit(q, s.entities, s.mentions, s.consumed) or superlative_limit(q, s.mentions)
    if ir.sort:  # 'oldest first', 'the highest ones first': the order's direction, read with it
        s.consumed.update(i for i, w in enumerate(q.raw) if w in ("first", "last")
                          and SUPERLATIVES & set(q.raw[max(0, i - 2):i]))


def counts_ordered(s: State, sort: list[tuple[object, int]]) -> list[tuple[object, int]]:
    """'the count of gas stations at each location, organized in descending order': an order
    phrase naming no key after it, over counts asked per group, orders by the count — not by
    the group's value named before it."""
    ir = s.ir
    phrase = next((m for m in ORDER_PHRASE.finditer(s.lower) if orders_here(s.q, m)), None)
    if phrase is None or len(sort) != 1 or not (ir.count_asked and ir.group_by) or sort[0][0] not in ir.group_by:
        return sort
    at = s.q.word_at(phrase.start())
    if any(m.field == sort[0][0] and m.start > at for m in s.mentions):
        return sort
    return [("count", sort[0][1])]


def top_values(ir: IR) -> None:
    """'the top 3 highest support rates': N values of a measure, not its one maximum — the
    rows sorted by it, its values shown."""
    if not ir.sort and ir.limit and ir.limit > 1 and not (ir.group_by or ir.count) and len(ir.aggregates) == 1 \
            and ir.aggregates[0][0] in ("$max", "$min") and ir.aggregates[0][1] is not None:
        op, measure = ir.aggregates[0]
        ir.aggregates, ir.sort = [], [(measure, -1 if op == "$max" else 1)]
        ir.outputs.append(measure)


def read_outputs(s: State) -> None:
    """What the question names and nothing else uses; a bare entity; what a count is per."""
    q, ir, lower, mentions, fields = s.q, s.ir, s.lower, s.mentions, s.fields
    read = conditioned(ir)
    named = [m for m in mentions if m.start not in s.used and not m.entity and m.field.mql not in read]
    dropped: list[Field] = []  # identifiers a noun bound that names what they identify, not shown
    if asks_all_fields(q, mentions, s.entities, named):
        grain = grain_of(mentions, fields, s.entities, q, name_span(q, s.collection, fields))
        ir.outputs = [f for f in fields if f.kind == "scalar" and f.arrays == grain and "<*>" not in f.mql]
    else:
        listed = []
        for m in mentions:
            if m.start not in s.used and m.field not in ir.outputs and m.field not in ir.group_by \
                    and not in_relative_clause(q, m, named):
                ir.outputs.append(m.field)
                listed.append(m)
        if not ir.count and any(not names_entity(q, m) for m in listed):
            # 'the name and phone for customers with a mailshot with outcome ...': a noun bound to the
            # identifier of what it names says which thing the shown fields belong to, it shows no identifier
            # (in a count it says what is counted: 'how many distinct patients have ... in any year')
            ids = {f.mql for f in ir.outputs if all(names_entity(q, m) for m in listed if m.field is f)
                   and any(m.field is f for m in listed)}
            dropped = [f for f in ir.outputs if f.mql in ids]
            ir.outputs = [f for f in ir.outputs if f.mql not in ids]
        if not (ir.count or ir.aggregates or ir.group_by):
            shown_read(s)
            ir.outputs = ir.outputs or asked_condition(s)
        unnamed = not any({"id", "name", "title"} & set(f.words) for f in ir.outputs)
        if not (ir.count or ir.aggregates or ir.group_by) and (
                not ir.outputs or unnamed and asks_for_entity(q, s.collection) and not who_are(s)):
            # a bare entity; 'which 5 drivers log the most hours': the entities, beside what ranks them
            ir.outputs = entity_outputs(s.index, s.collection, fields, q, s.entities,
                                        "identified" in s.variant) + ir.outputs
        place = asked_place(q, ir.outputs, fields) if not (ir.count or ir.aggregates or ir.group_by) else None
        if place is not None:  # 'where is the festival ...': where it is, not its name
            ir.outputs = [place]
    distinct_listed(s)
    held_together(ir)
    ir.outputs = full_names(q, members_of_both(ir, mentions, s.entities), fields, mentions, s.entities)
    summed_quantities(s)
    ir.grain = s.grain or count_grain(q, fields, s.collection, ir.group_by) if ir.count else None
    ir.grain = ir.grain or joined_grain(s)
    if not (ir.grain or ir.count or ir.aggregates or ir.group_by or ir.distinct):
        # 'the names of technicians and the series of the machines they repair': the documents
        # joined on a key of the dropped identifier's elements are still joined per element
        keys = {j[2].rsplit(".", 1)[0] for j in ir.joins}
        ir.grain = next((f.arrays[-1] for f in dropped if f.arrays and f.arrays[-1] in keys), None)
    if ir.count and ir.grain and "." not in ir.grain and not (ir.outputs or ir.group_by or ir.aggregates
                                                              or ir.distinct or ir.filters):
        # "all products and the number of complaints each has received": the entity,
        # named before the count of its array, is shown (then its array's size, below)
        # ('how many guides does each peak have': the same, the entity ranged over by 'each')
        at = q.word_at(COUNT_PATTERNS.search(lower).start())
        head = split_name(s.collection)[-1:]
        if any(word_match(q.stems[i], w) >= 0.85 for i in range(at) for w in head):
            ir.outputs = entity_outputs(s.index, s.collection, fields, q, s.entities, "identified" in s.variant)
        elif per_document(q, lower, s.collection):
            ir.outputs = own_label(s.index, s.collection, fields)
    elif ir.count and ir.grain and "." not in ir.grain and not (ir.outputs or ir.group_by or ir.aggregates
                                                                or ir.distinct) \
            and any(ir.grain in f.field.arrays for f in ir.filters) and per_document(q, lower, s.collection):
        # 'how many students older than 20 live in each dorm': the elements meeting the
        # conditions, counted per document (its label the group)
        ir.group_by = own_label(s.index, s.collection, fields)
    if ir.count and ir.outputs and not (ir.group_by or ir.aggregates):
        inside = [k for k, _ in ir.sort if isinstance(k, Field)] + list(ir.outputs)
        # the values named before the count ("nominees and the number of musicals");
        # attributes after it ("how many patients have a reading") are conditions
        at = q.word_at(COUNT_PATTERNS.search(lower).start())
        before = {m.field.mql for m in mentions if m.end <= at}
        if ir.distinct:
            if before:  # "different denominations and the number of schools": a count per value
                ir.group_by, ir.outputs, ir.distinct = [f for f in ir.outputs if f.mql in before], [], False
            elif distinct_documents(s):  # 'how many distinct students are enrolled in courses'
                ir.distinct = False
                counted_distinct(s, [])
            else:  # 'how many unique cities have bank branches': the cities' values, counted
                counted_distinct(s, distinct_named(q, mentions, ir.outputs))
        elif ir.grain and "." not in ir.grain and not any(ir.grain in f.arrays for f in inside) \
                and not all(repeats(s.index, f) for f in ir.outputs):
            # "products and the number of complaints": one row per product, its array's size
            # (values several documents share, "card types and the number of transactions", group);
            # 'the readers with the most number of newsletters' ranks by the size, not asking for it (the
            # fewest are among the documents that have some, as 'the fewest members' reads)
            sized = next(f for f in fields if f.mql == ir.grain)
            ir.sizes = [sized] if ir.count_asked else []
            if ir.count_asked or any(d == 1 for _, d in ir.sort):
                ir.filters.append(Filter(sized, "$gt", 0, size=True))
            ir.count, ir.grain = False, None
        elif not before and (values := counted_values(s)):  # 'how many cities do banks have': each city once
            ir.distinct = True
            counted_distinct(s, values)
        else:
            ir.group_by = [f for f in ir.outputs if f.mql in before]
            if not ir.group_by and ir.grain and per_document(q, lower, s.collection):
                # 'for each part, how many assets ...? the part name': each document's count, keyed
                # by what is shown outside the counted elements (else the document's own label)
                ir.group_by = [f for f in ir.outputs if ir.grain not in f.arrays] \
                    or own_label(s.index, s.collection, fields)
            ir.outputs = []
    elif (len(ir.outputs) == 1 and not (ir.count or ir.aggregates or ir.group_by or ir.sort or ir.filters)
          and plural_attribute(q, mentions, ir.outputs[0], s.plural)
          and (re.search(r"\ball\b", lower) or asks_for_values(q, mentions, ir.outputs[0]))):
        ir.distinct = True  # "show all majors", "what cities do students live in": the set of values
    if ir.count and ir.grain and ir.group_by and not s.grain:
        # (the keys now known: of several arrays the count's noun names, the one inside their elements)
        ir.grain = count_grain(q, fields, s.collection, ir.group_by) or ir.grain


def joined_grain(s: State) -> str | None:
    """'the number of dogs kept by female students' over Students, each joined to its pets: the
    joined documents a condition reads are what is counted, when the counted noun does not name
    the collection's own documents (the students would be 'how many students have a dog')."""
    ir = s.ir
    if not ir.count or ir.aggregates or ir.distinct or not ir.joins:
        return None
    counted = [(start, head) for head, (start, compared) in counted_nouns(s.q).items() if not compared]
    own = split_name(s.collection)[-1:]
    # (the words from the phrase's first to its head: 'the number of cards held by ...' names the cards)
    if not counted or not own or any(word_match(s.q.stems[i], own[0]) >= 0.85
                                     for start, head in counted for i in range(start, head + 1)):
        return None
    read = {f.field.arrays[0] for f in ir.filters if f.field.arrays and not f.size}
    aliases = [j[0] for j in ir.joins if j[0] in read]
    return aliases[0] if len(aliases) == 1 else None


def distinct_listed(s: State) -> None:
    """'the distinct positions of the players from a country ...', 'the different types of mills
    built by ...': a set of values is what the distinct word stands before (and what is listed
    with it, 'the different names and credit scores'); the fields named after it say whose
    values they are, they are not shown beside them."""
    ir = s.ir
    if not ir.distinct or ir.count or ir.aggregates or ir.group_by:
        return
    heads = after_distinct(s.q, s.mentions, ir.outputs)
    if not heads:
        return
    shown = [m for m in s.mentions if m.start not in s.used and m.field in ir.outputs]
    kept = {m.field.mql for m in heads + listed_beside(s.q, heads, shown, s.entities)}
    ir.outputs = [f for f in ir.outputs if f.mql in kept]


def read_distinct_counts(s: State) -> None:
    """'how many unique customers hold each card type': each group's count counts the distinct
    values of what the distinct word after the count phrase names (a field, or the `<noun>_id`
    reference its plural names), not the group's documents; so does a count of a plural naming
    such a reference or the elements enclosing the group's, with no distinct word."""
    q, ir = s.q, s.ir
    if not (ir.count and ir.group_by) or ir.aggregates:
        return
    for c in count_phrases(s):
        at = q.word_at(c.end())
        if q.raw[at:at + 1] and q.raw[at] in DISTINCT_WORDS:
            counted = distinct_field(s, at + 1)
            if counted is not None:
                ir.distinct_count = counted
                ir.outputs = [f for f in ir.outputs if f is not counted]
                s.consumed.add(at + 1)
            return
        if at not in s.plural or names_documents(s.q, at, s.collection) or any(m.start == at for m in s.mentions):
            continue
        # 'the number of customers holding cards of each type', 'the number of products in each
        # order': things other than the rows grouped (a reference, the enclosing elements), each once
        array = array_named(q, at, s.fields, top_level=False) if at in s.entities else None
        counted = outer_key(s, array) if array is not None else named_reference(s, at)
        if counted is not None:
            ir.distinct_count = counted
            return


def read_counted_references(s: State) -> None:
    """'how many customers have an account' over Accounts, each joined to the one customer it
    refers to (by that collection's identifier): the customers counted are the distinct
    references, not the accounts that reach them — overall, or per group."""
    ir = s.ir
    join = next((j for j in ir.joins if j[0] == ir.grain), None)
    if join is None or not ir.count or ir.aggregates or ir.distinct_count is not None or ir.outputs:
        return
    _, other, local, foreign = join
    target = identifier(s.index, other, s.grounding.schema.get(other, []))
    ref = next((f for f in s.fields if f.mql == local and f.kind == "scalar"), None)
    if target is None or target.mql != foreign or ref is None or ref in ir.group_by:
        return
    if ir.group_by:
        ir.distinct_count = ref
    else:
        ir.outputs, ir.distinct = [ref], True
    ir.grain = None


def distinct_field(s: State, at: int) -> Field | None:
    """The field named at word `at` and not grouped by: a mention starting there, else what names
    the elements of the array the plural there names, else the one `<noun>_id` reference it
    names ('unique customers': `customer_id`)."""
    m = next((m for m in s.mentions if m.start == at), None)
    if m is not None:
        return m.field if m.field not in s.ir.group_by and m.field.kind != "array" and not quantity_noun(m.field) \
            else None  # (a stored quantity, `no_of_customers`, holds how many: not what they are)
    if at >= len(s.q.raw) or at not in s.plural:
        return None
    array = array_named(s.q, at, s.fields, top_level=False) if at in s.entities else None
    if array is not None:
        return outer_key(s, array)
    return named_reference(s, at)


def named_reference(s: State, at: int) -> Field | None:
    """The one `<noun>_id` reference, not grouped by, the word at `at` names ('customers': `customer_id`)."""
    refs = [f for f in s.fields if f.kind != "array" and len(f.words) == 2 and f.words[1] == "id"
            and word_match(s.q.stems[at], f.words[0]) >= 0.85 and f not in s.ir.group_by]
    return refs[0] if len(refs) == 1 else None


def outer_key(s: State, array: Field) -> Field | None:
    """'how many (different) products in each order', orders inside products: one row per order
    of a product, so what names each product is counted, each once (groups outside the elements
    count them: None)."""
    key = element_key(array, s.fields)
    inside = all(any(a.startswith(array.mql + ".") for a in g.arrays) for g in s.ir.group_by)
    return key if inside and key is not None and key not in s.ir.group_by else None


def count_distinct_words(s: State) -> list[int]:
    """The positions of the distinct words right after a count phrase ('how many different cities')."""
    q = s.q
    return [at for at in (q.word_at(c.end()) for c in count_phrases(s)) if q.raw[at:at + 1] and q.raw[at] in DISTINCT_WORDS]


def distinct_asked(s: State) -> dict[int, str]:
    """The count's distinct words a reading must read, by position: not those qualifying the
    documents counted (each document distinct already), a plural naming them ('distinct
    students', not 'distinct membership tiers')."""
    return {at: "distinct" for at in count_distinct_words(s) if at + 1 not in s.entities & s.plural}


def distinct_named(q: Question, mentions: list[Mention], outputs: list[Field]) -> list[Field]:
    """The shown fields a distinct word stands right before ('unique cities', 'different
    status codes'): the values a count of distinct values counts (the others, said after
    them, are what those values' documents have)."""
    return [m.field for m in after_distinct(q, mentions, outputs)]


def after_distinct(q: Question, mentions: list[Mention], outputs: list[Field]) -> list[Mention]:
    """The mentions of shown fields a distinct word stands right before."""
    return [m for m in mentions if m.field in outputs and m.start > 0 and q.raw[m.start - 1] in DISTINCT_WORDS]


# Nouns naming the sorts of a thing ('how many types of jobs': the jobs' values).
SORTS = frozenset({"type", "types", "kind", "kinds", "sort", "sorts", "variety", "varieties"})


def counted_values(s: State) -> list[Field]:
    """'how many cities do banks have', 'the number of card types', 'how many types of jobs': a
    count whose noun names, in the plural, the one field shown, whose values several documents share
    (a category, not a label of each), counts those values, each once; [] for any other count."""
    q = s.q
    for c in count_phrases(s):
        at = q.word_at(c.end())
        at += q.raw[at:at + 1] == ["the"]
        at += 2 if q.raw[at:at + 1] and q.raw[at] in SORTS and q.raw[at + 1:at + 2] == ["of"] else 0
        m = next((m for m in s.mentions if m.start == at), None)
        if m is not None and not m.entity and s.ir.outputs == [m.field] and m.field.kind == "scalar" \
                and s.plural & set(range(m.start, m.end)) and repeats(s.index, m.field):
            return [m.field]
    return []


def distinct_documents(s: State) -> bool:
    """A count's distinct word stands before the collection's own name, its head noun ('how many
    distinct students' in Students): its documents, each one distinct, are counted."""
    head = split_name(s.collection)[-1:]
    named = {i for m in s.mentions for i in range(m.start, m.end)}  # ('distinct card types': a field's name)
    return bool(head) and any(at + 1 in s.entities - named and at + 2 not in named
                              and word_match(s.q.stems[at + 1], head[0]) >= 0.85 for at in count_distinct_words(s))


def counted_distinct(s: State, keys: list[Field]) -> None:
    """Count the distinct values of `keys` alone (none: the documents); a plural naming a field beside them inside
    an array they are not in says its documents have such elements ('how many different
    schools have taken part in basketball games'): those with some are counted."""
    ir = s.ir
    if not keys and ir.distinct:
        return
    for m in s.mentions:
        if m.field not in ir.outputs or m.field in keys or not s.plural & set(range(m.start, m.end)):
            continue
        array = next((a for a in m.field.arrays if not any(a in k.arrays for k in keys)), None)
        present = next((g for g in s.fields if g.mql == array), None)
        if present is not None and not any(g.field is present and g.size for g in ir.filters):
            ir.filters.append(Filter(present, "$gte", 1, size=True))
    ir.outputs = keys


# Words that open a question before what it asks for ('show all', 'what are the distinct').
OPENING = ASKING | {"all", "distinct", "different", "unique", "can", "you", "please", "me", "us", "are", "is"}


def asked_condition(s: State) -> list[Field]:
    """'Show all official native languages that contain "English"', 'what cities are in Ohio':
    the field the question opens with is what it asks for, the condition after it on that
    same field only narrowing its values (else nothing: the entity is shown)."""
    first = min(s.mentions, key=lambda m: m.start, default=None)
    if first is None or first.field.kind != "scalar" or any(i < first.start for i in s.entities) \
            or not all(w in OPENING or w in STOPWORDS for w in s.q.raw[:first.start]) \
            or s.q.raw[first.end:first.end + 1] in (["of"], ["for"]):
        return []
    narrowed = [f for f in s.ir.filters if f.field is first.field and f.start >= first.end]
    return [first.field] if narrowed else []


def who_are(s: State) -> bool:
    """'Who are all the directors?': the question asks who the values of a shown field are (the
    field named right after 'who' and a copula), not for the documents holding them."""
    words = s.q.raw
    if words[:1] != ["who"] or words[1:2] not in (["is"], ["are"], ["was"], ["were"]):
        return False
    at = 2 + sum(1 for _ in itertools.takewhile(lambda w: w in ("all", "the", "each", "every"), words[2:]))
    return any(m.start == at and m.field in s.ir.outputs for m in s.mentions)


def conditioned(ir: IR) -> set[str]:
    """The paths the reading's conditions and order read."""
    return {f.field.mql for f in ir.filters} | {k.mql for k, _ in ir.sort if isinstance(k, Field)}


def shown_read(s: State) -> None:
    """A field a condition or an order reads, listed with the fields shown, is shown too
    ('the names and prices of products over $100': `listed_with`)."""
    ir = s.ir
    read = conditioned(ir)
    shown = [m for m in s.mentions if m.start not in s.used and m.field in ir.outputs]
    candidates = [m for m in s.mentions if m.start in s.used and m.field.kind == "scalar" and m.field.mql in read
                  and m.field not in ir.outputs]
    for m in listed_with(s.q, shown, candidates):
        if m.field not in ir.outputs:
            ir.outputs.append(m.field)


def summed_quantities(s: State) -> None:
    """'the total number of audiences', 'the number of graduates at X in 2004': a stored
    quantity a count phrase names, shown alone, is one number over every document (or
    element) the question keeps: their values summed (per group when grouped). Not when
    each document is asked for ('the number of rooms of each apartment')."""
    ir = s.ir
    if ir.count or ir.aggregates or ir.sort or ir.distinct or not ir.outputs \
            or per_document(s.q, s.lower, s.collection):
        return
    named = counted_quantities(s)
    if all(any(m.field is f and m.start in named for m in s.mentions) for f in ir.outputs):
        ir.aggregates, ir.outputs = [("$sum", f) for f in ir.outputs], []


def counted_quantities(s: State) -> set[int]:
    """The mentions (by start) a count phrase names as a stored number: a quantity whose
    name holds the phrase ('the number of audiences', `Num_of_Audience`), or a number named
    by the noun the phrase ends on ('the number of graduates', `Graduate`)."""
    q, found = s.q, set()
    for c in COUNT_PATTERNS.finditer(s.lower):
        first, after = q.word_at(c.start()), q.word_at(c.end())
        ends = {after, counted_noun(q, after)}
        found.update(m.start for m in s.mentions if m.start == first and m.start not in s.used and quantity_noun(m.field)
                     or m.start in ends and m.share >= 0.8 and m.field.measurable and "id" not in m.field.words)
    return found


def shown_per_group(s: State) -> list[Field]:
    """The values shown beside a statistic that it is computed per ('the average points of
    players based on their positions'): categories several documents share (or, for a statistic of
    each document's elements, the document's own attribute: 'the movie titles with the highest
    average rating'), not numbers, the documents' own name or the domain ('across all schools',
    'for every company')."""
    q, head = s.q, split_name(s.collection)[-1:]
    inside = all(f is not None and f.arrays for _, f in s.ir.aggregates)  # each document's elements measured
    named = {m.field.mql for m in s.mentions if not set(range(m.start, m.end)) & s.entities
             and "all" not in q.raw[max(0, m.start - 2):m.start]}
    return [f for f in s.ir.outputs if f.kind == "scalar" and not f.measurable and f.mql in named
            and (repeats(s.index, f) or inside and not f.arrays)
            and not any(word_match(w, h) >= 0.85 for w in f.words for h in head)]


# Words after the entity a superlative picks ('the department that ...', 'the customer with ...').
_PICKED_BY = frozenset({"that", "which", "who", "whose", "with", "has", "have", "had"})


def ranked_entity(s: State) -> list[Field]:
    """The label of the entity a ranked statistic picks ('which game has the highest total hours',
    'the department that provides the highest total credits'): the entity word asked for before
    the superlative, after 'which'/'what' or before 'that'/'with'/'has'. Each document when it
    names the collection (its name or title, else its identifier), else each element of an array
    it names that the measure is read in (`element_key`). None when no such word names either."""
    q, measure = s.q, next(f for k, _ in s.ir.sort for _, f in s.ir.aggregates if k is f)
    first = min((i for i, w in enumerate(q.raw) if w in SUPERLATIVES or AGG_WORDS.get(w) in ("$max", "$min")),
                default=len(q.raw))
    for at in sorted(i for i in s.entities if i < first):
        if not (q.raw[at - 1:at] in (["which"], ["what"]) or q.raw[at + 1:at + 2] and q.raw[at + 1] in _PICKED_BY):
            continue
        if names_documents(q, at, s.collection):
            return own_key(s.index, s.collection, s.fields)
        array = array_named(q, at, s.fields, top_level=False)
        if array is not None and array.mql in measure.arrays:
            key = element_key(array, s.fields)
            return [key] if key is not None else []
    return []


def own_key(index: dict, collection: str, fields: list[Field]) -> list[Field]:
    """What names each document of the collection: its name or title (top level), else its identifier."""
    for word in ("name", "title"):
        named = [f for f in fields if f.kind == "scalar" and not f.arrays and f.words[-1:] == (word,)]
        if named:
            return [min(named, key=lambda f: (len(f.words), f.mql))]
    key = identifier(index, collection, fields)
    return [key] if key is not None else []


def values_each(q: Question, ir: IR) -> list[Field]:
    """'the average age for male and female students', 'the audience for the years 2008 and 2010':
    a statistic for values joined by 'and' is one for each of them (joined by 'or', one over
    them all), so the values' field is a group key."""
    f = next((f for f in ir.filters if f.op == "$in" and not f.field.arrays and not f.branch), None)
    return [f.field] if f is not None and q.raw[f.start + 1:f.start + 2] == ["and"] else []


def read_per_group(s: State) -> None:
    """What aggregates are computed per, HAVING on aggregates, the top document
    per group, and the default order when none is asked."""
    q, ir = s.q, s.ir
    if ir.aggregates and not ir.group_by and "ungrouped" not in s.variant:
        # 'the title and maximum price of each film', 'job title and average salary': the
        # values named before an aggregate are what it is computed per
        ir.group_by = shown_before_aggregates(ir, s.mentions)
        ir.outputs = [f for f in ir.outputs if f not in ir.group_by]
        if not ir.group_by and all(f is not None and f.arrays for _, f in ir.aggregates) \
                and per_document(q, s.lower, s.collection):
            # 'the average age of guides for each peak': a statistic of each document's elements
            ir.group_by = own_label(s.index, s.collection, s.fields)
        if not ir.group_by:
            # 'the average points of players based on their positions': a value shown beside a
            # statistic, which one row over every document cannot show, is what it is computed per
            ir.group_by = shown_per_group(s)
            ir.outputs = [f for f in ir.outputs if f not in ir.group_by]
        if not ir.group_by and ir.limit and any(k is f for k, _ in ir.sort for _, f in ir.aggregates):
            # 'which movie receives the highest average rating': a statistic ranked to pick one
            # entity is computed per entity, not once over every document
            ir.group_by = ranked_entity(s)
            ir.outputs = [f for f in ir.outputs if f not in ir.group_by]
        if not ir.group_by and not ir.count:
            ir.group_by = values_each(q, ir)
    if ir.group_by and ir.aggregates:
        ir.conditions = aggregate_conditions(q, ir, s.mentions)
    if ir.group_by and not (ir.aggregates or ir.count) and ir.limit == 1 and len(ir.sort) == 1 \
            and isinstance(ir.sort[0][0], Field):
        # 'for each region, what is the highest peak': not one document overall but the top one per group
        measure, direction = ir.sort[0]
        ir.aggregates, ir.sort, ir.limit = [("$max" if direction == -1 else "$min", measure)], [], None
        top_per_group(ir, s.index, s.fields, q, s.entities, "identified" in s.variant)
    elif which_entity(q, s.collection) and ir.group_by and len(ir.aggregates) == 1 \
            and ir.aggregates[0][0] in ("$max", "$min"):
        top_per_group(ir, s.index, s.fields, q, s.entities, "identified" in s.variant)
    counted_inside(ir)
    sizes_counted(ir)
    ranked = MOST_COUNTED.search(s.lower)
    if ranked and ir.group_by and ir.count and not ir.sort:
        # 'the range with the most number of peaks' (peaks no field names): the groups, ranked by their counts
        ir.sort = [("count", -1 if ranked.group(1) == "most" else 1)]
        ir.limit = ir.limit or entity_limit(q, s.entities, s.mentions) or 1
    if ir.distinct and ir.limit is None and not (ir.group_by or ir.count) and any(
            isinstance(k, Field) and k not in ir.outputs for k, _ in ir.sort):
        # 'the different schools and their nicknames, ordered by their founding years': a set of
        # rows has no order by a column it does not show, so the rows are listed as asked
        ir.distinct = False
    if not ir.sort and s.limit_direction and ir.limit and ir.group_by and (ir.count or ir.aggregates):
        # 'the top 5 cities by number of theaters': groups ranked by what is counted or measured
        ir.sort = [("count", s.limit_direction)] if ir.count or ir.aggregates[0][1] is None \
            else [(ir.aggregates[0][1], s.limit_direction)]
    ir.sort = sortable(ir)
    if not ir.sort:
        ir.sort = default_order(ir, identifier(s.index, s.collection, s.fields))
        ir.default_sort = bool(ir.sort)


def read_sums(s: State) -> None:
    """'the account with the lowest combined balance from checking and savings': the sum of two
    numbers (aggregation.summed_fields) replaces them wherever the reading reads either; a
    superlative right before it, that nothing ranks yet, ranks by it."""
    found = summed_fields(s.q, s.fields)
    if found is None:
        return
    total, start, end = found
    ir, parts = s.ir, {p.mql for p in total.parts}
    swap = lambda f: total if isinstance(f, Field) and f.mql in parts else f
    ir.aggregates = _once([(op, swap(f)) for op, f in ir.aggregates])
    ir.sort, ir.presort = _once([(swap(k), d) for k, d in ir.sort]), _once([(swap(k), d) for k, d in ir.presort])
    ir.outputs = _once([swap(f) for f in ir.outputs])
    before = start - 1 - (start > 1 and q_word(s.q, start - 1) == "the")
    direction = -1 if q_word(s.q, before) in DESC_WORDS else 1 if q_word(s.q, before) in ASC_WORDS else 0
    if direction and not ranks(ir):
        ir.sort, ir.limit = [(total, direction)], ir.limit or 1
        ir.outputs = [f for f in ir.outputs if f is not total] or ir.outputs
        s.consumed.add(before)
    s.consumed.update(k for k in range(start, end) if s.q.raw[k] in SUM_PHRASE_WORDS or k == start)
    if not any(f is total for f in ir.read_fields()):
        ir.outputs.append(total)  # 'show the combined balance of checking and savings'


# The words of a sum's phrase besides the numbers it names.
SUM_PHRASE_WORDS = frozenset({"and", "of", "from", "both", "the", "in", "across"})


def q_word(q: Question, k: int) -> str:
    return q.raw[k] if 0 <= k < len(q.raw) else ""


def _once(items: list) -> list:
    """The items, each (by the stored path of its field) kept where first seen."""
    seen, out = set(), []
    for item in items:
        key = tuple(x.mql if isinstance(x, Field) else repr(x) for x in (item if isinstance(item, tuple) else (item,)))
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def read_entity_presence(s: State) -> None:
    """'the names of entrepreneurs', entrepreneurs an array of each person: the question's
    entity is the array's elements, the values shown are their documents', so a document
    stands for one only if its array has an element. Only when the reading reads nothing
    inside any array (a condition, a value shown, a count of elements: then those elements
    may be what the question is about) and the whole array name is said, as a plural. A count
    of the documents is of those holding such an array named after them (`counted_holding`)."""
    q, ir, names = s.q, s.ir, split_name(s.collection)
    named = {i for m in s.mentions for i in range(m.start, m.end)}  # words naming a field of the documents
    used = ir.read_fields()
    if ir.count:
        counted_holding(s, named)
        return
    if not ir.outputs or any(f.arrays or f.kind == "array" for f in used):
        return
    for at in sorted(s.entities & s.plural):
        array = array_named(q, at, s.fields)
        if array is None or at in named or q.raw[at] in STOPWORDS \
                or any(word_match(q.stems[at], w) >= 0.85 for w in names):
            continue
        words = [w for w in array.words if w not in STOPWORDS]
        said = q.stems[max(0, at - len(words) + 1):at + 1]
        if len(said) == len(words) and all(word_match(a, b) >= 0.85 for a, b in zip(said, words)):
            if _listed_after(q, at - len(words) + 1):
                _show_elements(s, array, at)
            else:
                ir.filters.append(Filter(array, "$gte", 1, at, size=True))
            return


def counted_holding(s: State, named: set[int]) -> None:
    """'how many employees hold a certificate', `certificate` an array of each employee: the
    documents counted (the entity named right after the count phrase, no array) are those
    whose array, named in full after them, has an element."""
    q, ir = s.q, s.ir
    if ir.group_by or ir.outputs or ir.grain or ir.aggregates or ir.distinct_count is not None \
            or any(f.field.arrays or f.field.kind == "array" for f in ir.filters):
        return
    starts = [q.word_at(c.end()) for c in count_phrases(s)]
    starts = [at + (q.raw[at:at + 1] != [] and q.raw[at] in DISTINCT_WORDS) for at in starts]
    if len(starts) != 1 or starts[0] not in s.entities or array_named(q, starts[0], s.fields) is not None:
        return
    for at in sorted(i for i in s.entities if i > starts[0] + 1 and i not in named and q.raw[i] not in STOPWORDS):
        array = array_named(q, at, s.fields)
        words = [w for w in array.words if w not in STOPWORDS] if array is not None else []
        said = q.stems[max(0, at - len(words) + 1):at + 1]
        if words and len(said) == len(words) and all(word_match(a, b) >= 0.85 for a, b in zip(said, words)):
            ir.filters.append(Filter(array, "$gte", 1, at, size=True))
            return


# Words between a coordinator and the noun it adds ('and the orchestras', 'along with their players').
_LISTED_DETERMINERS = POSSESSIVES | {"the", "respective", "corresponding", "associated"}


def _listed_after(q: Question, at: int) -> bool:
    """The noun starting at word `at` is listed after what is shown ('the names of conductors
    and the orchestras they conducted', 'clubs together with their players'): asked for, not a condition."""
    j = at - 1
    while j >= 0 and q.raw[j] in _LISTED_DETERMINERS:
        j -= 1
    return j >= 1 and (q.raw[j] == "and" or q.raw[j] == "with" and q.raw[j - 1] in ("along", "together"))


def _show_elements(s: State, array: Field, at: int) -> None:
    """An array entity listed among what is shown: its elements' name is shown (an
    element field called a name or title, or named like the array) — or, with none,
    the word is left unresolved rather than read as a mere condition."""
    inside = [f for f in s.fields if f.kind == "scalar" and f.arrays and f.arrays[-1] == array.mql
              and f.mql.count(".") == array.mql.count(".") + 1 and f.words]
    label = next((f for f in inside if f.words[-1] in ("name", "title")), None) or next(
        (f for f in inside if len(f.words) == 1 and array.words and word_match(f.words[0], array.words[-1]) >= 0.85), None)
    if label is None:
        s.unsure.add(at)
    elif label not in s.ir.outputs:
        s.ir.outputs.append(label)


def counted_inside(ir: IR) -> None:
    """'the teams that suffered more than three eliminations', each elimination holding its
    team: what is shown lives in the array whose size is compared, so the elements are
    counted per value shown (a HAVING on the count), not per document."""
    sizes = [f for f in ir.filters if f.size and not f.branch and f.op in ("$gt", "$gte", "$lt", "$lte", "$eq")]
    if len(sizes) != 1 or ir.group_by or ir.aggregates or ir.count or ir.sizes or ir.having or not ir.outputs:
        return
    f = sizes[0]
    if isinstance(f.value, bool) or not isinstance(f.value, int) or f.value < 2 and f.op in ("$gte", "$eq") \
            or f.value < 1 or not all(f.field.mql in o.arrays for o in ir.outputs):
        return  # 'without any', 'at least one': a condition on each document's array
    ir.filters = [g for g in ir.filters if g is not f]
    ir.group_by, ir.outputs, ir.distinct = list(ir.outputs), [], False
    ir.count, ir.count_asked, ir.having = True, False, (f.op, f.value)
    ir.sort = [k for k in ir.sort if not isinstance(k[0], Field)]


def sizes_counted(ir: IR) -> None:
    """'the student with the highest number of courses', counted per student's name: groups are
    ranked by the array's size the superlative reads, so each group counts that array's elements."""
    sized = next((k[1] for k, _ in ir.sort if isinstance(k, tuple)), None)
    if sized is None or not ir.count or not ir.group_by or ir.aggregates or ir.having:
        return
    ir.sort = [("count", d) if isinstance(k, tuple) else (k, d) for k, d in ir.sort]
    ir.grain = sized.mql


def names_own(q: Question, m: Mention, collection: str) -> bool:
    """The mention is the collection's own name ('manufacturer' in Manufacturers), one word."""
    return m.end - m.start == 1 and names_documents(q, m.start, collection)


def own_label(index: dict, collection: str, fields: list[Field]) -> list[Field]:
    """The collection's own documents' name (top level), else their identifier."""
    name = [f for f in fields if f.kind == "scalar" and not f.arrays and "name" in f.words][:1]
    key = identifier(index, collection, fields)
    return name or ([key] if key is not None else [])


def asks_for_values(q: Question, mentions: list[Mention], f: Field) -> bool:
    """'what cities do students live in', 'the cities where students live': the question
    asks which values an attribute takes (right after 'what'/'which', or before a
    relative clause about the documents)."""
    m = next((m for m in mentions if m.field is f), None)
    return m is not None and (q.raw[m.start - 1:m.start] in (["what"], ["which"])
                              or q.raw[m.end:m.end + 1] in (["where"], ["that"], ["which"]))


MOST_COUNTED = re.compile(r"\b(most|least|fewest) number of\b")


def read_coverage(s: State) -> None:
    """The content words no pass explained (they lower confidence)."""
    q, ir = s.q, s.ir
    grounded = set(s.consumed) | s.entities
    for m in s.mentions:
        grounded.update(range(m.start, m.end))
    grounded -= s.unsure
    content = [i for i, w in enumerate(q.raw) if w not in STOPWORDS and not w.isdigit()
               and w not in AGG_WORDS and w not in DESC_WORDS and w not in ASC_WORDS]
    covered = [i for i in content if i in grounded or intent_word(q.raw[i])]
    ir.grounded_share = len(covered) / len(content) if content else 1.0
    ir.unresolved = [q.raw[i] for i in content if i not in covered]
    missed = {i for i in content if i not in covered
              and any(word_match(q.stems[i], v) >= 0.85 for v in s.grounding.vocabulary)}
    ir.missed = [q.raw[i] for i in sorted(missed)]
    # 'roller coasters' for a `roller_coaster` array: a word that, with its neighbour, spells a
    # name of the collection read is part of that name — neither data elsewhere nor a qualifier
    names = {tuple(split_name(s.collection))} | {f.words for f in s.fields} | {f.context[-1:] + f.words[:1]
                                                                                 for f in s.fields if f.context}
    here = {i for i in content for name in names if len(name) > 1 for a, b in zip(name, name[1:])
            if i + 1 < len(q.raw) and word_match(q.stems[i], a) >= 0.85 and word_match(q.stems[i + 1], b) >= 0.85
            or i > 0 and word_match(q.stems[i - 1], a) >= 0.85 and word_match(q.stems[i], b) >= 0.85}
    here -= s.unsure  # (words two stored numbers fit equally name data the reading could not place)
    heads = frozenset(s.entities) | {m.start for m in s.mentions}
    loose = frozenset(i for i in content if i not in covered and i not in here)
    # the operations the question asks by phrase: a count's last word, a grouping's
    asked = {q.word_at(m.end()) - 1: "group" for m in GROUP_PATTERNS.finditer(s.lower)}
    asked.update({q.word_at(c.end()) - 1: "count" for c in count_phrases(s)})
    asked.update(distinct_asked(s))
    ir.constraints = constraints(q, grounded, missed - here, ir, heads, loose, asked)
    # 'the names and outcomes of battles' with no field for 'outcomes': a listed output left out
    uncovered = set(content) - set(covered)
    said = {c["at"] for c in ir.constraints}
    shown = [m for m in s.mentions if m.field in ir.outputs]
    ir.constraints += [{"word": q.raw[i], "kind": "output", "at": i}
                       for i in unlisted_outputs(q, shown, lambda i: i not in uncovered, s.entities) if i not in said]
    said = {c["at"] for c in ir.constraints}  # 'names of players and names of their coaches': one field, two owners
    ir.constraints += [{"word": q.raw[i], "kind": "output", "at": i} for i in owned_twice(q, shown) if i not in said]
    ir.constraints.sort(key=lambda c: c["at"])
    ir.words, ir.content = len(q.raw), sum(w not in STOPWORDS for w in q.raw)
    ir.offered, ir.witnessed = len(s.fields), len(s.witnesses)


def ranked_members(s: State) -> None:
    """'the names of customers using the most popular payment method', 'the titles of all movies
    of directors with more than one movie': a field shown of the documents named after it ('of
    customers', 'of every movie'), beside a value kept for how often it occurs (ranked first, or
    passing a count), is listed for every document holding the value — not one per group; so are
    the other fields shown with it."""
    q, ir = s.q, s.ir
    kept = ir.having or ir.limit and any(k == "count" for k, _ in ir.sort)
    if len(ir.group_by) != 1 or not kept or ir.aggregates:
        return
    for m in s.mentions:
        at = m.end + 1 if q.raw[m.end:m.end + 1] == ["of"] else None
        if at is None or m.field not in ir.outputs or m.field in ir.group_by:
            continue
        every = q.raw[at:at + 1] in (["all"], ["every"], ["each"])
        at += q.raw[at:at + 1] in (["the"], ["all"], ["every"], ["each"])
        if at in s.entities and (at in s.plural or every):
            ir.members = [f for f in ir.outputs if f not in ir.group_by]
            return


def plan_traversal(s: State) -> None:
    """Arrays unwound, maps expanded, and the issues that lower confidence."""
    ir = s.ir
    # 'the most common product across accounts', `products` an array: groups are formed per element
    ir.group_by = [(element_key(f, s.fields) or f) if f.kind == "array" else f for f in ir.group_by]
    read = ir.read_fields()
    counted = {(ir.grain.split(".")[0],)} if ir.grain else set()  # the documents a count counts
    # a join nothing reads (nor counts) is none
    ir.joins = [j for j in ir.joins if any(f.arrays[:1] == (j[0],) for f in read) or (j[0],) in counted]
    ir.unwinds = plan_unwinds(ir)
    ir.inferred = [a for a in ir.unwinds if not names_array(s.q, a)]
    ir.expand = plan_expansions(ir)
    ir.issues += unrepresented(s.q, ir)
    validate(ir)


PASSES = (read_limits, read_having, read_filters, read_literals, read_counts, read_grouping, read_aggregates,
          read_order, read_outputs, read_distinct_counts, read_counted_references, read_per_group, read_sums,
          read_entity_presence, read_coverage, ranked_members, plan_traversal)


def read(question: str, witnesses: list[dict], index: dict, grounding: Grounding | None = None,
         **reading) -> State:
    """The State after every pass (`reading`: another reading, see State.of)."""
    state = State.of(question, witnesses, index, grounding, **reading)
    for step in PASSES:
        step(state)
    return state


def build_ir(question: str, witnesses: list[dict], index: dict, grounding: Grounding | None = None,
             **reading) -> IR:
    """The intermediate representation of one question over one database's index
    (`collection=`, `avoid=`, `variant=`: another reading than the preferred one)."""
    return read(question, witnesses, index, grounding, **reading).ir
