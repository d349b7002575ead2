"""Which SGI region source each benchmark declares for its images, and what the results record."""
import warnings

import pytest

from unbag import benchmarks


def test_every_photo_benchmark_declares_a_photo_region_source():
    for name, k in benchmarks.BENCHMARKS.items():
        if k.global_only:
            continue
        want = {} if name == "ctrl" else benchmarks.PHOTO_SGI
        assert benchmarks.sgi_defaults(name) == want, name
    assert benchmarks.PHOTO_SGI["regions"] == "selective"


def test_results_record_the_declared_source_and_blobs_on_photos_warn(sugarcrepe_dir):
    from unbag import models
    from unbag.evaluation import evaluate

    tiny = models.load("open_clip:unbag-tiny@random")
    res = evaluate(tiny, f"sugarcrepe:{sugarcrepe_dir}", "sgi", progress=False)
    opts = res["config"]["options"]
    assert opts["regions"] == "selective" and opts["phases"] == 1
    assert opts["benchmark_defaults"] == benchmarks.PHOTO_SGI
    with pytest.warns(UserWarning, match="blobs.*photos.*'selective'"):
        res = evaluate(tiny, f"sugarcrepe:{sugarcrepe_dir}", "sgi", progress=False, options={"regions": "blobs"})
    assert res["config"]["options"]["regions"] == "blobs"  # the user's choice wins, recorded as run
    from unbag.protocols import build
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ctrl declares nothing: blobs are its default, no warning
        assert build("sgi", {"regions": "blobs"}, "ctrl")[1]["regions"] == "blobs"
        assert build("sgi:paper", {}, "sugarcrepe")[1]["regions"] == "grid"  # the paper's recipe stays
