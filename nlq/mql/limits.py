"""The default limits of one query (the paper's evaluation protocol: a per-query
timeout, and caps on the rows and bytes a result may hold) and the bounds every
query and every value it builds must stay within. The engine and both backends
use them; commands expose the first three as options.

Each bound is MongoDB's own where it has one, so a query nlq refuses is one a
server would refuse too:

- MAX_STAGES: "MongoDB limits the number of aggregation pipeline stages allowed
  in a single pipeline to 1000" (manual, Aggregation Pipeline Limits);
- MAX_VALUE_BYTES: a string, array or object an expression builds is at most
  16 MiB, the BSON document size limit (manual, MongoDB Limits and Thresholds:
  "The maximum BSON document size is 16 mebibytes"); no value inside a document
  can be larger than the document;
- MAX_NESTING: "Nested Depth for BSON Documents: MongoDB supports no more than 100
  levels of nesting for BSON documents" (manual, MongoDB Limits and Thresholds).

A value an expression builds may share parts (`{a: "$$value", b: "$$value"}` inside
`$reduce` doubles in 20 steps while the memory it holds grows by one object a step):
`value_size` counts a shared part as often as it occurs, as BSON would, and walks each
part once (a memo by identity), so a value too large to ever write is refused while it
is still small in memory, and the walk stays as cheap as the memory the value holds.
"""

from __future__ import annotations

from nlq.errors import ExecutionError, MemoryLimit, QueryTooDeep

DEFAULT_TIMEOUT = 20.0        # seconds per query
DEFAULT_MAX_ROWS = 100_000    # result row cap
DEFAULT_MAX_BYTES = 64 << 20  # result byte cap (BSON-ish size estimate)

MAX_STAGES = 1000             # stages of one pipeline (each sub-pipeline counts on its own)
MAX_VALUE_BYTES = 16 << 20    # bytes of one string, array or object an expression builds
MAX_NESTING = 100             # levels of a document (MongoDB refuses BSON nested deeper)


def check_stage_count(pipeline) -> None:
    """ExecutionError for a pipeline of more than MAX_STAGES stages (checked before any walk of it)."""
    if type(pipeline) is list and len(pipeline) > MAX_STAGES:
        raise ExecutionError(f"the pipeline has {len(pipeline)} stages; MongoDB allows at most {MAX_STAGES} "
                             f"stages in one pipeline")


def depth_over(value, limit: int = MAX_NESTING) -> bool:
    """Whether `value` (a pipeline, a filter, a document) nests more than `limit` levels of arrays
    and objects (a scalar is 0 levels, `[]` one). Iterative: any depth is measured without recursion,
    and the walk stops at the first container deeper than `limit`."""
    t = type(value)
    if t is not dict and t is not list:
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for item in (node.values() if type(node) is dict else node):
            ti = type(item)
            if ti is dict or ti is list:
                stack.append((item, depth + 1))
    return False


def check_query_depth(pipeline, what: str = "the pipeline") -> None:
    """QueryTooDeep (type `input_too_deep`) for a pipeline nested more than MAX_NESTING levels.

    MongoDB refuses such a query (its command document would pass the BSON nesting limit), and
    nlq's recursive walks (analysis, gate, engine, serialization) only ever see a pipeline that
    passed this iterative check."""
    if depth_over(pipeline, MAX_NESTING):
        raise QueryTooDeep(f"{what} is nested more than {MAX_NESTING} levels deep (MongoDB's BSON "
                           f"nesting limit: no query can nest deeper)")


def too_large(op: str, size: int) -> MemoryLimit:
    """The error for an expression that would build a value of `size` bytes (> MAX_VALUE_BYTES)."""
    return MemoryLimit(f"{op} would build a value of more than {MAX_VALUE_BYTES} bytes (16 MiB, MongoDB's BSON "
                       f"document size limit; at least {size} bytes)")


def check_str(op: str, s: str) -> str:
    """`s`, or MemoryLimit when its UTF-8 form is longer than MAX_VALUE_BYTES (exact only for long strings)."""
    n = len(s)
    if n > MAX_VALUE_BYTES >> 2:  # a character is at most 4 bytes: shorter strings always fit
        size = n if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
        if size > MAX_VALUE_BYTES:
            raise too_large(op, size)
    return s


def value_size(value, limit: int = MAX_VALUE_BYTES, memo: dict | None = None, depth: int = 0) -> int:
    """About the BSON size of `value` in bytes, shared parts counted each time they occur;
    the walk stops as soon as the size passes `limit` (the result is then > limit, not exact).

    `memo` (id -> (container, size)) remembers the containers already measured: give the same
    dict to successive calls over values that share parts (the steps of one `$reduce`).
    ExecutionError for a value nested more than MAX_NESTING levels."""
    t = type(value)
    if t is str:
        return len(value) + 5
    if t is not dict and t is not list:
        return 8
    if memo is not None:
        hit = memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
    if depth >= MAX_NESTING:
        raise ExecutionError(f"a value is nested more than {MAX_NESTING} levels deep (MongoDB's limit)")
    n = 5
    if t is dict:
        for key in value:
            n += len(key) + 2
        items = value.values()
    else:
        items = value
    for item in items:
        ti = type(item)
        if ti is dict or ti is list:
            n += 4 + value_size(item, limit - n, memo, depth + 1)
            if n > limit:
                return n
        elif ti is str:
            n += len(item) + 9
            if n > limit:
                return n
        else:
            n += 12
    if memo is not None:
        memo[id(value)] = (value, n)
    return n


def check_value(op: str, value, memo: dict | None = None):
    """`value`, or MemoryLimit when it is larger than MAX_VALUE_BYTES (see `value_size`)."""
    t = type(value)
    if t is str:
        return check_str(op, value)
    if t is dict or t is list:
        size = value_size(value, MAX_VALUE_BYTES, {} if memo is None else memo)
        if size > MAX_VALUE_BYTES:
            raise too_large(op, size)
    return value
