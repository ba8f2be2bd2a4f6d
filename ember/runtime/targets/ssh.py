"""Run a Linux-target bundle on a device over ssh (MACE's devices file, for bundles).

A devices file names each device once:

    devices:
      pi:
        host: 192.168.1.20      # or address:, as MACE writes it
        user: pi                # or username:
        port: 22                # optional
        key: ~/.ssh/id_ed25519  # optional: the identity file
        target: aarch64         # the ember target its bundles are compiled for
        workdir: /tmp/ember     # optional: where bundles go on the device
        known_hosts: ~/.ssh/known_hosts  # optional

`ember run/validate/bench OUT --device pi [--devices FILE]` builds the same freestanding driver as the
qemu-user runner (linux.py: no C library, so nothing needs installing on the device), copies it with
the bundle's files (NAME.o, NAME.h, NAME.weights.bin, driver.c) into WORKDIR/NAME (through ssh and
`cat`: the device needs a shell, not sftp), runs it there on the weights and inputs (outputs.bin), and
reads the outputs back. ssh runs with BatchMode (keys only, never
a password prompt) and accepts a new host key once (StrictHostKeyChecking=accept-new).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import OptionError
from ember.runtime.targets import linux
from ember.runtime.targets.common import TargetError

SSH_TIMEOUT = 120.0  # seconds for each ssh step (connecting, copying, one inference)


@dataclass(frozen=True)
class Device:
    name: str
    host: str
    user: str | None
    target: str
    port: int = 22
    key: str | None = None
    workdir: str = "/tmp/ember"
    known_hosts: str | None = None

    def ssh_options(self) -> list[str]:
        opts = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=20"]
        if self.key:
            opts += ["-i", str(Path(self.key).expanduser())]
        if self.known_hosts:
            opts += ["-o", f"UserKnownHostsFile={Path(self.known_hosts).expanduser()}"]
        return opts

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host


def load_devices(path: str | Path) -> dict[str, Device]:
    """The devices of a devices file, by name; a one-line error names the file and the field."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise OptionError(f"--devices {path}: no such file")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise OptionError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    entries = doc.get("devices") if isinstance(doc, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise OptionError(f"{path}: expected a 'devices:' mapping of device names to their settings")
    return {str(name): _device(str(name), spec, path) for name, spec in entries.items()}


def _device(name: str, spec: Any, path: str | Path) -> Device:
    where = f"{path}: device '{name}'"
    if not isinstance(spec, dict):
        raise OptionError(f"{where}: expected a mapping (host, user, target, ...)")
    known = {"host", "address", "user", "username", "port", "key", "target", "workdir", "known_hosts",
             "target_abis", "target_socs", "models"}  # the last three: MACE's descriptive fields
    unknown = sorted(set(spec) - known)
    if unknown:
        raise OptionError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    host = spec.get("host", spec.get("address"))
    if not host:
        raise OptionError(f"{where}: no host (or address)")
    if not spec.get("target"):
        raise OptionError(f"{where}: no target (the ember target its bundles are compiled for, e.g. aarch64)")
    target = str(spec["target"])
    if target not in linux.QEMU:
        raise OptionError(f"{where}: target '{target}' is not a Linux target ({', '.join(linux.QEMU)})")
    port = spec.get("port", 22)
    if not isinstance(port, int) or not 0 < port < 65536:
        raise OptionError(f"{where}: port {port!r} is not a TCP port")
    user = spec.get("user", spec.get("username"))
    return Device(name, str(host), str(user) if user else None, target, port,
                  str(spec["key"]) if spec.get("key") else None, str(spec.get("workdir", "/tmp/ember")),
                  str(spec["known_hosts"]) if spec.get("known_hosts") else None)


def find_device(devices_file: str | Path, name: str) -> Device:
    devices = load_devices(devices_file)
    if name not in devices:
        raise OptionError(f"--device {name}: not in {devices_file} (devices: {', '.join(devices)})")
    return devices[name]


def _run(cmd: list[str], what: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    try:
        res = subprocess.run(cmd, input=stdin, capture_output=True, timeout=SSH_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise TargetError(f"{what}: no answer within {SSH_TIMEOUT:.0f} s\n$ {shlex.join(cmd)}") from None
    if res.returncode == 255:  # ssh's own failure (connection, authentication), not the command's
        err = res.stderr.decode(errors="replace").strip()
        raise TargetError(f"{what}: {err.splitlines()[-1] if err else 'ssh failed'}\n$ {shlex.join(cmd)}\n{err}")
    return res


def run_on_device(bundle_dir: Path, device: Device, arrays: dict[str, np.ndarray], work: Path):
    """Run the bundle once on `device`; returns a targets.TargetRun."""
    from ember.runtime.targets import TargetRun

    if shutil.which("ssh") is None:
        raise TargetError("ssh not found (apt-get install openssh-client)")
    bundle_dir = Path(bundle_dir).resolve()
    man = linux.bundle_manifest(bundle_dir, device.target)
    name = man["name"]
    work.mkdir(parents=True, exist_ok=True)
    exe = linux.link_linux(bundle_dir, man, work)
    feed = work / "inputs.bin"
    feed.write_bytes(b"".join(linux.input_bytes(man, arrays)))
    remote = f"{device.workdir.rstrip('/')}/{name}"
    ssh = ["ssh", "-p", str(device.port), *device.ssh_options(), device.address]
    res = _run([*ssh, f"mkdir -p {shlex.quote(remote)}"], f"device {device.name}: creating {remote}")
    if res.returncode != 0:
        raise TargetError(f"device {device.name}: cannot create {remote}: {res.stderr.decode(errors='replace')}")
    # Each file goes through `cat` on the device: no scp/sftp needed there (Dropbear, BusyBox), only a shell.
    files = [exe, work / "driver.c", feed, *(bundle_dir / f"{name}{s}" for s in (".o", ".h", ".weights.bin"))]
    for f in files:
        dst = shlex.quote(f"{remote}/{f.name}")
        res = _run([*ssh, f"cat > {dst}" + (f" && chmod +x {dst}" if f == exe else "")],
                   f"device {device.name}: copying {f.name}", f.read_bytes())
        if res.returncode != 0:
            raise TargetError(f"device {device.name}: copying {f.name} to {remote} failed: "
                              f"{res.stderr.decode(errors='replace')}")
    # The driver reads the weights, then the inputs, from stdin and writes the outputs to stdout; they
    # are kept on the device (outputs.bin) and sent back.
    command = (f"cd {shlex.quote(remote)} && cat {shlex.quote(name + '.weights.bin')} inputs.bin | ./driver"
               " > outputs.bin && cat outputs.bin")
    start = time.perf_counter()
    res = _run([*ssh, command], f"device {device.name}: running {name}")
    seconds = time.perf_counter() - start
    if res.returncode != 0:
        why = linux.DRIVER_STATUS.get(res.returncode, "failed")
        raise TargetError(f"device {device.name}: the driver exited with status {res.returncode}: {why}\n"
                          f"{res.stderr.decode(errors='replace')}")
    return TargetRun(linux.split_outputs(man, res.stdout, f"device {device.name}"), seconds,
                     f"ssh {device.address} ({device.name})")
