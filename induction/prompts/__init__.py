"""Prompts, each beside the response model it asks for; one file per task, with a version string."""
