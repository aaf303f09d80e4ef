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
  can be larger than the document.
"""

from __future__ import annotations

from nlq.errors import ExecutionError, MemoryLimit

DEFAULT_TIMEOUT = 20.0        # seconds per query
DEFAULT_MAX_ROWS = 100_000    # result row cap
DEFAULT_MAX_BYTES = 64 << 20  # result byte cap (BSON-ish size estimate)

MAX_STAGES = 1000             # stages of one pipeline (each sub-pipeline counts on its own)
MAX_VALUE_BYTES = 16 << 20    # bytes of one string, array or object an expression builds


def check_stage_count(pipeline) -> None:
    """ExecutionError for a pipeline of more than MAX_STAGES stages (checked before any walk of it)."""
    if type(pipeline) is list and len(pipeline) > MAX_STAGES:
        raise ExecutionError(f"the pipeline has {len(pipeline)} stages; MongoDB allows at most {MAX_STAGES} "
                             f"stages in one pipeline")


def too_large(op: str, size: int) -> MemoryLimit:
    """The error for an expression that would build a value of `size` bytes (> MAX_VALUE_BYTES)."""
    return MemoryLimit(f"{op} would build a value of {size} bytes, more than the {MAX_VALUE_BYTES} bytes "
                       f"(16 MiB) a BSON document may hold")


def check_str(op: str, s: str) -> str:
    """`s`, or MemoryLimit when its UTF-8 form is longer than MAX_VALUE_BYTES (exact only for long strings)."""
    n = len(s)
    if n > MAX_VALUE_BYTES >> 2:  # a character is at most 4 bytes: shorter strings always fit
        size = n if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
        if size > MAX_VALUE_BYTES:
            raise too_large(op, size)
    return s
