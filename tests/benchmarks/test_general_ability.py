"""General ability as CLIP_benchmark's users measure it: its layouts, metrics and prompts."""
import json
import shutil

import pytest
import torch

from unbag import benchmarks
from unbag.errors import UnbagError
from unbag.evaluation import evaluate
from unbag.metrics.zeroshot import zeroshot

MODEL = "builtin"


def test_zeroshot_metrics_by_hand():
    # 4 images of class 0, 1 of class 1, 0 of class 2: top-1 right on images 0 and 4
    sim = torch.tensor([[0.9, 0.1, 0.2], [0.1, 0.9, 0.2], [0.2, 0.1, 0.9], [0.3, 0.8, 0.1], [0.1, 0.7, 0.2]])
    m = zeroshot(sim, [0, 0, 0, 0, 1])
    assert m["top1"] == pytest.approx(2 / 5)
    assert m["mean_per_class_recall"] == pytest.approx((1 / 4 + 1 / 1) / 2)  # class 2 has no image: left out
    assert "top5" not in m  # k must be below the number of classes
    tie = zeroshot(torch.tensor([[0.5, 0.5, 0.1]]), [0])  # unbag's rule: a tie with the true class is wrong
    assert tie["top1"] == 0.0
    big = zeroshot(torch.eye(7)[[1, 2]] * -1 + 1, [0, 3])  # 7 classes: top-5 now reported
    assert set(big) == {"top1", "top5", "mean_per_class_recall"}


@pytest.mark.slow
def test_wds_classification_reads_clip_benchmarks_layout(wds_classification_dir):
    res = evaluate(MODEL, f"wds:{wds_classification_dir}", progress=False)
    b = benchmarks.load(f"wds:{wds_classification_dir}")
    assert len(b.images) == 7 and b.labels == [0, 1, 2, 0, 0, 1, 2] and b.classes[1] == "blue sphere"
    assert b.templates == ("a photo of a {c}.", "a picture of the {c}.")  # the file beside the data wins
    assert b.prompts()[:2] == ["a photo of a red cube.", "a picture of the red cube."]
    assert res["benchmark"]["templates_from"] == "zeroshot_classification_templates.txt"
    assert {"all/zeroshot/top1", "all/zeroshot/mean_per_class_recall"} <= set(res["metrics"])
    assert benchmarks.load(f"imagefolder:{wds_classification_dir}").labels == b.labels  # recognised as wds


def test_wds_retrieval_and_clip_benchmark_annotation_files(wds_retrieval_dir, clip_benchmark_retrieval_dir):
    r = benchmarks.load(f"wds:{wds_retrieval_dir}")
    assert len(r.images) == 3 and r.image_texts == [[0, 1], [2, 3], [4, 5]]
    coco = benchmarks.load(f"karpathy:{clip_benchmark_retrieval_dir / 'coco_test_karpathy.json'}")
    assert coco.images[0].endswith("val2014/COCO_val2014_000000000000.jpg") and coco.texts[:2] == ["a red cube",
                                                                                                    "a green cube"]
    flickr = benchmarks.load(f"karpathy:{clip_benchmark_retrieval_dir / 'flickr' / 'flickr30k_test_karpathy.txt'}")
    assert flickr.texts[0] == "a red dog, running" and flickr.image_texts == [[0, 1], [2, 3]]
    for spec in (f"wds:{wds_retrieval_dir}", f"karpathy:{clip_benchmark_retrieval_dir / 'coco_test_karpathy.json'}"):
        assert "all/retrieval/i2t/R@1" in evaluate(MODEL, spec, progress=False)["metrics"]


def test_imagefolder_follows_torchvision(tmp_path):
    from PIL import Image
    Image.new("RGB", (16, 16), (200, 0, 0)).save(tmp_path / "x.tif")
    (tmp_path / "data" / "cat" / "deep" / "er").mkdir(parents=True)
    (tmp_path / "data" / "dog").mkdir()
    shutil.copy(tmp_path / "x.tif", tmp_path / "data" / "cat" / "deep" / "er" / "a.tif")
    Image.new("RGB", (16, 16), (0, 0, 200)).save(tmp_path / "data" / "dog" / "b.ppm")
    Image.new("L", (16, 16), 9).save(tmp_path / "data" / "dog" / "c.pgm")
    b = benchmarks.load(f"imagefolder:{tmp_path / 'data'}")
    assert b.labels == [0, 1, 1] and b.classes == ["cat", "dog"]
    (tmp_path / "data" / "bird").mkdir()
    with pytest.raises(UnbagError, match="bird: class folder with no image"):
        benchmarks.load(f"imagefolder:{tmp_path / 'data'}")


def test_templates_are_checked_at_load(tmp_path, imagefolder_dir):
    d = tmp_path / "f"
    shutil.copytree(imagefolder_dir, d)
    (d / "zeroshot_classification_templates.txt").write_text("a {} photo.\na {} with {braces}.\n")
    with pytest.raises(UnbagError, match=r"zeroshot_classification_templates.txt:2: template 'a \{\} with"):
        benchmarks.load(f"imagefolder:{d}")
    (d / "zeroshot_classification_templates.txt").write_text("a {} photo.\na {{literal}} {c}.\n")
    b = benchmarks.load(f"imagefolder:{d}")
    assert b.prompts()[1] == "a {literal} blue sphere."


def test_default_prompts_imagenet_names_and_templates(tmp_path):
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    from unbag.benchmarks.classification import TEMPLATES, names_and_templates
    wnids = [f"n{k:08d}" for k in range(1000)]
    names, templates, info = names_and_templates(tmp_path, wnids)
    assert names == list(IMAGENET_CLASSNAMES) and len(templates) == 80 and "ImageNet" in info["classnames_from"]
    names, templates, _ = names_and_templates(tmp_path, ["red_cube"])
    assert names == ["red cube"] and templates == TEMPLATES and "itap of a {}." in TEMPLATES


@pytest.mark.slow
def test_eval_over_several_datasets_and_the_general_ability_row(tmp_path, imagefolder_dir, wds_classification_dir,
                                                                capsys):
    from unbag.cli import main
    from unbag.reports.html import write_report
    out = tmp_path / "res"
    assert main(["eval", "--bench", f"imagefolder:{imagefolder_dir}", "--bench", f"wds:{wds_classification_dir}",
                 "--out", str(out), "--quiet"]) == 0
    files = sorted(out.glob("*.json"))
    assert len(files) == 2
    tops = [json.loads(f.read_text())["metrics"]["all/zeroshot/top1"] for f in files]
    rep = write_report(files, tmp_path / "rep")
    page = (rep / "index.html").read_text()
    assert "General ability: zero-shot top-1" in page
    # the mean over the two datasets, its half-width the two intervals' in quadrature, halved
    halves = [(lambda iv: (iv[1] - iv[0]) / 2)(json.loads(f.read_text())["intervals"]["all/zeroshot/top1"]) for f in files]
    half = (halves[0] ** 2 + halves[1] ** 2) ** 0.5 / 2
    assert f'<td>{100 * sum(tops) / 2:.1f}<span class="pm"> ±{100 * half:.1f}</span></td>' in page


def test_precision_is_a_flag_and_recorded(imagefolder_dir):
    res = evaluate(MODEL, f"imagefolder:{imagefolder_dir}", progress=False, precision="bf16")
    assert res["config"]["precision"] == "bf16"
    assert evaluate(MODEL, f"imagefolder:{imagefolder_dir}", progress=False)["config"]["precision"] == "fp32"
    with pytest.raises(UnbagError, match="--precision"):
        evaluate(MODEL, f"imagefolder:{imagefolder_dir}", progress=False, precision="fp8")


def _named(tmp_path, name, folders):
    """An ImageFolder called `name` with one image per class folder."""
    from PIL import Image
    for k, f in enumerate(folders):
        (tmp_path / name / f).mkdir(parents=True)
        Image.new("RGB", (16, 16), (40 * k, 0, 0)).save(tmp_path / name / f / "a.png")
    return tmp_path / name


def test_builtin_prompts_come_from_clip_benchmarks_own_files(tmp_path):
    pytest.importorskip("clip_benchmark")
    from importlib.resources import files
    cb = files("clip_benchmark.datasets")
    names = json.loads((cb / "en_classnames.json").read_text())
    templates = json.loads((cb / "en_zeroshot_classification_templates.json").read_text())
    # numbered folders are labels: the dataset's own names by label, its own templates
    d = _named(tmp_path, "x", ["0", "1", "10"])
    b = benchmarks.load(f"imagefolder:{d}:pets")
    assert b.classes == [names["pets"][0], names["pets"][1], names["pets"][10]]
    assert list(b.templates) == templates["pets"] and b.info["dataset"] == "pets"
    assert "clip_benchmark" in b.info["templates_from"]
    # a CLIP_benchmark release folder is recognised by its name; classnames.txt beside it wins
    d = _named(tmp_path, "wds_cifar10", ["airplane", "bird"])
    b = benchmarks.load(f"imagefolder:{d}")
    assert b.classes == ["airplane", "bird"] and list(b.templates) == templates["cifar10"] and len(b.templates) == 18
    d = _named(tmp_path, "wds_vtab-eurosat", ["0", "1"])
    assert benchmarks.load(f"imagefolder:{d}").classes == names["eurosat"][:2]
    with pytest.raises(UnbagError, match="dataset 'cifar11': unknown"):
        benchmarks.load(f"imagefolder:{d}:cifar11")


def test_builtin_prompts_without_clip_benchmark(tmp_path, monkeypatch):
    from unbag.benchmarks import prompts
    from unbag.benchmarks.classification import TEMPLATES
    from unbag.errors import UnbagWarning
    monkeypatch.setattr(prompts, "_clip_benchmark_files", lambda: None)
    d = _named(tmp_path, "food101", ["apple_pie", "baby_back_ribs"])
    with pytest.raises(UnbagError, match="pip install --no-deps clip_benchmark"):
        benchmarks.load(f"imagefolder:{d}:food101")  # asked for by name: refused
    with pytest.warns(UnbagWarning, match="food101"):
        b = benchmarks.load(f"imagefolder:{d}")  # guessed from the folder's name: the defaults, said aloud
    assert b.classes == ["apple pie", "baby back ribs"] and b.templates == TEMPLATES
    # ImageNet's prompts ship with open_clip, so they never need clip_benchmark
    b = benchmarks.load(f"imagefolder:{_named(tmp_path, 'in', ['0', '999'])}:imagenet1k")
    assert b.classes == ["tench", "toilet paper"] and len(b.templates) == 80


def _cb_model():
    from unbag import models
    torch.manual_seed(0)
    return models.load("open_clip:unbag-tiny@random")


@pytest.mark.slow
def test_numbers_match_clip_benchmarks_own_evaluate(imagefolder_dir, clip_benchmark_retrieval_dir):
    """CLIP_benchmark 1.6.2's own zero-shot classification and retrieval, run on the same model and
    images, give unbag's numbers (fp32: amp off on both sides)."""
    pytest.importorskip("clip_benchmark")
    pytest.importorskip("sklearn")
    from clip_benchmark.metrics import zeroshot_classification, zeroshot_retrieval
    from torchvision.datasets import ImageFolder
    backend = _cb_model()
    b = benchmarks.load(f"imagefolder:{imagefolder_dir}")
    ds = ImageFolder(str(imagefolder_dir), transform=backend.preprocess)
    ds.classes = b.classes
    # its evaluate() stops at accuracy() under numpy 2 (float() of a 1-element array), so its own
    # classifier and logits are taken and scored the way evaluate() scores them
    clf = zeroshot_classification.zero_shot_classifier(backend.model, backend.tokenizer, b.classes,
                                                       [t.replace("{}", "{c}") for t in b.templates], "cpu", amp=False)
    logits, target = zeroshot_classification.run_classification(backend.model, clf,
                                                                torch.utils.data.DataLoader(ds, batch_size=4), "cpu",
                                                                amp=False)
    from sklearn.metrics import balanced_accuracy_score
    theirs = {"acc1": (logits.argmax(1) == target).float().mean().item(),
              "mean_per_class_recall": balanced_accuracy_score(target, logits.argmax(1))}
    ours = evaluate(backend, b, progress=False)["metrics"]
    assert ours["all/zeroshot/top1"] == pytest.approx(theirs["acc1"], abs=1e-6)
    assert ours["all/zeroshot/mean_per_class_recall"] == pytest.approx(theirs["mean_per_class_recall"], abs=1e-6)

    r = benchmarks.load(f"karpathy:{clip_benchmark_retrieval_dir / 'coco_test_karpathy.json'}")
    from PIL import Image
    pairs = [(backend.preprocess(Image.open(p).convert("RGB")), [r.texts[t] for t in ts])
             for p, ts in zip(r.images, r.image_texts)]
    loader = torch.utils.data.DataLoader(pairs, batch_size=2, collate_fn=lambda bs: (torch.stack([x for x, _ in bs]),
                                                                                       [t for _, t in bs]))
    theirs = zeroshot_retrieval.evaluate(backend.model, loader, backend.tokenizer, "cpu", amp=False,
                                         recall_k_list=[1])  # its topk needs k <= 3 images here
    ours = evaluate(backend, r, progress=False)["metrics"]
    for k in (1,):
        # CLIP_benchmark's "text retrieval" is image-to-text
        assert ours[f"all/retrieval/i2t/R@{k}"] == pytest.approx(theirs[f"text_retrieval_recall@{k}"], abs=1e-6)
        assert ours[f"all/retrieval/t2i/R@{k}"] == pytest.approx(theirs[f"image_retrieval_recall@{k}"], abs=1e-6)


def test_numbered_class_folders_without_names_are_warned_about(tmp_path):
    from unbag.errors import UnbagWarning
    with pytest.warns(UnbagWarning, match="folder numbers and no class names"):
        b = benchmarks.load(f"imagefolder:{_named(tmp_path, 'mine', ['0', '1'])}")
    assert b.classes == ["0", "1"]
