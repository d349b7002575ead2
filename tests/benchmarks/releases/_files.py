"""What the release fixtures share: pictures, PNG bytes, JSON files and tar shards."""
import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

COLORS = ["red", "green", "blue", "yellow", "purple", "cyan", "white", "black"]


def img(path: Path, k: int, size=(48, 40)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(k)
    a = np.full((size[1], size[0], 3), rng.integers(0, 255, 3), np.uint8)
    a[5:20, 5:25] = rng.integers(0, 255, 3)
    Image.fromarray(a).save(path)
    return path


def png_bytes(k: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((32, 32, 3), k * 30 % 255, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def write_tar(path: Path, members: dict[str, bytes]) -> None:
    import tarfile
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path
