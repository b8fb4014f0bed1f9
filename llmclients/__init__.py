"""Ground floor: model clients (chat protocol, OpenAI-compatible client, local engine) and embedders."""
