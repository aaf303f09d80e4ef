"""The small interface both backends offer; everything above it is backend-agnostic."""

from __future__ import annotations

from typing import Protocol

from nlq.mql.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT

__all__ = ["Backend", "DEFAULT_MAX_BYTES", "DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT"]


class Backend(Protocol):
    """A read-only view of one deployment (many databases)."""

    name: str  # 'embedded' or 'mongo'

    def databases(self) -> list[str]:
        """Database names, sorted."""

    def collections(self, db: str) -> list[str]:
        """Collection names of `db`, sorted. BackendError if `db` does not exist."""

    def count(self, db: str, collection: str) -> int:
        """Number of documents in a collection."""

    def sample(self, db: str, collection: str, n: int, seed: int = 0) -> list[dict]:
        """Up to `n` documents, the same ones for the same seed (all when n >= count)."""

    def aggregate(self, db: str, collection: str, pipeline: list, *,
                  timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
        """Run a read-only pipeline. Raises ForbiddenOperatorError before running a
        forbidden one, ExecutionError/QueryTimeout/ResultTooLarge while running."""
