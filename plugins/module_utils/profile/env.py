"""The NCCL, Gloo, PyTorch and Open MPI environment of one host, computed once and checked.

Pure Python (stdlib only): the nccl_profile role calls it through the ncclkit.cluster filters,
and the ncclkit package can import it. `profile_env(settings)` returns {NAME: value};
`env_problems(settings)` lists what is wrong, each message naming the setting to change.

Layers, later ones win: what the facts give (NICs, RDMA, debug and PyTorch settings),
then `ncclkit_cloud_nccl_env` and `ncclkit_nccl_tuning` (hooks: the cloud roles and nccl_validate's
autotune fill them, a play may set them), the user's `nccl_profile_tuning`, and last the user's `nccl_profile_extra_env`.
Tuning variables never come from a default: the often-quoted "cloud-optimal" values measured
30% slower than NCCL's own choice in one setup on one H200 and 2.3 times faster in another;
only a measurement on the cluster (the autotune) should set them.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.ncclkit.cluster.plugins.module_utils.common import safe_names

# NCCL 2.28 (src/graph/tuning.cc, src/debug.cc); matched case-insensitively by NCCL.
NCCL_ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")
NCCL_FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
NCCL_DEBUG_LEVELS = ("VERSION", "WARN", "INFO", "ABORT", "TRACE")
NCCL_DEBUG_SUBSYSTEMS = ("INIT", "COLL", "P2P", "SHM", "NET", "GRAPH", "TUNING", "ENV", "ALLOC",
                         "CALL", "PROXY", "NVLS", "BOOTSTRAP", "REG", "PROFILE", "RAS", "ALL")
TUNING_NAMES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_NTHREADS",
                "NCCL_BUFFSIZE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_IB_QPS_PER_CONNECTION")
# NCCL: NCCL_SOCKET_NTHREADS 1-16, and NTHREADS * NSOCKS_PERTHREAD at most 64.
MAX_SOCKET_NTHREADS = 16
MAX_SOCKETS = 64
# NCCL 2.28: MAXCHANNELS (src/include/device.h).
MAX_CHANNELS = 64
# NCCL's IB transport: NCCL_IB_MAX_QPS, the most queue pairs a connection may use.
MAX_IB_QPS = 128
# aws-ofi-nccl's names for itself (NCCL_NET): up to 1.12, from 1.13, and the alias 1.13 accepts.
LIBFABRIC_NET_NAMES = ("AWS Libfabric", "Libfabric", "OFI")


def is_libfabric_net(name) -> bool:
    """Whether NCCL_NET names aws-ofi-nccl; NCCL compares the names without case (strcasecmp)."""
    return str(name or "").strip().lower() in {known.lower() for known in LIBFABRIC_NET_NAMES}


# NCCL reads /etc/nccl.conf values into a 1024-byte buffer.
MAX_VALUE_LENGTH = 1023

# Which role variable a computed value comes from, for error messages.
COMPUTED_SOURCES = {
    "NCCL_NET": "nccl_profile_nccl_net",
    "NCCL_DEBUG": "nccl_profile_debug",
    "NCCL_DEBUG_SUBSYS": "nccl_profile_debug_subsys",
    "NCCL_DEBUG_FILE": "nccl_profile_debug_file",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "nccl_profile_torch_async_error_handling",
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "nccl_profile_torch_heartbeat_timeout_sec",
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "nccl_profile_flight_recorder_entries",
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "nccl_profile_flight_recorder_entries",
    "TORCH_FR_DUMP_TEMP_FILE": "nccl_profile_flight_recorder_dir",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "nccl_profile_flight_recorder_dir",
}
# PyTorch's flight recorder writes <prefix><rank> on a watchdog timeout; TORCH_FR_DUMP_TEMP_FILE
# is the name from torch 2.5, TORCH_NCCL_DEBUG_INFO_TEMP_FILE the one before.
FLIGHT_RECORDER_PREFIX = "nccl_trace_rank_"
_FOLDER = re.compile(r"^/[A-Za-z0-9_.+/-]*$")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Characters that systemd EnvironmentFile=, docker --env-file and sh would each read differently.
_UNPORTABLE = set("'\"\\$`\n\r\0")


def _nccl_version(text) -> tuple | None:
    match = re.match(r"^\s*(\d+)\.(\d+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _erdma_env(settings: dict, problems: list) -> dict:
    """NCCL's IB transport on Alibaba eRDMA devices: NCCL_IB_HCA names exactly them, and NCCL
    before 2.21 needs NCCL_IB_GID_INDEX=1; NCCL before 2.19 cannot use eRDMA at all."""
    devices = list(settings["erdma_devices"])
    version = _nccl_version(settings.get("nccl_version"))
    if version is None:
        problems.append(f"the host has eRDMA ({', '.join(devices)}) and its NCCL version is unknown: eRDMA "
                        "needs NCCL 2.19 or later; let nccl_preflight find NCCL (nccl_preflight_nccl_source)")
        return {}
    if version < (2, 19):
        problems.append(f"the host has eRDMA ({', '.join(devices)}) but NCCL {settings.get('nccl_version')}: "
                        "NCCL's IB transport runs on eRDMA from 2.19; install NCCL 2.19 or later (a newer "
                        "PyTorch wheel brings one), or set nccl_profile_rdma to disabled to use sockets")
        return {}
    # GID index 1 (the RoCEv2 entry) at every version: NCCL 2.21 and later pick one themselves, but
    # nothing measured on an eRDMA fabric here shows that their choice matches (docs/clouds/alibaba.md).
    return {"NCCL_IB_HCA": "=" + ",".join(devices), "NCCL_IB_GID_INDEX": "1"}


class NcclEnvError(ValueError):
    """The settings give no usable environment; the message lists every problem."""


def profile_env(settings: dict) -> dict:
    """{NAME: value} for one host; raises NcclEnvError naming every problem."""
    env, dummy, problems = _compose(settings)
    if problems:
        raise NcclEnvError("; ".join(problems))
    return env


def env_problems(settings: dict) -> list:
    """Every problem with the settings, each a sentence that names what to change."""
    return _compose(settings)[2]


def _compose(settings: dict):
    problems: list = []
    env: dict = {}
    sources: dict = {}

    def put(layer: dict, source: str) -> None:
        if not isinstance(layer, dict):
            problems.append(f"{source} must be a mapping of NAME: value, not {type(layer).__name__}")
            return
        for name, value in layer.items():
            where = COMPUTED_SOURCES.get(name, "the facts") if source == "computed" else source
            text = _text(value)
            if text is None:
                problems.append(f"{where}.{name} is {value!r}: give a string or a number")
                continue
            env[str(name)] = text
            sources[str(name)] = where

    put(_computed(settings, problems), "computed")
    put(settings.get("cloud_env") or {}, "ncclkit_cloud_nccl_env")
    put(settings.get("measured_tuning") or {}, "ncclkit_nccl_tuning")
    put(settings.get("tuning") or {}, "nccl_profile_tuning")
    put(settings.get("extra_env") or {}, "nccl_profile_extra_env")
    for source in ("ncclkit_nccl_tuning", "nccl_profile_tuning"):
        for name in sorted(n for n, s in sources.items() if s == source and n not in TUNING_NAMES):
            problems.append(f"{source}.{name} is not a tuning variable; tuning takes "
                            f"{', '.join(TUNING_NAMES)} (put other variables in nccl_profile_extra_env)")
    problems += _check_env(env, sources)
    return dict(sorted(env.items())), sources, problems


def _computed(settings: dict, problems: list) -> dict:
    """The variables the facts and the role's own settings give."""
    env = {}
    ifname = settings.get("ifname") or ""
    try:
        safe_names.ifname(ifname, "ncclkit_cluster_ifname")
    except safe_names.UnsafeName:
        problems.append(f"the cluster interface {ifname!r} is not an interface name: run "
                        "nccl_preflight first (it sets ncclkit_cluster_ifname); to choose the NIC, set "
                        "nccl_preflight_ifname or nccl_preflight_cluster_cidr")
    else:
        # "=eth1": exactly eth1; a bare "eth1" is a prefix that would also match eth10.
        env["NCCL_SOCKET_IFNAME"] = f"={ifname}"
        env["GLOO_SOCKET_IFNAME"] = ifname
        env["TP_SOCKET_IFNAME"] = ifname

    networks = _networks(settings.get("cluster_networks"), problems)
    if networks:
        # Addresses, not a name: mpirun forwards these, and names may differ between hosts.
        env["OMPI_MCA_btl_tcp_if_include"] = ",".join(networks)
        env["OMPI_MCA_oob_tcp_if_include"] = ",".join(networks)

    rdma = bool(settings.get("rdma_usable"))
    # On EFA, NCCL_NET pins aws-ofi-nccl and NCCL_IB_DISABLE stays unset (the plugin decides).
    if not is_libfabric_net((settings.get("cloud_env") or {}).get("NCCL_NET")):
        env["NCCL_IB_DISABLE"] = "0" if rdma else "1"
    if rdma and settings.get("erdma_devices"):
        env.update(_erdma_env(settings, problems))
    nccl_net = settings.get("nccl_net") or ("IB" if settings.get("rdma_required") else "")
    if nccl_net:
        env["NCCL_NET"] = str(nccl_net)

    if settings.get("debug"):
        env["NCCL_DEBUG"] = str(settings["debug"])
    if settings.get("debug_subsys"):
        env["NCCL_DEBUG_SUBSYS"] = str(settings["debug_subsys"])
    if settings.get("debug_file"):
        env["NCCL_DEBUG_FILE"] = str(settings["debug_file"])

    handling = settings.get("torch_async_error_handling", 1)
    if handling is not None and handling != "":
        env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = handling
    if settings.get("torch_blocking_wait"):
        env["TORCH_NCCL_BLOCKING_WAIT"] = "1"
    if settings.get("torch_heartbeat_timeout_sec"):
        env["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] = settings["torch_heartbeat_timeout_sec"]
    env.update(_flight_recorder_env(settings, problems))
    return env


def _flight_recorder_env(settings: dict, problems: list) -> dict:
    """PyTorch's NCCL flight recorder: the last collectives of every rank, dumped when the watchdog
    times out, so that `ncclkit diagnose` names the rank and collective that fell out of step."""
    entries, folder = _integer(settings.get("flight_recorder_entries") or 0), settings.get("flight_recorder_dir") or ""
    if entries is None or entries < 0:
        problems.append(f"nccl_profile_flight_recorder_entries must be a whole number of entries, 0 to turn the "
                        f"recorder off (got {settings.get('flight_recorder_entries')!r})")
        return {}
    if not entries:
        return {}
    if not _FOLDER.match(str(folder)) or "/../" in f"{folder}/":
        problems.append(f"nccl_profile_flight_recorder_dir must be an absolute folder of letters, digits and "
                        f"_.+-/ (got {folder!r})")
        return {}
    prefix = f"{str(folder).rstrip('/')}/{FLIGHT_RECORDER_PREFIX}"
    return {"TORCH_NCCL_TRACE_BUFFER_SIZE": str(entries), "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            "TORCH_FR_DUMP_TEMP_FILE": prefix, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": prefix}


def _networks(value, problems: list) -> list:
    if isinstance(value, str):
        value = [value]
    networks = []
    for item in value or []:
        try:
            networks.append(str(ipaddress.ip_network(str(item), strict=False)))
        except ValueError:
            problems.append(f"the cluster network {item!r} is not in CIDR form (for example "
                            "10.0.0.0/24): run nccl_preflight first (it sets ncclkit_cluster_network)")
    if not networks and not problems:
        problems.append("no cluster network is known: run nccl_preflight first "
                        "(it sets ncclkit_cluster_network)")
    return sorted(set(networks), key=networks.index)


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


def _check_env(env: dict, sources: dict) -> list:
    problems = []
    for name, value in env.items():
        where = f"{name} (from {sources[name]})"
        if not _NAME.match(name):
            problems.append(f"{name!r} from {sources[name]} is not a variable name "
                            "(letters, digits and _, not starting with a digit)")
        bad = sorted(_UNPORTABLE & set(value))
        if bad:
            problems.append(f"{where} is {value!r}: quotes, backslashes, $, ` and line breaks "
                            "are read differently by sh, systemd and docker; leave them out")
        if value != value.strip():
            problems.append(f"{where} is {value!r}: remove the leading or trailing blanks")
        if len(value) > MAX_VALUE_LENGTH:
            problems.append(f"{where} is {len(value)} characters; NCCL reads at most {MAX_VALUE_LENGTH}")
        check = _VALUE_CHECKS.get(name)
        message = check(value) if check else None
        if message:
            problems.append(f"{where} is {value!r}: {message}")
    problems += _check_sockets(env, sources)
    level = env.get("NCCL_DEBUG", "").upper()
    if "NCCL_DEBUG_FILE" in env and level in ("", "VERSION"):
        problems.append(f"NCCL_DEBUG_FILE (from {sources['NCCL_DEBUG_FILE']}) is written only when "
                        "NCCL_DEBUG is WARN, INFO, ABORT or TRACE: set nccl_profile_debug too")
    return problems


def _check_sockets(env: dict, sources: dict) -> list:
    threads = _integer(env.get("NCCL_SOCKET_NTHREADS"))
    socks = _integer(env.get("NCCL_NSOCKS_PERTHREAD"))
    if socks is None or socks < 1 or (threads is not None and not 1 <= threads <= MAX_SOCKET_NTHREADS):
        return []
    if (threads or 1) * socks > MAX_SOCKETS:
        return [f"NCCL_SOCKET_NTHREADS ({threads or 1}, from {sources.get('NCCL_SOCKET_NTHREADS', 'the default')})"
                f" x NCCL_NSOCKS_PERTHREAD ({socks}, from {sources['NCCL_NSOCKS_PERTHREAD']}) is "
                f"{(threads or 1) * socks}; NCCL allows at most {MAX_SOCKETS} sockets per connection"]
    return []


def _integer(value):
    try:
        return int(str(value), 10)
    except (TypeError, ValueError):
        return None


def _int_check(low: int, high: int | None, unit: str = ""):
    def check(value: str):
        number = _integer(value)
        if number is None or number < low or (high is not None and number > high):
            bound = f"{low}-{high}" if high is not None else f"{low} or more"
            return f"NCCL and PyTorch take a whole number {bound}{unit}"
        return None
    return check


def _choice_check(choices: tuple):
    def check(value: str):
        if value.upper() not in {choice.upper() for choice in choices}:
            return f"valid values are {', '.join(choices)}"
        return None
    return check


def _list_check(elements: tuple, what: str):
    """NCCL_ALGO and NCCL_PROTO: "ring,tree", "^LL128", "ring;allreduce:tree,ring" (NCCL 2.24+)."""
    known = {element.upper() for element in elements}
    functions = {function.upper() for function in NCCL_FUNCTIONS}

    def check(value: str):
        for position, entry in enumerate(value.split(";")):
            prefix, dummy, items = entry.rpartition(":")
            if prefix and prefix.upper() not in functions:
                return (f"{prefix!r} is not a collective; prefixes are {', '.join(NCCL_FUNCTIONS)} "
                        f"(as in allreduce:{elements[0].lower()})")
            if not prefix and position > 0:
                return "every entry after the first needs a collective prefix (allreduce:...)"
            listed = items.lstrip("^")
            unknown = [item for item in listed.split(",") if item.upper() not in known]
            if not listed or unknown:
                return (f"{', '.join(map(repr, unknown)) if listed else 'an empty list'} is not {what}; "
                        f"NCCL 2.28 knows {', '.join(elements)} (a leading ^ excludes)")
        return None
    return check


def _subsys_check(value: str):
    unknown = [item for item in value.lstrip("^").split(",") if item.upper() not in NCCL_DEBUG_SUBSYSTEMS]
    if unknown:
        return (f"{', '.join(map(repr, unknown))} is not a subsystem; NCCL 2.28 knows "
                f"{', '.join(NCCL_DEBUG_SUBSYSTEMS)} (a leading ^ excludes)")
    return None


def _debug_file_check(value: str):
    if not value.startswith("/"):
        return "give an absolute path; %h (host) and %p (pid) keep ranks apart, as in /tmp/nccl.%h.%p.log"
    return None


def _socket_ifname_check(value: str):
    try:
        safe_names.nccl_ifname_list(value, "NCCL_SOCKET_IFNAME")
    except safe_names.UnsafeName:
        return safe_names.NCCL_IFNAME_LIST_RULE
    return None


_VALUE_CHECKS = {
    "NCCL_ALGO": _list_check(NCCL_ALGORITHMS, "an algorithm"),
    "NCCL_PROTO": _list_check(NCCL_PROTOCOLS, "a protocol"),
    "NCCL_SOCKET_NTHREADS": _int_check(1, MAX_SOCKET_NTHREADS),
    "NCCL_NSOCKS_PERTHREAD": _int_check(1, MAX_SOCKETS),
    "NCCL_BUFFSIZE": _int_check(1, None, " (bytes)"),
    "NCCL_MIN_NCHANNELS": _int_check(1, MAX_CHANNELS),
    "NCCL_MAX_NCHANNELS": _int_check(1, MAX_CHANNELS),
    "NCCL_IB_QPS_PER_CONNECTION": _int_check(1, MAX_IB_QPS),
    "NCCL_DEBUG": _choice_check(NCCL_DEBUG_LEVELS),
    "NCCL_DEBUG_SUBSYS": _subsys_check,
    "NCCL_DEBUG_FILE": _debug_file_check,
    "NCCL_IB_DISABLE": _choice_check(("0", "1")),
    "NCCL_SOCKET_IFNAME": _socket_ifname_check,
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": _int_check(0, 3),
    "TORCH_NCCL_BLOCKING_WAIT": _choice_check(("0", "1")),
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": _int_check(1, None, " (seconds)"),
}
