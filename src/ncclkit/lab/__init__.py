"""The lab cluster: N hosts on this machine made of Linux namespaces, which fail like cloud hosts.

    from ncclkit.lab import Lab
    lab = Lab(index=0)
    lab.up(nodes=2, outsider=True)
    lab.exec("node1", ["hostname"], capture_output=True, text=True).stdout   # "node1\\n"
    lab.down()

See docs/lab.md for how it works, its addresses and its commands.
"""

from ncclkit.lab.errors import LabError, LabPrerequisiteError
from ncclkit.lab.lab import Lab, NodeInfo
from ncclkit.lab.plan import LabPlan, MemberPlan

__all__ = ["Lab", "NodeInfo", "LabError", "LabPrerequisiteError", "LabPlan", "MemberPlan"]
