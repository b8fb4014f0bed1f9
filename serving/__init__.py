"""Answering from memory: the answer pipeline (evidence, Reasoning State, answer model), the HTTP API and the model server."""
