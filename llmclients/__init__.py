"""Ground floor: model clients (chat protocol, OpenAI-compatible client, local engine), their factory, embedders and the one structured-output path for model replies."""
