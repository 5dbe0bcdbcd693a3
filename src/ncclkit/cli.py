"""The `ncclkit` command: a top-level parser that each subcommand module registers into.

A subcommand module has `register(subparsers)`, which adds its parser and sets `handler`
(args -> exit code) with `set_defaults`. Add new ones to SUBCOMMANDS.

Everything after the first `--` is a command for the subcommand to run, never parsed here:
a subcommand that takes one declares a `command_argv` argument (e.g. nargs="*"), and what
follows `--` is appended to it. argparse alone cannot mix options after such a list.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ncclkit import __version__

# Modules with register(subparsers); imported when the parser is built.
SUBCOMMANDS = ("ncclkit.commands.lab", "ncclkit.commands.run", "ncclkit.commands.report", "ncclkit.commands.check",
               "ncclkit.commands.diagnose", "ncclkit.commands.parse", "ncclkit.commands.launch")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ncclkit",
        description="Prepare GPU clusters for multi-node NCCL training and prove they work.")
    parser.add_argument("--version", action="version", version=f"ncclkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS:
        importlib.import_module(module).register(subparsers)
    return parser


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
