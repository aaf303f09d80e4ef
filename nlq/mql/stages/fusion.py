"""Adjacent stages run as one loop when the result provably is the same: `$unwind` directly
followed by `$group`, optionally preceded by a `$project`/`$addFields`/`$set` of the one
`$objectToArray` field the `$unwind` unwinds.

The general pipeline builds one document per array element and the `$group` evaluates its
expressions against it. When the group's `_id` and every accumulator argument is a plain field
path (or a constant), each path's value on an unwound document is known without building it:

- the unwound path itself (`$a` of `{$unwind: "$a"}`) is the element;
- a path below it (`$a.b`) is the rest of the path read from the element
  (`traverse(element, ("b",))`, as the general field path does once it reaches the element);
- a path off the unwound path (`$c`, or `$a.x` when unwinding `$a.b`) reads the input
  document as it is (the unwound copy differs from it only along the unwound path), once per
  input document;
- a proper prefix of the unwound path (`$a` when unwinding `$a.b`) reads an embedded document
  holding the element: no fusion.

Only a non-empty array takes that route; for every other value (a scalar, or null, missing or
an empty array under `preserveNullAndEmptyArrays`) the document `$unwind` emits is built and
every path read from it. Each group keeps the elements that fell in it (references, nothing
is allocated per element) and every so often folds them, a column of argument values per
accumulator, into `nlq.mql.accumulators`' own states (`add_values`: the same state as one
`add` per document; `$sum` of small integers then adds in C). Only accumulators that never
raise qualify (`accumulators.compile_values`), so folding late changes no error. Group keys,
group order and output rows are those of `grouping.compile_group`.

For `$objectToArray` of a field path grouped by `$<f>.k` (other paths `$<f>.v...`, `$<f>.k` or
off `f`), the object's keys are the group keys and its values the elements: no `{k, v}`
document is built.

`fuse(pipeline, stages, ctx)` takes every stage compiled the ordinary way (so every
specification error is raised as before) and returns the stage functions with fused runs
replaced.
"""

from __future__ import annotations

from nlq.mql.accumulators import compile_values, is_field_path
from nlq.mql.expressions import compile_expression, traverse
from nlq.mql.stages.base import get_nested, set_nested, split_path
from nlq.mql.stages.grouping import IntKeys, group_rows
from nlq.mql.stages.joins import lookup_index
from nlq.mql.values import MISSING, group_key

_CHUNK = 1024  # elements folded between two deadline checks
_PENDING = 1 << 16  # kept elements (and at least 4 per group) before every group folds its own

# Where a path's value comes from, relative to a kept element: (ELEMENT, rest) the rest of the
# path read from the element (() for the element itself), (PARENT, i) the i-th value read from
# the input document, (KEY,) the group's key, (ABSENT,) missing.
ELEMENT, PARENT, KEY, ABSENT = "element", "parent", "key", "absent"


def fuse(pipeline: list, stages: list, ctx) -> list:
    """`stages` (the compiled `pipeline`, one function per stage) with each fusable run replaced
    by one function."""
    out = []
    i = 0
    while i < len(pipeline):
        if i + 2 < len(pipeline):
            fused = (_object_to_array_unwind_group(pipeline[i], pipeline[i + 1], pipeline[i + 2], stages[i], ctx)
                     or _lookup_unwind_group(pipeline[i], pipeline[i + 1], pipeline[i + 2], ctx))
            if fused is not None:
                out.append(fused)
                i += 3
                continue
        if i + 1 < len(pipeline):
            fused = _unwind_group(pipeline[i], pipeline[i + 1], ctx)
            if fused is not None:
                out.append(fused)
                i += 2
                continue
        out.append(stages[i])
        i += 1
    return out


def _stage(stage, name: str):
    """The spec of a `{name: spec}` stage, MISSING for any other stage."""
    if type(stage) is dict and len(stage) == 1 and name in stage:
        return stage[name]
    return MISSING


def _unwind_spec(stage) -> tuple[tuple[str, ...], bool] | None:
    """(path parts, preserveNullAndEmptyArrays) of an `$unwind` without `includeArrayIndex`."""
    spec = _stage(stage, "$unwind")
    if type(spec) is str:
        spec = {"path": spec}
    if type(spec) is not dict or spec.get("includeArrayIndex") is not None:
        return None
    if any(key not in ("path", "preserveNullAndEmptyArrays", "includeArrayIndex") for key in spec):
        return None
    path, preserve = spec.get("path"), spec.get("preserveNullAndEmptyArrays", False)
    if not is_field_path(path) or type(preserve) is not bool:
        return None
    return split_path(path[1:], "$unwind path"), preserve


_CONSTANT_TYPES = (type(None), bool, int, float)


class _GroupPlan:
    """A `$group` whose `_id` is a field path or a constant and whose accumulators each read one
    field path or nothing: the key's path (or constant), and per output field the accumulator
    factory and the path it reads (None: none)."""

    def __init__(self, spec):
        self.ok = False
        if type(spec) is not dict or "_id" not in spec:
            return
        key = spec["_id"]
        self.key_path = self.key_constant = None
        if is_field_path(key):
            self.key_path = _parts(key)
        elif type(key) in _CONSTANT_TYPES or (type(key) is str and not key.startswith("$")):
            self.key_constant = key
        else:
            return
        self.names: list[str] = []
        self.accumulators: list[tuple] = []
        for field, acc in spec.items():
            if field == "_id":
                continue
            (name, arg), = acc.items()
            factory = compile_values(name, arg)
            if factory is None:
                return
            self.names.append(field)
            self.accumulators.append((factory, _parts(arg) if is_field_path(arg) else None))
        self.ok = True

    def paths(self) -> list[tuple[str, ...]]:
        paths = [self.key_path] if self.key_path is not None else []
        return paths + [path for _, path in self.accumulators if path is not None]


def _parts(path: str) -> tuple[str, ...]:
    return tuple(path[1:].split("."))


class _Layout:
    """Where each path of a plan is read, for elements unwound from `parts`: `sources[path]`
    (see ELEMENT...), `parent_paths` the paths read once per input document. None when a path
    reads an embedded document holding the element."""

    def __init__(self, plan: _GroupPlan, parts: tuple[str, ...]):
        self.sources: dict = {}
        self.parent_paths: list = []
        n = len(parts)
        for path in plan.paths():
            if path in self.sources:
                continue
            if path[:n] == parts:
                self.sources[path] = (ELEMENT, path[n:])
            elif parts[:len(path)] == path:
                raise _NotFusable
            else:
                self.sources[path] = (PARENT, len(self.parent_paths))
                self.parent_paths.append(path)

    def parent_of(self):
        """`fn(doc)`: the values of `parent_paths` read from an input document (None: no paths)."""
        paths = self.parent_paths
        if not paths:
            return lambda doc: None
        if all(len(path) == 1 for path in paths):  # top-level fields: read in C
            names, missings = tuple(path[0] for path in paths), (MISSING,) * len(paths)
            return lambda doc: (list(map(doc.get, names, missings)) if type(doc) is dict else
                                [traverse(doc, path) for path in paths])
        return lambda doc: [traverse(doc, path) for path in paths]


class _NotFusable(Exception):
    pass


def _unwind_group_plan(unwind, group, field: str | None = None):
    """(plan, layout, unwound path parts, preserve) of an `$unwind` then a `$group` that can be fused, or None: the
    unwound path must be the single field `field` when one is given."""
    spec = _unwind_spec(unwind)
    plan = _GroupPlan(_stage(group, "$group"))
    if spec is None or not plan.ok or (field is not None and spec[0] != (field,)):
        return None
    parts, preserve = spec
    try:
        return plan, _Layout(plan, parts), parts, preserve
    except _NotFusable:
        return None


def _unwind_group(unwind, group, ctx):
    planned = _unwind_group_plan(unwind, group)
    if planned is None:
        return None
    plan, layout, parts, preserve = planned
    folder = _Folder(plan, layout)
    check = ctx.check
    parent_of = layout.parent_of()
    single = parts[0] if len(parts) == 1 else None

    def chunks(stream):
        for doc in stream:
            check()
            value = doc.get(single, MISSING) if single is not None and type(doc) is dict else get_nested(doc, parts)
            if type(value) is list and value:
                if len(value) <= _CHUNK:
                    yield None, value, parent_of(doc)
                else:
                    yield from _split(None, value, parent_of(doc), check)
            else:
                emitted = _emitted(doc, value, parts, preserve)
                if emitted is not None:
                    yield emitted, None, None

    def unwind_group(stream):
        yield from group_rows(folder.fold(chunks(stream)), plan.names, check)
    return unwind_group


def _split(keys: list | None, elements: list, parent, check):
    """The chunks of a long array (and of its keys), the deadline checked between them."""
    for start in range(0, len(elements), _CHUNK):
        if start:
            check()
        yield None if keys is None else keys[start:start + _CHUNK], elements[start:start + _CHUNK], parent


def _emitted(doc, value, parts: tuple[str, ...], preserve: bool):
    """The one document `$unwind` emits for `doc` whose value at `parts` is not a non-empty
    array, None when it emits none."""
    if type(value) is list or value is None or value is MISSING:
        if not preserve:
            return None
        if type(value) is list:
            return set_nested(doc, parts, MISSING)  # an empty array leaves the field out
    return doc


def _object_to_array_unwind_group(shape, unwind, group, shape_fn, ctx):
    """`{$project|$addFields|$set: {f: {$objectToArray: <expr>}}}` (a `$project` may also
    exclude `_id`), `{$unwind: "$f"}`, then a `$group`: the array unwound for each input
    document is the expression's value, and no projected document is built for it. Off `f`,
    paths read the input document (`$addFields`/`$set`), or its `_id` and else nothing
    (`$project`)."""
    for name in ("$project", "$addFields", "$set"):
        spec = _stage(shape, name)
        if spec is not MISSING:
            break
    else:
        return None
    if type(spec) is not dict:
        return None
    fields = {k: v for k, v in spec.items() if not (name == "$project" and k == "_id" and v in (0, False))}
    if len(fields) != 1:
        return None
    (field, expr), = fields.items()
    if field == "_id" or "." in field or type(expr) is not dict or list(expr) != ["$objectToArray"]:
        return None
    planned = _unwind_group_plan(unwind, group, field)
    if planned is None:
        return None
    plan, layout, _, preserve = planned
    if name == "$project":  # off `f` a projection keeps `_id` (unless excluded), nothing else
        keep_id = "_id" not in spec
        for path, source in layout.sources.items():
            if source[0] == PARENT and not (keep_id and path[0] == "_id"):
                layout.sources[path] = (ABSENT,)
    pairs = _pairs_layout(plan, layout, field)
    argument = expr["$objectToArray"]
    # the object read as the field path `$<argument>` reads it (`expressions.field_path`)
    object_parts = _parts(argument) if pairs is not None and is_field_path(argument) else None
    object_name = object_parts[0] if object_parts is not None and len(object_parts) == 1 else None
    folder = _Folder(plan, pairs if object_parts is not None else layout)
    array_of = compile_expression(expr)
    vars_of = ctx.binder()
    check = ctx.check
    parent_of = layout.parent_of()

    def chunks(stream):
        for doc in stream:
            check()
            if object_parts is not None:
                obj = doc.get(object_name, MISSING) if object_name is not None and type(doc) is dict else \
                    traverse(doc, object_parts)
                if type(obj) is dict and obj:
                    if len(obj) <= _CHUNK:
                        yield obj.keys(), obj.values(), parent_of(doc)
                    else:
                        yield from _split(list(obj), list(obj.values()), parent_of(doc), check)
                    continue
            array = array_of(vars_of(doc))  # (an error for an argument that is not an object)
            if object_parts is None and type(array) is list and array:
                if len(array) <= _CHUNK:
                    yield None, array, parent_of(doc)
                else:
                    yield from _split(None, array, parent_of(doc), check)
            else:  # null, or an empty object: the document the stage builds, unwound as usual
                for shaped in shape_fn(iter((doc,))):
                    emitted = _emitted(shaped, shaped.get(field, MISSING), (field,), preserve)
                    if emitted is not None:
                        yield emitted, None, None

    def object_to_array_unwind_group(stream):
        yield from group_rows(folder.fold(chunks(stream)), plan.names, check)
    return object_to_array_unwind_group


def _lookup_unwind_group(lookup, unwind, group, ctx):
    """`{$lookup: {from, localField, foreignField, as: "f"}}`, `{$unwind: "$f"}`, then a
    `$group`: the elements are the joined foreign documents (the joined document differs from the
    input document only at `f`), and no joined document or array is built for them."""
    spec = _stage(lookup, "$lookup")
    foreign = lookup_index(spec, ctx)
    if foreign is None or type(spec["as"]) is not str or "." in spec["as"]:
        return None
    index_of, local_parts = foreign
    field = spec["as"]
    planned = _unwind_group_plan(unwind, group, field)
    if planned is None:
        return None
    plan, layout, _, preserve = planned
    folder = _Folder(plan, layout)
    check = ctx.check
    parent_of = layout.parent_of()

    def chunks(stream):
        index = None
        for doc in stream:
            check()
            if index is None:
                index = index_of()
            matched = index.joined(doc, local_parts)
            if matched:
                if len(matched) <= _CHUNK:
                    yield None, matched, parent_of(doc)
                else:
                    yield from _split(None, matched, parent_of(doc), check)
            elif preserve:  # the joined document, its empty array left out by $unwind
                yield set_nested(doc, (field,), MISSING), None, None

    def lookup_unwind_group(stream):
        yield from group_rows(folder.fold(chunks(stream)), plan.names, check)
    return lookup_unwind_group


def _pairs_layout(plan: _GroupPlan, layout: _Layout, field: str) -> _Layout | None:
    """The layout over an object's values (the elements) and keys (the group keys) when the plan
    groups by `$<field>.k` and reads no `$<field>` or `$<field>.k.<...>` else than as the key:
    `$<field>.v<.rest>` is the value's `<rest>`, other paths below `field` are missing."""
    if plan.key_path != (field, "k"):
        return None
    pairs = _Layout.__new__(_Layout)
    pairs.parent_paths = layout.parent_paths
    pairs.sources = {}
    for path, source in layout.sources.items():
        if source[0] != ELEMENT:
            pairs.sources[path] = source
        elif path == (field, "k"):
            pairs.sources[path] = (KEY,)
        elif len(path) >= 2 and path[1] == "v":
            pairs.sources[path] = (ELEMENT, path[2:])
        elif len(path) >= 2 and path[1] != "k":
            pairs.sources[path] = (ABSENT,)  # a {k, v} document has no other field
        else:  # `$<field>` itself, or below `$<field>.k` (a string: missing, but keep it plain)
            return None
    return pairs


class _Folder:
    """The groups of a fused `$unwind` + `$group` and the loop filling them.

    `fold(chunks)` reads `(keys, elements, parent)` triples: the elements unwound from one input
    document (`keys`: their group keys when known, else None; `parent`: the values of the paths
    read from the input document), or `(document, None, None)` for one emitted document whose
    every path is read from it."""

    def __init__(self, plan: _GroupPlan, layout: _Layout):
        self.plan, self.layout = plan, layout
        self.key_source = None if plan.key_path is None else layout.sources[plan.key_path]
        self.columns = [(factory, None if path is None else layout.sources[path])
                        for factory, path in plan.accumulators]
        self.with_parent = bool(layout.parent_paths)

    def fold(self, chunks) -> dict:
        """The groups (`key -> (_id value, accumulator states)`, in first-seen order)."""
        groups: dict = {}
        kept: dict = {}  # key -> [_id value, elements, parent values per element] not folded yet
        int_keys = self.int_keys = IntKeys()
        key_source, key_constant, with_parent = self.key_source, self.plan.key_constant, self.with_parent
        name = rest = None
        if key_source is None:
            kind = "constant"
        elif key_source[0] == ELEMENT:
            rest = key_source[1]
            kind, name = ("name", rest[0]) if len(rest) == 1 else ("element", None)
        else:
            kind = key_source[0]  # PARENT, ABSENT, or KEY (the keys come with the elements)
        pending = 0
        for keys, elements, parent in chunks:
            if elements is None:  # one emitted document, folded at once after what its group kept
                self._fold_document(keys, groups, kept)
                continue
            if keys is None and kind in ("constant", PARENT, ABSENT):
                key_value = key_constant if kind == "constant" else MISSING if kind == ABSENT else \
                    parent[key_source[1]]
                entry = self._entry(key_value, groups, kept)
                entry[1].extend(elements)
                if with_parent:
                    entry[2].extend([parent] * len(elements))
            else:
                if keys is None and kind == "name":
                    keys = [e.get(name, MISSING) if type(e) is dict else traverse(e, rest) for e in elements]
                elif keys is None:
                    keys = [traverse(e, rest) if rest else e for e in elements]
                for key_value, element in zip(keys, elements):
                    t = type(key_value)
                    key = key_value if t is str else int_keys[key_value] if t is int else group_key(key_value)
                    entry = kept.get(key)
                    if entry is None:
                        entry = self._entry(key_value, groups, kept)
                    entry[1].append(element)
                    if with_parent:
                        entry[2].append(parent)
            pending += len(elements)
            if pending >= _PENDING and pending >= 4 * len(groups):
                for key in kept:
                    self._fold_kept(key, groups, kept)
                pending = 0
        for key in kept:
            self._fold_kept(key, groups, kept)
        return groups

    def _entry(self, key_value, groups: dict, kept: dict) -> list:
        t = type(key_value)
        key = key_value if t is str else self.int_keys[key_value] if t is int else group_key(key_value)
        entry = kept.get(key)
        if entry is None:
            groups[key] = (key_value, [factory() for factory, _ in self.columns])
            entry = kept[key] = [key_value, [], []]
        return entry

    def _fold_kept(self, key, groups: dict, kept: dict) -> None:
        """Fold the elements group `key` kept into its states, a column per accumulator."""
        key_value, elements, parents = kept[key]
        if not elements:
            return
        for (_, source), state in zip(self.columns, groups[key][1]):
            state.add_values(elements if source is None else _column(source, key_value, elements, parents))
        elements.clear()
        parents.clear()

    def _fold_document(self, doc, groups: dict, kept: dict) -> None:
        """Fold one emitted document: every path read from it."""
        plan = self.plan
        key_value = plan.key_constant if plan.key_path is None else traverse(doc, plan.key_path)
        self._entry(key_value, groups, kept)
        t = type(key_value)
        key = key_value if t is str else self.int_keys[key_value] if t is int else group_key(key_value)
        self._fold_kept(key, groups, kept)
        for (_, path), state in zip(plan.accumulators, groups[key][1]):
            state.add_values([doc] if path is None else [traverse(doc, path)])


def _column(source: tuple, key_value, elements: list, parents: list) -> list:
    """The argument values of the kept elements of one group, for a path read from `source`."""
    kind = source[0]
    if kind == ELEMENT:
        rest = source[1]
        if not rest:
            return list(elements)
        if len(rest) == 1:
            name = rest[0]
            return [e.get(name, MISSING) if type(e) is dict else traverse(e, rest) for e in elements]
        return [traverse(e, rest) for e in elements]
    if kind == PARENT:
        i = source[1]
        return [parent[i] for parent in parents]
    if kind == KEY:
        return [key_value] * len(elements)
    return [MISSING] * len(elements)
