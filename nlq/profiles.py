"""Profiles: named bundles of defaults for the elements where this toolkit departs from SAG as published.

    >>> resolve("paper")["sampling"], resolve("nlq")["sampling"]
    ('first', 'uniform')
    >>> resolve("paper", {"sampling": "uniform"})["sampling"]   # an explicit option wins
    'uniform'

`paper` reproduces the paper (Lu et al., "Bridging the Gap: Enabling Natural
Language Queries for NoSQL Databases through Text-to-NoSQL Translation") and,
where its text is silent, the authors' reference implementation; `nlq` keeps
this project's choices (the default). Each element is also an option of its
own (`ELEMENTS`), so an ablation moves one element at a time: a command reads
`resolve(profile, explicit)` and passes the values on. The table of every
element, what the paper and the reference do, and the evidence for `nlq`'s
choice is docs/REPRODUCTION.md.

The profile in effect is named by `--profile`, else the environment variable
`NLQ_PROFILE`, else `nlq`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from nlq.errors import InputError

DEFAULT_PROFILE = "nlq"
ENV = "NLQ_PROFILE"


@dataclass(frozen=True)
class Element:
    """One element that differs between the profiles: its choices and each profile's default."""

    name: str
    commands: tuple        # the commands that read it
    nlq: object
    paper: object
    choices: tuple | None  # None: an integer (0 = no bound), else the allowed values
    help: str


ELEMENTS = {e.name: e for e in (
    # -- the grounding index (nlq index) --
    Element("sampling", ("index",), "uniform", "first", ("uniform", "first"),
            "documents indexed per collection: a seeded uniform sample, or the first N in natural order"),
    Element("max_depth", ("index",), 12, 7, None,
            "deepest path walked (fields, array elements and map keys each count one)"),
    Element("array_elements", ("index",), 0, 8, None,
            "elements walked per array (0: every element)"),
    Element("map_rule", ("index",), "nlq", "paper", ("nlq", "paper"),
            "dynamic-map detector: nlq's (homogeneous values, data-like keys 80%, proliferation 2x) or the "
            "paper's (proliferation 3x the mean keys, data-like keys 60%: dates, ALL-CAPS codes, single capitals)"),
    Element("collapse_rule", ("index",), "map", "segment", ("map", "segment"),
            "what collapses to <*>: the keys of a detected map, or also any key that is a date, holds '::' "
            "or is an ALL-CAPS code of 4+ characters, whatever its parent"),
    # -- the path card (nlq card, and the prompt of generate/repair) --
    Element("card_cap", ("card", "generate", "repair"), "database", "collection", ("database", "collection"),
            "what --max-entries bounds: the whole card, or each collection's lines"),
    Element("map_line", ("card", "generate", "repair"), False, True, (False, True),
            "each dynamic map's line says DYNAMIC-KEY MAP, its value shape and $objectToArray"),
    Element("underscore_paths", ("card", "generate", "repair"), True, False, (True, False),
            "list top-level '_'-prefixed paths (_id among them) on the card"),
    # -- value witnesses (nlq witness, and generate/repair) --
    Element("literals", ("witness", "generate", "repair"), "nlq", "paper", ("nlq", "paper"),
            "question literals looked up: nlq's (quoted, dates, codes, numbers, title-case, n-grams) or the "
            "paper's (quoted, dates and years, ALL-CAPS codes hard; title-case phrases soft)"),
    Element("hard_max", ("witness", "generate", "repair"), 3, 6, None,
            "a witness is hard (enforceable) with at most this many locations"),
    # -- the prompt (generate/repair) --
    Element("card_turn", ("generate", "repair"), "user", "system", ("user", "system"),
            "the turn that carries the path card"),
    Element("presence_line", ("generate", "repair"), False, True, (False, True),
            "add the presence-wrapped instruction (read .value, $ifNull) when such paths exist"),
    # -- the gate and the loop (generate/repair) --
    Element("execute", ("generate", "repair"), "all", "gate-clean", ("all", "gate-clean"),
            "execute every candidate, or only gate-clean ones (Algorithm 1)"),
    Element("voters", ("generate", "repair"), "admissible", "attempts", ("admissible", "attempts"),
            "who votes: admissible candidates (all executed when none is), or every attempt's best"),
    Element("value_check", ("generate", "repair"), "literals", "witnesses", ("literals", "witnesses"),
            "the value check: every compared string literal, or the question's hard witnesses with the "
            "omission check"),
    Element("check_order", ("generate", "repair"), "together", "path-first", ("together", "path-first"),
            "run every gate check in one round, or the value and limit checks only once the path check "
            "finds nothing"),
    Element("join_probe", ("generate", "repair"), "empty", "gate", ("empty", "gate"),
            "probe $lookup join edges after an empty result only, or in the gate (fail-open)"),
    Element("id_leak", ("generate", "repair"), "objectid", "synthetic", ("objectid", "synthetic"),
            "the leaked-_id check: ObjectIds unless the question mentions ids, or synthetic keys "
            "(ObjectIds and strings holding '::') unless the question asks for the _id"),
    Element("knockouts", ("generate", "repair"), "nlq", "paper", ("nlq", "paper"),
            "knockout scopes: --no-gate drops every gate check and --no-witnesses the witness lines (nlq), "
            "or --no-gate the path check only and --no-witnesses also the value and limit checks, the _id "
            "check and bisection (paper)"),
    # -- baselines and decoding (generate) --
    Element("documents", ("generate",), "seeded", "first-compact", ("seeded", "first-compact"),
            "sampled/data-rich/sql-pivot documents: the seeded sample raw, or the first k compacted with "
            "string-value summaries"),
    Element("react", ("generate",), "nlq", "paper", ("nlq", "paper"),
            "ReAct: nlq's prompt and step count, or the paper's (grading and output conventions in the prompt, "
            "a nudge in the last 3 steps, repair turns outside the step budget)"),
    Element("reasoning_effort", ("generate", "repair"), None, "max", None,
            "the request's reasoning_effort (none: not sent)"),
    Element("transport_retry", ("generate", "repair"), "end-attempt", "keep-trying", ("end-attempt", "keep-trying"),
            "a transport fault after the client's retries ends the attempt, or is retried without end"),
)}

PROFILES = {
    "nlq": {name: e.nlq for name, e in ELEMENTS.items()},
    "paper": {name: e.paper for name, e in ELEMENTS.items()},
}


def profile_name(name: str | None = None) -> str:
    """The profile in effect: `name`, else $NLQ_PROFILE, else nlq (InputError for an unknown one)."""
    chosen = name or os.environ.get(ENV) or DEFAULT_PROFILE
    if chosen not in PROFILES:
        raise InputError(f"unknown profile {chosen!r}; choose one of: {', '.join(PROFILES)}",
                         hint=f"--profile or ${ENV}")
    return chosen


def resolve(name: str | None = None, explicit: dict | None = None) -> dict:
    """Every element's value: the profile's defaults, overridden by the explicit (non-None) options."""
    values = dict(PROFILES[profile_name(name)])
    for key, value in (explicit or {}).items():
        if key not in ELEMENTS:
            raise InputError(f"unknown profile element {key!r}; the elements are: {', '.join(ELEMENTS)}")
        if value is not None:
            values[key] = check(key, value)
    return values


def check(name: str, value):
    """`value` of element `name` (InputError when it is not one of the element's choices)."""
    element = ELEMENTS[name]
    if element.choices is None:
        if name == "reasoning_effort":
            return value if value else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"{name} must be a whole number at least 0, not {value!r}")
        return value
    if value not in element.choices:
        raise InputError(f"{name} must be one of {', '.join(map(str, element.choices))}, not {value!r}")
    return value


def describe(name: str | None, values: dict, keys) -> dict:
    """`{name, overrides}`: the profile and the elements among `keys` whose value is not its default."""
    base = PROFILES[profile_name(name)]
    return {"name": profile_name(name),
            "overrides": {k: values[k] for k in keys if k in values and values[k] != base[k]}}


def for_command(command: str) -> list[Element]:
    """The elements a command reads, in table order."""
    return [e for e in ELEMENTS.values() if command in e.commands]


__all__ = ["ELEMENTS", "PROFILES", "DEFAULT_PROFILE", "ENV", "Element", "profile_name", "resolve", "check",
           "describe", "for_command"]
