"""The result rows of nccl-tests runs, held within a memory bound however long the output is.

A run of a million rows (``-N`` cycles, ``-i`` steps) must not cost a dict per row: the first
``MAX_KEPT_ROWS`` rows of one parse are kept whole (the report's table and plot read them), every
row counts towards its run's figures (peak, largest size, wrong elements, checked or not), and the
(size, busbw) pairs the bandwidth gate reads are kept for every row in two arrays, 16 bytes a row.
Pure Python 3.8+ standard library.
"""

from __future__ import annotations

from array import array

# Rows kept whole per parse, all runs together: a sweep of every type and operation (-d all -o all)
# is about 1600 rows, so only repeated or stepped sweeps go over it.
MAX_KEPT_ROWS = 10000


class RowBudget:
    """How many more rows one parse may keep whole; shared by its runs."""

    def __init__(self, limit=None):
        self.left = MAX_KEPT_ROWS if limit is None else limit


class RunRows:
    """The rows of one run: the first ones whole, all of them as figures and (size, busbw) pairs."""

    def __init__(self, budget=None):
        self.kept = []
        self.count = 0
        self.budget = budget if budget is not None else RowBudget()
        self.sizes = array("q")
        self.busbw = array("d")
        self.peak = None  # (busbw, size) of the first row with the highest out-of-place busbw
        self.largest_size = None
        self.largest_size_busbw = None  # the lowest busbw at the largest size
        self.wrong_total = 0
        self.wrong_seen = False
        self.halves_seen = False
        self.checked = False

    def add(self, row):
        self.count += 1
        if self.budget.left > 0:
            self.budget.left -= 1
            self.kept.append(row)
        out_of_place = row["out_of_place"]
        for half in (out_of_place, row["in_place"]):
            if half:
                self.halves_seen = True
                if half["wrong"] is not None:
                    self.wrong_total += half["wrong"]
                    self.wrong_seen = self.checked = True
                elif half["error"] is not None:
                    self.checked = True
        if out_of_place and out_of_place["busbw_gbps"] is not None:
            self._measured(row["size_bytes"], out_of_place["busbw_gbps"])

    def _measured(self, size, busbw):
        if self.peak is None or busbw > self.peak[0]:
            self.peak = (busbw, size)
        if self.largest_size is None or size > self.largest_size:
            self.largest_size, self.largest_size_busbw = size, busbw
        elif size == self.largest_size:
            self.largest_size_busbw = min(self.largest_size_busbw, busbw)
        try:
            self.sizes.append(size)
        except (OverflowError, TypeError):
            # A size beyond 64 bits (or not an integer) in a malformed input: a list holds any.
            self.sizes = list(self.sizes) + [size]
        self.busbw.append(busbw)

    @property
    def complete(self):
        """Whether every row is kept whole."""
        return len(self.kept) == self.count

    def points(self):
        """(size, busbw) of every row with an out-of-place busbw, in the order read."""
        return zip(self.sizes, self.busbw)


def rows_of(rows, budget=None):
    """A RunRows holding the row dicts of `rows` (the JSON reader's list)."""
    run_rows = RunRows(budget)
    for row in rows:
        run_rows.add(row)
    return run_rows
