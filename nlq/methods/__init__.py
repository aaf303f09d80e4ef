"""Generation methods: one module per method, found through the `nlq.methods` entry points.

A method is an object with `name`, `channels` (what it observes, recorded as
the prediction's `disclosure`) and `generate(task, context) -> dict` returning
a prediction `{collection, pipeline, ...}` or raising an NlqError. `task` is a
*view* of the record without `gold`, `gold_mql` or `labels` (see
nlq.generate.task_view): no method can read them.

A method that calls the chat model sets `needs_model = True` (generate then
requires `context.model`, runs records concurrently and adds `usage`); one that
reads documents or runs queries sets `needs_backend = True` (the command then
requires --data or --uri). The LLM methods share nlq.methods.prompting.

Methods are plugins, as in `llm`: a distribution declares an entry point in the
group `nlq.methods` (name -> `module:OBJECT`), and `nlq generate --method NAME`
finds it once the distribution is installed. nlq's own methods are declared the
same way in its setup.cfg (`[options.entry_points] nlq.methods = rules =
nlq.methods.rules:METHOD ...`). A source checkout whose installed metadata is
older than its setup.cfg (a method added without `make install`) still finds
the methods its setup.cfg declares: nlq's own declarations are read from
setup.cfg when the package runs from a checkout. A plugin that cannot be
loaded, or that loads something without `name` and `generate`, is a
PluginError naming the distribution and the entry point; other methods are
unaffected (nothing is imported before it is asked for). A plugin cannot
replace one of nlq's own methods (nlq's wins); two plugins that declare one
name make that name a PluginError.
"""

from __future__ import annotations

import configparser
import functools
import importlib.metadata
from pathlib import Path

from nlq.errors import InputError, PluginError

GROUP = "nlq.methods"
# The checkout's setup.cfg, when the package runs from a source checkout (absent in a wheel install).
_SETUP_CFG = Path(__file__).resolve().parent.parent.parent / "setup.cfg"


def _declared_in_checkout() -> dict[str, importlib.metadata.EntryPoint]:
    """nlq's own `nlq.methods` entry points as the checkout's setup.cfg declares them ({} outside a checkout)."""
    if not _SETUP_CFG.is_file():
        return {}
    parser = configparser.ConfigParser()
    try:
        parser.read(_SETUP_CFG, encoding="utf-8")
        if parser.get("metadata", "name", fallback=None) != "nlq":
            return {}
        lines = parser.get("options.entry_points", GROUP, fallback="")
    except configparser.Error:
        return {}
    found = {}
    for line in lines.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip():
            found[name.strip()] = importlib.metadata.EntryPoint(name.strip(), value.strip(), GROUP)
    return found


@functools.lru_cache(maxsize=1)
def _entry_points() -> dict[str, tuple[importlib.metadata.EntryPoint, str]]:
    """name -> (entry point, the distribution that declares it)."""
    found: dict[str, tuple[importlib.metadata.EntryPoint, str]] = {}
    clashes: dict[str, set[str]] = {}
    own = _declared_in_checkout()  # the checkout's own declarations win over stale metadata
    for ep in importlib.metadata.entry_points(group=GROUP):
        dist = ep.dist.name if getattr(ep, "dist", None) is not None else "?"
        if ep.name in own or (ep.name in found and found[ep.name][1] == "nlq"):
            continue  # a plugin does not replace a method of nlq's own
        if ep.name in found and found[ep.name][1] != dist and dist != "nlq":
            clashes.setdefault(ep.name, {found[ep.name][1]}).add(dist)
        found[ep.name] = (ep, dist)
        if dist == "nlq":
            clashes.pop(ep.name, None)
    found.update((name, (ep, "nlq")) for name, ep in own.items())
    for name, dists in clashes.items():
        found[name] = (None, " and ".join(sorted(dists)))
    return found


def names() -> list[str]:
    """The names of every installed method, nlq's own and plugins'."""
    return sorted(_entry_points())


def get(name: str):
    """The method registered as `name` (InputError listing the choices otherwise; PluginError when
    its entry point cannot be loaded)."""
    entry = _entry_points().get(name)
    if entry is None:
        raise InputError(f"unknown method {name!r}; choose one of: {', '.join(names())}")
    return _load(name)


@functools.lru_cache(maxsize=None)
def _load(name: str):
    ep, dist = _entry_points()[name]
    if ep is None:
        raise PluginError(f"method {name!r} is registered by several distributions ({dist}): "
                          "uninstall one of them")
    where = f"the method {name!r} ({dist}: {ep.value})"
    try:
        method = ep.load()
    except Exception as exc:  # noqa: BLE001 - any fault of a plugin's import is reported, named
        raise PluginError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}",
                          hint=f"reinstall or uninstall {dist}") from None
    if not (hasattr(method, "name") and callable(getattr(method, "generate", None))):
        raise PluginError(f"{where} is not a method: it needs a `name` and a `generate(task, context)`",
                          hint=f"reinstall or uninstall {dist}")
    return method


def needs(impl, what: str, options: dict) -> bool:
    """Whether method `impl` needs a model (`what="needs_model"`) or a backend
    (`"needs_backend"`); a method that delegates (cascade) needs what its delegates need."""
    delegates = getattr(impl, "delegates", None)
    names = delegates(options) if delegates else ()
    return bool(getattr(impl, what, False)) or any(needs(get(name), what, {}) for name in names)
