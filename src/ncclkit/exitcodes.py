"""Exit codes shared by every `ncclkit` subcommand (docs/cli.md has the table)."""

OK = 0            # ready / healthy
PROBLEM = 1       # a problem found: a finding, a failed gate
USAGE = 2         # usage error (argparse's own)
BAD_INPUT = 3     # missing, empty or unreadable file, broken inventory
UNREACHABLE = 4   # hosts unreachable
INTERRUPTED = 130
