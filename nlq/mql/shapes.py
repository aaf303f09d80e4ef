"""What the documents at one point of a pipeline look like, and what the scoped walk reports.

A :class:`Node` tree holds the physical paths of a collection (built from an
induced schema: `<*>` under a node stands for the keys of a dynamic map,
array nodes let a numeric component `a.0.b` index an element); a
:class:`Shape` is what a document may be at one point of a pipeline: some
physical subtrees, computed fields, removed fields, or *open* (anything).
:mod:`nlq.mql.scope` computes them stage by stage and reports
:class:`Reference`, :class:`Comparison` and :class:`CollectionName` records.

    >>> Shape([Node.from_paths("c", ["a", "a.b"])]).with_fields({"n": OPEN}).paths()
    ['a', 'a.b', 'n']
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    @classmethod
    def unknown(cls, collection: str) -> "Node":
        """A collection whose schema is not known: every path exists, as a node of its own (so that
        what a pipeline reads there can still be told from what it computed)."""
        root = cls(collection)
        root.children = _Everything(root)
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


class _Everything(dict):
    """The children of a :meth:`Node.unknown` node: any name is one, made when first asked for."""

    def __init__(self, parent: Node):
        super().__init__()
        self.parent = parent

    def get(self, name, default=None):
        child = dict.get(self, name)
        if child is None and name != MAP:
            path = f"{self.parent.path}.{name}" if self.parent.path else name
            child = self[name] = Node(self.parent.collection, path)
            child.children = _Everything(child)
        return child if child is not None else default


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
    operators: list = field(default_factory=list)     # (name, kind, where) of every operator, in document order
    variables: list = field(default_factory=list)     # ($$name, bound?, where) of every variable reference
    output: Shape = OPEN                                 # the shape of the result documents


__all__ = ["MAP", "ARRAY", "Node", "Shape", "OPEN", "EMPTY", "union", "Reference", "Comparison", "CollectionName",
           "Walk"]
