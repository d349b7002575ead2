"""The shipped built-in model: loads offline, and SGI beats global scoring with it."""
import dataclasses
import json

import numpy as np
import pytest

from unbag import metrics, models
from unbag.benchmarks.base import Benchmark
from unbag.benchmarks.ctrl import generated
from unbag.cache import JobCache
from unbag.scoring.cosine import score_global
from unbag.sgi.config import SGIConfig
from unbag.sgi.encode import caption_segments
from unbag.sgi.protocol import score_sgi
from unbag.world.styles import size
from unbag.world.worlds.clevr3d import SGI as SGI_3D

PX = size("3d")  # the 3D world's pictures: the built-in model's input

pytestmark = pytest.mark.skipif(not models.BUILTIN_WEIGHTS.exists(),
                                reason="built-in weights not trained yet")


def test_builtin_ships_with_its_recipe():
    """The model ships the recipe of every run that made it: the last run's config (in its
    open_clip config and train_config.json) and log, each earlier run's config as
    train_config-<run>.json, named in TRAINING.md; the first run from random weights. Nothing else
    (the earlier runs' logs stay in the repository's history)."""
    d = models.BUILTIN_DIR
    cfg = json.loads((d / "open_clip_config.json").read_text())
    assert cfg["model_cfg"]["vision_cfg"]["image_size"] == PX
    last = json.loads((d / "train_config.json").read_text())["config"]
    assert last["method"] == cfg["unbag"]["config"]["method"] and (d / "log.jsonl").is_file()
    training = (d / "TRAINING.md").read_text()
    earlier = sorted(p.name[len("train_config-"):-len(".json")] for p in d.glob("train_config-*.json"))
    assert not list(d.glob("log-*.jsonl")) and earlier
    runs = [json.loads((d / f"train_config-{r}.json").read_text())["config"] for r in earlier] + [last]
    assert all(f"`{r}`" in training for r in earlier)
    assert {r["method"] for r in runs} <= {"clip-dense", "clip-regions"}
    assert sum(r["model"].endswith("@random") for r in runs) == 1


def _ctrl3d(seed: int, per_category: int, categories: tuple[str, ...], splits: tuple[str, ...] = ("id", "ood")
            ) -> Benchmark:
    """Items of the 3D ctrl (the world the shipped model is trained on) of some categories and splits
    (drawn in this process: the test session's other workers have the other cores)."""
    full = generated(seed=seed, per_category=per_category, categories=list(categories), procs=1,
                     split=splits[0] if len(splits) == 1 else None)
    return Benchmark("ctrl", "ctrl", [it for it in full.items if it.group["split"] in splits], image_size=PX,
                     sgi=dict(SGI_3D))


@pytest.mark.slow
@pytest.mark.weights
def test_sgi_beats_global_on_ood_attribute_swaps():
    b = models.load("builtin")
    bench = _ctrl3d(7, 12, ("color", "size", "material"), ("ood",))
    g = metrics.winoground(score_global(b, bench))["group"].mean()
    s = metrics.winoground(score_sgi(b, bench, cfg=SGIConfig(**SGI_3D)))["group"].mean()
    assert s > g + 0.15, (float(s), float(g))
    assert s > 0.5


@pytest.mark.slow
@pytest.mark.weights
def test_patch_tokens_align_with_text():
    """Pretrained with clip-dense, the model's patch tokens align with caption phrases: late
    interaction over them (TFLocal-LI's start) beats global cosine on OOD attribute swaps."""
    import torch
    import torch.nn.functional as F

    from unbag.scoring.encode import pixels_of
    from unbag.training.objectives.dense import caption_phrases, late_interaction

    b = models.load("builtin")
    bench = _ctrl3d(7, 20, ("color", "size", "material"), ("ood",))
    items = bench.items
    refs, wheres, texts = bench.flat()
    phrases, owner = caption_phrases(texts)
    with torch.inference_mode():
        patches = F.normalize(b.encode_images(pixels_of(b, refs, wheres, PX), tokens=True).patches, dim=-1)
        li = late_interaction(F.normalize(b.encode_texts(b.tokenize(phrases)).embeds, dim=-1), owner, patches, len(texts))
    n = len(items)
    idx = torch.arange(n)[:, None, None] * 2
    scores = li[idx + torch.arange(2)[None, None, :], idx + torch.arange(2)[None, :, None]]  # [items, images, captions]
    g = metrics.winoground(score_global(b, bench))["group"].mean()
    s = metrics.winoground(scores)["group"].mean()
    assert s > g + 0.15, (float(s), float(g))


def _sgi_groups(category: str, per_category: int, *variants: dict) -> list[float]:
    """SGI's mean group score on the built-in model over one category of the 3D ctrl (seed 7), under
    the 3D ctrl's options changed by each of `variants`; the regions are found and encoded once
    (one job cache: the variants differ only in the checks)."""
    bench, model, cache = _ctrl3d(7, per_category, (category,)), models.load("builtin"), JobCache()
    return [float(metrics.winoground(score_sgi(model, bench, cfg=SGIConfig(**(SGI_3D | v)), cache=cache))["group"].mean())
            for v in variants]


@pytest.mark.slow
@pytest.mark.weights
def test_geometry_solves_relations_that_cosine_gets_backwards():
    cos, geo = _sgi_groups("relation", 12, {"relations": "cosine"}, {"relations": "geometry"})
    assert geo > 0.8 and geo > cos + 0.5, (geo, cos)


@pytest.mark.slow
@pytest.mark.weights
def test_count_check_lifts_counting_items():
    off, on = _sgi_groups("count", 25, {"counts": "off"}, {})  # the 3D ctrl's: `fit`
    assert on > off + 0.2, (on, off)


@pytest.mark.slow
@pytest.mark.weights
def test_geometry_decides_relations_on_photo_sized_pictures_from_free_text():
    """3D world pictures at a photograph's size (twice the model's, so SGI takes the photo path), captions
    parsed by spaCy as free text, regions = the objects' boxes: cosine cannot tell "A left of B"
    from "B left of A"; the geometry check can. (Pasted on a real photograph, the objects are not
    read by this model, trained on CLEVR scenes alone: docs/world3d.md.)"""
    from PIL import Image

    b = models.load("builtin")
    items = []
    for it in _ctrl3d(11, 12, ("relation",)).items:
        images = [np.asarray(Image.fromarray(pic).resize((2 * PX, 2 * PX), Image.Resampling.NEAREST)) for pic in it.images]
        objects = [[{**o, "box": [2 * v for v in o["box"]]} for o in objs] for objs in it.meta["objects"]]
        items.append(dataclasses.replace(it, images=images, meta={"objects": objects}))
    bench = Benchmark("photo-relations", "photo-relations", items)
    cfg = dict(regions="gt", segmenter="spacy", fill="rows")
    cos = metrics.winoground(score_sgi(b, bench, cfg=SGIConfig(relations="cosine", **cfg)))["group"].mean()
    geo = metrics.winoground(score_sgi(b, bench, cfg=SGIConfig(relations="geometry", **cfg)))["group"].mean()
    assert geo >= 0.6 and geo > cos + 0.5, (float(geo), float(cos))
    rels = [s for s in caption_segments(bench, SGIConfig(**cfg)) for s in s if s.kind == "relation"]
    assert len(rels) == 2 * len(items) and all(s.predicate and s.parts for s in rels)  # parsed from the words


def test_loading_the_builtin_logs_nothing_and_leaves_logging_alone(caplog):
    """open_clip's factory warns that a folder holds no weights (ours are packed and copied in):
    the built-in model is built without it, and no filter is added to any logger."""
    import logging

    from unbag import models

    root = logging.getLogger()
    filters, handlers = list(root.filters), list(root.handlers)
    with caplog.at_level(logging.INFO):
        backend = models.load("builtin")
        models.load("builtin:clic")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert root.filters == filters and root.handlers == handlers
    assert backend.image_size == (PX, PX) and not backend.random_weights


def test_a_packed_builtin_folder_loads_as_the_builtin_does(tmp_path):
    """What `save_builtin` writes (packed weights beside the open_clip config) is a model spec of its
    own, so a retrained built-in model can be evaluated before it is shipped."""
    import shutil

    import torch

    from unbag import models

    for f in ("weights.safetensors", "open_clip_config.json"):
        shutil.copy(models.BUILTIN_DIR / f, tmp_path / f)
    a, b = models.load("builtin"), models.load(str(tmp_path))
    assert not b.random_weights
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))


@pytest.mark.parametrize("method", ["ce-clip", "fsc-clip", "tripletclip"])
def test_the_shipped_baseline_copies_load_over_the_builtin_and_record_their_recipe(method):
    import json

    import torch

    import unbag
    base, tuned = unbag.load_model("builtin").model.state_dict(), unbag.load_model(f"builtin:{method}").model.state_dict()
    assert set(base) == set(tuned) and any(not torch.equal(base[k], tuned[k]) for k in base)
    info = json.loads((models.METHODS_DIR / method / "overlay.json").read_text())
    assert info["method"] == info["config"]["method"] == method and info["config"]["steps"] == 600
