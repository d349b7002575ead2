"""`coco:ANNOTATIONS[:IMAGES]`: COCO's captions file as training and feature data."""
import json

import numpy as np
import pytest
from PIL import Image

from unbag.errors import UnbagError
from unbag.training.data import parse_data, source


@pytest.fixture
def coco(tmp_path):
    """A COCO captions file laid out as captions_train2017.json, its images apart in train2017/."""
    (tmp_path / "train2017").mkdir()
    images, anns = [], []
    for i in range(8):
        name = f"{i:012d}.jpg"
        arr = np.full((48, 64, 3), 30 * i, np.uint8)
        arr[10:30, 10 + 4 * i:30 + 4 * i] = (200, 40, 40)
        Image.fromarray(arr).save(tmp_path / "train2017" / name)
        images.append({"id": 100 + i, "file_name": name, "height": 48, "width": 64})
        anns += [{"id": 2 * i, "image_id": 100 + i, "caption": f"a red square on grey number {i}"},
                 {"id": 2 * i + 1, "image_id": 100 + i, "caption": f"a grey picture {i} with a red block"}]
    ann = tmp_path / "annotations" / "captions_train2017.json"
    ann.parent.mkdir()
    ann.write_text(json.dumps({"images": images, "annotations": anns}))
    return f"coco:{ann}:{tmp_path / 'train2017'}"


def test_each_image_comes_with_all_its_captions(coco):
    src = source(parse_data(coco), 0, 64)
    assert len(src.rows) == 8 and all(len(caps) == 2 for _, caps in src.rows)
    rec = src.record(0)
    assert rec.image.size == (64, 48) and rec.captions[0].startswith(("a red square", "a grey picture"))


def test_a_bad_coco_file_names_the_entry(tmp_path):
    ann = tmp_path / "c.json"
    ann.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [{"image_id": 2, "caption": "x"}]}))
    with pytest.raises(UnbagError, match=r"annotations\[0\]: 'image_id' names no image"):
        source(parse_data(f"coco:{ann}"), 0, 64)


@pytest.mark.slow
def test_ft_and_head_features_read_coco(coco, tmp_path):
    import unbag

    out = unbag.train("ft", "open_clip:unbag-tiny@random", coco, tmp_path / "ft", steps=2, batch_size=4, warmup=1)
    assert (out / "open_clip_config.json").is_file()
    feats = unbag.features("open_clip:unbag-tiny@random", coco, tmp_path / "feats", n=6, regions=False)
    assert json.loads((feats / "index.json").read_text())["samples"] >= 6
