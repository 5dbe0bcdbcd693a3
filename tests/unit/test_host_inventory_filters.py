import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.host_inventory import ip_nics, nvidia_smi_gpus

IP_ADDRESSES = json.loads("""[
 {"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,
  "addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
 {"ifindex":2,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,
  "addr_info":[{"family":"inet","local":"198.18.0.11","prefixlen":24}]},
 {"ifindex":3,"ifname":"eth1","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":9000,
  "addr_info":[{"family":"inet","local":"198.19.0.11","prefixlen":24},
               {"family":"inet","local":"198.19.0.99","prefixlen":25}]},
 {"ifindex":4,"ifname":"eth2","flags":["BROADCAST","MULTICAST"],"mtu":1500,"addr_info":[]}
]""")
DEFAULT_ROUTE = [{"dst": "default", "gateway": "198.18.0.1", "dev": "eth0", "flags": []}]


def test_ip_nics_records_addresses_prefixes_mtu_and_default_route():
    nics = {nic["name"]: nic for nic in ip_nics(IP_ADDRESSES, DEFAULT_ROUTE)}
    assert nics["eth0"] == {
        "name": "eth0", "ipv4": [{"address": "198.18.0.11", "prefix": 24}], "mtu": 1500,
        "up": True, "loopback": False, "default_route": True,
    }
    assert nics["eth1"]["ipv4"] == [
        {"address": "198.19.0.11", "prefix": 24}, {"address": "198.19.0.99", "prefix": 25}
    ]
    assert nics["eth1"]["mtu"] == 9000 and not nics["eth1"]["default_route"]
    assert nics["lo"]["loopback"] and not nics["eth2"]["up"] and nics["eth2"]["ipv4"] == []


def test_ip_nics_without_default_route():
    assert not any(nic["default_route"] for nic in ip_nics(IP_ADDRESSES, []))


def test_nvidia_smi_gpus_parses_csv_rows():
    rows = [
        "0, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:06.0",
        "1, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:07.0",
        "",
    ]
    gpus = nvidia_smi_gpus(rows)
    assert [gpu["index"] for gpu in gpus] == [0, 1]
    assert gpus[0] == {
        "index": 0, "name": "NVIDIA H200", "compute_cap": "9.0", "driver_version": "580.159.04",
        "memory_total_mib": 143771, "pci_bus_id": "00000000:00:06.0",
    }


def test_nvidia_smi_gpus_names_the_bad_row():
    with pytest.raises(ValueError, match="expected 6 comma-separated fields"):
        nvidia_smi_gpus(["No devices were found"])
