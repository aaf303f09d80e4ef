"""Generation methods: one module per method, registered by name.

A method is an object with `name`, `channels` (what it observes, recorded as
the prediction's `disclosure`) and `generate(task, context) -> dict` returning
a prediction `{collection, pipeline, ...}` or raising an NlqError. `task` is a
*view* of the record without `gold`, `gold_mql` or `labels` (see
nlq.generate.task_view): no method can read them.

A method that calls the chat model sets `needs_model = True` (generate then
requires `context.model`, runs records concurrently and adds `usage`); one that
reads documents or runs queries sets `needs_backend = True` (the command then
requires --data or --uri). The LLM methods share nlq.methods.prompting.
"""

from __future__ import annotations

import importlib

from nlq.errors import InputError

# name -> module under nlq/methods/ defining METHOD
_MODULES = {
    "rules": "rules",
    "card": "card",
    "nlq-only": "nlq_only",
    "schema": "schema",
    "sampled": "sampled",
    "data-rich": "data_rich",
    "sql-pivot": "sql_pivot",
    "react": "react",
    "cascade": "cascade",
    "sag": "sag",
}


def names() -> list[str]:
    return sorted(_MODULES)


def get(name: str):
    """The method registered as `name` (InputError listing the choices otherwise)."""
    module = _MODULES.get(name)
    if module is None:
        raise InputError(f"unknown method {name!r}; choose one of: {', '.join(names())}")
    return importlib.import_module(f"nlq.methods.{module}").METHOD


def needs(impl, what: str, options: dict) -> bool:
    """Whether method `impl` needs a model (`what="needs_model"`) or a backend
    (`"needs_backend"`); a method that delegates (cascade) needs what its delegates need."""
    delegates = getattr(impl, "delegates", None)
    names = delegates(options) if delegates else ()
    return bool(getattr(impl, what, False)) or any(needs(get(name), what, {}) for name in names)
