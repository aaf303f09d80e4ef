"""The scoped field-reference walk: which fields exist after each stage.

A pipeline reads fields of the documents that flow into each stage; which
fields those are depends on every stage before it (`$project` keeps some,
`$group` replaces them all, `$lookup` adds one, `$unwind` turns an array into
its elements, `$facet` nests whole sub-pipelines...). `walk` follows the
stream stage by stage with a :class:`Shape` of the current document and
reports every field reference (`"$a.b"` in an expression, `a.b` as a `$match`
key, a `$sort` key, `$unwind` path, `localField`...), every `$$variable`
path with what it is bound to (`as`, `let`, `$$this`/`$$value`), every
collection a stage names, every literal compared with a field, and every
operator with the kind its position gives it.

What each operator's argument holds, which fields it introduces and which
variables it binds is not written here: the walk interprets the declarations
of :mod:`nlq.mql.registry` (terms of :mod:`nlq.mql.grammar`), so an operator
declared there is walked everywhere.

The physical fields of a collection come from a :class:`Node` tree (built by
the caller from an induced schema, e.g. nlq's grounding index). Whatever the
walk cannot know (the output of an unknown stage, fields computed by an
arbitrary expression) is *open*: every path under it resolves, so the walk
never reports a path that might exist.

    >>> schema = {"c": Node.from_paths("c", ["a", "a.b", "n"])}
    >>> r = walk(Query("c", [{"$group": {"_id": "$a.b", "n": {"$sum": 1}}}, {"$sort": {"m": 1}}]), schema)
    >>> [(x.path, x.stage, x.found) for x in r.references]
    [('a.b', 0, True), ('m', 1, False)]
"""

from __future__ import annotations

from nlq.mql import grammar, registry
from nlq.mql.grammar import Bound, Foreign, Keys, Term, Vars
from nlq.mql.query import Query
from nlq.mql.registry import ACCUMULATOR, EXPRESSION, PROJECTION, QUERY, STAGE, VARIABLE, WINDOW
from nlq.mql.shapes import (ARRAY, EMPTY, MAP, OPEN, CollectionName, Comparison, Node, Reference, Shape, Walk,
                            union)


def walk(query, schema: dict) -> Walk:
    """Walk a Query, a `{collection, pipeline}` dict or a bare pipeline over `schema` = {collection: Node}."""
    if isinstance(query, list):
        query = Query(None, query)
    elif isinstance(query, dict):
        query = Query(query.get("collection"), query.get("pipeline") or [])
    walker = _Walker(schema)
    root = schema.get(query.collection) if isinstance(query.collection, str) else None
    walker.out.collections.append(CollectionName(query.collection, None, (), root is not None))
    shape = Shape([root]) if root is not None else OPEN
    walker.out.output = walker.pipeline(query.pipeline, shape, {}, None, ())
    return walker.out


def position(where: tuple) -> str:
    """A location inside the pipeline as text: `3.$group.total.$sum`."""
    return ".".join(str(p) for p in where)


def _parts(path: str) -> list[str]:
    return path.split(".")


class _Context:
    """What one operator's argument introduces while it is walked."""

    __slots__ = ("shape", "stage", "values", "fields", "removed", "joined", "joined_fields", "scoped", "siblings",
                 "malformed", "condition")

    def __init__(self, shape: Shape, stage, condition=None):
        self.shape, self.stage = shape, stage
        self.values: list[Shape] = []          # shapes of the Value parts
        self.fields: dict[str, Shape] = {}     # new fields
        self.removed: list[str] = []
        self.joined: Shape = OPEN              # documents of the named collection (or the sub-pipeline's output)
        self.joined_fields: dict[str, Shape] = {}
        self.scoped: dict[str, dict] = {}      # sibling key -> variables bound for it
        self.siblings: dict = {}               # the object whose keys are being walked
        self.malformed = False
        self.condition = condition             # (path, target, key_where) of a field condition

    def value(self) -> Shape:
        return union(*self.values) if self.values else OPEN


class _Walker:
    def __init__(self, schema: dict):
        self.schema = schema
        self.out = Walk()
        self.alternative: tuple | None = None

    def report(self, name: str, kind: str, where: tuple) -> None:
        self.out.operators.append((name, kind, where))

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
        system = "$$" + name
        if registry.is_known(system, VARIABLE):
            self.report(system, VARIABLE, where)
            self.out.variables.append((system, True, where))
        else:
            self.out.variables.append((system, name in variables, where))
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

    # -- pipelines and stages ----------------------------------------------------------

    def pipeline(self, stages, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        if not isinstance(stages, list):
            return OPEN
        for i, spec in enumerate(stages):
            root = i if stage is None else stage
            if not isinstance(spec, dict) or len(spec) != 1:
                for name, arg in spec.items() if isinstance(spec, dict) else ():
                    self.stage(name, arg, OPEN, variables, root, where + (i, name))
                shape = OPEN  # a malformed stage: whatever follows may read anything
                continue
            (name, arg), = spec.items()
            shape = self.stage(name, arg, shape, variables, root, where + (i, name))
        return shape

    def stage(self, name: str, arg, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        """Walk one stage's argument by its declaration; return the shape of the documents after it."""
        self.report(name, STAGE, where)
        op = registry.get(name)
        if op is None or STAGE not in op.args or op.output is None:
            # An unknown stage: its nested operators (forbidden ones included) are still seen.
            self.expression(arg, OPEN, variables, stage, where)
            return OPEN
        ctx = _Context(shape, stage)
        _method(op.args[STAGE])(self, op.args[STAGE], arg, ctx, variables, where)
        mode = op.output.mode
        if ctx.malformed or mode == "open":
            return OPEN
        if mode == "keep":
            return shape
        if mode == "add":
            out = shape.without(ctx.removed) if ctx.removed else shape
            return out.with_fields(ctx.fields) if ctx.fields else out
        if mode == "new":
            fields = dict(ctx.fields)
            for name in op.output.fixed:
                fields.setdefault(name, OPEN)
            return Shape(fields=fields)
        if mode == "value":
            return ctx.value()
        return union(shape, ctx.joined)  # "union"

    # -- expressions -------------------------------------------------------------------

    def expression(self, expr, shape: Shape, variables: dict, stage, where: tuple) -> Shape:
        """Report the references of an aggregation expression; return the shape of its value."""
        t = type(expr)
        if t is str:
            if expr.startswith("$$"):
                return self.variable(expr, shape, variables, stage, where)
            if expr.startswith("$"):
                return self.field(expr[1:], shape, stage, where)
            return EMPTY  # a constant has no fields
        if t is list:
            elements = [self.expression(element, shape, variables, stage, where + (i,))
                        for i, element in enumerate(expr)]
            # a constant array has the fields of its documents (paths see through arrays)
            return union(EMPTY, *elements) if _constant(expr) else OPEN
        if t is not dict:
            return EMPTY
        if expr and next(iter(expr)).startswith("$"):
            result = OPEN
            for op, arg in expr.items():
                self.report(op, EXPRESSION, where + (op,))
                result = self.argument(op, (EXPRESSION,), arg, shape, variables, stage, where + (op,))
            return result
        fields = {}
        for key, value in expr.items():
            if key.startswith("$"):  # invalid in MongoDB; walked so that it is not missed
                self.report(key, EXPRESSION, where + (key,))
                self.argument(key, (EXPRESSION,), value, shape, variables, stage, where + (key,))
            else:
                fields[key] = self.expression(value, shape, variables, stage, where + (key,))
        return Shape(fields=fields)

    def argument(self, name: str, kinds: tuple, arg, shape: Shape, variables: dict, stage, where: tuple,
                 condition=None) -> Shape:
        """Walk the argument of operator `name` by its declaration as the first of `kinds` it has (an
        unknown operator's argument is an expression); return the operator's value."""
        op = registry.get(name)
        kind = next((k for k in kinds if op is not None and k in op.kinds), None)
        term = op.argument(kind) if kind is not None else (grammar.DATA if kinds[0] == QUERY else grammar.EXPR)
        ctx = _Context(shape, stage, condition)
        _method(term)(self, term, arg, ctx, variables, where)
        return ctx.value()

    # -- the grammar of declarations ------------------------------------------------------

    def _malformed(self, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        """An argument of the wrong type: its nested operators are still seen, nothing is known after it."""
        ctx.malformed = True
        self.expression(value, OPEN, variables, ctx.stage, where)
        return OPEN

    def _keys(self, term: Keys, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        if not isinstance(value, dict):
            return self._malformed(value, ctx, variables, where)
        outer, ctx.siblings = ctx.siblings, value
        for key, sub in term.keys.items():
            if isinstance(sub, Vars) and sub.extra:
                for target in sub.into:
                    ctx.scoped.setdefault(target, {}).update(dict.fromkeys(sub.extra, OPEN))
            if key not in value and isinstance(sub, grammar.Fields):
                for name in sub.otherwise:
                    ctx.fields.setdefault(name, OPEN)
        # what other keys depend on (a collection, bound variables) first, the joined documents' name last
        order = sorted(value, key=lambda k: _priority(term.keys.get(k)))
        for key in order:
            sub = term.keys.get(key, term.rest)
            scoped = ctx.scoped.get(key)
            inner = {**variables, **scoped} if scoped else variables
            _method(sub)(self, sub, value[key], ctx, inner, where + (key,))
        ctx.siblings = outer
        return OPEN

    def _fields(self, term: grammar.Fields, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        if not isinstance(value, dict):
            return self._malformed(value, ctx, variables, where)
        for name, sub in value.items():
            value_term = term.named.get(name) or term.value
            ctx.fields[name] = _method(value_term)(self, value_term, sub, ctx, variables, where + (name,))
        return OPEN

    def _items(self, term: grammar.Items, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        if not isinstance(value, list):
            return OPEN
        outer = self.alternative
        for i, item in enumerate(value):
            if term.alternatives:
                self.alternative = (where, i, len(value))
            _method(term.item)(self, term.item, item, ctx, variables, where + (i,))
        self.alternative = outer
        return OPEN

    def _positional(self, term: grammar.Positional, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        if not isinstance(value, list):
            return self._malformed(value, ctx, variables, where)
        for i, item in enumerate(value):
            item_term = term.items[i] if i < len(term.items) else term.rest
            _method(item_term)(self, item_term, item, ctx, variables, where + (i,))
        return OPEN

    def _either(self, term: grammar.Either, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        chosen = term.pick(value)
        if chosen is None:
            return self._malformed(value, ctx, variables, where)
        return _method(chosen)(self, chosen, value, ctx, variables, where)

    def _shorthand(self, term: grammar.Shorthand, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        value = {term.key: value} if type(value) is str else value
        return _method(term.term)(self, term.term, value, ctx, variables, where)

    def _value(self, term: grammar.Value, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        shape = _method(term.term)(self, term.term, value, ctx, variables, where)
        ctx.values.append(shape)
        return shape

    def _into(self, term: grammar.Into, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        shape = ctx.fields[term.name] = _method(term.term)(self, term.term, value, ctx, variables, where)
        return shape

    def _foreign(self, term: Foreign, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        outer, ctx.shape = ctx.shape, ctx.joined
        shape = _method(term.term)(self, term.term, value, ctx, variables, where)
        ctx.shape = outer
        if term.term is grammar.PIPELINE:
            ctx.joined = shape
        return shape

    def _vars(self, term: Vars, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        if not isinstance(value, dict):
            return OPEN
        walk_value, bound = _method(term.value), {}
        for name, sub in value.items():
            bound[name] = walk_value(self, term.value, sub, ctx, variables, where + (name,))
        for target in term.into:
            ctx.scoped.setdefault(target, {}).update(bound)
        return OPEN

    def _bound(self, term: Bound, value, ctx: _Context, variables: dict, where: tuple) -> Shape:
        shape = _method(term.term)(self, term.term, value, ctx, variables, where)
        name = ctx.siblings.get(term.name_key, term.default) if term.name_key else term.default
        bound = dict.fromkeys(term.extra, OPEN)
        if isinstance(name, str):
            bound[name] = shape
        for target in term.into:
            ctx.scoped.setdefault(target, {}).update(bound)
        return shape

    # leaves ---------------------------------------------------------------------------------

    def _expr(self, term, value, ctx, variables, where) -> Shape:
        return self.expression(value, ctx.shape, variables, ctx.stage, where)

    def _data(self, term, value, ctx, variables, where) -> Shape:
        return OPEN

    _document_data = _data

    def _filter(self, term, value, ctx, variables, where) -> Shape:
        self.query(value, ctx.shape, variables, ctx.stage, where)
        return OPEN

    def _pipeline(self, term, value, ctx, variables, where) -> Shape:
        return self.pipeline(value, ctx.shape, variables, ctx.stage, where)

    def _field(self, term, value, ctx, variables, where) -> Shape:
        names = [value] if type(value) is str else value if type(value) is list else []
        found = OPEN
        for name in names:
            if type(name) is str:
                found = self.field(name, ctx.shape, ctx.stage, where)
        return found

    def _sort(self, term, value, ctx, variables, where) -> Shape:
        if not isinstance(value, dict):
            ctx.malformed = True
            return OPEN
        for key, order in value.items():
            if type(order) is dict:  # {$meta: "textScore"} sorts by no field
                self.expression(order, ctx.shape, variables, ctx.stage, where + (key,))
            else:
                self.field(key, ctx.shape, ctx.stage, where + (key,))
        return OPEN

    def _collection(self, term, value, ctx, variables, where) -> Shape:
        node = self.collection(value, ctx.stage, where)
        ctx.joined = Shape([node]) if node is not None else OPEN
        return ctx.joined

    def _name(self, term, value, ctx, variables, where) -> Shape:
        if type(value) is str:
            ctx.fields[value] = OPEN
        else:
            ctx.malformed = True
        return OPEN

    def _joined(self, term, value, ctx, variables, where) -> Shape:
        if type(value) is str:
            joined = ctx.joined.with_fields(ctx.joined_fields) if ctx.joined_fields else ctx.joined
            ctx.fields[value] = joined
        return OPEN

    def _joined_name(self, term, value, ctx, variables, where) -> Shape:
        if type(value) is str:
            ctx.joined_fields[value] = OPEN
        return OPEN

    def _removed(self, term, value, ctx, variables, where) -> Shape:
        if type(value) is str:
            ctx.removed.append(value)
        return OPEN

    def _row_limit(self, term, value, ctx, variables, where) -> Shape:
        self.out.limits.append((value, where))
        return OPEN

    def _accumulator(self, term, spec, ctx, variables, where) -> Shape:
        """`{$acc: argument}`: the field's value is the accumulator's."""
        if not isinstance(spec, dict):
            self.expression(spec, ctx.shape, variables, ctx.stage, where)
            return OPEN
        result = OPEN
        for op, arg in spec.items():
            self.report(op, ACCUMULATOR, where + (op,))
            result = self.argument(op, (ACCUMULATOR,), arg, ctx.shape, variables, ctx.stage, where + (op,))
        return result

    def _window(self, term, spec, ctx, variables, where) -> Shape:
        """`{$fn: argument, window: {...}}`: a window function or an accumulator over a window."""
        if not isinstance(spec, dict):
            self.expression(spec, ctx.shape, variables, ctx.stage, where)
            return OPEN
        result = OPEN
        for op, arg in spec.items():
            if op == "window":
                continue
            if not op.startswith("$"):
                self.expression(arg, ctx.shape, variables, ctx.stage, where + (op,))
                continue
            self.report(op, WINDOW, where + (op,))
            result = self.argument(op, (WINDOW, ACCUMULATOR), arg, ctx.shape, variables, ctx.stage, where + (op,))
        return result

    def _projection(self, term, spec, ctx, variables, where) -> Shape:
        """`$project`: 0/1 flags, expressions, nested projections; the value is the projected document."""
        if not isinstance(spec, dict):
            ctx.malformed = True
            return OPEN
        shape, stage = ctx.shape, ctx.stage
        included, computed, excluded = [], {}, []

        def visit(spec: dict, at: tuple, prefix: str) -> None:
            for name, value in spec.items():
                here, full = at + (name,), prefix + name
                if name == "$" or name.endswith(".$"):
                    self.report("$", PROJECTION, here)
                if isinstance(value, (bool, int, float)):
                    (included if value else excluded).append((full, here))
                elif type(value) is dict and value and not next(iter(value)).startswith("$"):
                    visit(value, here, full + ".")  # `{a: {b: 1, c: "$x"}}`: inclusion of a.b, computed a.c
                else:
                    computed[full] = self.expression(value, shape, variables, stage, here)

        visit(spec, where, "")
        if not included and not computed:
            return shape.without([name for name, _ in excluded])
        fields: dict = {}
        for name, here in included:
            found = shape.resolve(_parts(name))
            self.out.references.append(Reference(name, stage, here, found is not None, shape))
            _nest(fields, name, found if found is not None else OPEN)
        excluded_names = {name for name, _ in excluded}
        if "_id" not in excluded_names and "_id" not in computed and "_id" not in fields:
            found = shape.resolve(["_id"])
            if found is not None:
                fields["_id"] = found
        for name, sub in computed.items():
            _nest(fields, name, sub)
        return Shape(fields=fields)

    def _comparison(self, term, args, ctx, variables, where) -> Shape:
        """`{$eq: ["$a", "x"]}` (either order) records a comparison."""
        if type(args) is list and len(args) == 2:
            for i, (ref, literal) in enumerate((args, args[::-1])):
                if isinstance(ref, str) and ref.startswith("$") and _is_literal(literal):
                    target = self._peek(ref, ctx.shape, variables)
                    path = ref[1:] if not ref.startswith("$$") else ref
                    self.compared(path, literal, ctx.stage, where + (1 - i,), target, where + (i,), ctx.shape)
                    break
        self.expression(args, ctx.shape, variables, ctx.stage, where)
        return OPEN

    def _membership(self, term, args, ctx, variables, where) -> Shape:
        """`{$in: ["$a", [literals]]}` records a comparison per literal."""
        if type(args) is list and len(args) == 2 and type(args[1]) is list:
            ref = args[0]
            if isinstance(ref, str) and ref.startswith("$"):
                target = self._peek(ref, ctx.shape, variables)
                path = ref if ref.startswith("$$") else ref[1:]
                for i, literal in enumerate(args[1]):
                    if _is_literal(literal):
                        self.compared(path, literal, ctx.stage, where + (1, i), target, where + (0,), ctx.shape)
        self.expression(args, ctx.shape, variables, ctx.stage, where)
        return OPEN

    def _entries(self, term, arg, ctx, variables, where) -> Shape:
        inner = self.expression(arg[0] if type(arg) is list and len(arg) == 1 else arg, ctx.shape, variables,
                                ctx.stage, where)
        return Shape(fields={"k": OPEN, "v": inner.values()})

    def _get_field(self, term, arg, ctx, variables, where) -> Shape:
        if not isinstance(arg, dict):
            return OPEN  # `{$getField: "name"}`: a literal field name, possibly with dots; not a path
        if _is_operator_object(arg):  # `{$getField: {$literal: "$x"}}`: the name is an expression
            self.expression(arg, ctx.shape, variables, ctx.stage, where)
            return OPEN
        base = ctx.shape  # `input` defaults to $$CURRENT
        for key, value in arg.items():
            if key == "input":
                base = self.expression(value, ctx.shape, variables, ctx.stage, where + (key,))
            elif key != "field" or not isinstance(value, str):
                self.expression(value, ctx.shape, variables, ctx.stage, where + (key,))
        name = arg.get("field")
        return (base.resolve([name]) or OPEN) if isinstance(name, str) else OPEN

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
            at = where + (key,)
            if key.startswith("$"):
                self.report(key, QUERY, at)
                op = registry.get(key)
                if op is not None and QUERY in op.kinds and _of_document(op):
                    self.argument(key, (QUERY,), value, shape, variables, stage, at)
            else:
                target = self.field(key, shape, stage, at)
                self.condition(key, value, target, shape, variables, stage, at, at)

    def condition(self, path: str, value, target: Shape, shape, variables, stage, where: tuple,
                  key_where: tuple) -> None:
        """A condition on the field `path` (whose shape is `target`): operators or a literal."""
        if _is_operator_object(value):
            for op, arg in value.items():
                self.report(op, QUERY, where + (op,))
                self.argument(op, (QUERY,), arg, shape, variables, stage, where + (op,),
                              condition=(path, target, key_where))
        elif _is_literal(value):
            self.compared(path, value, stage, where, target, key_where, shape)

    def _literal(self, term, value, ctx, variables, where) -> Shape:
        if ctx.condition is not None and _is_literal(value):
            path, target, key_where = ctx.condition
            self.compared(path, value, ctx.stage, where, target, key_where, ctx.shape)
        return OPEN

    def _literals(self, term, value, ctx, variables, where) -> Shape:
        if ctx.condition is None:
            return OPEN
        if not isinstance(value, list):
            return self._literal(term, value, ctx, variables, where)
        path, target, key_where = ctx.condition
        for i, item in enumerate(value):
            if _is_operator_object(item):  # `$all: [{$elemMatch: ...}]`
                self.condition(path, item, target, ctx.shape, variables, ctx.stage, where + (i,), key_where)
            elif _is_literal(item):
                self.compared(path, item, ctx.stage, where + (i,), target, key_where, ctx.shape)
        return OPEN

    def _condition(self, term, value, ctx, variables, where) -> Shape:
        if ctx.condition is not None:
            path, target, key_where = ctx.condition
            self.condition(path, value, target, ctx.shape, variables, ctx.stage, where, key_where)
        return OPEN

    def _element_match(self, term, value, ctx, variables, where) -> Shape:
        if not isinstance(value, dict) or ctx.condition is None:
            return OPEN
        path, target, key_where = ctx.condition
        if _is_operator_object(value) and not any(_of_document(registry.get(k)) for k in value):
            self.condition(path, value, target, ctx.shape, variables, ctx.stage, where, key_where)
        else:  # a filter over the elements
            self.query(value, target, variables, ctx.stage, where)
        return OPEN

    def _geometry(self, term, value, ctx, variables, where) -> Shape:
        if type(value) is dict:
            for key in value:
                if key.startswith("$"):
                    self.report(key, QUERY, where + (key,))
        return OPEN


# term id -> the walker method that interprets it (terms are declared once and live as long as the registry)
_METHODS: dict[int, object] = {}
_TERMS: list[Term] = []


def _method(term: Term):
    """The walker method that walks a `term`: `_method(term)(walker, term, value, ctx, variables, where)`
    (called so, the walk takes one frame per level of the argument, not two)."""
    method = _METHODS.get(id(term))
    if method is None:
        method = _METHODS[id(term)] = getattr(_Walker, "_" + term.kind)
        _TERMS.append(term)  # keeps the id valid
    return method


def _of_document(op) -> bool:
    """A query operator that applies to the whole document (`$and`, `$expr`, `$where`), not to a field."""
    if op is None or QUERY not in op.kinds:
        return False
    term = op.argument(QUERY)
    return isinstance(term, grammar.Items) or term in (grammar.EXPR, grammar.DOCUMENT_DATA)


def _priority(term: Term | None) -> int:
    """The order keys of an argument are walked in: a collection and bound variables first (other keys read
    them), the name of the joined documents last, the rest in the argument's order."""
    while isinstance(term, (grammar.Value, Foreign)):
        term = term.term
    if term is grammar.COLLECTION or isinstance(term, (Vars, Bound)):
        return 0
    return 2 if term is grammar.JOINED else 1


def _nest(fields: dict, name: str, shape: Shape) -> None:
    head, _, rest = name.partition(".")
    if not rest:
        fields[head] = shape
        return
    inner = fields.get(head)
    inner = Shape(fields=inner.fields if inner is not None and not inner.open and not inner.nodes else {})
    _nest(inner.fields, rest, shape)
    fields[head] = inner


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


__all__ = ["Node", "Shape", "OPEN", "EMPTY", "MAP", "ARRAY", "union", "walk", "position", "Walk", "Reference",
           "Comparison", "CollectionName"]
