"""Backends: the embedded file engine and a real MongoDB, behind one interface."""

from nlq.backends.embedded import EmbeddedBackend, open_backend

__all__ = ["EmbeddedBackend", "open_backend"]
