"""CLI subcommands, one module per area; evomem/cli.py merges their COMMANDS."""
