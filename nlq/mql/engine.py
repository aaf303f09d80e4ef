"""The embedded aggregation engine: compile a pipeline once, stream documents through it.

    >>> aggregate([{"a": 1}, {"a": 2}], [{"$match": {"a": {"$gt": 1}}}])
    [{'a': 2}]

Each stage name maps, through the operator registry, to a compiler
`compile(spec, ctx) -> fn(stream) -> stream` (the modules of `nlq.mql.stages`,
one per family). The compiled
pipeline is a chain of generators, so a `$match`-first pipeline never
materializes what it drops, and input documents are never copied unless a
stage modifies them (it then builds a new dict; the input stays untouched).

Limits: a deadline checked once per document in every loop
(`StageContext.check`), every few elements in loops inside expressions
(`expressions.check_deadline`) and inside regular expressions, a row cap and a
byte cap on the result, a byte cap on every value an expression builds, at most
1000 stages per pipeline and a bound on document nesting depth (`nlq.mql.limits`)
— each a typed error, never a hang or a traceback.
"""

from __future__ import annotations

import gc
import time
from collections import ChainMap
from typing import Callable, Iterable, Iterator

from nlq.errors import ExecutionError, QueryTimeout, ResultTooLarge
from nlq.mql import analyze, registry
from nlq.mql.registry import STAGE
from nlq.mql.stages import fusion
from nlq.mql.expressions import bindings, deadline
from nlq.mql.limits import (DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, MAX_NESTING, MAX_VALUE_BYTES,
                             check_query_depth, check_stage_count, value_size)

Stream = Iterable[dict]
CompiledPipeline = Callable[[Stream], Iterator[dict]]

# Stages chained lazily before the stream is materialized once (see compile_pipeline.run).
SEGMENT = 100



# The clock is read at most every _MAX_STRIDE checks: a stage calls `check()` once per document,
# and reading time.monotonic() each time is a measurable part of a cheap stage's cost. The stride
# doubles while reads come less than _GAP apart and drops to 1 (a read on every check) as soon as
# they come further apart, so slow documents are timed one by one and the deadline holds.
_MAX_STRIDE = 16
_GAP = 0.001  # seconds


class _Clock:
    """The deadline shared by a context and all its children (sub-pipelines)."""

    __slots__ = ("timeout", "deadline", "left", "stride", "last")

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.deadline = float("inf")
        self.left = self.stride = 1
        self.last = 0.0

    def start(self) -> None:
        self.last = time.monotonic()
        self.deadline = self.last + self.timeout
        self.left = self.stride = 1

    def check(self) -> None:
        """QueryTimeout once the deadline has passed (reads the clock every `stride` calls)."""
        self.left -= 1
        if self.left <= 0:
            now = time.monotonic()
            if now > self.deadline:
                raise self.expired()
            self.stride = min(self.stride * 2, _MAX_STRIDE) if now - self.last < _GAP else 1
            self.left = self.stride
            self.last = now

    def check_now(self) -> None:
        """QueryTimeout once the deadline has passed (reads the clock on every call)."""
        if time.monotonic() > self.deadline:
            raise self.expired()

    def remaining(self) -> float:
        """Seconds left before the deadline (negative past it, infinite before `start()`)."""
        return self.deadline - time.monotonic()

    def expired(self) -> QueryTimeout:
        return QueryTimeout(f"query exceeded the time limit of {self.timeout:g} s (raise it with --timeout)",
                            code=50)


class StageContext:
    """What a stage compiler may use besides its own spec.

    - `catalog(name)`: the documents of another collection of the same database
      (`[]` when it does not exist);
    - `check()`: raise QueryTimeout once the deadline has passed (call it once
      per document in every loop that can run long; it is cheap: the clock is
      read every few calls, see `_Clock.check`);
    - `compile_pipeline(pipeline, variables=None)`: compile a sub-pipeline
      (`$facet`, `$lookup`, `$unionWith`). `variables` is held by reference:
      a stage that re-binds per document (a `$lookup` `let`) assigns into that
      dict before running the compiled sub-pipeline over a document's inputs;
    - `variables`: the `$$names` in scope (a mapping).
    """

    def __init__(self, catalog: Callable[[str], list] | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 variables=None, _clock: _Clock | None = None, depth: int = 0):
        self._catalog = catalog or (lambda name: [])
        self._clock = _clock or _Clock(timeout)
        self.variables = variables if variables is not None else {}
        self.depth = depth  # sub-pipeline nesting ($facet in $lookup in ...)
        self.check = self._clock.check  # QueryTimeout past the deadline (see `_Clock.check`)

    def catalog(self, name: str) -> list[dict]:
        docs = self._catalog(name)
        return docs if docs is not None else []

    def start(self) -> None:
        """Start the clock (aggregate() does this right before streaming)."""
        self._clock.start()

    def vars(self, doc) -> dict:
        """The variable bindings for evaluating an expression against `doc` (a new dict)."""
        return bindings(doc, self.variables)

    def binder(self) -> Callable[[dict], dict]:
        """`vars` for a stage that is done with one document's bindings before it binds the next
        (and keeps none): built once per compiled stage, so a pipeline without variables of its
        own rebinds CURRENT and ROOT in one dict instead of building one per document. Inside a
        sub-pipeline (whose `$$` variables a `$lookup` rebinds per document) it is `vars`."""
        scope = self.variables
        if type(scope) is not dict or scope:
            return self.vars
        frame: dict = {}

        def bind(doc) -> dict:
            frame["CURRENT"] = frame["ROOT"] = doc
            return frame
        return bind

    def child(self, variables=None) -> "StageContext":
        scope = self.variables if variables is None else ChainMap(variables, self.variables)
        if self.depth >= 20:
            raise ExecutionError("sub-pipelines are nested too deeply (more than 20 levels)")
        return StageContext(self._catalog, variables=scope, _clock=self._clock, depth=self.depth + 1)

    def compile_pipeline(self, pipeline, variables=None) -> CompiledPipeline:
        return compile_pipeline(pipeline, self.child(variables))


def _stage_compiler(name: str):
    return registry.resolve(
        name, STAGE, unknown="unrecognized pipeline stage name: {name}{suggestion}",
        other_kind="unrecognized pipeline stage name: {name} ({name} is {article} {kind} operator)",
        forbidden="{name} is forbidden (nlq runs only read-only, deterministic queries)",
        unsupported="the embedded engine does not support the stage {name}")


def _following_limit(pipeline: list, i: int) -> int | None:
    """N when stage i+1 is a valid `{$limit: N}` (a top-N sort needs only N documents)."""
    if i + 1 < len(pipeline):
        after = pipeline[i + 1]
        if type(after) is dict and len(after) == 1 and type(after.get("$limit")) is int and after["$limit"] > 0:
            return after["$limit"]
    return None


def _unwind_path(stage) -> str | None:
    """The field path (without `$`) of a `{$unwind: ...}` stage, None for any other stage."""
    if type(stage) is not dict or len(stage) != 1 or "$unwind" not in stage:
        return None
    spec = stage["$unwind"]
    path = spec if type(spec) is str else spec.get("path") if type(spec) is dict else None
    return path[1:] if type(path) is str and path.startswith("$") else None


def _strings(spec) -> Iterator[str]:
    """Every string of a specification, keys included."""
    if type(spec) is str:
        yield spec
    elif type(spec) is dict:
        for key, value in spec.items():
            yield key
            yield from _strings(value)
    elif type(spec) is list:
        for value in spec:
            yield from _strings(value)


def _unwind_may_share(pipeline: list, i: int) -> bool:
    """True when the `$unwind` at i may emit one copy of each input document, rebound for every
    element, instead of a copy per element: the stages after it are `$unwind`s and then a
    `$group`, which is done with each document before it pulls the next and keeps none of
    them. It keeps one only through the document itself (`$$ROOT`, `$$CURRENT`) or, for a
    dotted unwind path, through an embedded document on that path (`$a` of `$a.b`, or
    `$getField`), so a `$group` naming any of those is given fresh copies."""
    prefixes = set()
    j = i
    while j < len(pipeline) and (path := _unwind_path(pipeline[j])) is not None:
        parts = path.split(".")
        prefixes |= {"$" + ".".join(parts[:k]) for k in range(1, len(parts))}
        j += 1
    group = pipeline[j] if j < len(pipeline) else None
    if type(group) is not dict or len(group) != 1 or "$group" not in group:
        return False
    for text in _strings(group["$group"]):
        if text.startswith(("$$ROOT", "$$CURRENT")) or text in prefixes or (prefixes and text == "$getField"):
            return False
    return True


def compile_pipeline(pipeline, ctx: StageContext | None = None) -> CompiledPipeline:
    """Compile every stage once; returns `fn(documents) -> iterator of result documents`.

    Raises UnknownOperatorError / ForbiddenOperatorError / UnsupportedOperatorError /
    ExecutionError (malformed stage) before any document flows.
    """
    if ctx is None:
        ctx = StageContext()
    if type(pipeline) is not list:
        raise ExecutionError("a pipeline must be an array of stage objects")
    check_stage_count(pipeline)
    stages = []
    for i, stage in enumerate(pipeline):
        if type(stage) is not dict or len(stage) != 1:
            raise ExecutionError("a pipeline stage specification object must contain exactly one field")
        name, spec = next(iter(stage.items()))
        compiler = _stage_compiler(name)
        if name == "$sort" and (limit := _following_limit(pipeline, i)) is not None:
            stages.append(compiler(spec, ctx, limit=limit))
        elif name == "$unwind" and _unwind_may_share(pipeline, i):
            stages.append(compiler(spec, ctx, share=True))
        else:
            stages.append(compiler(spec, ctx))
    # every stage compiled (so every specification error raised) before adjacent ones are fused
    stages = fusion.fuse(pipeline, stages, ctx)

    def run(docs: Stream) -> Iterator[dict]:
        stream = iter(docs)
        for i, fn in enumerate(stages):
            if i and i % SEGMENT == 0:
                # Each stage is a generator reading the one before it, so pulling a document
                # through n stages nests n Python frames: every SEGMENT stages the stream is
                # materialized, which keeps the nesting bounded whatever the stage count.
                stream = iter(list(stream))
            stream = fn(stream)
        return stream
    return run


def aggregate(docs: Stream, pipeline, *, catalog: Callable[[str], list] = lambda name: [],
              timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
              max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
    """Run `pipeline` over `docs` and return the result rows.

    `catalog(name)` gives the documents of other collections (`$lookup`,
    `$unionWith`, `$graphLookup`). Raises ForbiddenOperatorError before running,
    QueryTimeout past `timeout` seconds, ResultTooLarge beyond `max_rows` rows or
    about `max_bytes` bytes of BSON, ExecutionError for errors MongoDB raises.
    """
    ctx = StageContext(catalog, timeout=timeout)
    # The input documents are long-lived; a full garbage collection scanning all of
    # them in the middle of an allocation-heavy pipeline would overshoot the deadline.
    # Freezing moves the objects alive now out of the collector's view (O(1)).
    froze = gc.get_freeze_count() == 0
    if froze:
        gc.freeze()
    try:
        check_stage_count(pipeline)  # before any walk of the pipeline
        check_query_depth(pipeline)
        analyze.check_forbidden(pipeline)
        run = compile_pipeline(pipeline, ctx)
        ctx.start()
        with deadline(ctx._clock):  # loops inside expressions check it too
            return capped_rows(run(docs), max_rows=max_rows, max_bytes=max_bytes, check=ctx.check)
    except RecursionError:
        raise ExecutionError(f"a document or expression is nested too deeply for the engine (MongoDB "
                             f"allows at most {MAX_NESTING} levels)") from None
    finally:
        if froze:
            gc.unfreeze()


def capped_rows(rows: Iterable[dict], *, max_rows: int, max_bytes: int,
                check: Callable[[], None] | None = None) -> list[dict]:
    """The rows as a list; ResultTooLarge beyond `max_rows` rows or about `max_bytes` bytes
    of BSON, or for a row larger than a BSON document may be (16 MiB). `check()` (the
    deadline) runs before each row."""
    out: list[dict] = []
    size = 0
    for row in rows:
        if check is not None:
            check()
        if len(out) >= max_rows:
            raise ResultTooLarge(f"the result has more than {max_rows} rows (the row cap; raise it with --max-rows)")
        # the walk stops as soon as a cap is passed, so a row whose parts are shared many times
        # (2^40 copies of one object in 40 objects of memory) costs at most 16 MiB of walking
        n = value_size(row, min(max_bytes - size, MAX_VALUE_BYTES) + 1)
        if n > MAX_VALUE_BYTES:
            raise ResultTooLarge(f"a result document is larger than {MAX_VALUE_BYTES} bytes (16 MiB, MongoDB's "
                                 f"BSON document size limit)")
        size += n
        if size > max_bytes:
            raise ResultTooLarge(f"the result is larger than {max_bytes} bytes (the byte cap)")
        out.append(row)
    return out

