"""Second floor: scoring an answer against a reference (LoCoMo normalisation, stemmed token F1, exact and choice match) and the one LLM judge with its one prompt."""
