"""The package as users install it: the wheel's size and contents."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The built-in model (1.1 MB), four heads (~7.5 MB) and eight method overlays (~1 MB each at fp16):
# about 15 MB; the budget catches a stray dense checkpoint, not the next overlay.
MAX_WHEEL_BYTES = 18_000_000


@pytest.mark.slow
def test_the_wheel_ships_every_weight_in_under_18_mb(tmp_path):
    src = tmp_path / "src"  # a copy, so no stale build/ folder of the checkout can slip into it
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("unbag-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {str(p.relative_to(ROOT / "src")) for p in (ROOT / "src" / "unbag" / "weights").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped <= names, sorted(shipped - names)[:5]
    assert "unbag/weights/builtin/weights.safetensors" in names
    assert wheel.stat().st_size <= MAX_WHEEL_BYTES, f"{wheel.stat().st_size / 1e6:.1f} MB"
