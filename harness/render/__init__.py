"""Every artifact of a plan, written to a directory all at once or not at all."""
from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import stat
import tempfile
from ipaddress import IPv4Network
from pathlib import Path

from harness.core.errors import InputError, RenderError
from harness.core.mgmtnet import with_mgmt_network
from harness.core.plan import Plan
from harness.render.cabling import cabling_csv, devices_csv, numbering_csv, sonic_devices_csv, sonic_links_csv
from harness.render.clabernetes import clabernetes_yaml
from harness.render.containerlab import HOST_IMAGE, SONIC_IMAGE, clab_yaml, routed_host_daemons
from harness.render.diagram import topology_svg
from harness.render.frr import frr_conf, host_frr_conf
from harness.render.hwskus import hwsku_files, switch_hwsku_files
from harness.render.lossless import CONTRACT_FILE, contract_of
from harness.render.sonic import config_db_json
from harness.render.sonic_init import init_sh

__all__ = ["MANIFEST", "OutputDirRefused", "artifacts", "switch_configs", "write_artifacts", "clab_yaml", "frr_conf",
           "config_db_json", "init_sh", "cabling_csv", "topology_svg"]


def artifacts(plan: Plan, lab: str | None = None, mgmt_network: IPv4Network | None = None, *,
              sonic_image: str = SONIC_IMAGE, host_image: str = HOST_IMAGE,
              init_step_s: float | None = None, clabernetes: bool = False) -> dict[str, str]:
    """Relative path -> text, for every artifact. Pure: nothing is written.

    The mgmt addresses (clab file and config_db.json alike) are the declared plan's
    (`addressing.mgmt`), unless `mgmt_network` moves them (the clab runtime does, for a lab whose
    declared range another running lab holds: harness.core.mgmtnet). `init_step_s`: each
    init.sh step's timeout, by default for the Vagrant VM (harness.render.sonic_init); the clab
    runtime gives the one for the machine it boots on. `clabernetes`: also the clab file as a
    clabernetes Topology with its files as ConfigMaps (harness.render.clabernetes).
    """
    lab = lab or plan.name
    if mgmt_network is not None:
        plan = with_mgmt_network(plan, mgmt_network)
    out = {
        f"{lab}.clab.yml": clab_yaml(plan, lab, sonic_image, host_image),
        "cabling.csv": cabling_csv(plan),
        "devices.csv": devices_csv(plan),
        f"sonic_{lab}_links.csv": sonic_links_csv(plan),
        f"sonic_{lab}_devices.csv": sonic_devices_csv(plan),
        "topology.svg": topology_svg(plan),
        CONTRACT_FILE: contract_of(plan).to_json(),
    }
    numbering = numbering_csv(plan)
    if numbering is not None:  # the engineer's own numbering reads back with the cabling
        out["numbering.csv"] = numbering
    configs = switch_configs(plan)
    for sw in plan.switches:  # each switch's files together, as they always were listed
        for name in ("config_db.json", "frr.conf"):
            out[f"configs/{sw.name}/{name}"] = configs[f"configs/{sw.name}/{name}"]
        out[f"configs/{sw.name}/init.sh"] = init_sh(plan, sw, init_step_s)
    for h in plan.hosts:
        if h.routed:
            out[f"configs/{h.name}/frr.conf"] = configs[f"configs/{h.name}/frr.conf"]
            out[f"configs/{h.name}/daemons"] = routed_host_daemons()
    # a HwSKU fablab does not ship: its port map, for the plan files and for docker-sonic-vs
    out.update(hwsku_files(plan))
    out.update(switch_hwsku_files(plan))
    if clabernetes:
        out[f"{lab}.clabernetes.yaml"] = clabernetes_yaml(plan, lab, out, sonic_image, host_image)
    return out


def switch_configs(plan: Plan) -> dict[str, str]:
    """Only what a switch (and a dual-homed host) is configured with: configs/<node>/config_db.json
    and frr.conf, as `artifacts` writes them. What `fablab diff` and `up --configs` compare an
    engineer's configs with: not the clab file, the CSVs, the diagram or the init scripts."""
    out: dict[str, str] = {}
    for sw in plan.switches:
        out[f"configs/{sw.name}/config_db.json"] = config_db_json(plan, sw)
        out[f"configs/{sw.name}/frr.conf"] = frr_conf(plan, sw)
    for h in plan.hosts:
        if h.routed:
            out[f"configs/{h.name}/frr.conf"] = host_frr_conf(plan, h)
    return out


# --------------------------------------------------------------------------- writing a render

MANIFEST = ".fablab-render.json"
"""What marks a directory as fablab's render: fablab's version, what was rendered, every file."""

# The temporary directories of a render, beside its target: `.<target>.fablab-new-<pid>-XXXXXXXX`
# (the render being written) and `.<target>.fablab-old-<pid>-XXXXXXXX` (the render it replaces,
# while the swap is in flight). A render removes those of its target whose process is gone.
_TEMP = re.compile(r"\.(?P<target>.+)\.fablab-(?:new|old)-(?P<pid>\d+)-[a-z0-9_]{8}")

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class OutputDirRefused(RenderError, InputError):
    """The output directory given cannot take a render (a file, someone else's directory, ...):
    nothing was written. Bad input, so the CLI exits 2."""


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # a libc without renameat2 (glibc < 2.28)
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def write_artifacts(files: dict[str, str], outdir: Path, *, about: dict | None = None) -> list[Path]:
    """Write a render to `outdir`, all of it or nothing.

    Everything is written to a directory beside `outdir` (same file system), which then takes
    `outdir`'s place in one step: renameat2(RENAME_EXCHANGE) where the kernel has it, else two
    renames (`outdir` aside as `.<outdir>.fablab-old-…`, the new one in, the old one removed;
    a crash between the two leaves the earlier render whole in the `-old-` directory, which
    the next render of `outdir` removes). Until the swap `outdir` is untouched; after it,
    `outdir` holds exactly this render, nothing of an earlier one.

    `outdir` may be missing, an empty directory, or a directory fablab rendered before (it
    holds MANIFEST, and nothing MANIFEST does not list); anything else is refused before
    anything is written (OutputDirRefused). A symlink to a directory is followed: the
    directory it names is replaced, the link kept. MANIFEST records fablab's version, `about`
    (e.g. topology, cluster, lab) and every file. Returns the paths written, `outdir / rel`.
    """
    outdir = Path(outdir)
    _check_relative_paths(files)
    target = Path(os.path.realpath(outdir))
    existed = _check_target(outdir, target)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RenderError(f"cannot make {parent} for {outdir}: {e.strerror}; pick another output directory") from e
    _remove_leftovers(parent, target.name)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.fablab-new-{os.getpid()}-", dir=parent))
    except OSError as e:
        raise RenderError(f"cannot write beside {outdir} (in {parent}): {e.strerror}; "
                          "a render needs write access to the directory that holds it") from e
    try:
        for rel, text in files.items():
            path = staging / rel
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            except OSError as e:
                raise RenderError(f"cannot write {rel} of the render of {outdir}: {e.strerror}; "
                                  f"{outdir} is unchanged") from e
        try:
            manifest = {"fablab": _fablab_version(), **(about or {}), "files": sorted(files)}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            os.chmod(staging, stat.S_IMODE(os.stat(target).st_mode) if existed else 0o777 & ~_umask())
        except OSError as e:
            raise RenderError(f"cannot write the render of {outdir}: {e.strerror}; {outdir} is unchanged") from e
        _swap_in(staging, target, existed, outdir)
    finally:
        if os.path.lexists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    return [outdir / rel for rel in files]


def _check_relative_paths(files: dict[str, str]) -> None:
    for rel in files:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts or rel in (MANIFEST, "."):
            raise RenderError(f"artifact path {rel!r} is not a plain relative path inside the render")


def _check_target(outdir: Path, target: Path) -> bool:
    """Refuse what cannot take a render, before anything is written; True when `target` exists."""
    if not os.path.lexists(target):  # `outdir` missing, or a symlink to a path still missing
        return False
    if not target.is_dir():
        what = "a file" if target.is_file() else "no directory"
        raise OutputDirRefused(f"{outdir} is {what}: render into a directory (a new or empty one), "
                               f"or remove {outdir}")
    if target.parent == target or os.path.ismount(target):
        raise OutputDirRefused(f"{outdir} is a mount point: a render replaces its directory whole; "
                               f"render into a directory inside it, e.g. {outdir / 'render'}")
    try:
        cwd = Path(os.path.realpath(os.getcwd()))
    except OSError:  # the current directory is gone: it cannot be in the way
        cwd = None
    if cwd is not None and (cwd == target or target in cwd.parents):
        raise OutputDirRefused(f"{outdir} is the current directory or holds it: a render replaces its "
                               f"directory whole; run fablab from outside {target}")
    try:
        if not any(target.iterdir()):
            return True
        text = (target / MANIFEST).read_text() if (target / MANIFEST).is_file() else None
    except OSError as e:
        raise OutputDirRefused(f"cannot read {outdir}: {e.strerror}; choose another output directory") from e
    if text is None:
        raise OutputDirRefused(f"{outdir} is not empty and fablab did not render it (it has no {MANIFEST}): "
                               f"choose an empty or new directory, or remove {outdir}")
    try:
        listed = json.loads(text)["files"]
        if not isinstance(listed, list):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise OutputDirRefused(f"{outdir / MANIFEST} is not a fablab render manifest: choose an empty or "
                               f"new directory, or remove {outdir}") from None
    try:
        foreign = sorted(set(_files_under(target)) - {MANIFEST, *map(str, listed)})
    except OSError as e:
        raise OutputDirRefused(f"cannot read {e.filename}: {e.strerror}; choose another output directory") from e
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise OutputDirRefused(f"{outdir} holds files the earlier render there did not write ({', '.join(foreign[:3])}"
                               f"{more}); a render replaces the directory whole: move them out of {outdir}, "
                               f"or remove {outdir}")
    return True


def _files_under(root: Path, prefix: str = "") -> list[str]:
    """Every entry but directories (files, symlinks, ...), relative to `root`, '/'-separated."""
    found: list[str] = []
    with os.scandir(root) as entries:
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                found += _files_under(Path(entry.path), rel + "/")
            else:
                found.append(rel)
    return found


def _swap_in(staging: Path, target: Path, existed: bool, outdir: Path) -> None:
    """Put `staging` in `target`'s place; on failure `target` is as it was."""
    try:
        if not existed:
            os.rename(staging, target)
            return
        if _exchange(staging, target):
            return  # `staging` now holds the earlier render; the caller removes it
        old = target.parent / f".{target.name}.fablab-old-{os.getpid()}-{staging.name[-8:]}"
        os.rename(target, old)
        try:
            os.rename(staging, target)
        except BaseException as e:  # an OSError, or Ctrl-C between the two renames
            try:
                os.rename(old, target)  # the earlier render back in place
            except OSError as again:
                raise RenderError(f"cannot move the new render into {outdir} ({getattr(e, 'strerror', e)}), nor "
                                  f"the earlier one back ({again.strerror}): it is whole in {old}; "
                                  f"`mv {old} {target}` restores it") from e
            raise
        shutil.rmtree(old, ignore_errors=True)
    except OSError as e:
        raise RenderError(f"cannot move the new render into {outdir}: {e.strerror}; {outdir} is unchanged") from e


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (renameat2 RENAME_EXCHANGE). False when this libc, kernel or
    file system cannot, and nothing was done."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _remove_leftovers(parent: Path, name: str) -> None:
    """The temporary directories of earlier renders of `name` whose process is gone (killed
    mid-render): a `-new-` one is a partial render, an `-old-` one the render before it."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        m = _TEMP.fullmatch(entry.name)
        if m and m["target"] == name and entry.is_dir(follow_symlinks=False) and not _alive(int(m["pid"])):
            shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OverflowError:
        return False
    return True


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fablab_version() -> str:
    from harness import __version__

    return __version__
