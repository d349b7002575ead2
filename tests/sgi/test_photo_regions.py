"""SGI on photographs: the `selective` region source against hand-labelled boxes
(tests/fixtures/photo_boxes.json: 23 boxes on 5 scikit-image photos)."""
import json
from pathlib import Path

import numpy as np
import pytest

from unbag.sgi.regions import RegionConfig, frame_regions, framed, iou, selective_boxes

BOXES = json.loads((Path(__file__).parents[1] / "fixtures" / "photo_boxes.json").read_text())["images"]


def _photo(name: str) -> np.ndarray:
    import skimage.data
    img = getattr(skimage.data, name)()
    return img[0] if isinstance(img, tuple) else img


@pytest.fixture(scope="module")
def coverage():
    """Per source: (labelled boxes found at IoU >= 0.5, regions per image), as SGI frames the photos."""
    out = {}
    for source in ("selective", "proposals", "blobs"):
        cfg, hits, regions = RegionConfig.parse(source), 0, 0
        for name, boxes in BOXES.items():
            img = _photo(name)
            _, regs = frame_regions(img, cfg, "pad")
            _, truth = framed(img, "pad", list(boxes.values()))
            singles = [r[0] for r in regs if len(r) == 1]
            hits += sum(max(iou(b, s) for s in singles) >= 0.5 for b in truth)
            regions += len(regs)
        out[source] = (hits, regions / len(BOXES))
    return out


@pytest.mark.slow
def test_selective_finds_the_labelled_objects_with_few_regions(coverage):
    hits, per_image = coverage["selective"]
    assert sum(len(b) for b in BOXES.values()) == 23
    assert hits >= 9 and per_image <= 9  # measured: 10 of 23 with 8 boxes + the whole image
    # better than one flat segmentation and than background blobs on the same photos (7 and 4)
    assert hits > coverage["proposals"][0] and hits > coverage["blobs"][0]


def test_pad_frame_finds_regions_on_the_photo_and_moves_them():
    img = _photo("coffee")  # 400 x 600: padded to 600 x 600, 100 px above and below
    sq, regs = frame_regions(img, RegionConfig.parse("selective"), "pad")
    assert sq.shape == (600, 600, 3)
    own = selective_boxes(img)
    assert [r[0] for r in regs[:len(own)]] == [(x0, y0 + 100, x1, y1 + 100) for x0, y0, x1, y1 in own]
    assert regs[-1] == ((0, 0, 600, 600),)  # and the whole picture
