"""A user's files and results are never lost, stale or silently wrong (one test per promise)."""
import json
import os
import stat

import numpy as np
import pytest

from unbag.cli import main


def _run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


# -- output folders: unbag replaces only what it wrote -------------------------------------

@pytest.fixture
def results_file(tiny_bench, tmp_path_factory):
    out = tmp_path_factory.mktemp("res") / "r.json"
    assert main(["eval", "--model", "open_clip:unbag-tiny@random", "--bench", f"ctrl:{tiny_bench}", "--out", str(out),
                 "--quiet"]) == 0
    return out


def _commands(tmp_path, results_file, tiny_bench, out):
    return {
        "report": ["report", str(results_file), "--out", str(out)],
        "world": ["world", "build", "--out", str(out), "--per-category", "1", "--size", "32", "--quiet"],
        "features": ["features", "--model", "open_clip:unbag-tiny@random", "--data", "swaps", "--n", "4", "--out", str(out),
                     "--quiet"],
        "train": ["train", "--method", "clip", "--steps", "1", "--batch-size", "4", "--workers", "0", "--out", str(out), "--quiet"],
    }


@pytest.mark.parametrize("cmd", ["report", "world", "features", "train"])
def test_out_folder_of_other_files_is_refused(cmd, tmp_path, results_file, tiny_bench, capsys):
    out = tmp_path / "d"
    out.mkdir()
    (out / "notes.txt").write_text("x")
    code, _, err = _run(_commands(tmp_path, results_file, tiny_bench, out)[cmd], capsys)
    assert code == 2 and "unbag did not write" in err and "notes.txt" in err and "--overwrite" in err
    assert (out / "notes.txt").read_text() == "x" and sorted(os.listdir(out)) == ["notes.txt"]


@pytest.mark.parametrize("cmd", ["report", "world", "features", "train"])
def test_out_that_is_a_file_is_refused_untouched(cmd, tmp_path, results_file, tiny_bench, capsys):
    out = tmp_path / "f"
    out.write_text("keep")
    code, _, err = _run(_commands(tmp_path, results_file, tiny_bench, out)[cmd], capsys)
    assert code == 2 and "is a file" in err and "Traceback" not in err
    assert out.read_text() == "keep" and sorted(os.listdir(tmp_path)) == ["f"]


def test_rerun_replaces_own_folder_and_overwrite_replaces_any(tmp_path, results_file, tiny_bench, capsys):
    out = tmp_path / "rep"
    cmd = _commands(tmp_path, results_file, tiny_bench, out)["report"]
    assert _run(cmd, capsys)[0] == 0 and (out / "index.html").is_file()
    assert _run(cmd, capsys)[0] == 0  # its own folder: replaced
    code, _, err = _run(_commands(tmp_path, results_file, tiny_bench, out)["world"], capsys)
    assert code == 2 and "written by `report`" in err  # another command's folder is not
    (out / "notes.txt").write_text("x")
    assert _run(cmd, capsys)[0] == 2
    assert _run(cmd + ["--overwrite"], capsys)[0] == 0 and not (out / "notes.txt").exists()


def test_files_and_folders_follow_the_umask(tmp_path, results_file, capsys):
    old = os.umask(0o022)
    try:
        assert _run(["report", str(results_file), "--out", str(tmp_path / "r")], capsys)[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "r" / "index.html").stat().st_mode) == 0o644
    from unbag.utils import atomic_write
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "x.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.txt").stat().st_mode) == 0o640


def test_resume_without_checkpoint_says_so(tmp_path, capsys):
    code, _, err = _run(["train", "--method", "clip", "--steps", "1", "--batch-size", "4", "--workers", "0", "--out",
                         str(tmp_path / "t"), "--resume", "--quiet"], capsys)
    assert code == 0 and "no checkpoint" in err and "step 0" in err


# -- unbag run reuses a cell only when every input is unchanged ----------------------------

def _sc_plan(tmp_path, bench_dir, extra=""):
    from unbag import models
    tiny = tmp_path / "tiny"
    if not tiny.exists():
        models.load("open_clip:unbag-tiny@random").save(tiny)
    p = tmp_path / "plan.toml"
    p.write_text(f'out = "{tmp_path / "out"}"\n[models]\ntiny = "{tiny}"\n[benchmarks]\nsc = "sugarcrepe:{bench_dir}"\n'
                 f'[protocols]\nglobal = "global"\n{extra}')
    return p


@pytest.fixture
def counted(monkeypatch):
    from unbag import evaluation
    real, calls = evaluation.evaluate, []
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    return calls


def test_run_reruns_a_cell_whose_benchmark_files_or_spec_changed(tmp_path, sugarcrepe_dir, counted):
    import shutil

    from unbag.runner import run_plan
    sc = tmp_path / "sc"
    shutil.copytree(sugarcrepe_dir, sc)
    plan = _sc_plan(tmp_path, sc)
    first = run_plan(plan, progress=False)[0]
    run_plan(plan, progress=False)
    assert len(counted) == 1  # unchanged: reused
    f = sc / "data" / "add_att.json"
    data = json.loads(f.read_text())
    data["0"]["caption"] = "a table on a cube"  # an edited caption
    f.write_text(json.dumps(data))
    run_plan(plan, progress=False)
    assert len(counted) == 2
    other = tmp_path / "sc2"
    shutil.copytree(sugarcrepe_dir, other)
    res = run_plan(_sc_plan(tmp_path, other), progress=False)[0]  # the name points at another folder
    assert len(counted) == 3 and res["benchmark"]["spec"] == f"sugarcrepe:{other}"
    assert res["benchmark"]["files"] != first["benchmark"]["files"]


def test_run_reruns_a_cell_made_in_another_precision(tmp_path, sugarcrepe_dir, counted):
    from unbag.errors import UnbagError
    from unbag.runner import run_plan
    plan = _sc_plan(tmp_path, sugarcrepe_dir)
    assert run_plan(plan, progress=False)[0]["config"]["precision"] == "fp32"  # auto on CPU
    plan.write_text('precision = "fp32"\n' + plan.read_text())
    run_plan(plan, progress=False)
    assert len(counted) == 1  # the same precision, named: reused
    plan.write_text(plan.read_text().replace('"fp32"', '"bf16"'))
    assert run_plan(plan, progress=False)[0]["config"]["precision"] == "bf16" and len(counted) == 2
    plan.write_text(plan.read_text().replace('"bf16"', '"fp8"'))
    with pytest.raises(UnbagError, match="field 'precision' must be one of"):
        run_plan(plan, progress=False)


def test_run_retrains_when_the_train_table_changed(tmp_path, monkeypatch):
    from unbag.runner import run_plan
    plan = tmp_path / "plan.toml"
    body = ('out = "{out}"\n[train.mine]\nmethod = "clip"\nmodel = "open_clip:unbag-tiny@random"\nsteps = {steps}\n'
            'batch_size = 4\nworkers = 0\n[benchmarks]\nr = "ctrl-retrieval:8"\n[protocols]\nglobal = "global"\n')
    plan.write_text(body.format(out=tmp_path / "out", steps=1))
    run_plan(plan, progress=False)
    cfg = json.loads((tmp_path / "out" / "train" / "mine" / "config.json").read_text())["config"]
    assert cfg["steps"] == 1
    plan.write_text(body.format(out=tmp_path / "out", steps=2))
    run_plan(plan, progress=False)
    cfg = json.loads((tmp_path / "out" / "train" / "mine" / "config.json").read_text())["config"]
    assert cfg["steps"] == 2


@pytest.mark.parametrize("text, field", [("colour = 1\n", "colour"), ("[train.x]\nmethod = 'clip'\nstepz = 3\n", "stepz")])
def test_unknown_plan_keys_are_errors(tmp_path, text, field):
    from unbag.errors import UnbagError
    from unbag.runner import read_plan, run_plan
    p = tmp_path / "p.toml"
    p.write_text(text + "[models]\na = 'builtin'\n[benchmarks]\nc = 'ctrl'\n[protocols]\ng = 'global'\n"
                 if "train" not in text else "[models]\na = 'builtin'\n[benchmarks]\nc = 'ctrl'\n[protocols]\n"
                 "g = 'global'\n" + text)
    with pytest.raises(UnbagError, match=field):
        read_plan(p) if field == "colour" else run_plan(p, out=str(tmp_path / "o"), progress=False)


def test_results_record_the_image_root(tmp_path, sugarcrepe_dir):
    from unbag import api
    res = api.evaluate("open_clip:unbag-tiny@random", f"sugarcrepe:{sugarcrepe_dir}:{sugarcrepe_dir / 'val2017'}")
    assert res["benchmark"]["spec"] == f"sugarcrepe:{sugarcrepe_dir}:{sugarcrepe_dir / 'val2017'}"
    assert res["benchmark"]["image_root"] == str((sugarcrepe_dir / "val2017").resolve())


# -- wrong answers with exit code 0 ---------------------------------------------------------

def test_open_clip_without_weights_needs_an_explicit_random(tiny_bench, capsys):
    code, _, err = _run(["eval", "--model", "open_clip:unbag-tiny", "--bench", f"ctrl:{tiny_bench}", "--quiet"], capsys)
    assert code == 2 and "@random" in err and "@PRETRAINED" in err
    from unbag import api
    res = api.evaluate("open_clip:unbag-tiny@random", f"ctrl:{tiny_bench}")
    assert res["random_weights"] is True
    assert api.evaluate("builtin", "ctrl-retrieval:8")["random_weights"] is False


def test_nan_weights_are_an_error_naming_the_model(tiny_bench, tmp_path, capsys):
    import torch

    from unbag import models
    m = models.load("open_clip:unbag-tiny@random")
    with torch.no_grad():
        m.model.text_projection.fill_(float("nan"))
    m.save(tmp_path / "nan")
    out = tmp_path / "r" / "res.json"
    code, _, err = _run(["eval", "--model", str(tmp_path / "nan"), "--bench", f"ctrl:{tiny_bench}", "--out", str(out),
                         "--quiet"], capsys)
    assert code == 2 and str(tmp_path / "nan") in err and "NaN" in err and not out.parent.exists()
    code, _, err = _run(["eval", "--model", str(tmp_path / "nan"), "--bench", "ctrl-retrieval:8", "--quiet"], capsys)
    assert code == 2 and "NaN" in err


@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_captions_are_refused_naming_file_item_field(tmp_path, sugarcrepe_dir, bad, capsys):
    import shutil
    sc = tmp_path / "sc"
    shutil.copytree(sugarcrepe_dir, sc)
    f = sc / "data" / "swap_att.json"
    data = json.loads(f.read_text())
    data["2"]["negative_caption"] = bad
    f.write_text(json.dumps(data))
    code, _, err = _run(["eval", "--model", "open_clip:unbag-tiny@random", "--bench", f"sugarcrepe:{sc}", "--quiet"],
                        capsys)
    assert code == 2 and "swap_att.json" in err and "item '2'" in err and "negative_caption" in err


def test_empty_jsonl_training_caption_is_refused(tmp_path):
    from unbag.errors import UnbagError
    from unbag.training.data import FileSource
    f = tmp_path / "d.jsonl"
    f.write_text('{"image": "a.png", "caption": "a dog"}\n{"image": "b.png", "caption": " "}\n')
    with pytest.raises(UnbagError, match=r"d.jsonl:2: field 'caption'"):
        FileSource(str(f), 0)


def test_captions_cut_alike_by_the_context_length_are_counted(tmp_path, build_hf, recwarn):
    from unbag import api
    from unbag.benchmarks.base import Benchmark, Item
    from unbag.benchmarks.sugarcrepe import pairwise
    from unbag.errors import UnbagWarning
    model = build_hf("clip", tmp_path / "clip")  # context length 16
    long = "a red cube " * 6
    items = [Item("cut", [np.zeros((32, 32, 3), np.uint8)], [long + "left", long + "right"], {"subset": "s"}),
             Item("fine", [np.zeros((32, 32, 3), np.uint8)], ["a red cube", "a blue cube"], {"subset": "s"})]
    res = api.evaluate(f"hf:{model}", Benchmark("t", "t", items, metric=pairwise))
    assert res["tokenized_alike"] == 1
    assert any(issubclass(w.category, UnbagWarning) and "context length" in str(w.message) for w in recwarn)


def test_unbalanced_csv_quote_is_an_error_with_its_line(tmp_path):
    from unbag.errors import UnbagError
    from unbag.training.data import FileSource
    f = tmp_path / "d.csv"
    f.write_text('a.png,a dog\nb.png,"a cat\nc.png,a bird\nd.png,a fish\n')
    with pytest.raises(UnbagError, match=r"d.csv:2: malformed CSV .*unbalanced quote"):
        FileSource(str(f), 0)
    f.write_text('a.png,a dog\nb.png,"a cat\nc.png,a",x\nd.png,a fish\n')  # the quote closes on a later line
    with pytest.raises(UnbagError, match=r"d.csv:2: a quoted field runs on to line 3"):
        FileSource(str(f), 0)


def test_batch_larger_than_the_data_is_refused(tmp_path, capsys):
    from PIL import Image
    for k in range(3):
        Image.new("RGB", (16, 16), (k * 60, 0, 0)).save(tmp_path / f"{k}.png")
    (tmp_path / "d.csv").write_text("".join(f"{k}.png,a picture {k}\n" for k in range(3)))
    code, _, err = _run(["train", "--method", "negclip", "--model", "open_clip:unbag-tiny@random", "--data",
                         f"csv:{tmp_path / 'd.csv'}", "--steps", "1", "--out", str(tmp_path / "t"), "--quiet"], capsys)
    assert code == 2 and "larger than the 3 rows" in err


def test_missing_and_unknown_sugarcrepe_subsets_are_named(tmp_path, sugarcrepe_dir):
    import shutil

    from unbag import api
    from unbag.errors import UnbagWarning
    sc = tmp_path / "sc"
    shutil.copytree(sugarcrepe_dir, sc)
    (sc / "data" / "swap_att.json").rename(sc / "data" / "swap-att.json")  # misnamed
    with pytest.warns(UnbagWarning) as got:
        res = api.evaluate("open_clip:unbag-tiny@random", f"sugarcrepe:{sc}")
    said = " ".join(str(w.message) for w in got)
    assert "5 of 7 subset files missing" in said and "swap_att.json" in said and "swap-att.json" in said
    assert res["benchmark"]["macro_subsets"] == ["add_att", "replace_obj"]
    assert "swap_obj" in res["benchmark"]["missing_subsets"] and "swap_att" in res["benchmark"]["missing_subsets"]


# -- conformance with the official scripts --------------------------------------------------

def test_order_metric_by_hand():
    import torch

    from unbag.benchmarks.aro import order
    from unbag.benchmarks.base import Item
    scores = torch.tensor([[[0.5, 0.5, 0.1, 0.2, 0.3]],    # p1 identical to the original, tied: no negative
                           [[0.5, 0.5, 0.1, 0.2, 0.3]],    # p1 differs but ties: wrong for unbag, right for ARO
                           [[0.4, 0.1, 0.6, 0.2, 0.3]],    # p2 wins: wrong for both
                           [[0.9, 0.1, 0.2, 0.3, 0.4]]])   # clear win
    same = torch.tensor([[True, False, False, False]] + [[False] * 4] * 3)
    m = order(scores, [Item(str(k), [], [], {}, meta={"same": row}) for k, row in enumerate(same.tolist())])
    assert m["acc"].tolist() == [1.0, 0.0, 0.0, 1.0] and m["acc_official"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert m["tie/acc"].tolist() == [False, True, False, False]
    assert m["tie/acc_official"].tolist() == [True, True, False, False]


def test_aro_order_reports_official_and_strict(tmp_path, capsys):
    from PIL import Image

    from unbag import api, benchmarks
    (tmp_path / "flickr30k-images").mkdir()
    images = []
    for k, raw in enumerate(["Dogs.", "A dog, a dog!", "A red cube and a blue sphere."]):
        Image.new("RGB", (32, 32), (40 * k, 0, 0)).save(tmp_path / "flickr30k-images" / f"{k}.jpg")
        images.append({"filename": f"{k}.jpg", "split": "test", "sentences": [{"raw": raw}]})
    (tmp_path / "dataset_flickr30k.json").write_text(json.dumps({"images": images}))
    b = benchmarks.load(f"aro-flickr-order:{tmp_path}")
    assert b.items[0].images[0] == str(tmp_path / "flickr30k-images" / "0.jpg")  # the usual Flickr30k layout
    assert b.items[0].captions == ["dogs"] * 5 and all(b.items[0].meta["same"])  # one word: all identical
    assert b.info["items_with_identical_perturbation"] >= 1
    res = api.evaluate("open_clip:unbag-tiny@random", b)
    assert {"all/acc", "all/acc_official"} <= set(res["metrics"])
    assert res["metrics"]["all/acc_official"] >= res["metrics"]["all/acc"]


def test_aro_order_perturbs_the_raw_caption_then_cleans(tmp_path):
    from PIL import Image

    from unbag import benchmarks
    from unbag.benchmarks.aro import perturbations, pre_caption
    from unbag.text import spacy_model
    raw = "Two Dogs, running on the Beach. A Frisbee flies by!"
    Image.new("RGB", (32, 32)).save(tmp_path / "0.jpg")
    (tmp_path / "dataset_coco.json").write_text(json.dumps({"images": [
        {"filename": "0.jpg", "split": "test", "sentences": [{"raw": raw}]}]}))
    b = benchmarks.load(f"aro-coco-order:{tmp_path}")
    nlp = spacy_model()
    want = [pre_caption(x) for x in [raw, *perturbations(raw, nlp, np.random.default_rng([0, 0, 0]))]]
    assert b.items[0].captions == want and len(set(want)) > 1


# -- README's promise: a clear message, exit code 2, and nothing written --------------------

@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """Model folders with damaged weights, an open_clip folder, a feature cache."""
    from unbag import models
    from unbag.api import features
    root = tmp_path_factory.mktemp("broken")
    oc = models.load("open_clip:unbag-tiny@random").save(root / "oc")
    weights = (oc / "open_clip_model.safetensors").read_bytes()
    for name, data in (("truncated", weights[: len(weights) // 2]), ("badheader", b"\xff" * 64), ("empty", b"")):
        import shutil
        shutil.copytree(oc, root / name)
        (root / name / "open_clip_model.safetensors").write_bytes(data)
    features("builtin", "swaps", root / "cache", n=8)
    return root


ERRORS = {  # name: (argv with {root} and {out}, words the message must hold)
    "hf at an open_clip folder": (["eval", "--model", "hf:{root}/oc", "--bench", "ctrl-retrieval:8"], "open_clip"),
    "truncated safetensors": (["eval", "--model", "{root}/truncated", "--bench", "ctrl-retrieval:8"], "truncated"),
    "bad-header safetensors": (["eval", "--model", "{root}/badheader", "--bench", "ctrl-retrieval:8"], "safetensors"),
    "empty safetensors": (["eval", "--model", "{root}/empty", "--bench", "ctrl-retrieval:8"], "safetensors"),
    "eval batch 0": (["eval", "--bench", "ctrl-retrieval:8", "--batch-size", "0", "--out", "{out}/r.json"], ">= 1"),
    "eval batch negative": (["eval", "--bench", "ctrl-retrieval:8", "--batch-size", "-3", "--out", "{out}/r.json"],
                            ">= 1"),
    "sgi batch 0": (["eval", "--protocol", "sgi", "--batch-size", "0", "--out", "{out}/r.json"], ">= 1"),
    "train batch 0": (["train", "--method", "clip", "--steps", "2", "--batch-size", "0", "--out", "{out}/t"], "--batch-size 0"),
    "train steps -5": (["train", "--method", "clip", "--steps", "-5", "--out", "{out}/t"], "--steps -5"),
    "head steps -5": (["train", "--method", "tflocal", "--model", "builtin", "--data", "{root}/cache", "--steps", "-5",
                       "--out", "{out}/h"], "--steps -5"),
    "head batch 0": (["train", "--method", "tflocal", "--data", "{root}/cache", "--batch-size", "0", "--out",
                      "{out}/h"], "--batch-size 0"),
    "features n 0": (["features", "--data", "swaps", "--n", "0", "--out", "{out}/f"], "--n 0: must be"),
    "device gpu": (["eval", "--bench", "ctrl-retrieval:8", "--device", "gpu", "--out", "{out}/r.json"],
                   "not a device"),
    "device cuda without one": (["eval", "--model", "open_clip:unbag-tiny@random", "--bench", "ctrl-retrieval:8",
                                 "--device", "cuda:7", "--out", "{out}/r.json"], "--device cuda:7"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_are_messages_with_exit_2_and_nothing_written(case, broken, tmp_path, capsys):
    import torch
    argv, words = ERRORS[case]
    if "cuda" in case and torch.cuda.device_count() > 7:
        pytest.skip("this machine has that GPU")
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = _run([a.format(root=broken, out=out) for a in argv] + ["--quiet"], capsys)
    assert code == 2 and err.startswith("unbag: error:") and words in err and "Traceback" not in err, err
    assert "open_clip:open_clip" not in err
    assert list(out.iterdir()) == []


def test_damaged_checkpoint_on_resume_is_a_message(tmp_path, capsys):
    args = ["train", "--method", "clip", "--steps", "2", "--batch-size", "4", "--workers", "0", "--ckpt-every", "1", "--out",
            str(tmp_path / "t"), "--quiet"]
    assert _run(args, capsys)[0] == 0
    (tmp_path / "t" / "ckpt" / "trainer.pt").write_bytes(b"garbage")
    code, _, err = _run(args + ["--resume"], capsys)
    assert code == 2 and "trainer.pt" in err and "damaged" in err
    (tmp_path / "t" / "ckpt" / "open_clip_model.safetensors").write_bytes(b"\x00" * 10)
    code, _, err = _run(args + ["--resume"], capsys)
    assert code == 2 and "open_clip_model.safetensors" in err


def test_score_with_no_images_is_a_message():
    from unbag import api
    from unbag.errors import UnbagError
    with pytest.raises(UnbagError, match="images is empty"):
        api.score("builtin", [], ["a dog"])
    with pytest.raises(UnbagError, match="captions is empty"):
        api.score("builtin", [np.zeros((8, 8, 3), np.uint8)], [])


def test_explain_on_a_free_image_uses_the_photo_regions(tmp_path, monkeypatch):
    from PIL import Image
    from skimage import data

    import unbag.sgi.explain as ex
    from unbag import api
    Image.fromarray(data.coffee()).resize((96, 64)).save(tmp_path / "c.png")
    real, used = ex.explain, []
    monkeypatch.setattr(ex, "explain", lambda b, bench, cfg: used.append(cfg) or real(b, bench, cfg))
    exp = api.explain("builtin", str(tmp_path / "c.png"), "a red cup on a plate")
    assert used[0].regions == "selective" and used[0].phases == 1
    whole = [[0, 0, 96, 64]]
    assert any(r["region"] != whole for r in exp.rows)  # not every segment on the whole picture
    api.explain("builtin", str(tmp_path / "c.png"), "a red cup", regions="grid")
    assert used[1].regions == "grid"  # an option still overrides


# -- friction a new user met -----------------------------------------------------------------

def test_a_warmup_longer_than_the_run_is_warned(broken, tmp_path):
    from unbag import api
    from unbag.errors import UnbagWarning
    with pytest.warns(UnbagWarning, match=r"warm-up of 50 steps .*\(20 steps\)"):
        api.train("tflocal", data=str(broken / "cache"), out=tmp_path / "h", steps=20, batch_size=8)
    rec = json.loads((tmp_path / "h" / "head.json").read_text())
    assert max(x["lr"] for x in rec["log"]) < 2e-3  # what the warning says: lr is never reached


def test_clic_log_shows_both_kinds_of_step(tmp_path):
    from PIL import Image

    from unbag import api
    for k in range(8):
        Image.new("RGB", (24, 16), (30 * k, 0, 0)).save(tmp_path / f"{k}.png")
    (tmp_path / "d.csv").write_text("".join(f"{k}.png,a red picture {k},a photo {k}\n" for k in range(8)))
    api.train("clic", "open_clip:unbag-tiny@random", f"csv:{tmp_path / 'd.csv'}", tmp_path / "t", steps=4,
              batch_size=4, workers=0, log_every=2)
    lines = [json.loads(x) for x in (tmp_path / "t" / "log.jsonl").read_text().splitlines()]
    kinds = {x["clic_step"] for x in lines if "clic_step" in x}
    assert kinds == {0.0, 1.0} and [x["step"] for x in lines if "loss" in x] == [0, 1, 2, 3]


def test_negatives_keep_articles_in_agreement():
    from unbag.negatives.typed import RuleGenerator, agree_articles
    assert agree_articles("an orange space suit", "an cyan space suit") == "a cyan space suit"
    assert agree_articles("A red apple", "A orange apple") == "An orange apple"
    assert agree_articles("a dog and an egg", "a dog and an egg") == "a dog and an egg"
    for kind, negs in RuleGenerator().candidates("an orange space suit on a wooden table").items():
        for n in negs:
            assert "an c" not in n and "a o" not in n, (kind, n)


def test_export_writes_a_folder_plain_open_clip_loads(tmp_path, capsys):
    """A model without unbag's convolutional stem exports to a folder plain open_clip builds."""
    import open_clip
    import torch

    from unbag import load_model
    torch.manual_seed(0)
    load_model("open_clip:unbag-tiny@random", "cpu").save(tmp_path / "tiny")
    code, out, _ = _run(["export", str(tmp_path / "tiny"), "--out", str(tmp_path / "oc")], capsys)
    assert code == 0 and "local-dir" in out
    plain, _, _ = open_clip.create_model_and_transforms(f"local-dir:{tmp_path / 'oc'}")
    ours = load_model(str(tmp_path / "tiny"), "cpu")
    ids = ours.tokenize(["a red cube", "two large metal spheres"])
    pixels = torch.rand(2, 3, *ours.image_size)
    with torch.no_grad():
        assert torch.equal(plain.encode_text(ids), ours.model.encode_text(ids))
        # the same weights; the image pass may differ in the last float bits between two model objects
        assert torch.allclose(plain.encode_image(pixels), ours.model.encode_image(pixels), atol=1e-5, rtol=0)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), ours.model.state_dict().values()))


def test_export_unpacks_the_builtin_model(tmp_path, capsys):
    """The built-in model's packed weights, written unpacked: the folder loads back as the same model
    (plain open_clip builds it too when the model has none of unbag's own tower keys, the test above)."""
    import json

    import torch

    from unbag import load_model
    from unbag.models import stem
    code, out, _ = _run(["export", "builtin", "--out", str(tmp_path / "oc")], capsys)
    assert code == 0
    cfg = json.loads((tmp_path / "oc" / "open_clip_config.json").read_text())["model_cfg"]
    own = any(k in cfg for k in stem.OWN_KEYS)
    assert ("cannot build unbag's own tower" in out) == own
    back, ours = load_model(str(tmp_path / "oc"), "cpu"), load_model("builtin", "cpu")
    assert list(back.model.state_dict()) == list(ours.model.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(back.model.state_dict().values(), ours.model.state_dict().values()))
    ids = ours.tokenize(["a red cube", "two large metal spheres"])
    with torch.no_grad():
        assert torch.equal(back.model.encode_text(ids), ours.model.encode_text(ids))


def test_quiet_hides_the_hub_and_transformers_bars(tmp_path, build_hf, capsys, monkeypatch):
    import os
    model = build_hf("clip", tmp_path / "clip")
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    code, _, err = _run(["eval", "--model", f"hf:{model}", "--bench", "ctrl-retrieval:8", "--quiet"], capsys)
    assert code == 0 and os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == "1"
    import transformers
    assert not transformers.utils.logging.is_progress_bar_enabled() and "Loading weights" not in err


@pytest.mark.parametrize("a, b", [("中", "国"), ("🐶", "🐱")])
def test_explanation_text_draws_cjk_and_emoji_glyphs_not_boxes(a, b):
    from PIL import Image, ImageDraw, ImageFont

    from unbag.sgi.explain import _fallback, _text
    if _fallback(a, 12) is None:
        pytest.skip(f"no installed font has {a!r} (.ci/run installs fonts-wqy-zenhei and fonts-symbola)")
    font = ImageFont.load_default(size=12)

    def drawn(ch):
        im = Image.new("L", (40, 20), 255)
        _text(ImageDraw.Draw(im), (2, 2), f"a {ch}", 0, font)
        return np.asarray(im)
    # the default font alone draws the same box for both characters; a real glyph differs
    assert not np.array_equal(drawn(a), drawn(b))


def test_an_older_unbags_report_folder_is_still_its_own(tmp_path, results_file, capsys):
    out = tmp_path / "rep"
    for name in ("data", "figures", "explain"):
        (out / name).mkdir(parents=True)
    (out / "index.html").write_text("old")  # written before folders carried a marker
    assert _run(["report", str(results_file), "--out", str(out)], capsys)[0] == 0
    assert (out / "index.html").read_text() != "old"
