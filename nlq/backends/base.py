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
        """Up to `n` documents, the same ones for the same seed (all when n >= count), by the
        one rule of nlq.backends.sampling, so both backends draw the same documents."""

    def aggregate(self, db: str, collection: str, pipeline: list, *,
                  timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
        """Run a read-only pipeline. Raises ForbiddenOperatorError before running a
        forbidden one, ExecutionError/QueryTimeout/ResultTooLarge while running."""

    def close(self) -> None:
        """Release what the backend holds (the MongoDB client and its connections)."""

    def __enter__(self) -> "Backend":
        """A backend is a context manager: `with open_backend(...) as backend:` closes it."""

    def __exit__(self, *exc) -> None:
        """Closes the backend."""


class Closing:
    """`with backend:` closes the backend at the end of the block (commands use it)."""

    def close(self) -> None:
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
