"""Releases as they are downloaded: links in the folders the user names are followed (a Hugging Face
snapshot, COCO linked in), paths a release writes out of them are not, and a benchmark's
fingerprint covers exactly the files it reads, at their targets."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from unbag import benchmarks


def hub_snapshot(src: Path, cache: Path, rev: str = "3c8e1d6a") -> Path:
    """`src` as `huggingface-cli download` leaves it: every file of snapshots/REV a relative link
    into the cache's blobs/, named by its hash."""
    snap = cache / "datasets--facebook--winoground" / "snapshots" / rev
    blobs = cache / "datasets--facebook--winoground" / "blobs"
    blobs.mkdir(parents=True)
    for f in sorted(p for p in src.rglob("*") if p.is_file()):
        blob = blobs / hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copyfile(f, blob)
        link = snap / f.relative_to(src)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snap


def test_a_hugging_face_snapshot_whose_files_link_into_blobs_is_read(winoground_dir, tmp_path, run_global):
    snap = hub_snapshot(winoground_dir, tmp_path / "hub")
    assert (snap / "data" / "examples.jsonl").is_symlink()
    b = benchmarks.load(f"winoground:{snap}")
    assert len(b) == len(benchmarks.load(f"winoground:{winoground_dir}")) and "images_outside_root" not in b.info
    res, _ = run_global(f"winoground:{snap}")
    want, _ = run_global(f"winoground:{winoground_dir}")
    assert res["metrics"] == want["metrics"]


def test_cocos_val2017_linked_into_sugarcrepe_is_read(sugarcrepe_dir, tmp_path):
    root = tmp_path / "sugar-crepe"
    shutil.copytree(sugarcrepe_dir / "data", root / "data")
    coco = tmp_path / "data" / "coco"
    shutil.copytree(sugarcrepe_dir / "val2017", coco / "val2017")
    (root / "val2017").symlink_to(coco / "val2017")  # ln -s /data/coco/val2017 sugar-crepe/val2017
    b = benchmarks.load(f"sugarcrepe:{root}")
    assert len(b) == len(benchmarks.load(f"sugarcrepe:{sugarcrepe_dir}"))
    assert b.items[0].images[0].startswith(str(root / "val2017"))


def _picture(path: Path, k: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((32, 32, 3), 30 * k, np.uint8)).save(path)


def _release(root: Path) -> Path:
    _picture(root / "val2017" / "0.jpg", 1)
    data = {"0": {"filename": "0.jpg", "caption": "a red cube", "negative_caption": "a blue cube"}}
    (root / "data").mkdir(parents=True)
    (root / "data" / "swap_att.json").write_text(json.dumps(data))
    return root


def test_a_stray_folder_link_in_a_release_is_never_read(tmp_path):
    root = _release(tmp_path / "sc")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "deep" / "notes.json").write_text("{}")
    (root / "extra").symlink_to(elsewhere)  # a link to another tree, which SugarCrepe never reads
    before = benchmarks.files_fingerprint(f"sugarcrepe:{root}")
    (elsewhere / "deep" / "notes.json").write_text('{"changed": 1}')
    os.mkfifo(elsewhere / "deep" / "pipe")  # opening it would block: it must not even be looked at
    assert benchmarks.files_fingerprint(f"sugarcrepe:{root}") == before


def test_the_fingerprint_follows_the_files_read_and_only_them(tmp_path):
    root = _release(tmp_path / "sc")
    spec = f"sugarcrepe:{root}"
    first = benchmarks.files_fingerprint(spec)
    (root / "README.md").write_text("notes")  # not read
    _picture(root / "val2017" / "9.jpg", 2)  # no item names it
    assert benchmarks.files_fingerprint(spec) == first
    (root / "data" / "add_att.json").write_text((root / "data" / "swap_att.json").read_text())  # a subset appears
    assert benchmarks.files_fingerprint(spec) != first


def test_an_image_root_of_the_whole_disk_is_not_walked(tmp_path):
    root = _release(tmp_path / "sc")
    data = json.loads((root / "data" / "swap_att.json").read_text())
    data["0"]["filename"] = str(root / "val2017" / "0.jpg").lstrip("/")  # relative to the image root '/'
    (root / "data" / "swap_att.json").write_text(json.dumps(data))
    b = benchmarks.load(f"sugarcrepe:{root}:/")  # the old fingerprint walked all of '/' here, and crashed
    assert len(b) == 1 and b.info["files"] and b.info["image_root"] == "/"


def test_a_re_pointed_link_is_scored_again_by_unbag_run(tmp_path):
    from unbag.runner import run_plan

    root = _release(tmp_path / "sc")
    a, b = tmp_path / "coco_a", tmp_path / "coco_b"
    _picture(a / "0.jpg", 1)
    _picture(b / "0.jpg", 7)
    shutil.rmtree(root / "val2017")
    (root / "val2017").symlink_to(a)
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "out"}"\n[models]\nm = "builtin"\n[benchmarks]\nsc = "sugarcrepe:{root}"\n'
                    '[protocols]\nglobal = "global"\n')
    first = run_plan(plan, progress=False)[0]
    assert run_plan(plan, progress=False)[0]["created"] == first["created"]  # reused
    (root / "val2017").unlink()
    (root / "val2017").symlink_to(b)
    again = run_plan(plan, progress=False)[0]
    assert again["benchmark"]["files"] != first["benchmark"]["files"]
    assert again["per_item_sha256"] != first["per_item_sha256"]  # scored again, on the other picture
