"""The shipped built-in model: loads offline, and SGI beats global scoring with it."""
import json

import pytest

from unbag import metrics, models
from unbag.benchmarks.base import Benchmark
from unbag.benchmarks.ctrl import generated
from unbag.scoring.cosine import score_global
from unbag.sgi.protocol import SGIConfig, score_sgi

pytestmark = pytest.mark.skipif(not (models.BUILTIN_DIR / "open_clip_model.safetensors").exists(),
                                reason="built-in weights not trained yet")


def test_builtin_ships_with_its_recipe():
    cfg = json.loads((models.BUILTIN_DIR / "open_clip_config.json").read_text())
    assert cfg["model_cfg"]["vision_cfg"]["image_size"] == 64
    assert cfg["unbag"]["config"]["method"] == "clip"
    assert (models.BUILTIN_DIR / "TRAINING.md").is_file() and (models.BUILTIN_DIR / "log.jsonl").is_file()


def test_sgi_beats_global_on_ood_attribute_swaps():
    b = models.load("builtin")
    full = generated(seed=7, per_category=12)
    items = [it for it in full.items if it.group["split"] == "ood" and it.group["category"] in ("color", "size", "material")]
    bench = Benchmark("ctrl", "ctrl", items, image_size=64)
    g = metrics.winoground(score_global(b, bench))["group"].mean()
    s = metrics.winoground(score_sgi(b, bench, cfg=SGIConfig()))["group"].mean()
    assert s > g + 0.15, (float(s), float(g))
    assert s > 0.5


def test_geometry_solves_relations_that_cosine_gets_backwards():
    b = models.load("builtin")
    full = generated(seed=7, per_category=12)
    bench = Benchmark("ctrl", "ctrl", [it for it in full.items if it.group["category"] == "relation"], image_size=64)
    cos = metrics.winoground(score_sgi(b, bench, cfg=SGIConfig()))["group"].mean()
    geo = metrics.winoground(score_sgi(b, bench, cfg=SGIConfig(relations="geometry")))["group"].mean()
    assert geo > 0.8 and geo > cos + 0.5, (float(geo), float(cos))
