"""Command-line entry points: one thin module per command, options only; work is done in the library."""
