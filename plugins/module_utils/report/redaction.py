"""Redaction of nccl-tests' -J files: they record the launching process's whole environment
(cloud credentials included); every "env" list keeps only allow-listed NCCL/CUDA/MPI names.

Pure Python 3.8+ standard library, text in and text out (report.storage writes the files).
"""

from __future__ import annotations

import json
import re

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.json_file import allowed_env_entries

# One JSON token: a string (maybe cut off at the end of the file), a structural character, or a
# run of anything else (numbers, literals, garbage). Whitespace is copied as it is.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[{}\[\],:]|\s+|[^\s{}\[\],:"]+', re.S)


def redact_json_text(text):
    """(text, removed): every "env" list of a -J file, at any depth, keeps only the allow-listed
    NAME=value strings; anything else in it (other names, nested values, a string cut off with the
    file) is dropped. A token walk with an explicit stack: no depth raises RecursionError, and a
    file cut short with the run is redacted as far as it goes."""
    out, removed = [], 0
    # One frame per open container: [kind, key of the value being read, expecting a key].
    stack = []
    env = None  # while inside an env list: {"depth", "kept", "top"}
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        token = match.group(0)
        position = match.end()
        if env is not None:
            if token in ("[", "{"):
                env["depth"] += 1
                if env["depth"] == 2:
                    removed += 1
                    env["dropped"] += 1
            elif token in ("]", "}"):
                env["depth"] -= 1
                if env["depth"] == 0:
                    out.append("[" + ", ".join(env["kept"]) + "]")
                    if env["top"] and env["dropped"]:
                        out.append(', "env_removed_by_ncclkit": {0}'.format(env["dropped"]))
                    env = None
                    stack.pop()
            elif env["depth"] == 1 and token.startswith('"'):
                if _allowed_string(token):
                    env["kept"].append(token)
                else:
                    removed += 1
                    env["dropped"] += 1
            elif env["depth"] == 1 and not token.isspace() and token != ",":
                removed += 1
                env["dropped"] += 1
            continue
        frame = stack[-1] if stack else None
        if token == "{":
            stack.append(["{", None, True])
        elif token == "[":
            if frame and frame[0] == "{" and frame[1] == "env":
                stack.append(["[", None, False])
                env = {"depth": 1, "kept": [], "dropped": 0, "top": len(stack) == 2}
                continue
            stack.append(["[", None, False])
        elif token in ("]", "}"):
            if stack:
                stack.pop()
        elif token == "," and frame and frame[0] == "{":
            frame[1], frame[2] = None, True
        elif token == ":" and frame and frame[0] == "{":
            frame[2] = False
        elif token.startswith('"') and frame and frame[0] == "{" and frame[2]:
            frame[1] = _string_value(token)
        out.append(token)
    if env is not None:  # cut off inside an env list: close it with what may stay
        out.append("[" + ", ".join(env["kept"]) + "]")
    return "".join(out), removed


def _string_value(token):
    try:
        return json.loads(token)
    except ValueError:
        return None


def _allowed_string(token):
    value = _string_value(token)
    return isinstance(value, str) and allowed_env_entries([value]) == [value]
