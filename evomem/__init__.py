"""Top floor: the ``evomem`` CLI and the one settings object (EvoMemState, a personal memory ontology with relational states for LLM agents)."""

__version__ = "0.1.0"
