"""Which env names make a file root's alone (nccl_profile's env files)."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.common import FilterModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.common.secret_names import env_file_mode, secret_names

FILTERS = FilterModule().filters()


@pytest.mark.parametrize("name", ["HF_TOKEN", "hf_token", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                                  "my_passwd", "Github_Token_2", "KEYFILE"])
def test_secret_looking_names(name):
    assert secret_names({name: "x", "NCCL_DEBUG": "WARN"}) == [name]
    assert env_file_mode([name, "NCCL_DEBUG"]) == "0600"
    assert FILTERS["nccl_env_file_mode"]([name], "0755", "0700") == "0700"


@pytest.mark.parametrize("name", ["NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_PKEY", "TORCH_NCCL_BLOCKING_WAIT",
                                  "OMPI_MCA_btl_tcp_if_include"])
def test_ordinary_names(name):
    assert secret_names([name]) == [] and env_file_mode([name]) == "0644"
    assert FILTERS["nccl_env_secret_names"]({name: "1"}) == []
