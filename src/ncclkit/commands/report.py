"""`ncclkit report DIR`: the bandwidth-versus-message-size plot of an nccl_validate report."""

from __future__ import annotations

import argparse
import sys

from ncclkit import exitcodes


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="plot bus bandwidth versus message size from a report folder (busbw.png)")
    parser.add_argument("report_dir", metavar="REPORT_DIR",
                        help="a folder nccl_validate wrote: ncclkit-report/<UTC timestamp>/ (or its report.json)")
    parser.add_argument("-o", "--output", help="PNG to write (default: REPORT_DIR/busbw.png)")
    parser.set_defaults(handler=report_command)


def report_command(args: argparse.Namespace) -> int:
    try:
        written = write_plot(args.report_dir, args.output)
    except PlotError as error:
        print(f"ncclkit report: {error}", file=sys.stderr)
        return error.code
    print(f"ncclkit report: wrote {written}")
    return exitcodes.OK


class PlotError(Exception):
    """The plot could not be made; the message says why, `code` is the exit code."""

    def __init__(self, message, code=exitcodes.BAD_INPUT):
        super().__init__(message)
        self.code = code


def write_plot(report_dir, output=None):
    """The plot's path; PlotError with the cause for a bad report or a missing matplotlib."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.report import NcclReportError as errors

    try:
        from ncclkit.plot import plot_report

        return plot_report(report_dir, output)
    except ImportError as error:
        raise PlotError(f"matplotlib is missing ({error}): pip install 'ncclkit[plot]'", exitcodes.PROBLEM) from None
    except errors as error:
        raise PlotError(str(error)) from None
    except OSError as error:
        raise PlotError(f"cannot write the plot: {error}", exitcodes.PROBLEM) from None
