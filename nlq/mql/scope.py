"""The scoped field-reference walk: which fields exist after each stage.

A pipeline reads fields of the documents that flow into each stage; which
fields those are depends on every stage before it (`$project` keeps some,
`$group` replaces them all, `$lookup` adds one, `$unwind` turns an array into
its elements, `$facet` nests whole sub-pipelines...). `walk` follows the
stream stage by stage with a :class:`Shape` of the current document and
reports every field reference (`"$a.b"` in an expression, `a.b` as a `$match`
key, a `$sort` key, `$unwind` path, `localField`...), every `$$variable`
path with what it is bound to (`as`, `let`, `$$this`/`$$value`), every
collection a stage names, and every literal compared with a field.

The physical fields of a collection come from a :class:`Node` tree (built by
the caller from an induced schema, e.g. nlq's grounding index); `<*>` under a
node stands for the keys of a dynamic map, and array nodes let a numeric
component (`a.0.b`) index an element. Whatever the walk cannot know (the
output of an unknown stage, fields computed by an arbitrary expression) is
*open*: every path under it resolves, so the walk never reports a path that
might exist.

    >>> schema = {"c": Node.from_paths("c", ["a", "a.b", "n"])}
    >>> r = walk(Query("c", [{"$group": {"_id": "$a.b", "n": {"$sum": 1}}}, {"$sort": {"m": 1}}]), schema)
    >>> [(x.path, x.stage, x.found) for x in r.references]
    [('a.b', 0, True), ('m', 1, False)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nlq.mql.query import Query

MAP = "<*>"
ARRAY = "[]"


class Node:
    """A physical path of a collection and the paths under it (array elements are the node itself).

    `path` is the MQL path (no array markers: `a.b` for the lattice's `a[].b`).
    """

    __slots__ = ("collection", "path", "children", "array", "open")

    def __init__(self, collection: str, path: str = "", *, open: bool = False):
        self.collection, self.path = collection, path
        self.children: dict[str, Node] = {}
        self.array = False
        self.open = open

    @classmethod
    def from_paths(cls, collection: str, paths, open_paths=()) -> "Node":
        """The tree of lattice paths (`a[].b`, `m.<*>.x`); `open_paths` are nodes whose children were not walked."""
        root = cls(collection)
        opened = set(open_paths)
        for path in paths:
            node, names = root, []
            for part in path.split("."):
                name = part
                while name.endswith(ARRAY) and name != ARRAY:
                    name = name[:-2]
                names.append(name)
                child = node.children.get(name)
                if child is None:
                    child = node.children[name] = cls(collection, ".".join(names))
                if name != part:
                    child.array = True
                node = child
            if path in opened:
                node.open = True
        return root

    def walk(self, parts) -> "Node | None":
        """The node at a dotted path below this one, through `<*>` and array indexes, or None."""
        node = self
        for part in parts:
            if node.open:
                return node
            nxt = node.children.get(part)
            if nxt is None:
                nxt = node.children.get(MAP)
            if nxt is None and node.array and part.isdigit():
                continue
            if nxt is None:
                return None
            node = nxt
        return node

    def paths(self, prefix: str = "") -> list[str]:
        """Every dotted path below this node (for did-you-mean)."""
        out = []
        for name, child in self.children.items():
            here = f"{prefix}.{name}" if prefix else name
            out.append(here)
            out.extend(child.paths(here))
        return out


class Shape:
    """What the documents at one point of a pipeline look like.

    `nodes`: physical subtrees the document may be (several after `$unionWith`);
    `fields`: computed top-level fields (they hide physical fields of the same
    name); `removed`: physical top-level fields no longer there; `open`:
    anything may be there.
    """

    __slots__ = ("nodes", "fields", "removed", "open")

    def __init__(self, nodes=(), fields=None, removed=frozenset(), open=False):
        self.nodes = tuple(nodes)
        self.fields: dict[str, Shape] = dict(fields or {})
        self.removed = frozenset(removed)
        self.open = open

    def resolve(self, parts) -> "Shape | None":
        """The shape at a dotted path (a list of names), or None when nothing can be there."""
        if self.open or not parts:
            return self
        head, rest = parts[0], parts[1:]
        if head in self.fields:
            return self.fields[head].resolve(rest)
        if head in self.removed:
            return None
        hits = [n for n in (node.walk(parts) for node in self.nodes) if n is not None]
        if hits:
            if any(n.open for n in hits):
                return OPEN
            return Shape(hits)
        if head.isdigit():  # an array index into a computed array
            return self.resolve(rest) if rest else self
        return None

    def with_fields(self, fields: dict) -> "Shape":
        """This shape plus (or with replaced) top-level fields; dotted names nest."""
        out = Shape(self.nodes, self.fields, self.removed - set(fields), self.open)
        for name, shape in fields.items():
            head, _, rest = name.partition(".")
            if rest:
                inner = out.resolve([head]) or Shape()
                shape = inner.with_fields({rest: shape})
            out.fields[head] = shape
        return out

    def without(self, names) -> "Shape":
        out = Shape(self.nodes, self.fields, self.removed, self.open)
        for name in names:
            head, _, rest = name.partition(".")
            if rest:
                inner = out.resolve([head])
                if inner is not None and not inner.open:
                    out.fields[head] = inner.without([rest])
                continue
            out.fields.pop(head, None)
            out.removed = out.removed | {head}
        return out

    def values(self) -> "Shape":
        """The shape of any one value of this object (`$objectToArray`'s `v`)."""
        if self.open:
            return OPEN
        children = [c for n in self.nodes for c in n.children.values()]
        if any(c.open for c in children) or any(n.open for n in self.nodes):
            return OPEN
        shape = Shape(children)
        for sub in self.fields.values():
            shape = union(shape, sub)
        return shape

    def paths(self) -> list[str]:
        """Every path known to exist in this shape (for did-you-mean)."""
        out = []
        for node in self.nodes:
            out.extend(p for p in node.paths() if p.split(".", 1)[0] not in self.removed | set(self.fields))
        for name, sub in self.fields.items():
            out.append(name)
            out.extend(f"{name}.{p}" for p in sub.paths())
        return sorted(set(out))


OPEN = Shape(open=True)
EMPTY = Shape()


def union(*shapes: "Shape | None") -> Shape:
    """A shape that any of `shapes` may be."""
    shapes = [s for s in shapes if s is not None]
    if not shapes or any(s.open for s in shapes):
        return OPEN
    nodes, fields = [], {}
    for s in shapes:
        nodes.extend(s.nodes)
        for name, sub in s.fields.items():
            fields[name] = union(fields[name], sub) if name in fields else sub
    removed = frozenset.intersection(*(s.removed for s in shapes))
    return Shape(nodes, fields, removed)


@dataclass
class Reference:
    """A field path the pipeline reads, where, and whether the shape there has it."""

    path: str            # as written, without the leading `$` (`a.b`, `$$this.x` keeps `$$this`)
    stage: int           # index of the root stage it sits in
    where: tuple         # keys and indexes down to it inside the pipeline (`(3, "$group", "total", "$sum")`)
    found: bool
    shape: Shape = field(repr=False, default=OPEN)   # the document shape it was resolved against


@dataclass
class Comparison:
    """A literal compared with a field (`{a: "x"}`, `{$eq: ["$a", "x"]}`, `$in` lists...)."""

    path: str
    value: object
    stage: int
    where: tuple                       # position of the literal
    target: Shape | None = field(repr=False, default=None)   # the shape at the compared path
    alternative: tuple | None = None   # (position of the innermost $or/$nor, branch, branches) it sits in
    field_where: tuple = ()            # position of the compared path (a `$match` key or a `"$a"` string)
    shape: Shape = field(repr=False, default=None)           # the document shape the path is read in


@dataclass
class CollectionName:
    """A collection a stage names (the pipeline's own, `$lookup.from`, `$unionWith`...)."""

    name: object
    stage: int | None    # None for the pipeline's own collection
    where: tuple
    found: bool


@dataclass
class Walk:
    references: list = field(default_factory=list)
    comparisons: list = field(default_factory=list)
    collections: list = field(default_factory=list)
    limits: list = field(default_factory=list)        # ($limit value, where) at any depth
    output: Shape = OPEN                                 # the shape of the result documents


_COMPARE = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$all"}
_EXPR_COMPARE = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def walk(query, schema: dict) -> Walk:
    """Walk a Query (or `{collection, pipeline}`) over `schema` = {collection: Node}."""
    if isinstance(query, dict):
        query = Query(query.get("collection"), query.get("pipeline") or [])
    walker = _Walker(schema)
    root = schema.get(query.collection) if isinstance(query.collection, str) else None
    walker.out.collections.append(CollectionName(query.collection, None, (), root is not None))
    shape = Shape([root]) if root is not None else OPEN
    walker.out.output = walker.pipeline(query.pipeline, shape, {}, None, ())
    return walker.out


def _where(base: tuple, *parts) -> tuple:
    return base + parts


def position(where: tuple) -> str:
    """A location inside the pipeline as text: `3.$group.total.$sum`."""
    return ".".join(str(p) for p in where)


def _parts(path: str) -> list[str]:
    return path.split(".")


class _Walker:
    def __init__(self, schema: dict):
        self.schema = schema
        self.out = Walk()
        self.alternative: tuple | None = None

    def compared(self, path: str, literal, stage, where: tuple, target, field_where: tuple, shape) -> None:
        self.out.comparisons.append(Comparison(path, literal, stage, where, target, self.alternative,
                                               field_where, shape))

    # -- references --------------------------------------------------------------

    def field(self, path: str, shape: Shape, stage, where: tuple) -> Shape:
        """A field path read from the current document: report it, return what is there."""
        if not path or path.startswith("$"):
            return OPEN
        found = shape.resolve(_parts(path))
        self.out.references.append(Reference(path, stage, where, found is not None, shape))
        return found if found is not None else OPEN

    def variable(self, ref: str, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        name, _, rest = ref[2:].partition(".")
        if name in ("ROOT", "CURRENT"):
            base = shape
        elif name in variables:
            base = variables[name]
        else:
            return OPEN
        if not rest:
            return base
        found = base.resolve(_parts(rest))
        if not base.open:
            self.out.references.append(Reference(ref, stage, where, found is not None, base))
        return found if found is not None else OPEN

    def collection(self, name, stage, where: tuple) -> Node | None:
        node = self.schema.get(name) if isinstance(name, str) else None
        self.out.collections.append(CollectionName(name, stage, where, node is not None))
        return node

    # -- pipelines ------------------------------------------------------------------

    def pipeline(self, stages, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        if not isinstance(stages, list):
            return OPEN
        for i, spec in enumerate(stages):
            if not isinstance(spec, dict) or len(spec) != 1:
                return OPEN
            (name, arg), = spec.items()
            root = i if stage is None else stage
            handler = _STAGES.get(name)
            at = _where(where, i, name)
            shape = handler(self, arg, shape, variables, root, at) if handler else OPEN
        return shape

    # -- expressions ---------------------------------------------------------------

    def expression(self, expr, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        """Report the references of an aggregation expression; return the shape of its value."""
        if isinstance(expr, str):
            if expr.startswith("$$"):
                return self.variable(expr, shape, variables, stage, where)
            if expr.startswith("$"):
                return self.field(expr[1:], shape, stage, where)
            return EMPTY  # a constant has no fields
        if isinstance(expr, list):
            for i, element in enumerate(expr):
                self.expression(element, shape, variables, stage, _where(where, i))
            return EMPTY if _constant(expr) else OPEN
        if not isinstance(expr, dict):
            return EMPTY
        if expr and next(iter(expr)).startswith("$"):
            result = OPEN
            for op, arg in expr.items():
                result = self.operator(op, arg, shape, variables, stage, _where(where, op))
            return result
        return Shape(fields={k: self.expression(v, shape, variables, stage, _where(where, k))
                             for k, v in expr.items()})

    def operator(self, op: str, arg, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        handler = _EXPRESSIONS.get(op)
        if handler is not None:
            return handler(self, arg, shape, variables, stage, where)
        if op in _EXPR_COMPARE and isinstance(arg, list) and len(arg) == 2:
            self.expression_comparison(arg, shape, variables, stage, where)
        self.expression(arg, shape, variables, stage, where)
        return OPEN

    def expression_comparison(self, args: list, shape, variables, stage, where) -> None:
        """`{$eq: ["$a", "x"]}` (either order) records a comparison."""
        for i, (ref, literal) in enumerate((args, args[::-1])):
            if isinstance(ref, str) and ref.startswith("$") and _is_literal(literal):
                target = self._peek(ref, shape, variables)
                path = ref[1:] if not ref.startswith("$$") else ref
                self.compared(path, literal, stage, where + (1 - i,), target, where + (i,), shape)
                return

    def _peek(self, ref: str, shape: Shape, variables: dict) -> Shape | None:
        if ref.startswith("$$"):
            name, _, rest = ref[2:].partition(".")
            base = shape if name in ("ROOT", "CURRENT") else variables.get(name)
            if base is None:
                return None
            return base.resolve(_parts(rest)) if rest else base
        return shape.resolve(_parts(ref[1:]))

    # -- queries ($match) --------------------------------------------------------------

    def query(self, filter_, shape: Shape, variables: dict, stage, where: tuple) -> None:
        if not isinstance(filter_, dict):
            return
        for key, value in filter_.items():
            at = _where(where, key)
            if key in ("$and", "$or", "$nor"):
                if isinstance(value, list):
                    outer = self.alternative
                    for i, sub in enumerate(value):
                        if key != "$and":
                            self.alternative = (at, i, len(value))
                        self.query(sub, shape, variables, stage, _where(at, i))
                    self.alternative = outer
            elif key == "$expr":
                self.expression(value, shape, variables, stage, at)
            elif key.startswith("$"):
                continue  # $text, $comment, $where, $jsonSchema: no field paths of ours
            else:
                target = self.field(key, shape, stage, at)
                self.field_condition(key, value, target, shape, variables, stage, at, at)

    def field_condition(self, path: str, value, target: Shape, shape, variables, stage, where: tuple,
                        key_where: tuple) -> None:
        if _is_operator_object(value):
            for op, arg in value.items():
                at = _where(where, op)
                if op == "$elemMatch" and isinstance(arg, dict):
                    if _is_operator_object(arg) and not set(arg) & {"$and", "$or", "$nor", "$expr"}:
                        self.field_condition(path, arg, target, shape, variables, stage, at, key_where)
                    else:
                        self.query(arg, target, variables, stage, at)
                elif op == "$not":
                    self.field_condition(path, arg, target, shape, variables, stage, at, key_where)
                elif op in _COMPARE:
                    listed = isinstance(arg, list) and op in ("$in", "$nin", "$all")
                    for i, literal in enumerate(arg if listed else [arg]):
                        if _is_literal(literal):
                            self.compared(path, literal, stage, at + (i,) if listed else at, target, key_where, shape)
        elif _is_literal(value):
            self.compared(path, value, stage, where, target, key_where, shape)


def _constant(value) -> bool:
    """True for a value with no field path, variable or operator anywhere inside."""
    if isinstance(value, str):
        return not value.startswith("$")
    if isinstance(value, list):
        return all(_constant(v) for v in value)
    if isinstance(value, dict):
        return all(not k.startswith("$") and _constant(v) for k, v in value.items())
    return True


def _is_operator_object(value) -> bool:
    return isinstance(value, dict) and bool(value) and next(iter(value)).startswith("$")


def _is_literal(value) -> bool:
    return not isinstance(value, (dict, list)) and not (isinstance(value, str) and value.startswith("$"))


# -- expression operators that bind variables or shape values ---------------------------------

def _let(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    bound = dict(variables)
    if isinstance(arg.get("vars"), dict):
        for name, value in arg["vars"].items():
            bound[name] = w.expression(value, shape, variables, stage, _where(where, "vars", name))
    return w.expression(arg.get("in"), shape, bound, stage, _where(where, "in"))


def _map_or_filter(w: _Walker, arg, shape, variables, stage, where, *, body: str):
    if not isinstance(arg, dict):
        return w.expression(arg, shape, variables, stage, where)
    element = w.expression(arg.get("input"), shape, variables, stage, _where(where, "input"))
    name = arg.get("as", "this")
    bound = {**variables, name: element} if isinstance(name, str) else variables
    for key, value in arg.items():
        if key not in ("input", "as"):
            result = w.expression(value, shape, bound if key == body else variables, stage, _where(where, key))
            if key == body and body == "in":
                element = result
    return element


def _map(w, arg, shape, variables, stage, where):
    return _map_or_filter(w, arg, shape, variables, stage, where, body="in")


def _filter(w, arg, shape, variables, stage, where):
    return _map_or_filter(w, arg, shape, variables, stage, where, body="cond")


def _reduce(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return w.expression(arg, shape, variables, stage, where)
    element = w.expression(arg.get("input"), shape, variables, stage, _where(where, "input"))
    w.expression(arg.get("initialValue"), shape, variables, stage, _where(where, "initialValue"))
    bound = {**variables, "this": element, "value": OPEN}
    w.expression(arg.get("in"), shape, bound, stage, _where(where, "in"))
    return OPEN


def _literal(w, arg, shape, variables, stage, where):
    return OPEN


def _object_to_array(w: _Walker, arg, shape, variables, stage, where):
    inner = w.expression(arg[0] if isinstance(arg, list) and len(arg) == 1 else arg, shape, variables, stage,
                         where)
    return Shape(fields={"k": OPEN, "v": inner.values()})


def _element(w: _Walker, arg, shape, variables, stage, where):
    """`$first`, `$last`, `$arrayElemAt`: the element has the array's shape (paths see through arrays)."""
    if isinstance(arg, list) and arg:
        result = w.expression(arg[0], shape, variables, stage, _where(where, 0))
        for i, rest in enumerate(arg[1:], 1):
            w.expression(rest, shape, variables, stage, _where(where, i))
        return result
    return w.expression(arg, shape, variables, stage, where)


def _alternatives(w: _Walker, arg, shape, variables, stage, where):
    """`$ifNull`, `$mergeObjects`, `$concatArrays`, `$setUnion`: any of the arguments' shapes."""
    if isinstance(arg, list):
        return union(*(w.expression(a, shape, variables, stage, _where(where, i)) for i, a in enumerate(arg)))
    return w.expression(arg, shape, variables, stage, where)


def _cond(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, list) and len(arg) == 3:
        arg = {"if": arg[0], "then": arg[1], "else": arg[2]}
    if not isinstance(arg, dict):
        return w.expression(arg, shape, variables, stage, where)
    w.expression(arg.get("if"), shape, variables, stage, _where(where, "if"))
    return union(w.expression(arg.get("then"), shape, variables, stage, _where(where, "then")),
                 w.expression(arg.get("else"), shape, variables, stage, _where(where, "else")))


def _switch(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return w.expression(arg, shape, variables, stage, where)
    results = []
    for i, branch in enumerate(arg.get("branches") or []):
        if isinstance(branch, dict):
            w.expression(branch.get("case"), shape, variables, stage, _where(where, "branches", i, "case"))
            results.append(w.expression(branch.get("then"), shape, variables, stage,
                                        _where(where, "branches", i, "then")))
    if "default" in arg:
        results.append(w.expression(arg["default"], shape, variables, stage, _where(where, "default")))
    return union(*results)


def _get_field(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, dict):
        base = w.expression(arg.get("input", "$$CURRENT"), shape, variables, stage, _where(where, "input"))
        name = arg.get("field")
        if isinstance(name, str):
            return base.resolve([name]) or OPEN
        w.expression(name, shape, variables, stage, _where(where, "field"))
        return OPEN
    return OPEN  # `{$getField: "name"}`: a literal field name, possibly with dots; not a path


def _sort_array(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, dict):
        return w.expression(arg.get("input"), shape, variables, stage, _where(where, "input"))
    return OPEN


def _in(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
        ref = arg[0]
        if isinstance(ref, str) and ref.startswith("$"):
            target = w._peek(ref, shape, variables)
            path = ref if ref.startswith("$$") else ref[1:]
            for i, literal in enumerate(arg[1]):
                if _is_literal(literal):
                    w.compared(path, literal, stage, where + (1, i), target, where + (0,), shape)
    w.expression(arg, shape, variables, stage, where)
    return OPEN


_EXPRESSIONS = {
    "$let": _let, "$map": _map, "$filter": _filter, "$reduce": _reduce, "$literal": _literal,
    "$objectToArray": _object_to_array, "$first": _element, "$last": _element, "$arrayElemAt": _element,
    "$ifNull": _alternatives, "$mergeObjects": _alternatives, "$concatArrays": _alternatives,
    "$setUnion": _alternatives, "$cond": _cond, "$switch": _switch, "$getField": _get_field,
    "$sortArray": _sort_array, "$in": _in, "$slice": _element,
}


# -- stages: each returns the shape of the documents it outputs -----------------------------------

def _match(w: _Walker, arg, shape, variables, stage, where):
    w.query(arg, shape, variables, stage, where)
    return shape


def _add_fields(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    added = {}
    for name, value in arg.items():
        added[name] = w.expression(value, shape, variables, stage, _where(where, name))
    return shape.with_fields(added)


def _project(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    included, computed, excluded = [], {}, []
    for name, value in arg.items():
        at = _where(where, name)
        if isinstance(value, bool) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            (included if value else excluded).append(name)
        elif isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            # nested projection `{a: {b: 1, c: "$x"}}`: inclusion of a.b, computed a.c
            sub = _project(w, {f"{name}.{k}": v for k, v in value.items()}, shape, variables, stage, where)
            computed[name] = sub.resolve([name]) or OPEN
        else:
            computed[name] = w.expression(value, shape, variables, stage, at)
    if not included and not computed:
        return shape.without(excluded)
    fields = {}
    for name in included:
        found = shape.resolve(_parts(name))
        w.out.references.append(Reference(name, stage, _where(where, name), found is not None, shape))
        _nest(fields, name, found if found is not None else OPEN)
    if "_id" not in excluded and "_id" not in computed and "_id" not in fields:
        found = shape.resolve(["_id"])
        if found is not None:
            fields["_id"] = found
    for name, sub in computed.items():
        _nest(fields, name, sub)
    return Shape(fields=fields)


def _nest(fields: dict, name: str, shape: Shape) -> None:
    head, _, rest = name.partition(".")
    if not rest:
        fields[head] = shape
        return
    inner = fields.get(head)
    inner = Shape(fields=inner.fields if inner is not None and not inner.open and not inner.nodes else {})
    _nest(inner.fields, rest, shape)
    fields[head] = inner


def _unset(w: _Walker, arg, shape, variables, stage, where):
    names = [arg] if isinstance(arg, str) else arg if isinstance(arg, list) else []
    return shape.without([n for n in names if isinstance(n, str)])


def _group(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    fields = {"_id": w.expression(arg.get("_id"), shape, variables, stage, _where(where, "_id"))}
    for name, spec in arg.items():
        if name != "_id":
            fields[name] = _accumulator(w, spec, shape, variables, stage, _where(where, name))
    return Shape(fields=fields)


def _accumulator(w: _Walker, spec, shape, variables, stage, where) -> Shape:
    if not _is_operator_object(spec):
        w.expression(spec, shape, variables, stage, where)
        return OPEN
    result = OPEN
    for op, arg in spec.items():
        at = _where(where, op)
        if isinstance(arg, dict) and "sortBy" in arg:  # $top/$bottom(N): sortBy names fields
            if isinstance(arg["sortBy"], dict):
                _sort(w, arg["sortBy"], shape, variables, stage, _where(at, "sortBy"))
            for key, value in arg.items():
                if key != "sortBy":
                    out = w.expression(value, shape, variables, stage, _where(at, key))
                    if key == "output":
                        result = out
        else:
            out = w.expression(arg, shape, variables, stage, at)
            if op in ("$first", "$last", "$push", "$addToSet", "$max", "$min", "$firstN", "$lastN"):
                result = out
    return result


def _bucket(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    w.expression(arg.get("groupBy"), shape, variables, stage, _where(where, "groupBy"))
    output = arg.get("output")
    fields = {"_id": OPEN}
    if isinstance(output, dict):
        for name, spec in output.items():
            fields[name] = _accumulator(w, spec, shape, variables, stage, _where(where, "output", name))
    else:
        fields["count"] = OPEN
    return Shape(fields=fields)


def _sort(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, dict):
        for key, value in arg.items():
            if not isinstance(value, dict):  # {$meta: "textScore"} sorts by no field
                w.field(key, shape, stage, _where(where, key))
    return shape


def _unwind(w: _Walker, arg, shape, variables, stage, where):
    spec = {"path": arg} if isinstance(arg, str) else arg if isinstance(arg, dict) else {}
    path = spec.get("path")
    if isinstance(path, str) and path.startswith("$"):
        w.field(path[1:], shape, stage, _where(where, "path"))
    index = spec.get("includeArrayIndex")
    return shape.with_fields({index: OPEN}) if isinstance(index, str) else shape


def _lookup(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    foreign = w.collection(arg.get("from"), stage, _where(where, "from")) if "from" in arg else None
    foreign_shape = Shape([foreign]) if foreign is not None else OPEN
    if isinstance(arg.get("localField"), str):
        w.field(arg["localField"], shape, stage, _where(where, "localField"))
    if isinstance(arg.get("foreignField"), str):
        w.field(arg["foreignField"], foreign_shape, stage, _where(where, "foreignField"))
    bound = dict(variables)
    if isinstance(arg.get("let"), dict):
        for name, value in arg["let"].items():
            bound[name] = w.expression(value, shape, variables, stage, _where(where, "let", name))
    joined = foreign_shape
    if "pipeline" in arg:
        joined = w.pipeline(arg["pipeline"], foreign_shape, bound, stage, _where(where, "pipeline"))
    name = arg.get("as")
    return shape.with_fields({name: joined}) if isinstance(name, str) else OPEN


def _graph_lookup(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    foreign = w.collection(arg.get("from"), stage, _where(where, "from"))
    foreign_shape = Shape([foreign]) if foreign is not None else OPEN
    w.expression(arg.get("startWith"), shape, variables, stage, _where(where, "startWith"))
    for key in ("connectFromField", "connectToField"):
        if isinstance(arg.get(key), str):
            w.field(arg[key], foreign_shape, stage, _where(where, key))
    w.query(arg.get("restrictSearchWithMatch"), foreign_shape, variables, stage,
            _where(where, "restrictSearchWithMatch"))
    name = arg.get("as")
    fields = {}
    if isinstance(arg.get("depthField"), str):
        fields[arg["depthField"]] = OPEN
    joined = foreign_shape.with_fields(fields) if fields else foreign_shape
    return shape.with_fields({name: joined}) if isinstance(name, str) else OPEN


def _union_with(w: _Walker, arg, shape, variables, stage, where):
    spec = {"coll": arg} if isinstance(arg, str) else arg if isinstance(arg, dict) else {}
    other = OPEN
    if "coll" in spec:
        node = w.collection(spec["coll"], stage, _where(where, "coll"))
        other = Shape([node]) if node is not None else OPEN
    if "pipeline" in spec:
        other = w.pipeline(spec["pipeline"], other if "coll" in spec else EMPTY, variables, stage,
                           _where(where, "pipeline"))
    return union(shape, other)


def _facet(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    return Shape(fields={name: w.pipeline(sub, shape, variables, stage, _where(where, name))
                         for name, sub in arg.items()})


def _replace_root(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, dict) and "newRoot" in arg:
        return w.expression(arg["newRoot"], shape, variables, stage, _where(where, "newRoot"))
    return OPEN


def _replace_with(w: _Walker, arg, shape, variables, stage, where):
    return w.expression(arg, shape, variables, stage, where)


def _count(w: _Walker, arg, shape, variables, stage, where):
    return Shape(fields={arg: OPEN}) if isinstance(arg, str) else OPEN


def _sort_by_count(w: _Walker, arg, shape, variables, stage, where):
    return Shape(fields={"_id": w.expression(arg, shape, variables, stage, where), "count": OPEN})


def _set_window_fields(w: _Walker, arg, shape, variables, stage, where):
    if not isinstance(arg, dict):
        return OPEN
    w.expression(arg.get("partitionBy"), shape, variables, stage, _where(where, "partitionBy"))
    if isinstance(arg.get("sortBy"), dict):
        _sort(w, arg["sortBy"], shape, variables, stage, _where(where, "sortBy"))
    added = {}
    if isinstance(arg.get("output"), dict):
        for name, spec in arg["output"].items():
            if isinstance(spec, dict):
                spec = {k: v for k, v in spec.items() if k != "window"}
            added[name] = _accumulator(w, spec, shape, variables, stage, _where(where, "output", name))
    return shape.with_fields(added)


def _redact(w: _Walker, arg, shape, variables, stage, where):
    w.expression(arg, shape, variables, stage, where)
    return shape


def _passthrough(w: _Walker, arg, shape, variables, stage, where):
    if isinstance(arg, dict):
        for key in ("field", "partitionByFields"):
            value = arg.get(key)
            for name in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
                if isinstance(name, str):
                    w.field(name, shape, stage, _where(where, key))
    return shape


def _limit(w: _Walker, arg, shape, variables, stage, where):
    w.out.limits.append((arg, where))
    return shape


def _skip(w: _Walker, arg, shape, variables, stage, where):
    return shape


_STAGES = {
    "$match": _match, "$addFields": _add_fields, "$set": _add_fields, "$project": _project,
    "$unset": _unset, "$group": _group, "$bucket": _bucket, "$bucketAuto": _bucket, "$sort": _sort,
    "$unwind": _unwind, "$lookup": _lookup, "$graphLookup": _graph_lookup, "$unionWith": _union_with,
    "$facet": _facet, "$replaceRoot": _replace_root, "$replaceWith": _replace_with, "$count": _count,
    "$sortByCount": _sort_by_count, "$setWindowFields": _set_window_fields, "$redact": _redact,
    "$densify": _passthrough, "$fill": _passthrough, "$limit": _limit, "$skip": _skip,
}


__all__ = ["Node", "Shape", "OPEN", "union", "walk", "Walk", "Reference", "Comparison", "CollectionName"]
