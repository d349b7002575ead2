"""`coco:ANNOTATIONS[:IMAGES]`: COCO's captions file as training and feature data."""
import json
from pathlib import Path

import pytest

from unbag.errors import UnbagError
from unbag.training.data import parse_data, source


def test_each_image_comes_with_all_its_captions(coco_captions):
    src = source(parse_data(coco_captions), 0, 64)
    assert len(src.rows) == 8 and all(len(caps) == 2 for _, caps in src.rows)
    rec = src.record(0)
    assert rec.image.size == (64, 48) and rec.captions[0].startswith(("a red square", "a grey picture"))


def test_a_bad_coco_file_names_the_entry(tmp_path):
    ann = tmp_path / "c.json"
    ann.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [{"image_id": 2, "caption": "x"}]}))
    with pytest.raises(UnbagError, match=r"annotations\[0\]: 'image_id' names no image"):
        source(parse_data(f"coco:{ann}"), 0, 64)


@pytest.mark.slow
def test_ft_and_head_features_read_coco(coco_captions, tmp_path):
    import unbag

    out = unbag.train("ft", "open_clip:unbag-tiny@random", coco_captions, tmp_path / "ft", steps=2, batch_size=4, warmup=1)
    assert (out / "open_clip_config.json").is_file()
    feats = unbag.features("open_clip:unbag-tiny@random", coco_captions, tmp_path / "feats", n=6, regions=False)
    assert json.loads((feats / "index.json").read_text())["samples"] >= 6


@pytest.mark.parametrize("name", ["../../../../x.jpg", "/etc/hostname"])
def test_a_coco_file_name_out_of_the_image_root_is_refused(coco_captions, name):
    ann, root = coco_captions.removeprefix("coco:").split(":")
    data = json.loads(Path(ann).read_text())
    data["images"][3]["file_name"] = name
    Path(ann).write_text(json.dumps(data))
    with pytest.raises(UnbagError, match=r"images\[3\]: field 'file_name': image .* lies outside"):
        source(parse_data(coco_captions), 0, 64)


def test_duplicate_coco_ids_are_refused(coco_captions):
    ann = coco_captions.removeprefix("coco:").split(":")[0]
    data = json.loads(Path(ann).read_text())
    data["annotations"][5]["id"] = data["annotations"][2]["id"]
    Path(ann).write_text(json.dumps(data))
    with pytest.raises(UnbagError, match=r"annotations\[5\]: id 2 is also the id of an earlier annotation"):
        source(parse_data(coco_captions), 0, 64)
    data["annotations"][5]["id"] = 5
    data["images"][4]["id"] = data["images"][1]["id"]
    Path(ann).write_text(json.dumps(data))
    with pytest.raises(UnbagError, match=r"images\[4\]: id 101 is also the id of an earlier image"):
        source(parse_data(coco_captions), 0, 64)


def test_a_missing_coco_image_in_a_loader_worker_is_one_line(coco_captions, tmp_path):
    import unbag

    root = Path(coco_captions.removeprefix("coco:").split(":")[1])
    for f in root.glob("*.jpg"):
        f.unlink()  # every image gone: the first batch a worker makes meets one
    with pytest.raises(UnbagError) as e:
        unbag.train("ft", "open_clip:unbag-tiny@random", coco_captions, tmp_path / "ft", steps=2, batch_size=4,
                    warmup=0, workers=1)
    assert "image file not found" in str(e.value) and "Traceback" not in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("method", ["ce-clip", "fsc-clip"])
def test_the_fields_baselines_train_on_coco(coco_captions, method, tmp_path):
    import unbag

    out = unbag.train(method, "builtin", coco_captions, tmp_path / method, steps=2, batch_size=4, warmup=1,
                      log_every=1)
    log = [json.loads(x) for x in (tmp_path / method / "log.jsonl").read_text().splitlines()]
    assert (out / "open_clip_config.json").is_file() and len(log) == 2
    # free text: the typed slots come from spaCy's tags (every caption here has a noun to replace)
    assert all(r["negatives"] >= 4 for r in log)
