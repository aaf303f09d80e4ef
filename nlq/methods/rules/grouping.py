"""Grouping: 'by X' after an aggregate, a date part per year/month, the top document per group."""

from __future__ import annotations

import re

from nlq.methods.rules.vocabulary import DATE_PARTS
from nlq.methods.rules.ir import Field, IR, Mention
from nlq.methods.rules.schema import split_name
from nlq.methods.rules.question import Question, word_match
from nlq.methods.rules.outputs import entity_outputs


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


def group_by_date_part(q: Question, at: int, fields: list[Field], mentions: list[Mention], ir: IR,
                        consumed: set[int]) -> None:
    part = date_part(q, at, fields, mentions)
    if part is not None and part not in ir.group_by:
        ir.group_by.append(part)
        consumed.add(at)


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


def top_per_group(ir: IR, index: dict, fields: list[Field], q: Question, entities: set[int],
                  identified: bool = False) -> None:
    """'for each season, which driver scored the most points': not the maximum
    per group but the document holding it — sort by the measure, then keep each
    group's first document (its entity, the measure and what else is shown)."""
    op, measure = ir.aggregates[0]
    ir.presort = [(measure, -1 if op == "$max" else 1)]
    ir.aggregates = [("$first", measure)]
    if not any({"id", "name", "title"} & set(f.words) for f in ir.outputs):
        ir.outputs = entity_outputs(index, ir.collection, fields, q, entities, identified) + ir.outputs


def which_entity(q: Question, collection: str) -> bool:
    """'which driver', 'who': the question asks which document, wherever the phrase stands."""
    head = split_name(collection)[-1:]
    return "who" in q.raw or any(w == "which" and i + 1 < len(q.stems) and head
                                 and word_match(q.stems[i + 1], head[0]) >= 0.85 for i, w in enumerate(q.raw))


def is_order_phrase(lower: str, at: int) -> bool:
    return bool(re.search(r"(?:order|sorted|ordered|sort|rank|ranked)\s*$", lower[:at]))
