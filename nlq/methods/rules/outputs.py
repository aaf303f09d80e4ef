"""Outputs and traversal: the fields shown, a bare entity, arrays unwound, maps expanded, issues."""

from __future__ import annotations

import re

from nlq.text import STOPWORDS as TEXT_STOPWORDS
from nlq.methods.rules.vocabulary import ALL_FIELDS_PATTERNS, COUNT_PATTERNS, DETAILS_PATTERNS
from nlq.methods.rules.ir import AMBIGUOUS, Field, IR, Mention
from nlq.methods.rules.schema import identifier, split_name
from nlq.methods.rules.question import (LIST_LINKS, LIST_MARKERS, POSSESSIVES, Question, entity_name, list_words,
                                        listed_run, maybe_number, word_match)
from nlq.methods.rules.grounding import array_named, names_elements


def asks_all_fields(q: Question, mentions: list[Mention], entities: set[int], named: list[Mention]) -> bool:
    """'all information about X', 'all employee records' (the word before names the entity), 'the
    details of each X' (unless a field is named by 'details'): every field of the entity is asked,
    when no other field is `named` to be shown ('all phone records ..., listing the model name')."""
    lower = q.text.lower()
    spans = [(q.word_at(m.start()), q.word_at(m.end())) for m in ALL_FIELDS_PATTERNS.finditer(lower)
             if m.group("of") is None or q.word_at(m.start("of")) in entities]
    covered = {i for m in mentions for i in range(m.start, m.end)}
    spans += [(q.word_at(d.start()), q.word_at(d.end())) for d in DETAILS_PATTERNS.finditer(lower)
              if q.word_at(d.start("noun")) not in covered]
    return any(all(a <= m.start and m.end <= b for m in named) for a, b in spans)


def entity_outputs(index: dict, collection: str, fields: list[Field], q: Question,
                   entities: set[int], identified: bool = False) -> list[Field]:
    """A bare entity ('list the books', 'which authors ...'): its name-like field,
    or its identifier when it has no name (`identified`: both, another reading).
    The entity is the first one the question names: the collection's documents,
    or the elements of an embedded array ('what are the chapters ...')."""
    grain = _first_entity_array(q, fields, entities, collection)
    if grain is not None:
        inner = [f for f in fields if f.kind == "scalar" and f.arrays[-1:] == (grain,) and f.words]
        own = set(split_name(grain.rsplit(".", 1)[-1]))  # 'employees' -> EMPLOYEE_ID, not DEPARTMENT_ID
        ids = sorted((f for f in inner if f.words[-1] == "id"), key=lambda f: (not own & set(f.words), f.mql))
        names = [f for f in inner if "name" in f.words or "title" in f.words]
        return ids[:1] + names[:2] if identified else names[:2] or ids[:1]
    top = [f for f in fields if f.kind == "scalar" and not f.arrays and not f.maps]
    # its name, else its title (a paper, a film, a book), else the field named like the entity
    name = [f for f in top if "name" in f.words][:1] or [f for f in top if "title" in f.words][:1] or [
        f for f in (entity_name(collection, fields),) if f is not None] or _described(collection, top)
    key = identifier(index, collection, fields)
    if identified:
        return ([key] if key is not None and key not in name else []) + name
    return name or ([key] if key is not None else [])


# The last words of a free-text field that stands for a document when it has no name ('customer_details').
DESCRIPTIONS = frozenset({"details", "detail", "description", "descriptions"})


def _described(collection: str, top: list[Field]) -> list[Field]:
    """The entity's own free-text description, when it has no name: a string field called its
    details or description, one naming the entity first (`customer_details` in Customers)."""
    head = split_name(collection)[-1:]
    found = [f for f in top if f.type == "string" and f.words[-1:] and f.words[-1] in DESCRIPTIONS]
    own = [f for f in found if head and any(word_match(head[0], w) >= 0.85 for w in f.words[:-1])]
    return (own or found)[:1]


FULL_NAME = re.compile(r"\b(?:full|complete|whole|entire) names?\b")

# The parts of a person's name stored apart: a first-name word and its last-name counterpart.
NAME_PARTS = (("first", "last"), ("f", "l"), ("given", "family"))


def name_part(f: Field) -> tuple[tuple[str, ...], str, str] | None:
    """(the name's other words, its part, the counterpart) of a field holding one part of a
    person's name (`customer_first_name`, `LName`, `fname`), else None."""
    words = f.words
    for first, last in NAME_PARTS:
        for part, other in ((first, last), (last, first)):
            if words[-2:] == (part, "name"):
                return words[:-2], part, other
            if words[-1:] == (part + "name",):
                return words[:-1], part, other
    return None


def name_sibling(f: Field, fields: list[Field]) -> Field | None:
    """The field holding the other part of the name `f` holds part of (the last name of a first name)."""
    part = name_part(f)
    if part is None:
        return None
    rest, _, other = part
    wanted = (rest + (other, "name"), rest + (other + "name",))
    return next((g for g in fields if g.arrays == f.arrays and g.kind == f.kind and g.words in wanted), None)


def whole_name(f: Field, fields: list[Field]) -> list[Field]:
    """A person's name stored in two parts, first part first: [f, its sibling], or [f]."""
    sibling = name_sibling(f, fields)
    if sibling is None:
        return [f]
    return [f, sibling] if name_part(f)[1] in ("first", "f", "given") else [sibling, f]


def full_names(q: Question, outputs: list[Field], fields: list[Field], mentions: list[Mention],
               entities: set[int]) -> list[Field]:
    """'the full names of the students': a first and a last name field stored apart
    are one name together (the part a 'name' word bound to gets its sibling). A 'full
    name' bound to a field holding no part of a person's name (`DEPARTMENT_NAME` for an
    employee's) is the stored pair instead, of the elements the other outputs are in. A
    'name' bound to one part, the part unsaid, is both parts too, unless it is the name of
    something other than the entity ('the names of the advisors': `entities`, the words
    naming the entity)."""
    found = list(FULL_NAME.finditer(q.text.lower()))
    out = list(outputs)
    if not found:
        # 'the names and salaries of employees': a 'name' bound to one part, the part unsaid, is both
        for m in mentions:
            sibling = name_sibling(m.field, fields)
            if m.field in out and sibling is not None and sibling not in out and not _part_said(q, m) \
                    and not _possessed_by_other(q, m, entities):
                out.insert(out.index(m.field) + (whole_name(m.field, fields)[0] is m.field), sibling)
        return out
    for match in found:
        at = q.word_at(match.end()) - 1
        bound = next((m.field for m in mentions if m.start <= at < m.end and m.field in out), None)
        if bound is not None and name_part(bound) is None and (pair := _name_pair(out, fields)):
            k = out.index(bound)
            out[k:k + 1] = [f for f in pair if f not in out]
    for f in list(out):
        sibling = name_sibling(f, fields)
        if sibling is not None and sibling not in out:
            out.insert(out.index(f) + (whole_name(f, fields)[0] is f), sibling)
    if not any(name_part(f) for f in out) and (pair := _name_pair(out, fields)):
        out += pair
    return out


def owner_of(q: Question, m: Mention) -> int | None:
    """'the names of their coaches': the position of the noun the mention's 'of' phrase
    names as what the field belongs to, or None."""
    if q.raw[m.end:m.end + 1] != ["of"]:
        return None
    at = m.end + 1
    while at < len(q.raw) and (q.raw[at] in POSSESSIVES or q.raw[at] in ("the", "all", "each", "every")):
        at += 1
    return at if at < len(q.raw) and q.raw[at].isalpha() and q.raw[at] not in TEXT_STOPWORDS else None


def owned_twice(q: Question, shown: list[Mention]) -> list[int]:
    """'the names of players and names of their coaches', one field bound to both: a field
    belongs to one thing, so the owner the later mention names differently (`coaches`) is an
    output no field placed — its position, so that the reading says so."""
    out = []
    for k, m in enumerate(shown):
        first = next((e for e in shown[:k] if e.field is m.field and owner_of(q, e) is not None), None)
        at = owner_of(q, m)
        if first is not None and at is not None and q.stems[at] != q.stems[owner_of(q, first)]:
            out.append(at)
    return out


def _possessed_by_other(q: Question, m: Mention, entities: set[int]) -> bool:
    """'the names of the advisors': the mention's 'of' phrase names no entity."""
    if q.raw[m.end:m.end + 1] != ["of"]:
        return False
    at = m.end + 1 + (q.raw[m.end + 1:m.end + 2] in (["the"], ["all"], ["each"], ["every"]))
    return at not in entities


def _part_said(q: Question, m: Mention) -> bool:
    """The mention of a part of a name says which part ('first name', 'fname', 'surname')."""
    part = name_part(m.field)[1]
    words = {w for pair in NAME_PARTS for w in pair if len(w) > 1} | {part, part + "name", "surname"}
    return bool(words & set(q.stems[m.start:m.end]))


def _name_pair(outputs: list[Field], fields: list[Field]) -> list[Field]:
    """A first and last name field pair, of the elements the outputs are in if any (else the least nested)."""
    levels = {f.arrays for f in outputs}
    pairs = [whole_name(f, fields) for f in fields if f.kind == "scalar" and name_part(f)
             and name_part(f)[1] in ("first", "f", "given")]
    pairs = [p for p in pairs if len(p) == 2]
    return min(pairs, key=lambda p: (p[0].arrays not in levels, len(p[0].arrays), p[0].mql)) if pairs else []


def listed_with(q: Question, shown: list[Mention], read: list[Mention]) -> list[Mention]:
    """'the names along with the number of components for furniture with over 10 components', 'the
    names and prices of products, highest prices first': a field a condition or an order reads is
    also shown when it is listed with the shown ones (coordinated with one of them, as its own
    attribute): the `read` mentions so listed, in question order."""
    return listed_run(shown, read, lambda a, b: _coordinated(q, a, b))


def listed_beside(q: Question, heads: list[Mention], shown: list[Mention], entities: set[int]) -> list[Mention]:
    """'the various types of competitions and the countries they are held in': the `shown` mentions
    listed with the `heads`, also past the entity a head's 'of' phrase names (`entities`)."""
    return listed_run(heads, shown, lambda a, b: _coordinated(q, a, b) or _owner_between(q, a, b, entities))


def _owner_between(q: Question, first: Mention, second: Mention, entities: set[int]) -> bool:
    """Between `first` and `second`: an 'of' phrase naming an entity, then list words that coordinate."""
    at = first.end + 1
    if q.raw[first.end:at] != ["of"]:
        return False
    while at < second.start and q.raw[at] in ("the", "all", "each", "every"):
        at += 1
    owner = at
    while at < second.start and at in entities:
        at += 1
    gap = q.raw[at:second.start]
    return at > owner and bool(gap) and list_words(gap) and bool(LIST_MARKERS & set(gap))


def _coordinated(q: Question, first: Mention, second: Mention) -> bool:
    """`first` ends shortly before `second` starts, only list words (a comma or a coordinating one
    among them) between the two."""
    gap = q.raw[first.end:second.start]
    if first.end > second.start or not list_words(gap):
        return False
    between = q.text[q.spans[first.end - 1][1]:q.spans[second.start][0]]
    return "," in between or bool(LIST_MARKERS & set(gap))


# Words of a question that name an identifier itself ('the customer IDs', 'the partition identifier',
# 'their identification numbers', 'the apartment numbers').
_ID_WORDS = frozenset({"id", "ids", "identifier", "identifiers", "identification", "key", "keys", "number",
                       "numbers", "code", "codes"})


def names_entity(q: Question, m: Mention) -> bool:
    """'heads' bound to `head_ID`, 'the journalists' to `journalist_ID`: the mention binds the
    identifier of what its noun names, without a word saying an identifier; it names the thing."""
    return m.field.words[-1:] == ("id",) and not _ID_WORDS & set(q.raw[m.start:m.end]) \
        and not _ID_WORDS & set(q.stems[m.start:m.end])


# Words that open a relative clause said of the noun before them ('the parties that have delegates').
_RELATIVES = frozenset({"who", "that", "which"})
# What joins a second question or another listed attribute to the first ('..., and what are the titles').
_CLAUSE_LINKS = frozenset({"and", "or", "but", "also"})
_ATTRIBUTE_LINKS = frozenset({"along", "together", "also", "plus", "what", "how", "which", "who"})


def in_relative_clause(q: Question, m: Mention, shown: list[Mention]) -> bool:
    """'the governors of the parties that have delegates representing district 1': a field
    named inside a relative clause said of what the `shown` fields belong to states what those
    documents have, it is not shown beside them. Not when a possessive or a new sentence lists
    it as an attribute again ('... that have a loan, and their credit scores', '... the most
    models. List the number of models', '... that earned a 5-star review along with the titles',
    '... who do not own a cat, and also how old are they')."""
    before = [n for n in shown if n.end <= m.start and n is not m]
    if not before:
        return False
    clause = next((r for r in range(m.start - 1, before[0].end - 1, -1) if q.raw[r] in _RELATIVES), None)
    if clause is None or not any(n.end <= clause for n in before) or q.raw[clause - 1] in _CLAUSE_LINKS:
        return False  # ('the names of the pilots and which teams ...': a second question)
    between = q.text[q.spans[clause][1]:q.spans[m.start][0]]
    listed = (POSSESSIVES | _ATTRIBUTE_LINKS) & set(q.raw[clause + 1:m.start])
    return not (listed or any(c in between for c in ".?!;"))


# Words that end a listed noun phrase: the preposition of what it belongs to, a relative word, a list word.
_PHRASE_ENDS = frozenset({"of", "for", "in", "from", "at", "on", "by", "who", "that", "which", "where", "whose",
                          "with", "and", "or", "sorted", "ordered", "arranged", "listed"})


def unlisted_outputs(q: Question, shown: list[Mention], placed, entities: set[int] = frozenset()) -> list[int]:
    """'the names and outcomes of battles', no field named by 'outcomes': the positions of the
    words of a noun phrase listed with a shown field that no pass placed (`placed(i)`), so that
    the reading says it left a listed output out rather than silently dropping it; an entity
    word in the phrase (`entities`: 'the names and savings amounts') only qualifies the word left out."""
    out: list[int] = []
    for m in shown:
        at = m.end
        while at < len(q.raw) and q.raw[at] in LIST_LINKS and q.raw[at] not in ("with", "as"):
            at += 1
        end = at
        while end < len(q.raw) and end < at + 3 and (not placed(end) or end in entities) and q.raw[end].isalpha() \
                and q.raw[end] not in _PHRASE_ENDS and not q.raw[end].endswith("ed"):
            end += 1
        left = [i for i in range(at, end) if not placed(i) and i not in out]
        if left and (end == len(q.raw) or q.raw[end] in _PHRASE_ENDS) and _list_gap(q, m.end, at, end):
            out += left
    return sorted(out)


def _list_gap(q: Question, start: int, at: int, end: int) -> bool:
    """The words `start:at` join two items of a list: a list marker ('and', 'along with their'),
    or a comma when another item follows the phrase `at:end` ('the dates, places, and names')."""
    if (LIST_MARKERS - POSSESSIVES) & set(q.raw[start:at]):  # ('begin their career': no list)
        return True
    between = q.text[q.spans[start - 1][1]:q.spans[at][0]]
    after = q.text[q.spans[end - 1][1]:q.spans[end][0]] if end < len(q.raw) else ""
    return "," in between and ("," in after or q.raw[end:end + 1] == ["and"])


def _first_entity_array(q: Question, fields: list[Field], entities: set[int], collection: str) -> str | None:
    """The array named by the first entity word, if that word names an array
    and not the collection itself."""
    for at in sorted(entities):
        if any(word_match(q.stems[at], w) >= 0.8 for w in split_name(collection)):
            return None
        array = array_named(q, at, fields, top_level=False)
        return array.mql if array is not None else None
    return None


def asks_for_entity(q: Question, collection: str) -> bool:
    """'Which 5 drivers ...', 'who ...', 'what campuses are located ...': the question asks for
    the collection's documents ('what' only when the entity word is no modifier: 'what ship types')."""
    head = split_name(collection)[-1:]
    at = [i for i, w in enumerate(q.stems[:3]) if maybe_number(w) is None]
    if not at or q.stems[at[0]] == "who":
        return bool(at)
    if len(at) < 2 or not head or word_match(q.stems[at[1]], head[0]) < 0.85:
        return False
    after = q.raw[at[1] + 1:at[1] + 2]
    return q.stems[at[0]] == "which" or q.stems[at[0]] == "what" and (
        not after or after[0] in TEXT_STOPWORDS or after[0].endswith("ed"))


# Words naming where a thing is, most specific first: a question opening with 'where' asks for one.
PLACE_WORDS = (frozenset({"location", "address", "place", "site", "venue"}), frozenset({"city", "town"}),
               frozenset({"country", "region", "state"}))
_WHERE_VERBS = frozenset({"is", "are", "was", "were", "can", "could", "do", "does", "did", "us"})


def asked_place(q: Question, outputs: list[Field], fields: list[Field]) -> Field | None:
    """'Where is the history department?', 'Where can I find the "Tennis Club"?': the field that
    says where the entity shown is (its location, else address, ...; one field of the first such
    kind its documents hold), when the question opens with 'where' and nothing shown says it."""
    if q.raw[:1] != ["where"] or q.raw[1:2] and q.raw[1] not in _WHERE_VERBS or not outputs:
        return None
    if any(words & set(f.words) for f in outputs for words in PLACE_WORDS):
        return None
    grain = outputs[0].arrays
    for words in PLACE_WORDS:
        places = [f for f in fields if f.kind == "scalar" and f.arrays == grain and f.type == "string"
                  and words & set(f.words)]
        if places:
            return places[0] if len(places) == 1 else None
    return None


def plural_attribute(q: Question, mentions: list[Mention], f: Field, plural: set[int]) -> bool:
    """The field is named in the plural and is an attribute, not a name or identifier."""
    named = [m for m in mentions if m.field is f]
    return bool(named) and bool(set(range(named[0].start, named[0].end)) & plural) and not (
        {"name", "id", "title"} & set(f.words))


def grain_of(mentions, fields, entities, q, spelled: set[int] = frozenset()) -> tuple[str, ...]:
    """The array level the question talks about (deepest entity named), or top level; words
    spelling the collection's own name (`spelled`: 'course authors and tutors') name no array."""
    words = [w for i, w in enumerate(q.stems) if i not in spelled]
    # an array's own path ends its `arrays` or not, as the index records it: its elements' level either way
    grains = [f.arrays + ((f.mql,) if not f.path.endswith("[]") and f.arrays[-1:] != (f.mql,) else ())
              for f in fields if f.kind == "array" and _head(f.words)
              and any(word_match(w, _head(f.words)) >= 0.85 for w in words)]
    for m in mentions:
        if m.field.arrays:
            grains.append(m.field.arrays)
    return max(grains, key=len) if grains else ()


def _head(words: tuple[str, ...]) -> str:
    """The last word of a name that is no stopword (`Enrolled_in` is named by 'enrolled')."""
    return next((w for w in reversed(words) if w not in TEXT_STOPWORDS), "")


def count_grain(q: Question, fields: list[Field], collection: str, keys: list[Field] = ()) -> str | None:
    """'how many captains': the array whose elements are counted, if the counted
    noun is one and not the collection itself ('the number of companies' in
    `company` counts documents, whatever array shares the word). Of several arrays
    the noun names, one inside the elements the group `keys` are read in ('the number
    of items in each order': each order's own items)."""
    m = COUNT_PATTERNS.search(q.text.lower())
    if not m:
        return None
    own = split_name(collection)
    at = q.word_at(m.end())
    start = next((i for i in range(at, min(at + 4, len(q.stems))) if q.raw[i] not in TEXT_STOPWORDS), None)
    if start is not None:
        # 'how many Gold tier customers': the noun the phrase ends on is what is counted, the
        # words before it qualify it
        # words before it qualify it (not when the noun also names a field of the array they
        # name: 'phone hardware models' are the phones' `Hardware_Model_name`)
        end = start
        while end + 1 < min(start + 4, len(q.stems)) and q.raw[end + 1].isalpha() \
                and q.raw[end + 1] not in TEXT_STOPWORDS and not q.raw[end + 1].endswith(("ed", "ing")):
            end += 1
        arrays = [f for i in range(start, end) for f in fields
                  if f.kind == "array" and f.words and word_match(q.stems[i], f.words[-1]) >= 0.85]
        if arrays and any(word_match(q.stems[end], w) >= 0.85 for w in own[-1:]) and not any(
                f.arrays[:len(a.arrays)] == a.arrays and word_match(q.stems[end], w) >= 0.85
                for a in arrays for f in fields if f.kind == "scalar" for w in f.words):
            return None
    for i in range(at, min(at + 4, len(q.stems))):
        if q.raw[i] in TEXT_STOPWORDS:
            continue
        if any(word_match(q.stems[i], w) >= 0.85 for w in own[-1:]):
            return None
        named = [f for f in fields if f.kind == "array" and f.words and names_elements(q.stems[i], f)]
        if named:
            inner = {k.arrays[-1] for k in keys if k.arrays}
            nested = [f for f in named if any(f.mql.startswith(a + ".") for a in inner)]
            return min(nested, key=lambda f: len(f.arrays)).mql if nested else named[0].mql
    return None


def plan_unwinds(ir: IR) -> list[str]:
    """Arrays to unwind, outermost first: those on the path to outputs, group keys,
    sort keys, aggregated fields and the counted grain. Arrays reached only by
    filters are matched in place (implicit array traversal), not unwound."""
    needed: list[str] = []
    referenced = list(ir.outputs) + list(ir.group_by) + [f for _, f in ir.aggregates if f is not None]
    referenced += [k for k, _ in ir.sort if isinstance(k, Field)] + [f for f in (ir.distinct_count,) if f is not None]
    for f in referenced:
        for a in f.arrays:
            if a != f.mql and a not in needed:
                needed.append(a)
    for f in ir.group_by:  # a group key that is an element of an array of scalars: one group per element
        if f.path.endswith("[]") and f.kind == "scalar" and f.mql not in needed:
            needed.append(f.mql)
    for f in ir.filters:
        # a comparison of two fields (`$expr`, which traverses no array) reads one element of each at a
        # time; so does one with the field's average, which `$avg` takes over elements, not arrays
        for a in (f.field.arrays + f.other.arrays) if f.other else f.field.arrays if f.average else ():
            if a not in needed:
                needed.append(a)
        # a filter on an array nested in an unwound one is matched per element (one on a whole
        # array, '$all' of its values or no element meeting one, per element of those around it)
        if not f.size and any(a.startswith(n + ".") for a in f.field.arrays for n in needed):
            whole = f.op in ("$elemMatch", "$all") or f.op == "$not" and f.field.kind == "array"
            inner = [a for a in f.field.arrays if a != f.field.mql]
            for a in (inner if f.field.kind == "array" else inner[:-1]) if whole else f.field.arrays:
                if a not in needed:
                    needed.append(a)
    if ir.grain:
        parents = [p for p in _prefixes(ir.grain) if p in ir.array_paths]
        for a in parents + [ir.grain]:
            if a not in needed:
                needed.append(a)
    # the joined documents unwound, each of this collection's arrays the join's local field lies
    # in is too, when an element of theirs is what the join matched ('the themes of the concerts
    # of each singer', `singer_in_concert[]` joined to `concert[]`): each element is paired with
    # the one element it refers to, not with every element any element of the array matched
    for alias, _, local, foreign in ir.joins:
        if any(a.startswith(alias + ".") and foreign.startswith(a[len(alias) + 1:] + ".") for a in needed):
            for a in [p for p in _prefixes(local) if p in ir.array_paths and p not in needed]:
                needed.append(a)
    # an array the question asserts empty, none of whose elements may meet a condition, or
    # whose size is output or aggregated ('the total number of enrollments'), stays whole; one
    # only required to have some elements ('at least one committee') is unwound as needed
    whole = {f.field.mql for f in ir.filters if f.size and f.op == "$eq" and f.value == 0
             or f.op == "$not" and f.field.kind == "array"} | {f.mql for f in ir.sizes}
    whole |= {f.mql for _, f in ir.aggregates if f is not None and f.kind == "array"}
    needed = [a for a in needed if not any(a == w or a.startswith(w + ".") for w in whole)]
    return sorted(needed, key=lambda a: (a.count("."), a))


def held_together(ir: IR) -> None:
    """'the stadiums that hosted concerts in 2014 and 2015', each stadium's concerts an array:
    values joined by 'and' on a field of an array's elements, the documents shown (nothing
    inside that array), are each held by some element of one document (`$all`); of the
    elements themselves, each holding one value, they are alternatives (`$in`)."""
    if ir.count or ir.aggregates or ir.group_by:
        return
    for f in ir.filters:
        if f.op == "$in" and f.joined_by_and and f.field.arrays and not f.branch and f.field.kind == "scalar" \
                and not any(set(o.arrays) & set(f.field.arrays) for o in ir.outputs) and ir.outputs:
            f.op = "$all"


def members_of_both(ir: IR, mentions: list[Mention], entities: set[int]) -> list[Field]:
    """'the countries that have players in both the Forward and the Defender position': a
    document holds the values an `$all` asks for in different elements of one array, so no
    one element is what is shown; the element fields named after what the document shows
    (its field, or the entity word for its label: the members the condition is about,
    'players') are dropped from the outputs."""
    outputs = list(ir.outputs)
    entity = min(entities, default=-1)
    for f in ir.filters:
        if f.op != "$all" or not f.field.arrays:
            continue
        inside = [o for o in outputs if o.arrays[:len(f.field.arrays)] == f.field.arrays]
        outside = [o for o in outputs if o not in inside]
        said = {o.mql: min((m.start for m in mentions if m.field.mql == o.mql), default=entity) for o in outputs}
        first = min((said[o.mql] for o in outside if said[o.mql] >= 0), default=None)
        if first is not None:
            outputs = [o for o in outputs if o not in inside or said[o.mql] < first]
    return outputs


def names_array(q: Question, path: str) -> bool:
    """A question word names the array at `path` ('captains' for `captain`)."""
    words = split_name(path.rsplit(".", 1)[-1])
    return bool(words) and any(word_match(w, words[-1]) >= 0.85 for w in q.stems)


def plan_expansions(ir: IR) -> list[str]:
    """Dynamic maps the question ranges over: referenced through `<*>` with no
    witnessed key (those are addressed directly), outermost first."""
    referenced = list(ir.outputs) + list(ir.group_by) + [f for _, f in ir.aggregates if f is not None]
    referenced += [k for k, _ in ir.sort if isinstance(k, Field)] + [f for f in (ir.distinct_count,) if f is not None]
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


def intent_word(word: str) -> bool:
    return word in ("many", "count", "number", "order", "sorted", "ordered", "each", "every", "common",
                    "frequent", "than", "least", "most", "between", "distinct", "different", "unique",
                    "sort", "alphabetic", "alphabetical", "alphabetically", "corresponding", "respective",
                    "along", "having", "named", "called")


def unrepresented(q: Question, ir: IR | None = None) -> list[str]:
    """Constructs the IR has no form for, so that the reading is partial: a
    conjunction ('both Boeing and Airbus certificates') no `$all` filter reads."""
    if "both" in q.raw and not (ir is not None and any(f.op == "$all" for f in ir.filters)):
        return ["a conjunction over one array is not represented"]
    return []


def validate(ir: IR) -> None:
    """Record what the IR cannot answer as issues (they lower confidence)."""
    if not (ir.outputs or ir.count or ir.aggregates or ir.group_by):
        ir.issues.append("no output field could be bound")
    if ir.sort and ir.sort[0][0] == "count" and not (ir.count or ir.group_by):
        ir.issues.append("ordering by a count without a grouping")
    if ir.collection_margin < 0.15:
        ir.issues.append(AMBIGUOUS)
    required = [f for f in ir.filters if not (f.size or f.relative or f.branch)]
    low = {f.field.mql: f.value for f in required if f.op in ("$gt", "$gte")}
    for f in required:
        if f.op in ("$lt", "$lte") and f.field.mql in low and f.value <= low[f.field.mql]:
            ir.issues.append(f"contradictory range on {f.field.mql}")
