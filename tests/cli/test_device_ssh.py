"""`--device NAME` (a devices file, MACE's workflow): the bundle and its driver go to a Linux device over ssh,
run there, and the outputs come back. The device here is this machine, behind an OpenSSH server the test
starts on a free port with a throwaway host key and an authorized key in a temporary folder (issue 21)."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from ember.cli import main
from ember.runtime.targets import missing_tools
from tests.cross import require_tools
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close

SSHD = shutil.which("sshd") or next((p for p in ("/usr/sbin/sshd",) if os.path.exists(p)), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def device(tmp_path_factory) -> Iterator[Path]:
    """A running sshd on 127.0.0.1 and a devices file naming it `local` (target x86_64)."""
    missing = [] if SSHD and shutil.which("ssh") and shutil.which("ssh-keygen") else \
        ["sshd and ssh (apt-get install openssh-server openssh-client)"]
    require_tools("ssh device", missing)
    d = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\nPidFile {d / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation directory when run as root
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=open(d / "sshd.log", "wb"))
    for _ in range(100):  # until it accepts connections
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"sshd exited: {(d / 'sshd.log').read_text()[-2000:]}")
            time.sleep(0.1)
    (d / "devices.yml").write_text(yaml.safe_dump({"devices": {"local": {
        "host": "127.0.0.1", "user": getpass.getuser(), "port": port, "key": str(d / "client_key"),
        "target": "x86_64", "workdir": str(d / "remote"), "known_hosts": str(d / "known_hosts")}}}))
    yield d
    proc.terminate()
    proc.wait(timeout=10)


def test_run_and_validate_on_device(artifacts: ArtifactCache, device: Path, tmp_path: Path, capsys) -> None:
    require_tools("x86_64", missing_tools("x86_64"))
    host = artifacts.bundle("lenet")
    bundle = artifacts.bundle("lenet", target="x86_64")
    (entry,), (result,) = host.inputs, host.outputs
    x = np.random.default_rng(4).standard_normal((2, *entry["shape"])).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    devices = str(device / "devices.yml")
    code = main(["run", str(bundle.path), "--device", "local", "--devices", devices, "--input",
                 str(tmp_path / "x.npy"), "--output", str(tmp_path / "o.npz")])
    err = capsys.readouterr().err
    assert code == 0, err + (device / "sshd.log").read_text()[-2000:]
    assert "running on local over ssh" in err
    # The bundle's files and the driver are on the device, and its outputs came back from there.
    remote = device / "remote" / bundle.name
    assert {f"{bundle.name}.o", f"{bundle.name}.h", "driver", "outputs.bin"} <= {p.name for p in remote.iterdir()}
    got = np.load(tmp_path / "o.npz")[result["name"]]
    for k in range(2):
        assert_close(got[k], host.run({entry["name"]: x[k]})[result["name"]], f"device run, sample {k}", rel=1e-4)
    code = main(["validate", str(artifacts.model("lenet")), str(bundle.path), "--device", "local", "--devices",
                 devices, "--input", str(tmp_path / "x.npy")])
    out = capsys.readouterr().out
    assert code == 0 and out.strip().endswith("PASS"), out


def test_device_errors_are_one_line(artifacts: ArtifactCache, device: Path, tmp_path: Path, capsys) -> None:
    bundle = artifacts.bundle("lenet", target="x86_64")
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump({"devices": {"pi": {"host": "h", "target": "aarch64", "pasword": "x"}}}))
    wrong_key = yaml.safe_load((device / "devices.yml").read_text())
    wrong_key["devices"]["local"]["key"] = str(tmp_path / "nokey")
    nokey = tmp_path / "nokey.yml"
    nokey.write_text(yaml.safe_dump(wrong_key))
    (tmp_path / "nokey").write_text("")
    cases = [(["--device", "nosuch", "--devices", str(device / "devices.yml")], "not in"),
             (["--device", "pi", "--devices", str(bad)], "unknown field(s) pasword"),
             (["--device", "local", "--devices", str(device / "devices.yml"), "--target", "aarch64"],
              "is a x86_64 device")]
    for args, says in cases:
        code = main(["run", str(bundle.path), *args])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and says in lines[0], lines
