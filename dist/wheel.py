#!/usr/bin/env python3
"""Writes a wheel that carries the ovmem binary as a script, the layout maturin's
`bindings = "bin"` produces (ruff, uv): `pip install` / `pipx install` put it on PATH.

usage: wheel.py BINARY VERSION PLATFORM_TAG OUT_DIR   (prints the wheel's path)
"""

import base64
import hashlib
import re
import sys
import zipfile


def pep440(version):
    """Cargo's semver as a PEP 440 version: 1.2.0-beta.3 -> 1.2.0b3."""
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(?:-(alpha|beta|rc)\.?(\d+))?", version)
    if not m:
        sys.exit(f"wheel.py: version `{version}` has no PEP 440 form; use X.Y.Z or X.Y.Z-(alpha|beta|rc).N")
    base, pre, n = m.groups()
    return base if pre is None else base + {"alpha": "a", "beta": "b", "rc": "rc"}[pre] + n


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    binary, version, platform, out = sys.argv[1:]
    version = pep440(version)
    tag = f"py3-none-{platform}"
    name = f"ovmem-{version}"
    with open(binary, "rb") as f:
        exe = f.read()
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: ovmem\n"
        f"Version: {version}\n"
        "Summary: Deterministic long-term memory for coding agents, through their own lifecycle hooks\n"
        "License: MIT OR Apache-2.0\n"
    ).encode()
    wheel = f"Wheel-Version: 1.0\nGenerator: ovmem dist/wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    files = [
        (f"{name}.data/scripts/ovmem", exe, 0o755),
        (f"{name}.dist-info/METADATA", metadata, 0o644),
        (f"{name}.dist-info/WHEEL", wheel, 0o644),
    ]
    record_name = f"{name}.dist-info/RECORD"
    record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d, _ in files) + f"{record_name},,\n"
    files.append((record_name, record.encode(), 0o644))
    path = f"{out}/{name}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d, mode in files:
            info = zipfile.ZipInfo(p, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    print(path)


if __name__ == "__main__":
    main()
