"""Whether the cluster needs SSH trust between its nodes (mpirun's remote start).

One host starts every rank itself: no SSH to anywhere, so none to itself either. Hosts that all
run with `connection: local` are the controller itself, one machine however many names it has.
"""

from __future__ import annotations

from typing import Iterable, Optional

LOCAL_CONNECTIONS = ("local", "ansible.builtin.local")


def ssh_trust_skip_reason(hosts: Iterable[str], connections: Iterable[Optional[str]]) -> str:
    """Why SSH trust is not needed ('' when it is): one host, or every host local."""
    hosts = list(hosts)
    connections = [str(c or "ssh") for c in connections]
    if len(hosts) <= 1:
        return f"one host ({', '.join(hosts) or 'none'}): mpirun starts every rank locally, no SSH trust needed"
    if connections and all(c in LOCAL_CONNECTIONS for c in connections):
        return "every host runs with connection: local (one machine): no SSH trust needed"
    return ""
