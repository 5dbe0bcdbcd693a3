"""The toolchain detection of the nccl_toolchain module, run on a GPU host without Ansible: imports
plugins/module_utils/host/toolchain.py by path and prints the four facts as JSON, led by a `_source`
field naming the command, the date and the GPU (tests/samples/h200-toolchain.json was made so).

    python3 benchmarks/h200_toolchain.py [CUDA_HOME_OR_EMPTY] > tests/samples/h200-toolchain.json

Every option keeps the role's default (nvidia-smi asked for the GPUs).
"""
import datetime
import importlib.util
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location(
    "toolchain", HERE.parent / "plugins" / "module_utils" / "host" / "toolchain.py")
toolchain = importlib.util.module_from_spec(spec)
spec.loader.exec_module(toolchain)

params = {"cuda_home": sys.argv[1]} if len(sys.argv) > 1 else {}
started = time.monotonic()
facts = toolchain.detect_toolchain(params)
elapsed = time.monotonic() - started
dummy, names = toolchain.run_command(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
gpus = [line.strip() for line in names.splitlines() if line.strip()]
where = "{} x {}".format(len(gpus), ", ".join(sorted(set(gpus)))) if gpus else "a host without GPU"
command = "python3 benchmarks/h200_toolchain.py" + "".join(" " + a for a in sys.argv[1:])
source = f"recorded {datetime.datetime.now(datetime.UTC).date().isoformat()} on {where} by {command}"
print(json.dumps({"_source": source, **facts}, indent=2))
print(f"detection took {elapsed:.2f} s", file=sys.stderr)
