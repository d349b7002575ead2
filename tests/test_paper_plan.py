"""`unbag run paper`: the paper's experiment, end to end on a tiny model and a fixture COCO."""
import json

import pytest

from unbag.cli import main
from unbag.runner import paper_plan, read_plan


def test_the_plan_quotes_the_paper_only_for_a_model_it_measured(tmp_path):
    clip = paper_plan("open_clip:ViT-B-32-quickgelu@openai", "ann.json:imgs", sugarcrepe="sc:coco")
    (tmp_path / "a.toml").write_text(clip)
    plan = read_plan(tmp_path / "a.toml")
    assert plan["published"]["ctrl"] == {"metric": "ood/all/group", "model global": 0.014, "model SGI-paper": 0.249,
                                         "model TFLocal": 0.151, "FT global": 0.019}
    assert plan["published"]["sugarcrepe"]["FT global"] == 0.855 and plan["benchmarks"]["sugarcrepe"] == "sugarcrepe:sc:coco"
    assert {t["data"] for t in plan["train"].values()} == {"coco:ann.json:imgs"}
    # the paper's heads read the caption's tokens; unbag's read its phrases (their default)
    assert {n: t.get("text") for n, t in plan["train"].items()} == {
        "FT": None, "TFLocal": "tokens", "TFGlobal": "tokens", "TFRegions": None, "TFLocal-LI": None}
    assert "published" not in paper_plan("builtin", "ann.json:imgs")
    quick = paper_plan("builtin", "a:b", per_category=2, steps=3, batch_size=4, n=8)
    (tmp_path / "q.toml").write_text(quick)
    q = read_plan(tmp_path / "q.toml")
    assert q["per_category"] == 2 and all(t["steps"] == 3 and t["batch_size"] == 4 for t in q["train"].values())
    assert [t.get("n") for t in q["train"].values()] == [None, 8, 8, 8, 8]  # FT reads COCO itself


def test_run_paper_needs_a_model_and_coco(capsys):
    assert main(["run", "paper", "--model", "builtin"]) != 0
    assert "needs --model SPEC and --coco" in capsys.readouterr().err
    assert main(["run", "plan.toml", "--coco", "a:b"]) != 0
    assert "--coco: for `unbag run paper`" in capsys.readouterr().err


@pytest.mark.slow
def test_the_paper_plan_end_to_end_on_a_tiny_model(coco_captions, tmp_path, monkeypatch, capsys):
    from unbag import models

    tiny = str(models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny"))
    # this tiny model stands for one the paper measured, so that its numbers are quoted beside ours
    import unbag.runner as run_mod
    real = run_mod.PLANS
    fake = tmp_path / "plans"
    fake.mkdir()
    (fake / "paper.toml").write_text((real / "paper.toml").read_text())
    pub = (real / "paper-published.toml").read_text()
    (fake / "paper-published.toml").write_text(pub.replace('models = [', f'models = ["{tiny}", '))
    monkeypatch.setattr(run_mod, "PLANS", fake)
    out = tmp_path / "paper"
    assert main(["run", "paper", "--model", tiny, "--coco", coco_captions.removeprefix("coco:"), "--out", str(out),
                 "--per-category", "1", "--steps", "2", "--batch-size", "4", "--n", "8", "--quiet"]) == 0
    cells = json.loads((out / "summary.json").read_text())["cells"]
    assert {(c["model"], c["protocol"]) for c in cells} == {
        ("model", p) for p in ("global", "SGI-paper", "SGI", "TFLocal", "TFGlobal", "TFRegions", "TFLocal-LI")} | {
        ("FT", "global")}
    page = (out / "report" / "index.html").read_text()
    assert "The paper&#x27;s numbers beside yours" in page or "The paper's numbers beside yours" in page
    assert "<td>1.4</td>" in page and "<td>24.9</td>" in page and "TFLocal [paper]" in page
    assert "TFRegions [unbag&#x27;s]" in page or "TFRegions [unbag's]" in page


def test_the_paper_plan_with_a_batch_its_heads_cannot_draw_from_writes_nothing(coco_captions, tmp_path, capsys):
    out = tmp_path / "paper"
    assert main(["run", "paper", "--model", "builtin", "--coco", coco_captions.removeprefix("coco:"), "--out", str(out),
                 "--batch-size", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "train.TFLocal: --batch-size 2: a head draws --negatives 3" in err and not out.exists()
