#!/usr/bin/env python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Offline stand-in for the get-pip.py that ansible-test downloads.

`ansible-test sanity --venv` bootstraps pip into every virtual environment it makes by running
`python get_pip_<version>.py --disable-pip-version-check pip==<version> --no-setuptools --no-wheel`,
a script it fetches from ci-files.testing.ansible.com and caches as
`~/.ansible/test/cache/get_pip_<version with dots as underscores>.py`. Where that host cannot be
reached, `make sanity` copies this file to that cache path instead: it installs the pip bundled
with Python (`ensurepip`), then hands its own arguments to `pip install`, so the pinned
`pip==<version>` is what the environment ends up with, as with the real script.
"""

import subprocess
import sys

# get-pip.py's own switches; `pip install` does not know them (nothing else is installed anyway).
GET_PIP_ONLY = frozenset(('--no-setuptools', '--no-wheel'))


def main(argv):
    """Bootstrap pip with ensurepip, then install what the arguments ask for (the pinned pip)."""
    subprocess.run([sys.executable, '-m', 'ensurepip', '--default-pip'], check=True,
                   stdout=subprocess.DEVNULL)
    pip_args = [arg for arg in argv if arg not in GET_PIP_ONLY]
    return subprocess.run([sys.executable, '-m', 'pip', 'install', '--upgrade', *pip_args],
                          check=False).returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
