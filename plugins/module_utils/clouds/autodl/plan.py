"""What cloud_autodl decides for one host, from nccl_preflight's ncclkit_container fact.

Pure Python: the nccl_autodl module calls it; the decisions are unit-tested here, not in YAML.
"""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.container import MIB


def shm_message(container: dict, host: str, fallback: bool, cumem: bool = False) -> str:
    """The line naming a /dev/shm too small for NCCL on `host`, and what was or must be done."""
    size = (container.get("shm_bytes") or 0) // MIB
    needed = (container.get("shm_required_bytes") or 0) // MIB
    gpus = container.get("gpu_count", 0)
    head = (f"{host}: /dev/shm is {size} MiB, below the {needed} MiB NCCL's shared-memory transport "
            f"needs for {gpus} GPUs")
    if cumem:
        return (f"{head} without cuMem host memory; NCCL 2.24+ with CUDA driver "
                f"{container.get('cuda_driver_version') or '12.6+'} puts that transport in cuMem host memory "
                "instead, so this is a warning: NCCL's proxy and DataLoader workers still use /dev/shm (give "
                "the instance 1 GiB or more where they fail with a Bus error)")
    if fallback:
        return (f"{head}: NCCL_SHM_DISABLE=1 is in the profile (cloud_autodl_shm_fallback), so the "
                "local GPUs talk over P2P or the network instead")
    return (f"{head} (NCCL would fail with 'Error while creating shared memory segment'). Fix: give "
            "the instance a larger /dev/shm (1 GiB or more: an image or instance type whose shm is "
            "larger), or set cloud_autodl_shm_fallback: true to write NCCL_SHM_DISABLE=1 into the "
            "profile")


def autodl_plan(host: str, container: dict, fallback: bool, cloud_env: dict | None,
                controller_data_dir: str, controller_data_dir_exists: bool) -> dict:
    """{"error": str or None, "messages": [...], "facts": {...}} for one host.

    facts: ncclkit_cloud_nccl_env (the hook nccl_profile writes; NCCL_SHM_DISABLE=1 added only
    with the fallback) and, when the controller has its data disk, ncclkit_report_parent.
    """
    env = dict(cloud_env or {})
    messages, error = [], None
    if not container.get("shm_ok", True) and container.get("shm_cumem"):
        # cuMem host memory carries NCCL's SHM transport here: /dev/shm is no longer its limit.
        messages.append(shm_message(container, host, fallback=False, cumem=True))
    elif not container.get("shm_ok", True):
        if fallback:
            env["NCCL_SHM_DISABLE"] = "1"
            messages.append(shm_message(container, host, fallback=True))
        else:
            error = shm_message(container, host, fallback=False)
    facts = {"ncclkit_cloud_nccl_env": env}
    if controller_data_dir_exists:
        facts["ncclkit_report_parent"] = controller_data_dir.rstrip("/") + "/ncclkit-report"
    return {"error": error, "messages": messages, "facts": facts}
