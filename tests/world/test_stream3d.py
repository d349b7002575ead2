"""The 3D training streams (world@3d:DIST) and their rendered pool (pool:DIR)."""
import json

import numpy as np
import pytest

from unbag.errors import UnbagError
from unbag.world import stream3d, styles, swap3d
from unbag.world.pool3d import PoolStream, build_pool, read_meta
from unbag.world.render3d import instances
from unbag.world.scene3d import min_visible
from unbag.world.styles import size

PX = size("3d")  # the size a pool is rendered at unless asked otherwise


@pytest.fixture(scope="module")
def samples():
    return [(k, stream3d.sample(2, k, 64, "finetuning")) for k in range(24)]


@pytest.mark.slow
def test_samples_are_deterministic_and_inside_their_distribution(samples):
    k, s = samples[5]
    again = stream3d.sample(2, k, 64, "finetuning")
    assert again.image.tobytes() == s.image.tobytes() and again.caption == s.caption
    for _, s in samples:
        assert not any(swap3d.held_out(o) for o in s.scene.objects)  # finetuning: never a held-out pair
        counts = np.bincount(instances(s.scene, 64).ravel(), minlength=len(s.scene.objects) + 1)[1:]
        assert (counts >= min_visible(64)).all()
        if s.form.kind == "relation":
            i, rel, j = s.form.order
            left, front = s.scene.camera.ground_axes()
            assert rel in swap3d.RELATIONS3D
            assert swap3d.relation_holds(s.scene.objects[i], rel, s.scene.objects[j], left, front)
    pre = [stream3d.sample(2, k, 64, "pretraining") for k in range(60)]
    assert any(swap3d.held_out(o) for s in pre for o in s.scene.objects)  # pretraining: every combination
    with pytest.raises(ValueError, match="unknown world distribution"):
        stream3d.sample(2, 0, 64, "siblings")


def test_the_siblings_stream_builds_half_its_scenes_around_two_siblings_and_keeps_the_rest():
    """world@3d:pretraining-siblings: a sibling scene holds two objects alike in all but their shape
    and one more attribute; every other sample is the plain pretraining stream's, bit for bit."""
    from unbag.world.swap3d import VALUES
    n, sibling = 16, 0
    for k in range(n):
        s, plain = stream3d.sample(4, k, 32, "pretraining-siblings"), stream3d.sample(4, k, 32, "pretraining")
        if np.random.default_rng([4, 3, 13, k]).random() >= 0.5:
            assert s.caption == plain.caption and s.image.tobytes() == plain.image.tobytes()
            continue
        sibling += 1
        objs = s.scene.objects
        assert 2 <= len(objs) <= 4
        assert any(a.shape != b.shape and sum(getattr(a, x) != getattr(b, x) for x in VALUES) == 1
                   for i, a in enumerate(objs) for b in objs[i + 1:])
    assert 0 < sibling < n


def test_twins_swap_one_binding_under_the_same_camera(samples):
    found = 0
    for k, s in samples:
        t = stream3d.twin(2, k, 64, s, "finetuning")
        if t is None:
            continue
        found += 1
        assert t.caption != s.caption and t.category in swap3d.CATEGORIES
        assert t.scene.camera == s.scene.camera and t.scene.lights == s.scene.lights
        assert not any(swap3d.held_out(o) for o in t.scene.objects)
        assert sorted(o.shape for o in t.scene.objects) == sorted(o.shape for o in s.scene.objects)
    assert found >= 5


def test_typed_negatives_speak_the_3d_vocabulary(samples):
    from unbag.negatives.typed import WorldGenerator
    gen = WorldGenerator.for_world(styles.world("3d"))
    _, s = next((k, s) for k, s in samples if len(s.scene.objects) >= 2)
    negs = gen.generate_for(list(s.scene.objects), s.form, 6, np.random.default_rng(0))
    words = {w for _, n in negs for w in n.replace(",", " ").split()}
    assert negs and not words & {"cone", "cones", "star", "stars", "orange"}  # the flat world's words


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    return build_pool(tmp_path_factory.mktemp("pool") / "p", seed=2, n=20, progress=False)  # at the 3D world's size


@pytest.mark.slow
def test_pool_holds_the_streams_own_samples_in_a_seeded_order(pool):
    meta = read_meta(pool)
    assert meta["n"] == 20 and meta["dist"] == "finetuning" and meta["render"] == 3
    ps = PoolStream(pool, run_seed=9)
    stream = [stream3d.sample(2, i, PX, "finetuning") for i in range(20)]
    seen = []
    for k in range(20):  # one epoch: every pool sample once
        got = ps.sample(0, k, PX)
        i = next(i for i, s in enumerate(stream) if s.caption == got.caption
                 and s.image.tobytes() == got.image.tobytes())
        seen.append(i)
        t, want = ps.twin(0, k, PX), stream3d.twin(2, i, PX, stream[i], "finetuning")
        assert (t is None) == (want is None)
        if t is not None:
            assert t.caption == want.caption and t.image.tobytes() == want.image.tobytes()
    assert sorted(seen) == list(range(20)) and seen != list(range(20))
    assert [PoolStream(pool, 9).sample(0, k, PX).caption for k in range(3)] == \
        [ps.sample(0, k, PX).caption for k in range(3)]


def test_an_interrupted_pool_build_renders_only_its_missing_shards_when_run_again(tmp_path, monkeypatch):
    from unbag.world import pool3d

    monkeypatch.setattr(pool3d, "SHARD", 2)
    rendered, real = [], pool3d._render_shard

    def flaky(job):
        if job[3] == 1 and not rendered.count(1):
            rendered.append(1)
            raise KeyboardInterrupt  # the session ends while shard 1 renders
        rendered.append(job[3])
        return real(job)
    monkeypatch.setattr(pool3d, "_render_shard", flaky)
    out = tmp_path / "p"
    with pytest.raises(KeyboardInterrupt):
        build_pool(out, seed=2, n=5, progress=False)
    part = tmp_path / ".p.partial"
    assert not out.exists() and sorted(f.name for f in part.glob("*.npz")) == ["shard-000000.npz"]
    rendered.clear()
    rendered.append(1)  # shard 1 renders this time
    build_pool(out, seed=2, n=5, progress=False)
    assert rendered == [1, 1, 2] and not part.exists()  # shard 0 was kept, not rendered again
    assert read_meta(out)["n"] == 5 and len({PoolStream(out, 0).sample(0, k, 64).caption for k in range(5)}) > 1
    got = sorted(pool3d._shard(str(out / f"shard-{k:06d}.npz"))["meta"][j]["caption"] for k, j in
                 [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)])
    assert got == sorted(stream3d.sample(2, i, 64, "finetuning").caption for i in range(5))
    # a partial build for other inputs is unbag's own and is started afresh; anything else is refused
    build_pool(tmp_path / "q", seed=2, n=1, progress=False)
    (tmp_path / ".q.partial").mkdir()
    (tmp_path / ".q.partial" / "mine.txt").write_text("x")
    with pytest.raises(UnbagError, match=r"\.q\.partial: not an interrupted `unbag world pool`"):
        build_pool(tmp_path / "q", seed=2, n=1, progress=False)
    assert (tmp_path / ".q.partial" / "mine.txt").exists()


def test_pool_refuses_other_pixels(pool, tmp_path):
    import shutil
    other = tmp_path / "old"
    shutil.copytree(pool, other)
    meta = json.loads((other / "meta.json").read_text())
    (other / "meta.json").write_text(json.dumps({**meta, "render": 2}))
    with pytest.raises(UnbagError, match="render version 2.*build the pool again"):
        read_meta(other)
    with pytest.raises(UnbagError, match="a pool renders a 3D stream"):
        build_pool(tmp_path / "x", data="world@flat:finetuning", n=2, progress=False)


@pytest.mark.parametrize("data", ["pool", "world@3d:finetuning"])
def test_training_reads_the_3d_stream_and_its_pool(pool, tmp_path, data):
    from unbag.cli import main
    spec = f"pool:{pool}" if data == "pool" else data
    assert main(["train", "--method", "negclip", "--model", "builtin", "--data", spec, "--steps", "2",
                 "--batch-size", "4", "--workers", "0", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert (tmp_path / "run" / "model").is_dir()


def test_one_parser_reads_every_training_data_spec(pool, tmp_path):
    from unbag.training.data import DataSpec, parse_data
    from unbag.world.styles import DEFAULT
    assert parse_data("world") == DataSpec("world", "world", DEFAULT, "finetuning")  # the default world
    assert parse_data("world@flat") == DataSpec("world@flat", "world", "flat", "finetuning")
    assert parse_data("world@3d:pretraining") == DataSpec("world@3d:pretraining", "world", "3d", "pretraining")
    assert parse_data(f"pool:{pool}") == DataSpec(f"pool:{pool}", "world", "3d", path=str(pool))
    assert parse_data("degla:n.json:/coco") == DataSpec("degla:n.json:/coco", "negatives", path="n.json",
                                                         image_dir="/coco")
    assert parse_data("x.csv") == DataSpec("x.csv", "file", path="x.csv")
    assert parse_data("jsonl:a/b.jsonl").path == "a/b.jsonl" and parse_data("wds:s-{0..3}.tar").path == "s-{0..3}.tar"
    assert parse_data("coco:a.json:imgs") == DataSpec("coco:a.json:imgs", "coco", path="a.json", image_dir="imgs")
    with pytest.raises(UnbagError, match="unknown training data 'imagenet'"):
        parse_data("imagenet")
    with pytest.raises(UnbagError, match="coco:ANNOTATIONS"):
        parse_data("coco")
    with pytest.raises(UnbagError, match="meta.json"):
        parse_data(f"pool:{tmp_path}")


@pytest.mark.slow
def test_features_read_the_3d_stream_and_its_pool_as_the_trainer_does(pool, tmp_path):
    from unbag import features, load_model
    from unbag.heads.cache import FeatureCache

    model = load_model("builtin", device="cpu")
    a = FeatureCache(features(model, "world@3d:finetuning", tmp_path / "a", n=6, seed=2), model)
    b = FeatureCache(features(model, f"pool:{pool}", tmp_path / "b", n=20), model)
    assert json.loads((tmp_path / "a" / "index.json").read_text())["data"] == "world@3d:finetuning"
    assert a.rows >= 6 and b.rows >= 20
    # stream samples 0..5 of seed 2 are in the pool (rendered from that stream), in the pool's order
    ga, gb = a.get("img_global", np.arange(6)).numpy(), b.get("img_global", np.arange(20)).numpy()
    # the same picture in another batch: its unit embedding may move by ~3e-5 (at one torch thread
    # the pool stem's convolution picks its algorithm by batch size); another picture is far off
    gaps = [np.sort(np.abs(gb - v).max(1))[:2] for v in ga]
    assert all(best < 1e-4 and second > 1e-2 for best, second in gaps), gaps
    with pytest.raises(UnbagError, match=r"data='world', seed=5 \(unbag features --data world --seed 5\)"):
        features(model, "world:5", tmp_path / "c", n=2)


@pytest.mark.slow
def test_swap_features_of_the_3d_world_hold_its_items_with_object_regions(tmp_path, monkeypatch):
    import io

    import torch
    from PIL import Image

    from unbag import features, load_model
    from unbag.heads.cache import FeatureCache
    from unbag.world.io import render_item3d

    seen = []
    import unbag.sgi.encode as enc
    real_regions = enc.encode_regions
    monkeypatch.setattr(enc, "encode_regions", lambda b, bench, cfg, *a, **k: seen.append(cfg.regions)
                        or real_regions(b, bench, cfg, *a, **k))
    model = load_model("builtin", device="cpu")
    c = FeatureCache(features(model, "swaps@3d", tmp_path / "s", n=3, seed=1000), model)
    assert c.rows == 6 and (c.get("twin", np.arange(6)).numpy() == [1, 0, 3, 2, 5, 4]).all()
    assert json.loads((tmp_path / "s" / "index.json").read_text())["data"] == "swaps@3d" and set(seen) == {"objects"}
    # row 0 is image 0 of the first colour item of split id, as `world build --style 3d` renders it
    _, pngs, _ = render_item3d((1000, "id", "color", 0, model.image_size[0]))  # at the model's size
    pixels = model.normalize_pixels(torch.from_numpy(np.asarray(Image.open(io.BytesIO(pngs[0])))[None]))
    with torch.no_grad():
        want = model.encode_images(pixels).embeds[0]
    got = c.get("img_global", np.arange(1))[0]
    assert torch.allclose(torch.nn.functional.normalize(want, dim=-1), torch.nn.functional.normalize(got.float(), dim=-1),
                          atol=1e-3)  # the cache holds fp16
