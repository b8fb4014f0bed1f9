"""Seed routes for retrieval: a per-user index (``index.py``) and the routes that rank facts from it
(``rank.py``); retrieval/retrieve.py fuses them by reciprocal rank."""
