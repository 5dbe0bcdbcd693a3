"""Filters that keep unsafe names and over-wide firewall sources out of commands, scripts and rules.

The rules live in module_utils (common.safe_names, network.firewall.sources), shared with the modules; these
filters let a role refuse in its preflight, before it changes anything, and let a template refuse
a name that quoting cannot make safe (a line break in a comment).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def safe_name(value, kind, variable):
    """`value` unchanged when it passes the `kind` rule (see common.safe_names.CHECKS), else an error line."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names
    try:
        safe_names.CHECKS[kind](value, variable)
    except safe_names.UnsafeName as error:
        raise AnsibleFilterError(str(error)) from None
    return value


def safe_name_problems(values, kind, variable):
    """One message per value of the list that fails the `kind` rule; [] when all pass."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names
    found = []
    for value in [values] if isinstance(values, str) or values is None else values:
        try:
            safe_names.CHECKS[kind](value, variable)
        except safe_names.UnsafeName as error:
            found.append(str(error))
    return found


def firewall_source_problems(sources, allow_wide=False):
    """One message per source the firewall must not admit (host bits, IPv6, wider than /8)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.network.firewall import sources as firewall_sources
    return firewall_sources.problems(sources, bool(allow_wide))


class FilterModule:
    def filters(self):
        return {
            "safe_name": safe_name,
            "safe_name_problems": safe_name_problems,
            "firewall_source_problems": firewall_source_problems,
        }
