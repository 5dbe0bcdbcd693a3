# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""One reading of every tri-state setting (auto, on, off) of the roles.

Each setting accepted its own words: `auto/true/false` (and the boolean spellings YAML and the
command line give: yes/no, on/off, 1/0), or `auto/required/disabled`. Every tri-state setting
now takes all of them; `required` is on and `disabled` is off.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

AUTO = "auto"
ON = "on"
OFF = "off"

ON_WORDS = ("true", "yes", "on", "1", "y", "t", "required")
OFF_WORDS = ("false", "no", "off", "0", "n", "f", "disabled")


class TristateError(ValueError):
    """A value that is none of the accepted words; the message names the variable and the fix."""


def tristate(value, variable):
    """AUTO, ON or OFF for `value` (a string in any case, a boolean, or 0/1); TristateError else."""
    if isinstance(value, bool):
        return ON if value else OFF
    if isinstance(value, int) and value in (0, 1):
        return ON if value else OFF
    word = str(value).strip().lower() if isinstance(value, str) else None
    if word == AUTO:
        return AUTO
    if word in ON_WORDS:
        return ON
    if word in OFF_WORDS:
        return OFF
    raise TristateError("{0} is {1!r}: set it to auto, true (or required) or false (or disabled)".format(
        variable, value))
