"""Another collection a question reaches through a join, read as an array of the chosen one.

    joins, fields, mentions, witnesses = reach(q, index, grounding, collection, fields, ...)

A question about one collection often names values another one stores ('the
last names of the authors of the paper titled "Binders Unbound"': titles in
`Papers`, last names in `Authors`). When the index has a trusted join edge
between the two (`schema.join_edge`) and the question names the other
collection, or a literal only it stores, its fields are offered to the
reading as the elements of a virtual array `_<other>` of each document —
what `$lookup` builds — so every pass reads them as it reads an embedded
array, and render.py emits the `$lookup` before the array is used.

Only words the chosen collection cannot explain are read in the other one:
its fields never displace one of the collection's own.
"""

from __future__ import annotations

import re
from dataclasses import replace

from nlq.methods.rules.aggregation import COUNTING
from nlq.methods.rules.filters import comparison_phrases
from nlq.methods.rules.grounding import COUNT_FILLERS, counted_noun, explained_here
from nlq.methods.rules.ir import Field, Mention
from nlq.methods.rules.question import NEGATIONS, Question, denied, list_words, word_match
from nlq.methods.rules.schema import Grounding, join_edge, split_name
from nlq.methods.rules.vocabulary import COUNT_PATTERNS

UNNAMED = ("object", "dynamic_map", "array", "key")  # kinds a mention never reads across a join


# Words that end field names in any collection: alone, they say nothing of which one is meant.
GENERIC = frozenset({"name", "id", "title", "type", "code", "description", "detail", "date", "number", "other"})


def alias_of(other: str) -> str:
    """The field `$lookup` writes the other collection's documents to."""
    return "_" + re.sub(r"[^0-9A-Za-z]+", "_", other)


def virtual_fields(collection: str, other: str, fields: list[Field], counted: bool = False) -> list[Field]:
    """The other collection's fields as the elements of the array `alias_of(other)` of
    `collection`, and that array itself: named by no word (the question names the collection),
    unless the question counts the other's documents (`counted`: 'the most students', 'at least
    two cards' — then it is named as an embedded array of them is, and its size is the count)."""
    alias = alias_of(other)
    out = [Field(collection=collection, path=alias, mql=alias, arrays=(alias,), kind="array", type="array",
                 words=tuple(split_name(other)) if counted else (), context=())]
    for f in fields:
        if f.mql == "_id" or f.kind == "key":
            continue
        out.append(replace(f, collection=collection, path=f"{alias}[].{f.path}", mql=f"{alias}.{f.mql}",
                           arrays=(alias,) + tuple(f"{alias}.{a}" for a in f.arrays),
                           maps=tuple(f"{alias}.{m}" for m in f.maps),
                           context=tuple(split_name(other)) + f.context))
    return out


ASKING = frozenset({"which", "what", "who", "find", "show", "list", "give", "return", "display", "get", "name",
                    "identify", "provide", "tell", "retrieve"})


def asked_collection(q: Question, index: dict, schema: dict, best: str, mentions: list[Mention]) -> str:
    """The collection the question asks for, when its first named collection is not `best`
    (the one its words and literals favour) but joins it: 'which papers have "Stephanie
    Weirich" as an author' asks for papers, the author only filters them. `best` otherwise."""
    if COUNT_PATTERNS.search(q.text.lower()):
        return counted_per(q, index, schema, best)  # a count is of what the question counts, wherever it is named
    if not q.raw or q.raw[0] not in ASKING:
        return best
    firm = {i for m in mentions if m.field.collection == best and m.share >= 1.0 for i in range(m.start, m.end)}
    counted = counted_nouns(q)
    for i, stem in enumerate(q.stems[:8]):
        named = sorted(c for c in schema if split_name(c) and word_match(stem, split_name(c)[-1]) >= 0.85)
        if not named:
            continue
        if i in counted:
            return best  # counted per what is asked ('the dormitory with the fewest amenities')
        if best in named or i in firm or any(f.words and word_match(stem, f.words[-1]) >= 0.85
                                             and names_field(q, f) for f in schema[best]):
            return best  # the collection asked for, or a word naming one of its fields ('customer IDs', 'states')
        if q.raw[i] != stem or q.raw[i - 1:i] in (["the"], ["all"], ["each"], ["which"], ["what"]):
            joined = [c for c in named if join_edge(index, c, best) is not None]
            return joined[0] if len(joined) == 1 else best
    return best


def names_field(q: Question, f: Field) -> bool:
    """The question names the field, whose last word it has: a scalar field ('states', 'customer
    IDs'), or an array named for another collection only with another word of its name ('the
    members of the club' of `Member_of_club`, not 'the clubs' it links students to)."""
    if f.kind not in ("array", "object"):
        return True
    return any(word_match(stem, w) >= 0.85 for w in f.words[:-1] if len(w) > 3 for stem in q.stems)


def counted_nouns(q: Question) -> dict[int, tuple[int, bool]]:
    """The heads of the noun phrases a count phrase, a counting superlative or a compared number
    counts ('how many students', 'the most papers', 'at least two cards'), each with the
    phrase's first word and whether a number is compared with it."""
    lower = q.text.lower()
    starts = [q.word_at(c.end()) for c in COUNT_PATTERNS.finditer(lower)]
    starts += [i + 1 for i, w in enumerate(q.raw) if w in COUNTING and q.raw[i + 1:i + 2] != ["number"]]
    compared = [q.word_at(end) for _, _, value, end in comparison_phrases(q) if isinstance(value, int)]
    heads = {}
    for start in starts + compared:
        while start < len(q.raw) and q.raw[start] in COUNT_FILLERS:
            start += 1
        head = counted_noun(q, start)
        if head is not None:
            heads[head] = (start, start in compared)
    return heads


def counts_documents(q: Question, other: str, counted: dict, named: set[int], covered: set[int]) -> bool:
    """The question counts the other collection's documents: a counted noun names it (the last
    word of its name, as a noun names an array), and so does every word qualifying it ('two gas
    stations' of `gas_station`, not 'budget types' of `Ref_Document_Types`) — a compared
    number's noun only if no field here names it ('more than 300 students' of dorms storing a
    `student_capacity`)."""
    names = [n for n in split_name(other) if len(n) > 2]
    for head, (start, compared) in counted.items():
        # the noun ends the phrase, or a verb follows it ('how many students live in each dorm')
        noun = next((k for k in range(head, start - 1, -1) if k in named), None)
        if noun is None or compared and noun in covered or word_match(q.stems[noun], names[-1]) < 0.85:
            continue
        if all(any(word_match(q.stems[j], n) >= 0.85 for n in names) for j in range(start, noun)):
            return True
    return False


def counted_per(q: Question, index: dict, schema: dict, best: str) -> str:
    """'how many actors have appeared in each musical', 'the musicals and the number of their
    actors': the documents of `best` are counted per document of the collection 'each' ranges
    over or listed (in the plural) before the count, joined to it — that collection is read, its
    `$lookup` of `best` counted. `best` when the count is of something else or per nothing joined."""
    head = split_name(best)[-1:]
    if not head or not any(word_match(q.stems[at], head[0]) >= 0.85 for at in counted_nouns(q)):
        return best
    lower = q.text.lower()
    ranging = [q.word_at(m.end()) for m in re.finditer(r"\b(?:each|every|per)\s+", lower)]
    # 'the names of musicals and the number of actors': the documents listed before the count
    first = q.word_at(COUNT_PATTERNS.search(lower).start())
    if not any(word_match(q.stems[i], head[0]) >= 0.85 for i in range(first)):
        ranging += [i for i in range(first) if q.raw[i] != q.stems[i]]
    for at in ranging:
        per = [c for c in schema if c != best and split_name(c) and at < len(q.stems)
               and word_match(q.stems[at], split_name(c)[-1]) >= 0.85 and join_edge(index, best, c) is not None]
        if len(per) == 1:
            return per[0]
    return best


# Words between a field's name and the name of what it belongs to ('the title of the movie').
_OWNER_LINKS = (["of"], ["of", "the"], ["of", "its"], ["of", "their"], ["of", "each"], ["of", "that"])


def qualified_by(q: Question, mentions: list[Mention], named: set[int]) -> set[int]:
    """'the movie title', 'the title of the movie': the words of a partial mention here (a
    synonym, a part of a field's name) that the words `named` (the other collection's
    name) qualify as the other's own attribute; a mention of the other may read them."""
    out: set[int] = set()
    for m in mentions:
        if m.share >= 1.0:
            continue
        after = [k for k, link in ((m.end + len(link), link) for link in _OWNER_LINKS) if q.raw[m.end:k] == link]
        if m.start - 1 in named or any(k in named for k in after):
            out |= set(range(m.start, m.end))
    return out


def within_longer(inner: Mention, outer: Mention) -> bool:
    """`inner`'s words lie inside `outer`'s longer span."""
    return outer.start <= inner.start and inner.end <= outer.end and inner.end - inner.start < outer.end - outer.start


def listed_with(q: Question, mentions: list[Mention], found: list[Mention], virtual: list[Field]) -> list[Mention]:
    """'the name and theme of all concerts', `Theme` read in the joined documents: a field here
    whose name says nothing of whose it is ('name', `Name`), listed right before one read there,
    is the joined elements' one of that name (`concert_Name`) — one owner's attributes listed."""
    out = []
    for m in mentions:
        if m.share < 1.0 or not m.field.words or set(m.field.words) - GENERIC or m.field.path.startswith("_"):
            continue
        after = next((f for f in sorted(found, key=lambda f: f.start) if f.start >= m.end), None)
        if after is None or not list_words(q.raw[m.end:after.start]):
            continue
        same = [v for v in virtual if v.arrays == after.field.arrays and v.kind == m.field.kind
                and v.words[-1:] == m.field.words[-1:] and v is not after.field]
        if len(same) == 1:
            out.append(replace(m, field=same[0]))
    return out


def reach(q: Question, index: dict, grounding: Grounding, collection: str, fields: list[Field],
          mentions: list[Mention], all_mentions: list[Mention], entities: set[int], witnesses: list[dict]):
    """The join a question asks for beyond `collection`, if any: ([(alias, other, local,
    foreign)], the fields with the other's virtual ones, the mentions with those that name
    them, the witnesses with the other's stored literals also placed under the alias); the
    inputs unchanged when the question reaches no other collection."""
    covered = {i for m in mentions for i in range(m.start, m.end)} | set(entities)
    # a word naming the other collection may also partly name a field here ('paper' and `paperID`)
    firm = {i for m in mentions if m.share >= 1.0 for i in range(m.start, m.end)} | set(entities)
    own = {str(w.get("term")) for w in witnesses
           if any(m.get("collection") == collection for m in w.get("matches", []))}
    best, counted = None, counted_nouns(q)
    counting_words = {i for c in COUNT_PATTERNS.finditer(q.text.lower())
                      for i in range(q.word_at(c.start()), q.word_at(c.end()))}
    # each element's own joined document ('each rating's movie'), unless a negation asks for whole documents
    weak = {i for m in mentions if m.share < 1.0 for i in range(m.start, m.end)}
    within = frozenset(m.field.arrays[0] for m in mentions if m.field.arrays) if not NEGATIONS & set(q.raw) \
        else frozenset()
    for other in sorted(grounding.schema):
        if other == collection:
            continue
        edge = join_edge(index, collection, other, within)
        if edge is None:
            continue
        named = {i for i, w in enumerate(q.stems) if i not in firm and w and not denied(q, i)
                 and any(word_match(w, n) >= 0.85 for n in split_name(other) if len(n) > 2)}
        literals = [w for w in witnesses if str(w.get("term")) not in own and not explained_here(q, w, covered)
                    and any(m.get("collection") == other and m.get("kind") == "value" for m in w.get("matches", []))]
        counting = counts_documents(q, other, counted, named, covered)
        virtual = {f.path: f for f in virtual_fields(collection, other, grounding.schema[other], counting)}
        alias = alias_of(other)
        found, taken = [], (set(covered) - qualified_by(q, mentions, named)) | named
        for m in sorted((m for m in all_mentions if m.field.collection == other and m.field.kind not in UNNAMED
                         and m.share >= 1.0), key=lambda m: (-m.score, m.start)):
            span = set(range(m.start, m.end))
            target = virtual.get(f"{alias}[].{m.field.path}")
            # the other's own name may begin its field's ('the customer first name'): then the
            # mention also reads words a partial mention here covered
            blocked = taken - (named | weak) if m.start in named and not span <= named else taken
            # a longer name reads the words of a shorter one here ('the last names' of `LName`, not
            # the club's name), unless it spans a count phrase ('the number of trains', not `train_number`)
            if not span & counting_words:
                blocked -= {i for o in mentions if within_longer(o, m) for i in range(o.start, o.end)} - set(entities)
            if target is not None and not span & blocked:
                found.append(replace(m, field=target))
                taken |= span
        if not (named or literals):
            # the other collection unnamed: only a field name no collection could share ('city',
            # not 'name') says the question is about its documents
            found = [m for m in found if set(m.field.words) - GENERIC]
        if not (found or literals or counting):  # (what is counted is read as an array of its documents)
            continue
        rank = (len(found) + len(literals), len(named))
        if best is None or rank > best[0]:
            best = (rank, other, edge, list(virtual.values()), found, literals, named)
    if best is None:
        return [], fields, mentions, witnesses, set()
    _, other, (local, foreign), virtual, found, literals, named = best
    alias = alias_of(other)
    placed = [{**w, "matches": list(w.get("matches", [])) + [
        {**m, "collection": collection, "path": f"{alias}[].{m['path']}"}
        for m in w.get("matches", []) if m.get("collection") == other]} if w in literals else w for w in witnesses]
    relisted = listed_with(q, mentions, found, virtual)
    found += relisted
    read = named | {i for m in found for i in range(m.start, m.end)}
    moved = {m.start for m in relisted}
    kept = [m for m in mentions if m.start not in moved and (m.share >= 1.0 or not set(range(m.start, m.end)) & read)
            and not any(within_longer(m, f) for f in found if not set(range(f.start, f.end)) & counting_words)]
    return ([(alias, other, local, foreign)], fields + virtual, sorted(kept + found, key=lambda m: m.start),
            placed, named)


__all__ = ["alias_of", "asked_collection", "reach", "virtual_fields"]
