"""Bus bandwidth versus message size, drawn from a report's report.json into busbw.png beside it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ansible_collections.ncclkit.cluster.plugins.module_utils import report as report_utils


def plot_report(report_dir: str | Path, output: str | Path | None = None) -> Path:
    """Write the plot of the report in `report_dir`; raise NcclReportError for a report without rows."""
    report = report_utils.load_report(str(report_dir))
    output = Path(output) if output else Path(report_utils.report_folder(report_dir)) / report_utils.PLOT_PNG
    figure = bandwidth_figure(report)
    try:
        handle, temporary = tempfile.mkstemp(dir=output.parent, prefix=".busbw-", suffix=".png")
        os.close(handle)
        try:
            figure.savefig(temporary, format="png")
            os.chmod(temporary, 0o644)
            os.replace(temporary, output)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    finally:
        from matplotlib import pyplot

        pyplot.close(figure)
    return output


def bandwidth_figure(report: dict):
    """A matplotlib Figure: one line of out-of-place busbw per run, over message size (log2)."""
    series = report_utils.bandwidth_series(report)

    import matplotlib

    matplotlib.use("Agg")  # no display on cluster controllers
    from matplotlib import pyplot
    from matplotlib.ticker import FuncFormatter

    figure, axes = pyplot.subplots(figsize=(9, 5), dpi=100)
    try:
        for line in series:
            axes.plot(line["sizes"], line["busbw"], marker="o", markersize=3, label=line["label"])
        axes.set_xscale("log", base=2)
        axes.xaxis.set_major_formatter(FuncFormatter(lambda size, _: report_utils.human_size(int(size))))
        axes.set_xlabel("message size")
        axes.set_ylabel("bus bandwidth, out-of-place (GB/s)")
        axes.set_title("all_reduce_perf: {} ({} UTC)".format(report["verdict"].upper(), report["created"]))
        axes.grid(True, which="major", alpha=0.3)
        axes.legend(loc="upper left", fontsize="small")
        figure.tight_layout()
    except BaseException:
        pyplot.close(figure)
        raise
    return figure
