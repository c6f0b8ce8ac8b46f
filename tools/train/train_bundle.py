"""The bundle train.py hands back: every file as one tar, cut into bundle.tar.partNN."""
import hashlib
import io
import os
import tarfile

from train_log import START, fail

PART_BYTES = 15 * 1024 * 1024


def write_bundle(files, out_dir):
    """files: {repo-relative path: bytes}. Writes bundle.tar.partNN (<= 15 MiB each)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size = len(files[path])
            info.mtime = int(START)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[path]))
    data = buf.getvalue()
    parts = []
    for i in range(0, len(data), PART_BYTES):
        name = os.path.join(out_dir, f"bundle.tar.part{len(parts):02d}")
        with open(name, "wb") as f:
            f.write(data[i:i + PART_BYTES])
        parts.append(name)
    if len(parts) > 8:
        fail(f"bundle needs {len(parts)} parts, more than 8")
    return parts, hashlib.sha256(data).hexdigest(), len(data)
