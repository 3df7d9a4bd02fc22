"""The CLI's subcommands, one module each; cli.py only parses arguments and dispatches."""
