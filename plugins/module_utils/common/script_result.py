"""The JSON object a standard-library script run through `raw` printed on its last line.

The roles run such scripts (check_probe.py, profile_host_read.py) with the host's Python, where a
module run would cost an AnsiballZ start. On a terminal, raw's stdout may carry carriage returns
and stderr lines before the result.
"""

import json


def last_json_object(stdout):
    """The last line of `stdout` that is a JSON object, as a dict; None when the last line that
    starts with "{" is not one, or when there is none."""
    for line in reversed(str(stdout or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None
