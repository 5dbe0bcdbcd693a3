"""Errors `ncclkit lab` reports as one line, without a traceback."""


class LabError(Exception):
    """The lab could not do what was asked; the message says why and what to do."""

    exit_code = 1


class LabPrerequisiteError(LabError):
    """Not root, or a tool is missing: nothing was touched."""

    exit_code = 2
