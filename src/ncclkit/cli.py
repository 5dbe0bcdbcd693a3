"""The `ncclkit` command: a top-level parser that each subcommand module registers into.

A subcommand module has `register(subparsers)`, which adds its parser and sets `handler`
(args -> exit code) with `set_defaults`. Add new ones to SUBCOMMANDS.

Everything after the first `--` is a command for the subcommand to run, never parsed here:
a subcommand that takes one declares a `command_argv` argument (e.g. nargs="*"), and what
follows `--` is appended to it. argparse alone cannot mix options after such a list.

The copy of the collection is chosen before any subcommand is imported (paths.use_collection):
the subcommands' imports of `ansible_collections.ncclkit.cluster` and the playbooks they run
then use the same one, which `ncclkit --version` names.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ncclkit import __version__
from ncclkit.paths import CollectionNotFound, collection_version, use_collection

# Modules with register(subparsers); imported when the parser is built.
SUBCOMMANDS = ("ncclkit.commands.lab", "ncclkit.commands.run", "ncclkit.commands.report", "ncclkit.commands.check",
               "ncclkit.commands.diagnose", "ncclkit.commands.parse", "ncclkit.commands.launch")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ncclkit",
        description="Prepare GPU clusters for multi-node NCCL training and prove they work.",
        # Texts as written: the --version line holds a path that must not be wrapped.
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=version_line())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS:
        importlib.import_module(module).register(subparsers)
    return parser


def version_line() -> str:
    """`ncclkit X.Y.Z (collection ncclkit.cluster A.B.C: PATH)`, PATH the copy this process uses."""
    try:
        root = use_collection()
    except CollectionNotFound:
        return f"ncclkit {__version__} (collection ncclkit.cluster: not found)"
    return f"ncclkit {__version__} (collection ncclkit.cluster {collection_version(root)}: {root})"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough = None
    if "--" in argv:
        split = argv.index("--")
        argv, passthrough = argv[:split], argv[split + 1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    if passthrough is not None:
        if not hasattr(args, "command_argv"):
            parser.error(f"unrecognized arguments: -- {' '.join(passthrough)}")
        args.command_argv = [*(args.command_argv or []), *passthrough]
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("ncclkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # `ncclkit ... | head`: the reader left, which is no error of ours
        sys.stdout = None
        return 141


if __name__ == "__main__":
    sys.exit(main())
