"""Heads on caption data (photos with captions, as COCO): features with hard negative captions ->
train -> eval on a SugarCrepe-layout fixture."""
import json

import numpy as np
import pytest
import torch
from PIL import Image

from unbag import models
from unbag.heads.cache import FeatureCache
from unbag.heads.common import HeadConfig, head_inputs, match_loss
from unbag.heads.train import _fields, build, step_loss

# crops of scikit-image photographs and what they show
CROPS = [("coffee", (170, 15, 420, 300), "a white cup of coffee on a red saucer"),
         ("coffee", (300, 50, 450, 340), "a silver spoon on a red saucer"),
         ("astronaut", (140, 0, 320, 190), "a smiling woman with short brown hair"),
         ("astronaut", (270, 330, 512, 512), "a black helmet next to an orange suit"),
         ("astronaut", (350, 0, 480, 290), "a white space shuttle model on a stand"),
         ("chelsea", (0, 0, 451, 300), "a tabby cat with green eyes"),
         ("rocket", (250, 100, 400, 427), "a white rocket on a launch pad at dusk"),
         ("rocket", (0, 0, 120, 427), "a tall metal tower against a blue sky"),
         ("stereo_motorcycle", (90, 95, 690, 460), "a red motorcycle in a garage"),
         ("stereo_motorcycle", (500, 280, 700, 460), "a black tire of a red motorcycle")]


def _photo(name):
    import skimage.data
    img = getattr(skimage.data, name)()
    return img[0] if isinstance(img, tuple) else img


@pytest.fixture(scope="module")
def captions(tmp_path_factory):
    """A JSONL of photo crops with captions, as `train` and `features` read it."""
    root = tmp_path_factory.mktemp("coco")
    lines = []
    for k, (name, box, caption) in enumerate(CROPS):
        Image.fromarray(_photo(name)).crop(box).save(root / f"{k:03d}.jpg")
        lines.append(json.dumps({"image": f"{k:03d}.jpg", "caption": caption}))
    (root / "captions.jsonl").write_text("\n".join(lines) + "\n")
    return root / "captions.jsonl"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch.manual_seed(0)  # a saved random model: a head is tied to its backbone's weights
    return models.load("open_clip:unbag-tiny@random").save(tmp_path_factory.mktemp("m") / "tiny")


@pytest.fixture(scope="module")
def cache(tiny, captions, tmp_path_factory):
    from unbag.cli import main
    out = tmp_path_factory.mktemp("f") / "cache"
    assert main(["features", "--model", str(tiny), "--data", f"jsonl:{captions}", "--n", "10",
                 "--out", str(out), "--device", "cpu", "--quiet"]) in (0, None)
    return out


def test_caption_cache_holds_each_record_with_a_hard_negative(cache, tiny):
    c = FeatureCache(cache, models.load(str(tiny)))
    assert c.rows == 10 and c.index["twins"] == 0 and c.index["negatives"] >= 8
    has = c.get("has_neg", np.arange(10)).numpy()
    assert (c.get("twin", np.arange(10)).numpy() == -1).all()
    pos, neg = c.get("txt_global", np.arange(10)), c.get("neg_txt_global", np.arange(10))
    assert all(not torch.allclose(pos[i], neg[i]) for i in np.flatnonzero(has))  # a different caption
    assert c.get("img_regions", np.arange(10)).shape[1] == 16  # photo regions for TFRegions
    assert (c.get("reg_size", np.arange(10)) > 0).sum(1).min() >= 2  # boxes plus the whole picture


def test_the_hard_negative_is_one_more_text_candidate_in_the_loss(cache):
    torch.manual_seed(0)
    c = FeatureCache(cache)
    cfg = HeadConfig(dim=c.index["fields"]["img_global"]["shape"][0], patches=c.index["fields"]["img_patches"]["shape"][0])
    head = build(cfg).eval()
    rows = np.array([0, 3, 5, 8])
    twins = c.get("twin", rows).numpy()
    got = step_loss(head, c, rows, twins, 2, np.random.default_rng(7))
    # by hand: the same random others, every candidate scored one by one
    rng = np.random.default_rng(7)
    others = [rng.choice(np.delete(rows, i), size=2, replace=False) for i in range(len(rows))]
    has = c.get("has_neg", rows)

    def score(img_row, txt_row, neg=False):
        f = _fields(c, np.array([img_row]), cfg)
        t = _fields(c, np.array([txt_row]), cfg)
        if neg:
            t = {**t, **{n: c.get(f"neg_{n}", np.array([txt_row])) for n in ("phr_global", "phr_mask")}}
        return head(**head_inputs(f, cfg)[0], **head_inputs(t, cfg)[1])[0]

    i2t, t2i = [], []
    for i, r in enumerate(rows):
        i2t.append(torch.stack([score(r, r), score(r, r)] + [score(r, o) for o in others[i]] + [score(r, r, neg=True)]))
        t2i.append(torch.stack([score(r, r), score(r, r)] + [score(o, r) for o in others[i]]))
    valid = torch.ones(4, 4, dtype=torch.bool)
    valid[:, 1] = False  # no twins in caption data
    want = (match_loss(torch.stack(i2t), torch.cat([valid, has[:, None]], 1)) + match_loss(torch.stack(t2i), valid)) / 2
    assert has.any() and torch.allclose(got, want, atol=1e-5)
    # without hard negatives (the paper's other variant): the same loss minus that candidate
    got = step_loss(head, c, rows, twins, 2, np.random.default_rng(7), hard_negatives=False)
    want = (match_loss(torch.stack(i2t)[:, :-1], valid) + match_loss(torch.stack(t2i), valid)) / 2
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("kind", ["tflocal", "tflocal-li", "tflocal-li --calibrate", "tfregions"])
@pytest.mark.slow
def test_features_train_and_eval_on_photos_end_to_end(kind, cache, tiny, sugarcrepe_dir, tmp_path):
    from unbag.api import evaluate, train
    method, calibrate = kind.split()[0], kind.endswith("--calibrate")
    head = train(method, str(tiny), str(cache), tmp_path / method, steps=6, batch_size=8, progress=False,
                 **({"calibrate": True} if calibrate else {}))
    rec = json.loads((head / "head.json").read_text())
    assert rec["cache"] == str(cache) and len(rec["log"]) >= 1
    res = evaluate(str(tiny), f"sugarcrepe:{sugarcrepe_dir}", f"head:{head}", device="cpu", out=tmp_path / "r.json")
    assert res["n_items"] == 15 and 0.0 <= res["metrics"]["all/acc"] <= 1.0
    if kind == "tfregions":
        assert res["config"]["options"]["sgi_regions"] == "selective"
    if calibrate:  # the fixture's colour words are calibrated: other scores than the same weights' plain ones
        plain = train(method, str(tiny), str(cache), tmp_path / "plain", steps=6, batch_size=8, progress=False)
        evaluate(str(tiny), f"sugarcrepe:{sugarcrepe_dir}", f"head:{plain}", device="cpu", out=tmp_path / "p.json")
        read = lambda f: [json.loads(x)["scores"] for x in (tmp_path / f).read_text().splitlines()]  # noqa: E731
        cal, pl = read("r.items.jsonl"), read("p.items.jsonl")
        assert len(cal) == len(pl) == 15 and cal != pl


def test_shards_are_written_as_rows_arrive(tmp_path, monkeypatch):
    from unbag.heads import cache

    monkeypatch.setattr(cache, "SHARD", 5)
    w = cache.ShardWriter(tmp_path)
    rows = np.arange(12 * 3, dtype=np.float32).reshape(12, 3)
    for s in range(0, 12, 4):  # chunks of 4 rows: a shard is written once 5 rows wait
        w.add({"x": rows[s:s + 4], "k": np.arange(s, s + 4)})
        assert len(list(tmp_path.glob("x-*.npy"))) == (s + 4) // 5
    assert w.finish() == {"x": {"dtype": "float16", "shape": [3]}, "k": {"dtype": "int64", "shape": []}}
    assert [len(np.load(p)) for p in sorted(tmp_path.glob("x-*.npy"))] == [5, 5, 2]
    (tmp_path / "index.json").write_text(json.dumps({"format": cache.FORMAT, "rows": 12, "shard_rows": 5,
                                                     "fields": w.fields, "backbone_id": "", "backbone": ""}))
    c = FeatureCache(tmp_path)
    assert torch.equal(c.get("x", np.array([11, 0, 5, 4])), torch.from_numpy(rows[[11, 0, 5, 4]]))
    assert c.get("k", np.arange(12)).tolist() == list(range(12))
