"""The `fablab` command (main) and its subcommands; the only place where errors become messages
and exit codes."""
from harness.cli.main import main

__all__ = ["main"]
