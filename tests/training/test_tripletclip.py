"""TripletCLIP's loss (arXiv 2411.02545) against hand-computed cases, its quadruples and its training."""
import json
import math

import pytest
import torch

from unbag.errors import UnbagError
from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.negclip import negclip_loss
from unbag.training.objectives.tripletclip import quadruples, tripletclip_loss


def e(deg):
    r = math.radians(deg)
    return [math.cos(r), math.sin(r)]


def T(*rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_one_quadruple_by_hand():
    # s = ln 3: each image picks its caption among [3, 1] -> ln(4/3); one image: t2i is 0
    x, y, y_neg, x_neg = T([1, 0]), T([1, 0]), T([0, 1]), T([0, 1])
    s = torch.tensor(math.log(3), dtype=torch.float64, requires_grad=True)
    loss, _ = tripletclip_loss(x, y, x_neg, y_neg, s)
    assert loss.item() == pytest.approx(math.log(4 / 3), abs=1e-6)
    loss.backward()
    assert s.grad.item() == pytest.approx(-0.25, abs=1e-6)


def test_two_quadruples_at_angles_by_hand():
    # s = 2 ln 2 maps cos 1, .5, -.5, -1 to exp 4, 2, 1/2, 1/4
    u, v = T(e(0), e(120)), T(e(0), e(120))
    v_neg, u_neg = T(e(60), e(180)), T(e(60), e(240))
    s = torch.tensor(2 * math.log(2), dtype=torch.float64)
    loss, parts = tripletclip_loss(u, v, u_neg, v_neg, s)
    assert loss.item() == pytest.approx(0.758908, abs=1e-6)
    assert parts["tcl_pos"].item() == pytest.approx(0.378147, abs=1e-6)
    assert parts["tcl_neg"].item() == pytest.approx(0.380762, abs=1e-6)
    # the wrong layouts: negative images inside the caption's softmax; a plain CLIP over 2N pairs
    from unbag.training.objectives.clip import clip_loss
    assert clip_loss(torch.cat([u, u_neg]), torch.cat([v, v_neg]), s).item() == pytest.approx(0.653056, abs=1e-6)
    assert loss.item() != pytest.approx(0.653056, abs=1e-3) and loss.item() != pytest.approx(1.306112, abs=1e-3)


def test_the_papers_ablations_by_hand():
    x, y, y_neg, x_neg = T([1, 0]), T([1, 0]), T([0, 1]), T([0, 1])
    s = torch.tensor(math.log(3), dtype=torch.float64)
    # negclip_pp: the first term alone; negimage: the caption picks its image among [x, x'] -> ln(4/3), halved
    assert tripletclip_loss(x, y, x_neg, y_neg, s, "negclip_pp")[0].item() == pytest.approx(math.log(4 / 3) / 2)
    assert tripletclip_loss(x, y, x_neg, y_neg, s, "negimage")[0].item() == pytest.approx(math.log(4 / 3) / 2)


def test_identical_and_orthogonal_embeddings():
    same = T([1, 0], [1, 0])
    s = torch.tensor(5.0, dtype=torch.float64)
    assert tripletclip_loss(same, same, same, same, s)[0].item() == pytest.approx(math.log(8), abs=1e-6)
    eye = torch.eye(4, dtype=torch.float64)
    x, x_neg = eye[:2], eye[2:]
    loss = tripletclip_loss(x, x, x_neg, x_neg, torch.tensor(math.log(3), dtype=torch.float64))[0]
    assert loss.item() == pytest.approx(math.log(8 / 3), abs=1e-6)
    assert tripletclip_loss(x, x, x_neg, x_neg, torch.tensor(80.0, dtype=torch.float64))[0].item() < 1e-20


def test_properties_symmetry_negclip_and_gradient_routing():
    g = torch.Generator().manual_seed(0)
    u, v, un, vn = (torch.nn.functional.normalize(torch.randn(3, 4, generator=g, dtype=torch.float64), dim=-1)
                    for _ in range(4))
    s = torch.tensor(4.0, dtype=torch.float64)
    a = tripletclip_loss(u, v, un, vn, s)[0]
    assert a.item() == pytest.approx(tripletclip_loss(un, vn, u, v, s)[0].item())  # the roles swap
    perm = torch.tensor([2, 0, 1])
    assert a.item() == pytest.approx(tripletclip_loss(u[perm], v[perm], un[perm], vn[perm], s)[0].item())
    assert tripletclip_loss(u, v, un, vn, s)[1]["tcl_pos"].item() == pytest.approx(negclip_loss(u, v, vn, s).item())
    un_ = un.clone().requires_grad_(True)
    u_ = u.clone().requires_grad_(True)
    _, parts = tripletclip_loss(u_, v, un_, vn, s)
    assert torch.autograd.grad(parts["tcl_pos"], un_, allow_unused=True)[0] is None
    assert torch.autograd.grad(parts["tcl_neg"], u_, allow_unused=True)[0] is None


def test_quadruples_drop_repeated_captions_and_equal_negatives():
    captions = ["a", "b", "a", "c", "d"]
    # twins of samples 0, 1, 2, 3, 4 with negative captions x, a, y, c, z
    assert quadruples(captions, [0, 1, 2, 3, 4], ["x", "a", "y", "c", "z"]) == [0, 4]


def _cfg(**kw):
    return TrainConfig.for_method("tripletclip", **({"model": "builtin", "data": "world@flat", "steps": 6,
                                                    "batch_size": 16, "lr": 1e-4, "warmup": 1, "workers": 0,
                                                    "log_every": 1, "ckpt_every": 3, "seed": 3} | kw))


def test_tripletclip_trains_on_the_worlds_twins(tmp_path):
    Trainer(_cfg(steps=3), tmp_path).fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert all(0 < r["quadruples"] <= 16 and math.isfinite(r["tcl_neg"]) for r in log)


def _photos(folder, n=4):
    from PIL import Image
    from skimage import data
    pics = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    rows = []
    for i in range(n):
        Image.fromarray(pics[i % 4]).resize((64, 48)).save(folder / f"p{i}.png")
        Image.fromarray(pics[(i + 1) % 4]).resize((48, 64)).save(folder / f"n{i}.png")
        rows.append({"image": f"p{i}.png", "caption": f"photo number {i}",
                     "neg_image": f"n{i}.png", "neg_caption": f"negative picture {i}"})
    return rows


def test_tripletclip_trains_on_a_folder_of_quadruples(tmp_path):
    rows = _photos(tmp_path)
    f = tmp_path / "triplets.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    Trainer(_cfg(steps=2, batch_size=4, data=f"triplets:{f}"), tmp_path / "run").fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["quadruples"] for r in log] == [4, 4]
    f.write_text(json.dumps({"image": "p0.png", "caption": "x"}) + "\n")
    with pytest.raises(UnbagError, match=r"line 1: field\(s\) neg_image, neg_caption"):
        Trainer(_cfg(steps=1, batch_size=1, data=f"triplets:{f}"), tmp_path / "bad").fit(progress=False)


def test_tripletclip_reads_the_released_webdataset(tmp_path):
    import webdataset as wds
    rows = _photos(tmp_path)
    with wds.TarWriter(str(tmp_path / "shard-0.tar")) as sink:
        for i, r in enumerate(rows):
            sink.write({"__key__": f"{i:06d}", "image": (tmp_path / r["image"]).read_bytes(),
                        "neg_image": (tmp_path / r["neg_image"]).read_bytes(),
                        "caption": r["caption"].encode(), "neg_caption": r["neg_caption"].encode()})
    Trainer(_cfg(steps=2, batch_size=2, data=f"wds:{tmp_path}/shard-0.tar"), tmp_path / "run").fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["quadruples"] for r in log] == [2, 2]


def test_data_without_negative_images_is_refused(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("p0.png,a caption\n")
    with pytest.raises(UnbagError, match="unbag generates no negative image"):
        Trainer(_cfg(steps=1, batch_size=1, data=f"csv:{f}"), tmp_path / "run").fit(progress=False)


@pytest.mark.slow
def test_tripletclip_resumes_exactly(resumed):
    a, b = resumed(_cfg)
    assert [r["loss"] for r in a] == [r["loss"] for r in b]
