"""Report writers and the command-line interface."""
