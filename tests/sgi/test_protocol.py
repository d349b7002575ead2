import numpy as np
import pytest
import torch

from unbag import models
from unbag.benchmarks.ctrl import generated
from unbag.cache import JobCache
from unbag.errors import UnbagError
from unbag.sgi.config import SGIConfig
from unbag.sgi.encode import encode_regions
from unbag.sgi.match import aggregate
from unbag.sgi.protocol import score_sgi
from unbag.world.render import render
from unbag.world.scene import Obj, Scene


def test_greedy_aggregation_by_hand():
    sim = torch.tensor([[0.9, 0.2, 0.1],
                        [0.8, 0.3, 0.6]])
    allowed = torch.ones_like(sim, dtype=torch.bool)
    score, choice = aggregate(sim, allowed, "max")
    assert score == pytest.approx((0.9 + 0.8) / 2) and choice == [0, 0]  # both take region 0


def test_one_to_one_aggregation_by_hand():
    sim = torch.tensor([[0.9, 0.2, 0.1],
                        [0.8, 0.3, 0.6]])
    allowed = torch.ones_like(sim, dtype=torch.bool)
    score, choice = aggregate(sim, allowed, "hungarian")
    assert choice == [0, 2] and score == pytest.approx((0.9 + 0.6) / 2)
    # more segments than regions: the unassigned segment keeps its best match
    sim = torch.tensor([[0.5], [0.7]])
    score, choice = aggregate(sim, torch.ones_like(sim, dtype=torch.bool), "hungarian")
    assert choice == [0, 0] and score == pytest.approx(0.6)


def test_disallowed_regions_are_never_chosen():
    sim = torch.tensor([[0.9, 0.2], [0.1, 0.95]])
    allowed = torch.tensor([[False, True], [True, True]])
    for assign in ("max", "hungarian"):
        score, choice = aggregate(sim, allowed, assign)
        assert choice[0] == 1
    assert aggregate(sim, allowed, "max")[0] == pytest.approx((0.2 + 0.95) / 2)


def test_bad_options():
    with pytest.raises(UnbagError, match="assignment"):
        SGIConfig(assign="greedy")
    with pytest.raises(UnbagError, match="region mode"):
        SGIConfig(mode="zoom")
    with pytest.raises(UnbagError, match="mix"):
        SGIConfig(mix=2)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return models.load("open_clip:unbag-tiny@random")


@pytest.fixture(scope="module")
def small_bench():
    return generated(seed=4, per_category=2, style="flat")


def test_regions_generated_once_per_image_and_cached(tiny, small_bench, tmp_path, monkeypatch):
    import unbag.sgi.encode as enc

    calls = []
    real = enc.frame_regions_many
    monkeypatch.setattr(enc, "frame_regions_many", lambda imgs, *a, **k: calls.extend([1] * len(imgs)) or real(imgs, *a, **k))
    tiny.patch_px()  # probes the encoder once (patch grid); not part of what is counted
    encoded = []
    real_enc = tiny.encode_images
    monkeypatch.setattr(tiny, "encode_images", lambda x, tokens=False: encoded.append(len(x)) or real_enc(x, tokens))

    cfg = SGIConfig(regions="blobs+groups", cache_dir=str(tmp_path / "c"))
    job = JobCache()
    first = encode_regions(tiny, small_bench, cfg, cache=job)
    embeds, _ = enc.region_parts(job, cfg)
    n_images = sum(len(it.images) for it in small_bench.items)
    assert len(calls) == n_images and embeds.misses == n_images and embeds.hits == 0
    assert sum(encoded) == cfg.phases * sum(len(r.regions) for r in first)  # one input per view
    # the same job again: regions and embeddings remembered, no search, no encoder pass
    encoded.clear()
    again = encode_regions(tiny, small_bench, cfg, cache=job)
    assert len(calls) == n_images and sum(encoded) == 0 and embeds.hits == n_images
    # another job: it searches again (nothing is kept between jobs) but reads the embeddings from disk
    job2 = JobCache()
    second = encode_regions(tiny, small_bench, cfg, cache=job2)
    assert enc.region_parts(job2, cfg)[0].hits == n_images and sum(encoded) == 0
    assert len(calls) == 2 * n_images
    assert all(torch.equal(a.emb, b.emb) and torch.equal(a.emb, c.emb) for a, b, c in zip(first, second, again))
    assert all(a.regions == b.regions for a, b in zip(first, second))


def test_evaluate_keeps_nothing_between_calls_unless_given_one_cache(tiny, small_bench, monkeypatch):
    import unbag.sgi.encode as enc
    from unbag.evaluation import evaluate

    calls = []
    real = enc.frame_regions_many
    monkeypatch.setattr(enc, "frame_regions_many", lambda imgs, *a, **k: calls.extend([1] * len(imgs)) or real(imgs, *a, **k))
    n_images = sum(len(it.images) for it in small_bench.items)
    a = evaluate(tiny, small_bench, "sgi", progress=False)
    b = evaluate(tiny, small_bench, "sgi", progress=False)
    assert len(calls) == 2 * n_images  # each call started cold
    job = JobCache()
    c = evaluate(tiny, small_bench, "sgi", progress=False, cache=job)
    d = evaluate(tiny, small_bench, "sgi:paper", progress=False, cache=job)
    e = evaluate(tiny, small_bench, "sgi", progress=False, cache=job)
    assert len(calls) == 4 * n_images  # sgi and sgi:paper search differently; the third call found both
    assert a["metrics"] == b["metrics"] == c["metrics"] == e["metrics"] and d["metrics"]


def test_score_tensor_and_details(tiny, small_bench):
    details = []
    s = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups"), details=details)
    assert s.shape == (len(small_bench.items), 2, 2) and torch.isfinite(s).all()
    d = details[0]
    assert len(d["segments"]) == len(d["regions"]) == len(d["sims"])
    assert s[0, 0, 0] == pytest.approx(np.mean(d["sims"]), abs=1e-6)


def test_mixing_is_a_convex_combination(tiny, small_bench):
    from unbag.scoring.cosine import score_global

    a = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt"))
    b = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt", mix=0.25))
    g = score_global(tiny, small_bench)
    assert torch.allclose(b, 0.75 * a + 0.25 * g, atol=1e-5)


def test_a_ground_truth_box_outside_its_picture_is_an_error_naming_the_item(tiny, small_bench):
    import dataclasses

    from unbag.benchmarks.base import Benchmark

    it = small_bench.items[3]
    side = it.images[0].shape[1]
    objects = [[dict(o) for o in objs] for objs in it.meta["objects"]]
    objects[1][0]["box"] = [side - 8, 0, side + 4, 8]  # past the right edge
    bad = dataclasses.replace(it, meta={**it.meta, "objects": objects})
    bench = Benchmark(small_bench.name, small_bench.spec, [bad], image_size=small_bench.image_size)
    with pytest.raises(UnbagError, match=rf"{it.id}: field 'images\[1\]': object box \[{side - 8}, 0, {side + 4}, 8\]"):
        encode_regions(tiny, bench, SGIConfig(regions="gt"), cache=JobCache())


def test_geometry_check_of_relations():
    from unbag.sgi.match import geometry
    from unbag.sgi.segments import Segment

    segs = [Segment("a cube", "object"), Segment("a ball", "object"),
            Segment("a cube to the left of a ball", "relation", (0, 1), "left"),
            Segment("a cube riding a ball", "relation", (0, 1), None)]
    left, right = ((0, 0, 10, 10),), ((30, 0, 40, 10),)
    assert geometry(segs, [left, right, left, left]) == [0, 0, 1, 0]
    assert geometry(segs, [right, left, left, left]) == [0, 0, -1, 0]


def test_every_predicate_by_hand():
    from unbag.sgi.match import holds

    a, b = ((0, 0, 10, 10),), ((30, 20, 40, 40),)  # a: left, higher, its bottom edge above b's
    assert holds("left", a, b) and not holds("right", a, b) and holds("right", b, a)
    assert holds("above", a, b) and holds("below", b, a) and not holds("below", a, b)
    assert holds("behind", a, b) and holds("front", b, a) and not holds("front", a, b)
    union = ((0, 0, 10, 10), (50, 0, 60, 10))  # a union's box spans its parts: centre x = 30
    assert holds("right", union, ((0, 30, 20, 40),)) and holds("left", union, ((40, 30, 50, 40),))


def test_count_check_fit_leaves_out_regions_no_counted_phrase_fits():
    from unbag.sgi.encode import ImageRegions
    from unbag.sgi.match import count_check
    from unbag.sgi.segments import Segment

    # two stars, one cone and a ball nobody counts; descriptions "a star", "a cone"
    n = torch.nn.functional.normalize
    star, cone, ball = torch.eye(3)
    emb = torch.stack([star, star, cone, n(ball + 0.1 * cone, dim=0)])
    r = ImageRegions([((k, 0, k + 1, 1),) for k in range(4)], emb)
    desc = torch.stack([star, cone])
    segs = [Segment("two stars", "group", count=2), Segment("one cone", "object", count=1)]
    # centred cosines: star [0.5, 0.5, -0.5, -0.5]; cone [-0.27, -0.27, 0.73, -0.17] (the ball's
    # 0.0995 less the mean 0.2749). `check` hands the ball to "a cone" (its -0.17 beats -0.5), so
    # the cone phrase counts two; `fit` counts the ball for nobody (its best is below zero)
    assert count_check(segs, r, desc) == [1.0, -1.0]
    assert count_check(segs, r, desc, fit=True) == [1.0, 1.0]
    two_cones = [Segment("two stars", "group", count=2), Segment("two cones", "group", count=2)]
    assert count_check(two_cones, r, desc) == [1.0, 1.0] and count_check(two_cones, r, desc, fit=True) == [1.0, -1.0]


def test_count_check_by_hand():
    from unbag.sgi.encode import ImageRegions
    from unbag.sgi.match import count_check
    from unbag.sgi.segments import Segment

    # four single regions and one union; descriptions 0 ("a star") and 1 ("a cone") as unit vectors
    star, cone = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    near = lambda v, w: torch.nn.functional.normalize(v + 0.2 * w, dim=0)  # noqa: E731
    emb = torch.stack([near(star, cone), near(star, cone), near(star, cone), near(cone, star), star])
    r = ImageRegions([((0, 0, 1, 1),), ((2, 0, 3, 1),), ((4, 0, 5, 1),), ((6, 0, 7, 1),),
                      ((0, 0, 1, 1), (2, 0, 3, 1))], emb)
    desc = torch.stack([star, cone])
    right = [Segment("three stars", "group", count=3), Segment("one cone", "object", count=1)]
    wrong = [Segment("one star", "object", count=1), Segment("three cones", "group", count=3)]
    assert count_check(right, r, desc) == [1.0, 1.0] and count_check(wrong, r, desc) == [-1.0, -1.0]
    # a caption that counts nothing, or says "one" only, is not checked
    assert count_check([Segment("a star", "object", count=1), Segment("a cone", "object", count=1)], r, desc) == [0, 0]
    # a description the encoder favours everywhere ("a cone" beats "a star" even on the stars) does
    # not claim every region: cosines are centred per description over the single regions
    n = torch.nn.functional.normalize
    s3, c3 = n(torch.tensor([1.0, 0.0, 1.0]), dim=0), n(torch.tensor([0.0, 1.0, 1.0]), dim=0)
    r3 = ImageRegions(r.regions[:4], torch.stack([s3, s3, s3, c3]))
    biased = torch.stack([n(torch.tensor([1.0, 0.0, 0.2]), dim=0), n(torch.tensor([0.35, 0.4, 1.0]), dim=0)])
    raw = biased @ r3.emb.T
    assert (raw.argmax(0) == 1).all()  # plain argmax would call all four cones
    assert count_check(right, r3, biased) == [1.0, 1.0] and count_check(wrong, r3, biased) == [-1.0, -1.0]
    # a description that barely separates the regions keeps its small say: the cosines SGI saw on
    # ctrl's id-count-0005 (regions: sphere, cylinder, sphere) with the built-in model; dividing
    # by each description's spread (as unbag did before 2026-12-01) sent the second sphere to
    # "cylinder"
    sim = torch.tensor([[0.7375, 0.7313, 0.7284], [0.6238, 0.6909, 0.6057]])
    r4 = ImageRegions(r.regions[:3], torch.eye(3))  # unit region vectors: desc @ emb.T == sim
    spheres = [Segment("two spheres", "group", count=2), Segment("one cylinder", "object", count=1)]
    cylinders = [Segment("one sphere", "object", count=1), Segment("two cylinders", "group", count=2)]
    assert count_check(spheres, r4, sim) == [1.0, 1.0] and count_check(cylinders, r4, sim) == [-1.0, -1.0]
    z = (sim - sim.mean(1, keepdim=True)) / sim.std(1, keepdim=True)
    assert z.argmax(0).tolist() == [0, 1, 1]  # the old rule: one sphere, two cylinders


def test_count_option_changes_only_counting_captions(tiny, small_bench):
    off = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups", counts="off"))
    on = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups", counts="check", count_weight=0.4))
    cnt = torch.tensor([it.group["category"] == "count" for it in small_bench.items])
    assert torch.equal(off[~cnt], on[~cnt])
    d = (on[cnt] - off[cnt]).flatten()
    # two counted phrases per caption, each +-1: the score moves by -w, 0 or +w (w / K * sum)
    assert all(min(abs(float(x) - v) for v in (-0.4, 0.0, 0.4)) < 1e-5 for x in d) and d.abs().max() > 0


def test_geometry_option_shifts_scores_by_the_weight(tiny, small_bench):
    base = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups", relations="cosine"))
    geo = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups", relations="geometry", relation_weight=0.3))
    rel = torch.tensor([it.group["category"] == "relation" for it in small_bench.items])
    assert torch.equal(base[~rel], geo[~rel])  # only items with relation segments change
    diff = (geo[rel] - base[rel]).abs()
    assert torch.allclose(diff, torch.full_like(diff, 0.3 / 3), atol=1e-5)  # +-w/K, K = 3 segments


def test_phase_views_are_averaged_unit_embeddings(tiny, small_bench, monkeypatch):
    """With phases=2 each region is encoded unshifted and shifted by half a patch; its embedding is the
    normalised mean of the two views' normalised embeddings."""
    import torch.nn.functional as F

    import unbag.sgi.regions as proto
    from unbag.sgi.regions import masked, masked_shifted, phase_offsets

    assert tiny.patch_px() == 8
    one = encode_regions(tiny, small_bench, SGIConfig(regions="gt", phases=1), cache=JobCache())
    two = encode_regions(tiny, small_bench, SGIConfig(regions="gt", phases=2), cache=JobCache())
    img = np.asarray(small_bench.items[0].images[0])
    fill = proto.background_color(img)
    region = two[0].regions[0]
    views = [masked_shifted(img, region, fill, dx, dy) for dx, dy in phase_offsets(region, img.shape[:2], 8, 2)]
    assert np.array_equal(views[0], masked(img, region, fill))
    with torch.inference_mode():
        e = F.normalize(tiny.encode_images(tiny.normalize_pixels(torch.from_numpy(np.stack(views)))).embeds, dim=-1)
    assert torch.allclose(two[0].emb[0], F.normalize(e.mean(0), dim=0), atol=1e-5)
    assert torch.allclose(one[0].emb[0], e[0], atol=1e-5)
    with pytest.raises(UnbagError, match="phases"):
        SGIConfig(phases=0)


def test_checks_only_is_what_the_checks_add(tiny, small_bench):
    full = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups"))
    bare = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups", counts="off", relations="cosine"))
    only = score_sgi(tiny, small_bench, cfg=SGIConfig(regions="gt+groups"), checks_only=True)
    assert torch.allclose(only, full - bare, atol=1e-6) and only.abs().sum() > 0


def test_sgi_score_recomputed_from_the_encoders_by_hand():
    """The paper's formula, score = mean over segments of the best region cosine, computed here
    from the encoders alone (boxes masked by hand, segments from the grammar) on ground-truth regions."""
    import torch.nn.functional as F

    from unbag.benchmarks.base import Benchmark
    from unbag.sgi.segments import from_grammar

    b = models.load("builtin")
    bench = generated(seed=9, per_category=1)  # the built-in model's world, at its size
    bench = Benchmark("ctrl", "ctrl", [it for it in bench.items if it.group["category"] != "count"][:4],
                      image_size=bench.image_size)
    cfg = SGIConfig(regions="gt", match="all", phases=1, counts="off", relations="cosine")
    got = score_sgi(b, bench, cfg=cfg)
    for n, it in enumerate(bench.items):
        for i, img in enumerate(it.images):
            fill = np.median(img.reshape(-1, 3), axis=0).astype(np.uint8)
            views = []
            for o in it.meta["objects"][i]:
                x0, y0, x1, y1 = o["box"]
                v = np.empty_like(img)
                v[:] = fill
                v[y0:y1, x0:x1] = img[y0:y1, x0:x1]
                views.append(v)
            with torch.no_grad():
                reg = F.normalize(b.encode_images(b.normalize_pixels(torch.from_numpy(np.stack(views)))).embeds, dim=-1)
            for c in range(2):
                texts = [s.text for s in from_grammar(it.meta["segments"][c])]
                with torch.no_grad():
                    seg = F.normalize(b.encode_texts(b.tokenize(texts)).embeds, dim=-1)
                want = (seg @ reg.T).max(1).values.mean()
                assert float(got[n, i, c]) == pytest.approx(float(want), abs=1e-5), (it.id, i, c)


def test_region_cache_tells_apart_two_models_with_one_spec(small_bench):
    # open_clip:unbag-tiny@random draws new random weights at each load: same spec, other weights
    a, b = (models.load("open_clip:unbag-tiny@random") for _ in range(2))
    cfg = SGIConfig(regions="blobs", phases=1)
    ra, rb = encode_regions(a, small_bench, cfg), encode_regions(b, small_bench, cfg)  # the shared cache
    assert not torch.allclose(ra[0].emb, rb[0].emb)
    assert torch.equal(encode_regions(a, small_bench, cfg)[0].emb, ra[0].emb)  # and a real hit is reused


def test_a_large_picture_is_resized_once_then_masked():
    from PIL import Image

    from unbag.sgi.encode import _inputs
    from unbag.sgi.regions import background_color, masked

    tiny = models.load("open_clip:unbag-tiny@random")
    big = np.asarray(Image.fromarray(render(Scene([Obj("sphere", "red", "large", "rubber", 0.3, 0.3),
                                                   Obj("cube", "blue", "large", "metal", 0.7, 0.6)], 1), 64))
                     .resize((256, 256), Image.Resampling.NEAREST))
    regions = [((40, 40, 120, 120),), ((140, 100, 220, 190),), ((40, 40, 120, 120), (140, 100, 220, 190))]
    fast = _inputs(tiny, big, regions, "mask")
    slow = torch.stack([tiny.preprocess(Image.fromarray(masked(big, r, background_color(big)))) for r in regions])
    assert fast.shape == slow.shape == (3, 3, 64, 64)
    # the same pictures up to interpolation at the box borders
    assert float((fast - slow).abs().mean()) < 0.02
    with torch.no_grad():
        ef, es = (torch.nn.functional.normalize(tiny.encode_images(x).embeds, dim=-1) for x in (fast, slow))
    assert float((ef * es).sum(-1).min()) > 0.99


def test_crop_inputs_are_each_region_cut_out_and_squash_resized():
    from PIL import Image

    from unbag.sgi.encode import _inputs
    from unbag.sgi.regions import cropped, grid_boxes

    tiny = models.load("open_clip:unbag-tiny@random")
    pic = render(Scene([Obj("sphere", "red", "large", "rubber", 0.3, 0.3),
                        Obj("cube", "blue", "small", "metal", 0.7, 0.6)], 1), 64)
    regions = [(b,) for b in grid_boxes(64, 64, (0.5, 1 / 3), 0.5)] + [((0, 0, 64, 64),), ((5, 9, 17, 50),)]
    h, w = tiny.image_size
    want = np.stack([np.asarray(Image.fromarray(cropped(pic, r)).resize((w, h), Image.Resampling.BICUBIC))
                     for r in regions])
    assert torch.equal(_inputs(tiny, pic, regions, "crop"), tiny.normalize_pixels(torch.from_numpy(want)))
