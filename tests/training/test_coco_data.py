"""`coco:ANNOTATIONS[:IMAGES]`: COCO's captions file as training and feature data."""
import json

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
