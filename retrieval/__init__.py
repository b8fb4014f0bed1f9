"""Finding the evidence for a request: seed routes over a per-user index, relation traversal, the evidence bundle and its rendering as context."""
