"""Where the nccl_tests role may install, and which of the paths under it it may delete.

The role owns only what it made: builds/<key>/ (with its ncclkit-stamp.json inside), the
temporary .build-<key>/ beside the build script .build-<key>.sh it wrote, and each source
src/<entry> that has its stamp src/<entry>.ncclkit (written before the source is fetched).
Anything else under the install folder - someone's src/keepme in /usr/local/src - is never
deleted. A system folder itself (/usr/local, /opt, ...) is refused as the install folder: its
src/ and builds/ belong to everyone.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import posixpath

BUILD_STAMP = "ncclkit-stamp.json"
SOURCE_STAMP_SUFFIX = ".ncclkit"


# Folders shared by the whole system (the FHS's, and the usual homes of data disks): an install
# folder must be a dedicated folder below one of them, never one of them.
SYSTEM_DIRS = frozenset([
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media",
    "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
    "/usr/bin", "/usr/include", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/local",
    "/usr/local/bin", "/usr/local/etc", "/usr/local/include", "/usr/local/lib", "/usr/local/sbin",
    "/usr/local/share", "/usr/local/src", "/usr/sbin", "/usr/share", "/usr/src", "/var/cache",
    "/var/lib", "/var/local", "/var/log", "/var/opt", "/var/tmp", "/data", "/scratch",
    "/root/autodl-tmp", "/root/autodl-fs",
])


def install_dir_problem(path):
    """'' when `path` may be nccl_tests_install_dir; else the one line saying why not and the fix."""
    if not isinstance(path, str) or not path.startswith("/"):
        return ("nccl_tests_install_dir must be an absolute path, not {0!r}: use a dedicated folder such as "
                "/opt/ncclkit/nccl-tests".format(path))
    parts = path.split("/")
    if ".." in parts or "." in parts:
        return ("nccl_tests_install_dir {0} must not hold '.' or '..': give the folder as it is, "
                "e.g. /opt/ncclkit/nccl-tests".format(path))
    normal = "/" + posixpath.normpath(path).lstrip("/")  # normpath keeps a leading //
    if normal in SYSTEM_DIRS:
        return ("nccl_tests_install_dir {0} is a system folder: the role removes the builds and sources it no "
                "longer uses under it, so it needs a folder of its own; use a dedicated subfolder such as "
                "{1}/ncclkit/nccl-tests".format(path, normal.rstrip("/")))
    return ""


def removable_paths(install_dir, paths, keep):
    """The paths of `paths` (what exists under install_dir: .build-*, builds/*, src/* and each
    builds/*/ncclkit-stamp.json) that carry the role's stamp and are not in `keep` (the build and
    source in use), each folder before its stamp. Returns {"leftovers": [...], "unused": [...]}."""
    top = posixpath.normpath(install_dir)
    present = {posixpath.normpath(path) for path in paths}
    keep = {posixpath.normpath(path) for path in keep}
    leftovers, unused = [], []
    for path in sorted(present):
        if posixpath.dirname(path) == top and posixpath.basename(path).startswith(".build-"):
            # The temporary build folder and the script that made it: ours when the script is there.
            if not path.endswith(".sh") and path + ".sh" in present:
                leftovers += [path, path + ".sh"]
        elif posixpath.dirname(path) == top + "/builds":
            if path not in keep and posixpath.join(path, BUILD_STAMP) in present:
                unused.append(path)
        elif posixpath.dirname(path) == top + "/src" and path.endswith(SOURCE_STAMP_SUFFIX):
            source = path[:-len(SOURCE_STAMP_SUFFIX)]
            if source not in keep:
                unused += [candidate for candidate in (source, source + ".download") if candidate in present]
                unused.append(path)
    return {"leftovers": leftovers, "unused": unused}
