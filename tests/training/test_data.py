import io
import json
import tarfile

import numpy as np
import pytest
import torch
from PIL import Image

from unbag.errors import UnbagError
from unbag.training.data import TrainBatches, batches, concat_pair, square_pixels


def _img(path, w, h, color):
    Image.new("RGB", (w, h), color).save(path)


@pytest.fixture
def clic_csv(tmp_path):
    """CLIC's layout: image path, caption, further sentences; a header row is skipped."""
    (tmp_path / "im").mkdir()
    rows = [("im/a.png", 80, 60, "red"), ("im/b.png", 60, 80, "blue"), ("im/c.png", 90, 70, "green"),
            ("im/d.jpg", 50, 90, "white")]
    for p, w, h, c in rows:
        _img(tmp_path / p, w, h, c)
    lines = ["filepath,title,more"] + [f"{p},a {c} square on a table,the square is {c},it is flat"
                                       for p, _, _, c in rows]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    return tmp_path / "train.csv"


def test_square_pixels_and_concat_pair_shapes():
    wide = np.zeros((60, 80, 3), np.uint8)
    assert square_pixels(wide, 64).shape == (64, 64, 3)
    assert square_pixels(Image.new("RGB", (30, 90)), 64).shape == (64, 64, 3)
    a, b = np.full((60, 80, 3), 10, np.uint8), np.full((60, 80, 3), 200, np.uint8)
    both = concat_pair(a, b, 64)  # wide: stacked
    assert both.shape == (64, 64, 3) and both[:32].max() == 10 and both[32:].min() == 200
    tall_a, tall_b = a.transpose(1, 0, 2), b.transpose(1, 0, 2)
    both = concat_pair(tall_a, tall_b, 64)  # tall: side by side
    assert both[:, :32].max() == 10 and both[:, 32:].min() == 200


def test_csv_source_batches_every_row_once_per_epoch(clic_csv):
    seen = []
    for b in batches(f"csv:{clic_csv}", 0, 2, 64, 0, 2, workers=0):
        assert b["images"].shape == (2, 64, 64, 3)
        seen += b["captions"]
    assert sorted(seen) == sorted(f"a {c} square on a table" for c in ("red", "blue", "green", "white"))


def test_csv_negatives_are_pos_swaps(clic_csv):
    b = next(batches(str(clic_csv), 0, 4, 64, 0, 1, workers=0, negatives=True))
    assert len(b["neg_captions"]) == len(b["neg_of"]) > 0
    for i, n in zip(b["neg_of"].tolist(), b["neg_captions"]):
        assert n != b["captions"][i] and sorted(n.split()) == sorted(b["captions"][i].split())


def test_csv_clic_pairs_same_orientation(clic_csv):
    b = next(batches(str(clic_csv), 0, 4, 64, 0, 1, workers=0, mode="concat"))
    assert b["mode"] == "concat" and b["images"].shape == (4, 64, 64, 3) and len(b["texts"]) == 20
    p1, p3 = b["texts"][0], b["texts"][8]
    assert p1.count(".") == 2 and "square on a table" in p1 and "square on a table" not in p3


def test_jsonl_source_and_its_errors(tmp_path):
    _img(tmp_path / "x.png", 64, 64, "red")
    good = tmp_path / "d.jsonl"
    good.write_text(json.dumps({"image": "x.png", "captions": ["a red thing", "it is red"]}) + "\n"
                    + json.dumps({"image": "x.png", "caption": "red again"}) + "\n")
    b = next(batches(f"jsonl:{good}", 0, 2, 64, 0, 1, workers=0))
    assert sorted(b["captions"]) == ["a red thing", "red again"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"image": "x.png", "caption": "ok"}) + "\n{not json\n")
    with pytest.raises(UnbagError, match=r"bad.jsonl:2: not valid JSON"):
        TrainBatches(f"jsonl:{bad}", 0, 2, 64, 0, 1)
    bad.write_text(json.dumps({"caption": "no image"}) + "\n")
    with pytest.raises(UnbagError, match=r"bad.jsonl:1: missing field 'image'"):
        TrainBatches(f"jsonl:{bad}", 0, 2, 64, 0, 1)
    missing = tmp_path / "m.jsonl"
    missing.write_text(json.dumps({"image": "nope.png", "caption": "x"}) + "\n")
    with pytest.raises(UnbagError, match=r"m.jsonl: row 1: image file not found: .*nope.png"):
        next(batches(f"jsonl:{missing}", 0, 1, 64, 0, 1, workers=0))
    with pytest.raises(UnbagError, match="unknown training data"):
        TrainBatches("imagenet", 0, 2, 64, 0, 1)


def _shard(path, items):
    with tarfile.open(path, "w") as tar:
        for key, color, cap in items:
            buf = io.BytesIO()
            Image.new("RGB", (70, 50), color).save(buf, format="PNG")
            for name, data in ((f"{key}.png", buf.getvalue()), (f"{key}.txt", cap.encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def test_webdataset_shards(tmp_path):
    colors = ["red", "blue", "green", "white", "black", "gray"]
    _shard(tmp_path / "s-000.tar", [(f"{i:03d}", c, f"a {c} card") for i, c in enumerate(colors[:3])])
    _shard(tmp_path / "s-001.tar", [(f"{i:03d}", c, f"a {c} card") for i, c in enumerate(colors[3:], 3)])
    urls = f"wds:{tmp_path}/s-{{000..001}}.tar"
    got = [b["captions"] for b in batches(urls, 0, 2, 64, 0, 3, workers=0)]
    assert got == [["a red card", "a blue card"], ["a green card", "a white card"],
                   ["a black card", "a gray card"]]
    # resuming at step 2 skips the first four samples without decoding them
    assert [b["captions"] for b in batches(urls, 0, 2, 64, 2, 3, workers=0)] == got[2:]
    with pytest.raises(UnbagError, match="shards ran out at step 3"):
        list(batches(urls, 0, 2, 64, 0, 4, workers=0))


def test_rank_slices_tile_the_global_batch():
    one = next(batches("world", 0, 8, 64, 0, 1, workers=0))
    parts = [next(batches("world", 0, 8, 64, 0, 1, workers=0, rank=r, world_size=2)) for r in (0, 1)]
    assert parts[0]["captions"] + parts[1]["captions"] == one["captions"]
    assert torch.equal(torch.cat([p["images"] for p in parts]), one["images"])
    with pytest.raises(UnbagError, match="not divisible"):
        TrainBatches("world", 0, 7, 64, 0, 1, world_size=2)


def test_degla_layout_published_and_unbag_written(tmp_path):
    coco = tmp_path / "train2014"
    coco.mkdir()
    for i in (9, 25):
        _img(coco / f"COCO_train2014_{i:012d}.jpg", 64, 48, "red")
    published = tmp_path / "neg.json"
    published.write_text(json.dumps([
        {"image_id": 9, "original": "a red dog on a bed", "enhanced": ["a red bed on a dog", "a blue dog on a bed"]},
        {"image_id": 25, "original": "a cat", "enhanced": ["a dog", "a cow", "a horse", "a bird", "a cat toy"]}]))
    b = next(batches(f"degla:{published}:{coco}", 0, 2, 64, 0, 1, workers=0, typed=4))
    i = b["captions"].index("a red dog on a bed")
    assert b["typed_captions"][4 * i:4 * i + 4] == ["a red bed on a dog", "a blue dog on a bed"] * 2
    assert b["typed_valid"][i].tolist() == [True, True, False, False]
    assert b["typed_valid"][1 - i].all()
    with pytest.raises(UnbagError, match="entry 0: no 'image' field"):
        TrainBatches(f"degla:{published}", 0, 2, 64, 0, 1)
    from unbag.negatives.export import export
    (tmp_path / "d.jsonl").write_text(json.dumps({"image": "train2014/COCO_train2014_000000000009.jpg",
                                                  "caption": "a brown dog chasing a white cat"}) + "\n")
    out = export(f"jsonl:{tmp_path / 'd.jsonl'}", tmp_path / "mine.json", k=4, progress=False)
    b = next(batches(f"degla:{out}", 0, 1, 64, 0, 1, workers=0, typed=4))
    assert b["typed_valid"].all() and len(set(b["typed_captions"])) == 4
