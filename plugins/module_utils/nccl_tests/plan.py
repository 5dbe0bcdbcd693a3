"""What the nccl_tests role builds on a host, and what stops it, from the toolchain facts.

`build_plan` settles once, in the preflight, everything the later steps need: whether the host
builds at all, the nvcc -gencode flags (derived from the GPUs' compute capabilities unless the
user gave them), MPI, the binaries' name suffix, the tools the build needs, where the source goes,
and the problems that stop a build on a GPU host, each with its fix.

`install_state` reads the install step's scan of the host (lines "dir\\t<path>", "root\\t<path>",
"tree\\t<sha256>|none") and composes the build's stamp; the build's key is a hash of the stamp,
so a change of any input (source tree, toolkit, NCCL, flags) makes a new build.

Pure Python 3.8+ standard library, plus ansible-core's boolean parser and LooseVersion (what the
`bool` filter and the `version` test use) so that values behave as they did in Jinja.
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible.module_utils.compat.version import LooseVersion
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import OFF, ON, TristateError, tristate

NCCL_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
NAME_SUFFIX = "NAME_SUFFIX="


class PlanError(ValueError):
    """A setting the plan cannot use; the message names it and the fix."""


def as_bool(value, name):
    """`value` as the `bool` filter reads it (true/false, yes/no, on/off, 1/0, any case)."""
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise PlanError(f"{name} must be true or false, not {value!r}") from None


def sha1(text):
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def arch_limits(limits, cuda):
    """The first row of `limits` (newest toolkit first) whose "cuda" is not newer than the toolkit
    found; a toolkit not found counts as version 0."""
    version = LooseVersion(str(cuda.get("version") or "0") if cuda.get("found") else "0")
    for row in limits:
        try:
            if LooseVersion(str(row["cuda"])) <= version:
                return row
        except TypeError:  # a version with letters against one with numbers: not comparable
            continue
    return limits[-1]


def derived_gencode(sm, ptx):
    """nvcc flags for each capability in `sm`, plus PTX for the newest (last) one when `ptx`."""
    sm = [str(s) for s in sm]
    flags = [f"-gencode=arch=compute_{s},code=sm_{s}" for s in sm]
    if ptx and sm:
        flags.append("-gencode=arch=compute_{0},code=compute_{0}".format(sm[-1]))
    return " ".join(flags)


def name_suffix(make_vars):
    """The NAME_SUFFIX given in the make variables (the last one wins), '' if none."""
    given = [v for v in make_vars if str(v).startswith(NAME_SUFFIX)]
    return str(given[-1])[len(NAME_SUFFIX):] if given else ""


def controller_path(path, playbook_dir):
    """A controller path relative to the playbook's folder made absolute."""
    path = str(path or "")
    return path if path.startswith("/") else f"{playbook_dir}/{path}"


def source_dir(settings, ctl_path):
    """src/<entry>: one entry per source kind; an archive's and a controller path's carry their
    version and a part of their checksum/path hash, so that another source never reuses it."""
    source = settings["source"]
    version = str(settings["version"])
    if source == "git":
        entry = "git"
    elif source == "archive":
        entry = "archive-{}-{}".format(version, str(settings.get("archive_checksum") or "").rsplit(":", maxsplit=1)[-1][:12])
    elif source == "controller":
        entry = f"controller-{version}-{sha1(ctl_path)[:12]}"
    else:
        raise PlanError(f"nccl_tests_source is one of git, archive, controller, not {source!r}")
    return "{}/src/{}".format(settings["install_dir"], entry)


def build_problems(settings, gpu, cuda, nccl, mpi, limits, derive):
    """What stops the build on this host, each with its fix; [] when nothing does."""
    sm = list(gpu.get("sm") or [])
    present = as_bool(gpu.get("present", False), "ncclkit_gpu_capabilities.present")
    problems = []
    if not present:
        if as_bool(settings["required"], "nccl_tests_required"):
            problems.append("no GPU ({}) and nccl_tests_required is true: install the NVIDIA driver so that "
                            "nvidia-smi lists the GPUs, or set nccl_tests_required to false to skip the build on "
                            "such hosts".format(gpu.get("reason")))
        return problems
    cuda_found = as_bool(cuda.get("found", False), "ncclkit_cuda.found")
    nccl_found = as_bool(nccl.get("found", False), "ncclkit_nccl.found")
    if not cuda_found:
        problems.append(cuda.get("hint"))
    if not nccl_found:
        problems.append(nccl.get("hint"))
    elif not NCCL_VERSION.match(str(nccl.get("version") or "")):
        problems.append("NCCL version unreadable from {}/nccl.h".format(nccl.get("include_dir")))
    if settings["mpi"] == ON and not as_bool(mpi.get("found", False), "ncclkit_mpi.found"):
        problems.append("nccl_tests_mpi is required but {}".format(mpi.get("hint")))
    if not (cuda_found and derive):
        return problems
    min_sm, max_sm = int(limits["min_sm"]), int(limits["max_sm"])
    too_old = [s for s in sm if int(s) < min_sm]
    too_new = [s for s in sm if int(s) > max_sm] if max_sm > 0 else []
    toolkit = "CUDA {} ({})".format(cuda.get("version"), cuda.get("nvcc"))
    if too_old:
        problems.append(
            "{} builds for sm_{} and newer, but the GPUs here are older (sm_{}): install an older CUDA "
            "toolkit that still supports them (CUDA 12.x builds sm_50 to sm_90, and from 12.8 sm_100/sm_120; "
            "CUDA 11.8 builds sm_35 to sm_90) and point nccl_preflight_cuda_home at it, or set nccl_tests_gencode "
            "yourself".format(toolkit, min_sm, ", sm_".join(str(s) for s in too_old)))
    if too_new:
        problems.append(
            "{} builds up to sm_{}, but the GPUs here are newer (sm_{}): install a newer CUDA toolkit and "
            "point nccl_preflight_cuda_home at it, or set nccl_tests_gencode yourself".format(
                toolkit, max_sm, ", sm_".join(str(s) for s in too_new)))
    return problems


def build_plan(settings, gpu, cuda, nccl, mpi):
    """The build this host makes (see the module's docstring). `settings` holds the role's
    variables without their prefix, plus arch_limits, playbook_dir, host and tmpdir."""
    gpu, cuda, nccl, mpi = (dict(d or {}) for d in (gpu, cuda, nccl, mpi))
    try:
        settings = dict(settings, mpi=tristate(settings["mpi"], "nccl_tests_mpi"))
    except TristateError as error:
        raise PlanError(str(error)) from None
    present = as_bool(gpu.get("present", False), "ncclkit_gpu_capabilities.present")
    limits = arch_limits(list(settings["arch_limits"]), cuda)
    gencode = str(settings.get("gencode") or "").strip()
    derive = not gencode
    if derive:
        gencode = derived_gencode(gpu.get("sm") or [], as_bool(settings["ptx"], "nccl_tests_ptx"))
    ctl_path = controller_path(settings.get("controller_path"), settings["playbook_dir"])
    return {
        "build": present,
        "gencode": gencode,
        "mpi": settings["mpi"] != OFF and as_bool(mpi.get("found", False), "ncclkit_mpi.found"),
        "suffix": name_suffix(settings["make_vars"]),
        "needed_tools": ["make", "g++", "ldd"] + (["git"] if settings["source"] == "git" else ["tar", "gzip"]),
        "controller_path": ctl_path,
        "packed": "{}/ncclkit-nccl-tests-{}.tar.gz".format(
            settings.get("tmpdir") or "/tmp", sha1(ctl_path + str(settings["host"]))),
        "src_dir": source_dir(settings, ctl_path),
        "problems": build_problems(settings, gpu, cuda, nccl, mpi, limits, derive),
    }


def parse_scan(lines):
    """The install step's scan: ({"root": ..., "tree": ...}, [dir, ...])."""
    values, dirs = {}, []
    for line in lines:
        kind, dummy, value = str(line).partition("\t")
        if kind == "dir":
            dirs.append(value)
        elif kind:
            values[kind] = value
    return values, dirs


def stamp_key(stamp):
    """The build's key: the first 16 hex digits of the sha1 of the stamp as sorted JSON (the
    separators and escaping of Ansible's to_json, so that keys made before stay the same)."""
    return sha1(json.dumps(stamp, sort_keys=True))[:16]


def install_state(scan_lines, settings, cuda, nccl, mpi):
    """The build's stamp and key, whether it is installed, and the source found by the scan.

    `settings`: version, install_dir, src_dir, gencode, mpi (the plan's), make_vars, rpath,
    binaries, suffix."""
    values, dirs = parse_scan(scan_lines)
    cuda, nccl, mpi = (dict(d or {}) for d in (cuda, nccl, mpi))
    use_mpi = as_bool(settings["mpi"], "mpi")
    tree = values.get("tree", "none")
    stamp = {
        "nccl_tests_version": settings["version"],
        "source_tree_sha256": tree,
        "cuda_version": cuda.get("version"),
        "cuda_home": cuda.get("home"),
        "nccl_version": nccl.get("version"),
        "nccl_library": nccl.get("library"),
        "nccl_include_dir": nccl.get("include_dir"),
        "gencode": settings["gencode"],
        "mpi": use_mpi,
        "mpi_home": mpi.get("home") if use_mpi else "",
        "make_vars": list(settings["make_vars"]),
        "rpath": as_bool(settings["rpath"], "nccl_tests_rpath"),
        "binaries": [str(b) + settings["suffix"] for b in settings["binaries"]],
    }
    key = stamp_key(stamp)
    build_dir = "{}/builds/{}".format(settings["install_dir"], key)
    has_source = tree != "none"
    return {
        "has_source": has_source,
        "src_root": values.get("root", settings["src_dir"]),
        "stamp": stamp,
        "key": key,
        "build_dir": build_dir,
        # builds/<key> is only ever made by renaming a complete, checked build into place.
        "installed": build_dir in dirs,
        "dirs": dirs,
        "check_mode_note": check_mode_note(stamp, key, has_source),
    }


def check_mode_note(stamp, key, has_source):
    """What a run in check mode would do; the key is known only once the source is there."""
    return "would {}build nccl-tests {} ({}, MPI={}, NCCL {}){}.".format(
        "" if has_source else "fetch and ", stamp["nccl_tests_version"], stamp["gencode"], int(stamp["mpi"]),
        stamp["nccl_version"], " as build " + key if has_source else "")
