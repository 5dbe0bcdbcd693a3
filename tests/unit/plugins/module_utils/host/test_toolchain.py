"""module_utils.toolchain and the nccl_toolchain module against small fake trees: nvcc scripts,
nccl.h and libnccl.so files, a python that finds torch's NCCL, mpicc answering --showme, nvidia-smi.
The fixed system folders (/usr/local/cuda*, /usr/include, ...) are pointed into tmp_path, so the
machine's own toolchain never takes part."""

import json
import os
import shutil
import sys
import textwrap

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from nccl_tests.fakes import make_fake_mpicc

from ansible_collections.ncclkit.cluster.plugins.module_utils.host import toolchain as tc
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_toolchain
from conftest import REPO_ROOT, SAMPLES

FACTS = ("ncclkit_gpu_capabilities", "ncclkit_cuda", "ncclkit_nccl", "ncclkit_mpi")


@pytest.fixture(autouse=True)
def no_system_toolchain(monkeypatch, tmp_path):
    """Only what a test lays out is found: PATH holds just the tools the fake scripts use, no
    $CUDA_HOME, no system folders."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("cat", "dirname", "sleep"):
        (tools / name).symlink_to(shutil.which(name))
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(tc, "CUDA_NVCC_FALLBACKS", [])
    monkeypatch.setattr(tc, "SYSTEM_NCCL_INCLUDE_DIRS", [])
    monkeypatch.setattr(tc, "SYSTEM_NCCL_LIB_DIRS", [])


def on_path(monkeypatch, folder):
    monkeypatch.setenv("PATH", folder + os.pathsep + os.environ["PATH"])


def exe(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    path.chmod(0o755)
    return path


def touch(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def fake_nvcc(path, release="12.4", top=None):
    """An nvcc printing `release X,`; --dryrun prints TOP (its own <home>/bin/.. by default)."""
    top_line = top if top is not None else '$(dirname "$0")/..'
    return exe(path, f"""
        #!/bin/sh
        case "$*" in
          *--version*) echo "Cuda compilation tools, release {release}, V{release}.131" ;;
          *--dryrun*) echo "#\\$ _NVVM_BRANCH_=nvvm" >&2; echo "#\\$ TOP={top_line}" >&2 ;;
          *) exit 1 ;;
        esac
        """)


def fake_cuda(home, release="12.4"):
    fake_nvcc(home / "bin" / "nvcc", release)
    touch(home / "include" / "cuda_runtime.h")
    return home


def fake_nccl(home, version=(2, 27, 7), lib="lib", dev_link=True):
    major, minor, patch = version
    touch(home / "include" / "nccl.h", f"#define NCCL_MAJOR {major}\n#define NCCL_MINOR {minor}\n"
                                       f"#define NCCL_PATCH {patch}\n#define NCCL_SUFFIX \"\"\n")
    real = touch(home / lib / f"libnccl.so.{major}.{minor}.{patch}")
    (home / lib / "libnccl.so.2").symlink_to(real.name)
    if dev_link:
        (home / lib / "libnccl.so").symlink_to("libnccl.so.2")
    return home


def fake_torch_python(env, version=(2, 28, 9)):
    """A python whose sys.path holds torch and the pip wheel's nvidia/nccl (no libnccl.so)."""
    site = env / "site-packages"
    touch(site / "torch" / "__init__.py")
    fake_nccl(site / "nvidia" / "nccl", version, dev_link=False)
    return exe(env / "bin" / "python3", f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')


def fake_openmpi(root, version="4.1.6"):
    """Debian's layout (include/ and lib/ under .../openmpi) and an mpicc answering --showme."""
    home = root / "usr" / "lib" / "x86_64-linux-gnu" / "openmpi"
    touch(home / "include" / "mpi.h")
    touch(home / "lib" / "libmpi.so")
    return home, make_fake_mpicc(root / "usr" / "bin" / "mpicc", home, version)


def fake_smi(path, text, rc=0):
    return exe(path, f"#!/bin/sh\ncat <<'EOF'\n{text}\nEOF\nexit {rc}\n")


# --- GPUs -------------------------------------------------------------------------------------

def test_gathered_gpus_give_the_capabilities_without_nvidia_smi(tmp_path):
    gpus = [{"compute_cap": "9.0"}, {"compute_cap": 8.0}, {"compute_cap": "9.0"}]
    caps = tc.gpu_capabilities(gpus, "", str(tmp_path / "never-run"))
    assert caps == {"present": True, "count": 3, "capabilities": ["9.0", "8.0", "9.0"], "sm": [80, 90],
                    "oldest": 80, "newest": 90, "reason": ""}


@pytest.mark.parametrize("reason, expected", [
    ("nvidia-smi not found", "nvidia-smi not found"),
    ("", "nccl_preflight found no GPU"),
])
def test_no_gathered_gpu_keeps_the_reason(reason, expected):
    caps = tc.gpu_capabilities([], reason, "nvidia-smi")
    assert caps == {"present": False, "count": 0, "capabilities": [], "sm": [], "oldest": None,
                    "newest": None, "reason": expected}


def test_nvidia_smi_lists_the_capabilities(tmp_path):
    smi = fake_smi(tmp_path / "nvidia-smi", "9.0\n 8.6\r\n9.0")
    caps = tc.gpu_capabilities(None, "", str(smi))
    assert caps["capabilities"] == ["9.0", "8.6", "9.0"] and caps["sm"] == [86, 90]
    assert caps["count"] == 3 and caps["reason"] == ""


def test_nvidia_smi_missing_or_listing_nothing_says_why(tmp_path):
    assert tc.gpu_capabilities(None, "", str(tmp_path / "nvidia-smi"))["reason"] == \
        f"{tmp_path / 'nvidia-smi'} not found: install the NVIDIA driver"
    smi = fake_smi(tmp_path / "bin" / "nvidia-smi", "No devices were found\nsecond\nthird", rc=6)
    caps = tc.gpu_capabilities(None, "", str(smi))
    assert caps["present"] is False
    assert caps["reason"] == f"{smi} listed no GPU (exit 6): No devices were found second"


def test_nvidia_smi_is_found_on_path(tmp_path, monkeypatch):
    fake_smi(tmp_path / "bin" / "nvidia-smi", "9.0")
    on_path(monkeypatch, str(tmp_path / "bin"))
    assert tc.gpu_capabilities(None, "", "nvidia-smi")["sm"] == [90]


def test_a_hung_nvidia_smi_is_stopped_at_the_timeout(tmp_path):
    smi = exe(tmp_path / "nvidia-smi", "#!/bin/sh\necho 9.0\nexec sleep 30\n")
    rc, out = tc.run_command([str(smi)], timeout=1)
    assert rc == tc.TIMED_OUT and out.strip() == "9.0"

    def stopped(argv, **_):
        return tc.TIMED_OUT, ""
    assert tc.gpu_capabilities(None, "", str(smi), run=stopped)["reason"] == f"{smi} listed no GPU (exit 124):"


# --- CUDA -------------------------------------------------------------------------------------

def test_the_given_cuda_home_is_used_as_given(tmp_path, monkeypatch):
    home = fake_cuda(tmp_path / "cuda-12.4", "12.4")
    link = tmp_path / "cuda"
    link.symlink_to(home)
    fake_cuda(tmp_path / "other", "13.0")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "other"))
    assert tc.find_cuda(str(link)) == {"found": True, "nvcc": f"{link}/bin/nvcc", "version": "12.4",
                                       "major": 12, "home": str(link), "hint": ""}


def test_a_given_cuda_home_without_nvcc_is_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", str(fake_cuda(tmp_path / "cuda", "13.0")))
    assert tc.find_cuda(str(tmp_path / "missing")) == {
        "found": False, "nvcc": "", "version": "", "major": 0, "home": "", "hint": tc.CUDA_HINT}
    assert tc.CUDA_HINT == ("no nvcc found (looked at $CUDA_HOME, PATH, /usr/local/cuda*): install the CUDA "
                            "toolkit (NVIDIA repository package cuda-toolkit-13-0 or cuda-toolkit-12-x) or "
                            "set nccl_preflight_cuda_home to its folder")


def test_cuda_home_comes_before_path(tmp_path, monkeypatch):
    fake_cuda(tmp_path / "on-path", "13.0")
    on_path(monkeypatch, str(tmp_path / "on-path" / "bin"))
    monkeypatch.setenv("CUDA_HOME", str(fake_cuda(tmp_path / "env", "12.8")))
    found = tc.find_cuda("")
    assert found["version"] == "12.8" and found["home"] == str(tmp_path / "env")


def test_an_nvcc_without_a_release_is_skipped(tmp_path, monkeypatch):
    broken = exe(tmp_path / "env" / "bin" / "nvcc", "#!/bin/sh\necho 'nvcc: cannot run'\n")
    monkeypatch.setenv("CUDA_HOME", str(broken.parent.parent))
    fake_cuda(tmp_path / "on-path", "13.0")
    on_path(monkeypatch, str(tmp_path / "on-path" / "bin"))
    assert tc.find_cuda("")["nvcc"] == str(tmp_path / "on-path" / "bin" / "nvcc")


def test_a_wrapper_nvcc_is_followed_to_its_toolkit_by_dryrun_top(tmp_path, monkeypatch):
    real = fake_nvcc(tmp_path / "opt" / "cuda-13.0" / "bin" / "nvcc", "13.0")
    wrapper = exe(tmp_path / "usr" / "local" / "bin" / "nvcc", f'#!/bin/sh\nexec "{real}" "$@"\n')
    on_path(monkeypatch, str(wrapper.parent))
    assert tc.find_cuda("") == {"found": True, "nvcc": str(wrapper), "version": "13.0", "major": 13,
                                "home": str(tmp_path / "opt" / "cuda-13.0"), "hint": ""}


def test_a_linked_nvcc_resolves_to_its_toolkit_without_asking(tmp_path, monkeypatch):
    home = fake_cuda(tmp_path / "cuda-12.6", "12.6")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").symlink_to(home / "bin" / "nvcc")
    on_path(monkeypatch, str(tmp_path / "bin"))
    calls = []

    def recording(argv, **kwargs):
        calls.append(argv[1])
        return tc.run_command(argv, **kwargs)
    assert tc.find_cuda("", run=recording)["home"] == str(home)
    assert calls == ["--version"]


def test_the_usual_folders_are_tried_last_in_order(tmp_path, monkeypatch):
    fake_cuda(tmp_path / "cuda-12.4", "12.4")
    fake_cuda(tmp_path / "cuda-13.0", "13.0")
    monkeypatch.setattr(tc, "CUDA_NVCC_FALLBACKS", [str(tmp_path / "cuda" / "bin" / "nvcc"),
                                                    str(tmp_path / "cuda-*" / "bin" / "nvcc")])
    assert tc.find_cuda("")["home"] == str(tmp_path / "cuda-12.4")


# --- NCCL -------------------------------------------------------------------------------------

def test_torch_nccl_is_found_by_running_the_python(tmp_path):
    python = fake_torch_python(tmp_path / "env")
    site = tmp_path / "env" / "site-packages"
    nccl = tc.find_nccl("auto", str(fake_nccl(tmp_path / "user-nccl")), str(python), [])
    assert nccl == {
        "found": True, "source": "torch", "home": str(site / "nvidia" / "nccl"),
        "include_dir": str(site / "nvidia" / "nccl" / "include"),
        "lib_dir": str(site / "nvidia" / "nccl" / "lib"),
        "library": str(site / "nvidia" / "nccl" / "lib" / "libnccl.so.2.28.9"),
        "dev_link": "", "version": "2.28.9", "python": sys.executable, "hint": ""}


def test_a_fake_python_that_prints_a_folder_is_believed(tmp_path):
    home = fake_nccl(tmp_path / "wheel" / "nvidia" / "nccl", (2, 26, 2))
    python = exe(tmp_path / "bin" / "python3",
                 f"#!/bin/sh\ncat >/dev/null\necho {home}\necho /opt/venv/bin/python3\n")
    nccl = tc.find_nccl("torch", "", str(python), [])
    assert nccl["source"] == "torch" and nccl["python"] == "/opt/venv/bin/python3"
    assert nccl["version"] == "2.26.2" and nccl["dev_link"] == str(home / "lib" / "libnccl.so")


def test_torch_candidates_are_tried_in_order_with_globs(tmp_path, monkeypatch):
    no_torch = exe(tmp_path / "bin" / "python3", "#!/bin/sh\ncat >/dev/null\nexit 3\n")
    on_path(monkeypatch, str(no_torch.parent))
    fake_torch_python(tmp_path / "envs" / "train", (2, 21, 5))
    candidates = ["python3", str(tmp_path / "missing" / "python3"), str(tmp_path / "envs" / "*" / "bin" / "python3")]
    nccl = tc.find_nccl("torch", "", "", candidates)
    assert nccl["version"] == "2.21.5" and "train" in nccl["home"]


def test_a_given_torch_python_replaces_the_candidates(tmp_path):
    candidate = fake_torch_python(tmp_path / "env")
    nccl = tc.find_nccl("torch", "", str(tmp_path / "missing" / "python3"), [str(candidate)])
    assert nccl["found"] is False
    assert nccl["hint"] == tc.NCCL_HINT.format(mode="torch")
    assert nccl["hint"].startswith("no NCCL with a header (nccl.h) found (mode torch): install PyTorch")


def test_auto_falls_back_to_the_system_then_the_path(tmp_path, monkeypatch):
    user = fake_nccl(tmp_path / "user", (2, 27, 7))
    assert tc.find_nccl("auto", str(user), "", [])["source"] == "path"
    fake_nccl(tmp_path / "usr", (2, 23, 4))
    monkeypatch.setattr(tc, "SYSTEM_NCCL_INCLUDE_DIRS", [str(tmp_path / "none"), str(tmp_path / "usr" / "include")])
    monkeypatch.setattr(tc, "SYSTEM_NCCL_LIB_DIRS", [str(tmp_path / "none"), str(tmp_path / "usr" / "lib")])
    nccl = tc.find_nccl("auto", str(user), "", [])
    assert nccl["source"] == "system" and nccl["home"] == str(tmp_path / "usr")
    assert nccl["library"] == str(tmp_path / "usr" / "lib" / "libnccl.so.2.23.4")
    assert nccl["dev_link"] == str(tmp_path / "usr" / "lib" / "libnccl.so")


def test_the_system_library_may_come_from_ldconfig(tmp_path, monkeypatch):
    touch(tmp_path / "include" / "nccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 19\n#define NCCL_PATCH 3\n")
    lib = touch(tmp_path / "cache" / "libnccl.so.2")
    monkeypatch.setattr(tc, "SYSTEM_NCCL_INCLUDE_DIRS", [str(tmp_path / "include")])

    def ldconfig(argv, **kwargs):
        assert argv == ["ldconfig", "-p"]
        return 0, f"812 libs found in cache `/etc/ld.so.cache'\n\tlibnccl.so.2 (libc6,x86-64) => {lib}\n"
    nccl = tc.find_nccl("system", "", "", [], run=ldconfig)
    assert nccl["library"] == str(lib) and nccl["version"] == "2.19.3" and nccl["home"] == str(tmp_path)


def test_a_path_nccl_in_lib64_and_the_library_order(tmp_path):
    home = fake_nccl(tmp_path / "nccl", (2, 25, 1), lib="lib64")
    nccl = tc.find_nccl("path", str(home), "", [])
    assert nccl["lib_dir"] == str(home / "lib64") and nccl["library"] == str(home / "lib64" / "libnccl.so.2.25.1")
    only_dev = touch(tmp_path / "dev" / "libnccl.so")
    assert tc._nccl_library([str(tmp_path / "nothing"), str(only_dev.parent)]) == str(only_dev)
    touch(tmp_path / "dev" / "libnccl.so.3")
    assert tc._nccl_library([str(only_dev.parent)]) == str(tmp_path / "dev" / "libnccl.so.3")


def test_a_path_without_header_or_library_is_not_found(tmp_path):
    touch(tmp_path / "nccl" / "lib" / "libnccl.so.2")
    assert tc.find_nccl("path", str(tmp_path / "nccl"), "", [])["found"] is False
    touch(tmp_path / "nccl" / "include" / "nccl.h")
    assert tc.find_nccl("path", str(tmp_path / "nccl"), "", [])["version"] == ".."


def test_header_version_parts(tmp_path):
    header = touch(tmp_path / "nccl.h", "/* NCCL_MAJOR 9 */\n#define NCCL_MAJOR 2\n#define NCCL_MINOR   28\n"
                                        "#define NCCL_PATCH 9\n#define NCCL_MAJOR 3\n")
    assert tc.nccl_header_version(str(header)) == "2.28.9"


# --- MPI --------------------------------------------------------------------------------------

def test_mpicc_gives_the_include_and_library_folders(tmp_path, monkeypatch):
    home, mpicc = fake_openmpi(tmp_path)
    on_path(monkeypatch, str(mpicc.parent))
    assert tc.find_mpi("", "mpicc", []) == {
        "found": True, "flavor": "openmpi", "home": str(home), "include_dir": str(home / "include"),
        "lib_dir": str(home / "lib"), "mpicc": str(mpicc), "version": "4.1.6", "hint": ""}


def test_an_mpicc_without_showme_folders_gives_its_install_folder(tmp_path):
    home = tmp_path / "hpcx" / "ompi"
    touch(home / "include" / "mpi.h")
    touch(home / "lib" / "libmpi.so")
    mpicc = exe(home / "bin" / "mpicc",
                "#!/bin/sh\n[ \"$1\" = --showme:version ] && echo 'mpicc: Open MPI 5.0.3rc1 (C)'\n")
    found = tc.find_mpi("", str(mpicc), [])
    assert found["home"] == str(home) and found["mpicc"] == str(mpicc) and found["version"] == "5.0.3rc1"


def test_candidates_are_expanded_and_ompi_info_gives_the_version(tmp_path):
    home = tmp_path / "usr" / "mpi" / "gcc" / "openmpi-4.1.7a1"
    touch(home / "include" / "mpi.h")
    touch(home / "lib64" / "libmpi.so")
    exe(home / "bin" / "ompi_info", "#!/bin/sh\necho 'Open MPI v4.1.7a1'\necho\necho 'https://www.open-mpi.org/'\n")
    found = tc.find_mpi("", str(tmp_path / "no-mpicc"),
                        [str(tmp_path / "missing"), str(tmp_path / "usr" / "mpi" / "gcc" / "openmpi-*")])
    assert found == {"found": True, "flavor": "openmpi", "home": str(home), "include_dir": str(home / "include"),
                     "lib_dir": str(home / "lib64"), "mpicc": "", "version": "4.1.7", "hint": ""}


def test_a_given_mpi_home_settles_it(tmp_path, monkeypatch):
    dummy, mpicc = fake_openmpi(tmp_path)
    on_path(monkeypatch, str(mpicc.parent))
    found = tc.find_mpi(str(tmp_path / "missing"), "mpicc", [])
    assert found == {"found": False, "flavor": "", "home": "", "include_dir": "", "lib_dir": "", "mpicc": "",
                     "version": "", "hint": tc.MPI_HINT}
    assert tc.MPI_HINT == ("no MPI found (mpicc on PATH, /usr/lib/x86_64-linux-gnu/openmpi, /opt/hpcx/ompi, ...): "
                           "install Open MPI (apt-get install libopenmpi-dev openmpi-bin) or set "
                           "nccl_preflight_mpi_home to a folder with include/mpi.h and lib/libmpi.so")


# --- the whole detection, the module and the H200 recording -------------------------------------

def test_detect_toolchain_takes_the_module_options(tmp_path):
    home, mpicc = fake_openmpi(tmp_path / "mpi")
    facts = tc.detect_toolchain({
        "gpus": [{"compute_cap": "9.0"}], "cuda_home": str(fake_cuda(tmp_path / "cuda", "13.0")),
        "nccl_source": "path", "nccl_home": str(fake_nccl(tmp_path / "nccl")), "mpicc": str(mpicc),
        "torch_python": None})
    assert sorted(facts) == sorted(FACTS)
    assert facts["ncclkit_gpu_capabilities"]["sm"] == [90] and facts["ncclkit_cuda"]["major"] == 13
    assert facts["ncclkit_nccl"]["version"] == "2.27.7" and facts["ncclkit_mpi"]["home"] == str(home)


def test_nothing_found_gives_every_hint(tmp_path):
    facts = tc.detect_toolchain({"nvidia_smi": str(tmp_path / "nvidia-smi"), "mpi_candidates": [],
                                 "torch_python_candidates": [str(tmp_path / "python3")]})
    assert [facts[name]["hint"] for name in FACTS[1:]] == [tc.CUDA_HINT, tc.NCCL_HINT.format(mode="auto"), tc.MPI_HINT]
    assert facts["ncclkit_gpu_capabilities"]["present"] is False


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_toolchain.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_the_module_returns_the_four_facts_in_check_mode(capsys, tmp_path):
    code, result = run_module(capsys, {"_ansible_check_mode": True, "gpus": [{"compute_cap": "8.0"}],
                                       "nccl_home": str(fake_nccl(tmp_path / "nccl")), "nccl_source": "path",
                                       "mpi_candidates": [], "torch_python_candidates": []})
    assert code == 0 and result["changed"] is False
    assert result["ncclkit_gpu_capabilities"]["sm"] == [80]
    assert result["ncclkit_nccl"]["source"] == "path" and result["ncclkit_cuda"]["found"] is False


def test_the_module_refuses_an_unknown_nccl_source(capsys):
    code, result = run_module(capsys, {"nccl_source": "conda"})
    assert code == 1 and "nccl_source must be one of: auto, torch, system, path" in result["msg"]


def test_the_h200_recording_has_the_fact_shapes():
    sample = json.loads((SAMPLES / "h200-toolchain.json").read_text())
    assert next(iter(sample)) == "_source" and sample["_source"].startswith("recorded 2026-")
    shapes = {
        "ncclkit_gpu_capabilities": {"present": bool, "count": int, "capabilities": list, "sm": list,
                                     "oldest": int, "newest": int, "reason": str},
        "ncclkit_cuda": {"found": bool, "nvcc": str, "version": str, "major": int, "home": str, "hint": str},
        "ncclkit_nccl": {key: str for key in ("source", "home", "include_dir", "lib_dir", "library", "dev_link",
                                              "version", "python", "hint")} | {"found": bool},
        "ncclkit_mpi": {key: str for key in ("flavor", "home", "include_dir", "lib_dir", "mpicc", "version",
                                             "hint")} | {"found": bool},
    }
    for name, shape in shapes.items():
        assert {key: type(value) for key, value in sample[name].items()} == shape, name
        assert sample[name].get("found", sample[name].get("present")) is True, name
    assert sample["ncclkit_nccl"]["source"] == "torch" and sample["ncclkit_cuda"]["major"] >= 12


def test_the_h200_recording_matches_what_the_former_shell_found_there():
    """The former toolchain shell printed "<piece>.<key><TAB><value>" lines on the same machine."""
    sample = json.loads((SAMPLES / "h200-toolchain.json").read_text())
    lines = (SAMPLES / "h200-toolchain-old-shell.txt").read_text().splitlines()[1:]
    old = dict(line.split("\t", 1) for line in lines)
    pieces = {"cuda": "ncclkit_cuda", "nccl": "ncclkit_nccl", "mpi": "ncclkit_mpi"}
    compared = 0
    for key, value in old.items():
        piece, field = key.split(".")
        if piece in pieces:
            assert sample[pieces[piece]][field] == value, key
            compared += 1
    assert compared == 15
    assert sample["ncclkit_gpu_capabilities"]["capabilities"] == old["gpu.caps"].split(",")
    assert sample["ncclkit_nccl"]["dev_link"] == old.get("nccl.dev_link", "")


# --- the search's options, documented once (doc fragment toolchain_search) -------------------

def test_the_search_options_are_documented_once_for_both_modules():
    """nccl_toolchain's options and nccl_host_survey's `toolchain` suboptions come from one
    fragment text, matching the shared argument spec (sanity's validate-modules checks the same,
    slowly)."""
    from ansible_collections.ncclkit.cluster.plugins.doc_fragments.toolchain_search import ModuleDocFragment
    top = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    survey = yaml.safe_load(ModuleDocFragment.SURVEY)["options"]["toolchain"]
    spec = {name: {key: value for key, value in option.items() if key != "description"} for name, option in top.items()}
    assert spec == tc.SEARCH_OPTIONS
    assert survey["type"] == "dict" and survey["default"] == {}
    assert {name: option["description"] for name, option in survey["suboptions"].items()} == {
        name: [line.replace("O(", "O(toolchain.") for line in option["description"]]
        if isinstance(option["description"], list) else option["description"].replace("O(", "O(toolchain.")
        for name, option in top.items()}
    for module in ("nccl_toolchain", "nccl_host_survey"):
        text = (REPO_ROOT / "plugins" / "modules" / f"{module}.py").read_text()
        assert "The CUDA toolkit's folder (holding" not in text, f"{module} documents the search options again"
