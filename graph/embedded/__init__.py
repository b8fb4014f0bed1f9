"""LadybugDB (embedded, in-process) backend."""

from graph.embedded.store import EmbeddedStore

__all__ = ["EmbeddedStore"]
