"""A generated ctrl is drawn at the evaluated model's input side when it is larger than its world's."""
import pytest

from unbag import benchmarks
from unbag.errors import UnbagError
from unbag.world.styles import WORLDS


def test_the_side_ctrl_is_drawn_at():
    px3d = WORLDS["3d"].px
    assert benchmarks.drawn_size("ctrl", 224) == 224 and benchmarks.drawn_size("ctrl@3d", 224) == 224
    assert benchmarks.drawn_size("ctrl", px3d) is None and benchmarks.drawn_size("ctrl", 64) is None  # the world's
    assert benchmarks.drawn_size("ctrl@3d:128", 224) == 128  # the spec's own side wins
    assert benchmarks.drawn_size("ctrl-retrieval", 224) is None and benchmarks.drawn_size("winoground:x", 224) is None
    assert benchmarks.stamp("ctrl", px=224)["size"] == 224 and benchmarks.stamp("ctrl")["size"] == px3d
    assert benchmarks.stamp("ctrl@flat:40")["size"] == 40


def test_an_explicit_size_is_drawn_and_recorded():
    b = benchmarks.load("ctrl@flat:40", per_category=1)
    assert b.image_size == 40 and b.info["size"] == 40
    assert {im.shape[0] for it in b.items for im in it.images} == {40}
    one = benchmarks.load_item("ctrl@flat:40", "ood-color-0000")
    assert one.items[0].images[0].shape[0] == 40
    with pytest.raises(UnbagError, match="size"):
        benchmarks.load("ctrl@flat:8", per_category=1)  # below the smallest side a world draws


@pytest.mark.slow
def test_a_224_px_model_evaluated_on_ctrl_gets_224_px_pictures(tmp_path, monkeypatch, build_hf):
    from unbag.evaluation import evaluate
    from unbag.runner import run_plan

    monkeypatch.setattr("unbag.benchmarks.ctrl.DEFAULT_PER_CATEGORY", 1)
    big = f"hf:{build_hf('clip', tmp_path / 'clip224', image_size=224, patch=32)}"  # a CLIP's input side, tiny
    res = evaluate(big, "ctrl", progress=False, out=str(tmp_path / "r.json"))
    assert res["benchmark"]["size"] == 224 and res["n_items"] == 10
    # a plan draws each side once, and a cell made at another side is made again
    plan = tmp_path / "plan.toml"
    plan.write_text(f'out = "{tmp_path / "run"}"\nper_category = 1\n[models]\nbig = "{big}"\n'
                    '[benchmarks]\nctrl = "ctrl"\n[protocols]\nglobal = "global"\n')
    loads = []
    real = benchmarks.load
    monkeypatch.setattr(benchmarks, "load", lambda *a, **k: loads.append(k.get("px")) or real(*a, **k))
    (got,) = run_plan(plan, progress=False)
    assert got["benchmark"]["size"] == 224 and loads == [224]
    run_plan(plan, progress=False)
    assert loads == [224]  # reused
    made = tmp_path / "run" / got["cell"]["file"]
    made.write_text(made.read_text().replace('"size": 224', '"size": 96'))  # as if drawn at another side
    (got,) = run_plan(plan, progress=False)
    assert got["benchmark"]["size"] == 224 and loads == [224, 224]
