"""Which SGI region source each benchmark declares for its images, and what the results record."""
import warnings

import pytest

from unbag import benchmarks
from unbag.sgi.config import PICTURE_DEFAULTS, sgi_defaults


def test_every_photo_benchmark_declares_a_photo_region_source():
    from unbag.world.styles import resolve
    from unbag.world.worlds.clevr3d import SGI as SGI_3D
    for name, k in benchmarks.BENCHMARKS.items():
        if k.global_only or name == "ctrl":
            continue
        assert sgi_defaults(name) == PICTURE_DEFAULTS["photos"], name
    assert PICTURE_DEFAULTS["photos"]["regions"] == "selective"
    # ctrl's come from its world, told from the spec alone as from the loaded benchmark
    assert sgi_defaults("ctrl@flat") == {} and sgi_defaults("ctrl@3d") == SGI_3D
    assert sgi_defaults("ctrl") == sgi_defaults(f"ctrl@{resolve(None)}")


def test_results_record_the_declared_source_and_blobs_on_photos_warn(sugarcrepe_dir):
    from unbag import models
    from unbag.evaluation import evaluate

    tiny = models.load("open_clip:unbag-tiny@random")
    res = evaluate(tiny, f"sugarcrepe:{sugarcrepe_dir}", "sgi", progress=False)
    opts = res["config"]["options"]
    assert opts["regions"] == "selective" and opts["phases"] == 1
    assert opts["benchmark_defaults"] == PICTURE_DEFAULTS["photos"]
    with pytest.warns(UserWarning, match="blobs.*photos.*'selective'"):
        res = evaluate(tiny, f"sugarcrepe:{sugarcrepe_dir}", "sgi", progress=False, options={"regions": "blobs"})
    assert res["config"]["options"]["regions"] == "blobs"  # the user's choice wins, recorded as run
    from unbag.protocols import build
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the flat ctrl declares nothing: blobs are its default, no warning
        assert build("sgi", {"regions": "blobs"}, "ctrl@flat")[1]["regions"] == "blobs"
        assert build("sgi:paper", {}, "sugarcrepe")[1]["regions"] == "grid"  # the paper's recipe stays


def test_a_3d_ctrl_declares_learned_object_regions_and_its_heads_and_results_use_them(tmp_path):
    """SGI on CLEVR scenes takes the learned proposer's `objects` regions (no ground truth) whether the 3D ctrl is generated
    or read from a built folder; the flat ctrl keeps blobs+groups; the user's option still wins."""
    from unbag import load_benchmark, models
    from unbag.cli import main
    from unbag.evaluation import evaluate
    from unbag.heads.tfregions import TFRegions
    from unbag.sgi.config import SGIConfig
    from unbag.world.worlds.clevr3d import SGI as SGI_3D

    flat, cube = load_benchmark("ctrl", per_category=1, style="flat"), load_benchmark("ctrl", per_category=1, style="3d")
    assert SGIConfig.for_benchmark(flat).regions == "blobs+groups" and SGIConfig.for_benchmark(cube).regions == "objects"
    assert SGIConfig.for_benchmark(flat).fill == "median" and SGIConfig.for_benchmark(cube).fill == "rows"
    assert main(["world", "build", "--style", "3d", "--per-category", "1", "--categories", "color", "--procs", "1",
                 "--out", str(tmp_path / "c3"), "--quiet"]) == 0
    built = load_benchmark(f"ctrl:{tmp_path / 'c3'}")
    assert built.sgi == SGI_3D and sgi_defaults(built) == SGI_3D
    tiny = models.load("open_clip:unbag-tiny@random")
    res = evaluate(tiny, built, "sgi", progress=False)
    assert res["config"]["options"]["regions"] == "objects" and res["config"]["options"]["benchmark_defaults"] == SGI_3D
    res = evaluate(tiny, built, "sgi", progress=False, options={"regions": "gt"})
    assert res["config"]["options"]["regions"] == "gt"
    assert TFRegions.recorded(built)["sgi_regions"] == "objects" and TFRegions.recorded("ctrl@3d")["sgi_regions"] == "objects"
    assert TFRegions.recorded("ctrl@flat")["sgi_regions"] == "blobs+groups"
    assert TFRegions.recorded(f"ctrl:{tmp_path / 'c3'}")["sgi_regions"] == "objects"  # a built one's world: its meta
