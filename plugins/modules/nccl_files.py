#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Write a set of directories and files (content rendered on the controller) in one module run."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_files
short_description: Write several directories, files and symbolic links in one module run
description:
  - Creates the directories in O(directories), then writes every file of O(files) whose content
    differs from what is on the host, and sets owner, group and mode on all of them; then points
    every link of O(links) to its target.
  - One module run for what one C(ansible.builtin.template), C(copy) or C(file) task per path would
    do in two each (a C(stat), then the write or the attributes); the content is rendered on the
    controller, for example with the C(ansible.builtin.template) lookup.
  - A file is written to a temporary file in its own folder that already has its final mode, then
    renamed over the old one, so no reader sees half a file and a private file is never readable
    by others, even for a moment.
  - Changes nothing that already matches. Supports check mode and diff mode.
version_added: 0.7.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  owner:
    description: The owner of every directory and file that does not name its own.
    type: str
  group:
    description: The group of every directory and file that does not name its own.
    type: str
  directories:
    description:
      - Directories to create (with their parents) when missing, in this order.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The directory.
        type: path
        required: true
      owner:
        description: Its owner; O(owner) when not given, else unchanged.
        type: str
      group:
        description: Its group; O(group) when not given, else unchanged.
        type: str
      mode:
        description: Its mode, for example C("0755") or C("1777"); unchanged when not given.
        type: raw
  files:
    description:
      - Files to write, after the directories.
    type: list
    elements: dict
    default: []
    suboptions:
      dest:
        description: The file; its folder must exist (list it in O(directories)).
        type: path
        required: true
      content:
        description:
          - What the file holds, exactly (a trailing newline is not added).
          - Never logged or returned (it may hold a token); diff mode shows the changed lines.
        type: str
        required: true
      owner:
        description: Its owner; O(owner) when not given, else unchanged.
        type: str
      group:
        description: Its group; O(group) when not given, else unchanged.
        type: str
      mode:
        description:
          - Its mode, for example C("0644"). A new file without one gets C(0666) less the umask;
            an existing one keeps its own.
        type: raw
      backup:
        description: Keep a timestamped copy of the old file before replacing it.
        type: bool
        default: false
  links:
    description:
      - Symbolic links to make, after the files; one that points elsewhere is replaced (through a
        rename, so it always exists). A file or directory in its place is an error, never removed.
    type: list
    elements: dict
    default: []
    suboptions:
      dest:
        description: The link; its folder must exist.
        type: path
        required: true
      src:
        description: What it points to, as written in the link.
        type: str
        required: true
  absent:
    description:
      - Files and symbolic links to remove, after the links, where they exist; only those listed,
        the paths of files this collection writes. A directory in their place is an error, never removed.
    type: list
    elements: path
    default: []
notes:
  - Symbolic links are followed, as C(ansible.builtin.copy) does with O(files[].dest) by default.
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The changed lines of each file written, as a unified diff.
"""

EXAMPLES = r"""
- name: Write the profile and its folder
  ncclkit.cluster.nccl_files:
    owner: root
    group: root
    directories:
      - {path: /etc/ncclkit, mode: "0755"}
    files:
      - dest: /etc/nccl.conf
        content: "{{ lookup('ansible.builtin.template', 'nccl.conf.j2') }}"
        mode: "0644"
        backup: true
      - dest: /home/train/.ssh/config.d/cluster
        content: "Host node*\n    IdentityFile ~/.ssh/cluster_ed25519\n"
        owner: train
        mode: "0600"
"""

RETURN = r"""
directories:
  description: Each directory, in the order given, and whether it was created or its attributes changed.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/etc/ncclkit", "changed": false}]
files:
  description: Each file, in the order given, whether it changed, and its backup when one was made.
  returned: always
  type: list
  elements: dict
  sample: [{"dest": "/etc/nccl.conf", "changed": true, "backup_file": "/etc/nccl.conf.1234.2026-12-04@10:00:00~"}]
links:
  description: Each link, in the order given, and whether it was made or repointed.
  returned: always
  type: list
  elements: dict
  sample: [{"dest": "/etc/systemd/system/sysinit.target.wants/ncclkit-firewall.service", "changed": false}]
absent:
  description: Each path of O(absent), in the order given, and whether it was removed.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/etc/systemd/system/ncclkit-firewall.service", "changed": false}]
"""

import difflib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

# Diff mode shows text files up to this size; larger or binary ones are named, not shown.
_DIFF_LIMIT = 256 * 1024


def _octal_mode(mode, default):
    """An octal mode given as "0644", "644", 0o644 or 420; the default for a symbolic one (set later)."""
    if mode is None:
        return default
    if isinstance(mode, int):
        return mode
    try:
        return int(str(mode), 8)
    except ValueError:
        return default


def _invocation(module):
    """The arguments as returned: every content replaced by its length."""
    files = [dict(spec, content="(%d characters not shown)" % len(spec["content"])) for spec in module.params["files"]]
    return {"module_args": dict(module.params, files=files)}


def _fail(module, msg):
    module.fail_json(msg=msg, invocation=_invocation(module))


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _read(path):
    """The bytes of a regular file, or None when there is none."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _diff(dest, before, after):
    """A unified diff, prepared here: the changed lines, never a whole file in the result."""
    def lines(data):
        if data is None:
            return []
        if len(data) > _DIFF_LIMIT or b"\0" in data:
            return ["(%d bytes not shown)\n" % len(data)]
        return to_text(data, errors="surrogate_or_strict").splitlines(True)

    text = "".join(difflib.unified_diff(lines(before), lines(after), "before: " + dest, "after: " + dest))
    return {"prepared": text}


def _attributes(module, path, spec, changed):
    """Owner, group and mode set when they differ; True when something changed (or would)."""
    owner = spec.get("owner") or module.params["owner"]
    group = spec.get("group") or module.params["group"]
    params = module.load_file_common_arguments({"path": path, "owner": owner, "group": group, "mode": spec.get("mode")})
    return module.set_fs_attributes_if_different(params, changed)


def ensure_directory(module, spec):
    path = spec["path"]
    created = False
    if not os.path.isdir(path):
        if os.path.lexists(path):
            _fail(module, "%s exists and is not a directory: move it away, or choose another path." % path)
        created = True
        if not module.check_mode:
            os.makedirs(path, mode=_octal_mode(spec.get("mode"), 0o755) & 0o777)
    if module.check_mode and created:
        return {"path": path, "changed": True}
    return {"path": path, "changed": _attributes(module, path, spec, created)}


def write_file(module, spec, diffs):
    dest = spec["dest"]
    wanted = to_bytes(spec["content"], errors="surrogate_or_strict")
    if os.path.isdir(dest):
        _fail(module, "%s is a directory: choose a file path for it." % dest)
    real = os.path.realpath(dest)
    before = _read(real)
    result = {"dest": dest, "changed": before != wanted}
    if result["changed"] and module._diff:
        diffs.append(_diff(dest, before, wanted))
    if module.check_mode:
        if before is not None:
            result["changed"] = _attributes(module, real, spec, result["changed"])
        return result
    if result["changed"]:
        if before is not None and spec.get("backup"):
            result["backup_file"] = module.backup_local(real)
        folder = os.path.dirname(real)
        if not os.path.isdir(folder):
            _fail(module, "The folder of %s does not exist: list %s in directories first." % (dest, folder))
        old = os.stat(real) if before is not None else None
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".%s." % os.path.basename(real))
        try:
            # The old file's owner and the final mode before the content: a private file is never
            # readable by others, and a file nobody asked to chown keeps its owner.
            if old is not None:
                os.fchown(handle, old.st_uid, old.st_gid)
            mode = old.st_mode & 0o7777 if old is not None else 0o666 & ~_umask()
            os.fchmod(handle, _octal_mode(spec.get("mode"), mode) & 0o7777)
            with os.fdopen(handle, "wb") as out:
                out.write(wanted)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, real)
        except BaseException:
            if os.path.lexists(temporary):
                os.unlink(temporary)
            raise
    result["changed"] = _attributes(module, real, spec, result["changed"])
    return result


def ensure_link(module, spec):
    dest, src = spec["dest"], spec["src"]
    if os.path.islink(dest) and os.readlink(dest) == src:
        return {"dest": dest, "changed": False}
    if os.path.lexists(dest) and not os.path.islink(dest):
        _fail(module, "%s exists and is not a symbolic link: move it away, or choose another path." % dest)
    folder = os.path.dirname(dest)
    if not os.path.isdir(folder):
        _fail(module, "The folder of the link %s does not exist: list %s in directories first." % (dest, folder))
    if not module.check_mode:
        temporary = os.path.join(folder, ".%s.%d.ncclkit" % (os.path.basename(dest), os.getpid()))
        os.symlink(src, temporary)
        try:
            os.replace(temporary, dest)
        except BaseException:
            os.unlink(temporary)
            raise
    return {"dest": dest, "changed": True}


def ensure_absent(module, path):
    if not os.path.lexists(path):
        return {"path": path, "changed": False}
    if os.path.isdir(path) and not os.path.islink(path):
        _fail(module, "%s is a directory: ncclkit removes only the files it wrote; move it away." % path)
    if not module.check_mode:
        os.unlink(path)
    return {"path": path, "changed": True}


def main():
    attributes = {"owner": {"type": "str"}, "group": {"type": "str"}, "mode": {"type": "raw"}}
    module = AnsibleModule(
        argument_spec={
            "owner": {"type": "str"},
            "group": {"type": "str"},
            "directories": {"type": "list", "elements": "dict", "default": [],
                            "options": dict(attributes, path={"type": "path", "required": True})},
            "files": {"type": "list", "elements": "dict", "default": [],
                      "options": dict(attributes, dest={"type": "path", "required": True},
                                      content={"type": "str", "required": True},
                                      backup={"type": "bool", "default": False})},
            "links": {"type": "list", "elements": "dict", "default": [],
                      "options": {"dest": {"type": "path", "required": True}, "src": {"type": "str", "required": True}}},
            "absent": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
        # The contents may hold a token: no invocation in the host's journal, and none returned
        # with them (a no_log option would mask every copy of a short content in the whole result).
        no_log=True,
    )
    diffs = []
    directories = [ensure_directory(module, spec) for spec in module.params["directories"]]
    files = [write_file(module, spec, diffs) for spec in module.params["files"]]
    links = [ensure_link(module, spec) for spec in module.params["links"]]
    absent = [ensure_absent(module, path) for path in module.params["absent"]]
    changed = any(item["changed"] for item in directories + files + links + absent)
    result = {"changed": changed, "directories": directories, "files": files, "links": links, "absent": absent,
              "invocation": _invocation(module)}
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
