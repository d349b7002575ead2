import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the generated 3D benchmarks are drawn once per test session, into a cache of the session's own
# (the controller's, which pytest-xdist's workers inherit): the first test to ask draws them, the
# rest read them back, as a user's second run does (tests/world/test_cache.py tests the cache)
_OWN_CACHE = not os.environ.get("UNBAG_TEST_CACHE")  # made here: removed when the session ends
if _OWN_CACHE:
    os.environ["UNBAG_TEST_CACHE"] = tempfile.mkdtemp(prefix="unbag-test-cache-")
os.environ["UNBAG_CACHE"] = os.environ["UNBAG_TEST_CACHE"]
if os.environ.get("PYTEST_XDIST_WORKER"):  # one torch thread per worker: the workers share the cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import io  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    if _OWN_CACHE:
        shutil.rmtree(os.environ["UNBAG_TEST_CACHE"], ignore_errors=True)


@pytest.fixture
def run_global(tmp_path):
    """Score a benchmark spec with the built-in model's global protocol: (results, its per-item records)."""
    from unbag.evaluation import evaluate

    def run(spec: str):
        out = tmp_path / "r.json"
        res = evaluate("builtin", spec, "global", out=str(out), progress=False)
        return res, [json.loads(x) for x in out.with_suffix(".items.jsonl").read_text().splitlines()]
    return run


@pytest.fixture(scope="session")
def tiny_bench(tmp_path_factory):
    """A small flat-world ctrl benchmark on disk (3 items per category and split; flat whatever the
    default world: its tests check the flat format, and it builds in well under a second)."""
    from unbag.world.io import build

    return build(tmp_path_factory.mktemp("bench") / "ctrl", seed=3, per_category=3, progress=False, style="flat")

WORDS = ("a an the of and on in left right above below next to with small large red green blue yellow "
         "purple cyan orange brown gray rubber metal cube sphere cylinder cone star cubes spheres one two "
         "three four image picture photo showing there is are dog cat man woman").split()


def tokenizer(kind: str):
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    special = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]
    vocab = {w: i for i, w in enumerate(special + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if kind == "clip":
        tok.post_processor = processors.TemplateProcessing(
            single="[BOS] $A [EOS]", special_tokens=[("[BOS]", 2), ("[EOS]", 3)])
        return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]",
                                                    eos_token="[EOS]", pad_token="[EOS]", model_max_length=16)
    tok.post_processor = processors.TemplateProcessing(single="$A [EOS]", special_tokens=[("[EOS]", 3)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]",
                                                pad_token="[PAD]", model_max_length=16)


def build(kind: str, out: Path, image_size: int = 32, patch: int = 8) -> Path:
    """Save a random tiny CLIPModel/SiglipModel + tokenizer + processor config to `out`."""
    import torch
    import transformers

    torch.manual_seed(0)
    text = dict(vocab_size=len(WORDS) + 4, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=16)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                  image_size=image_size, patch_size=patch)
    if kind == "clip":
        cfg = transformers.CLIPConfig(text_config=dict(text, eos_token_id=3, bos_token_id=2, pad_token_id=3),
                                      vision_config=vision, projection_dim=16)
        model = transformers.CLIPModel(cfg)
        proc = {"crop_size": {"height": image_size, "width": image_size}, "size": {"shortest_edge": image_size},
                "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
                "image_processor_type": "CLIPImageProcessor", "do_center_crop": True, "resample": 3}
    else:
        cfg = transformers.SiglipConfig(text_config=dict(text, pad_token_id=0, eos_token_id=3),
                                        vision_config=vision)
        model = transformers.SiglipModel(cfg)
        proc = {"size": {"height": image_size, "width": image_size}, "image_mean": [0.5, 0.5, 0.5],
                "image_std": [0.5, 0.5, 0.5], "image_processor_type": "SiglipImageProcessor", "resample": 3}
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer(kind).save_pretrained(out)
    (out / "preprocessor_config.json").write_text(json.dumps(proc))
    return out


@pytest.fixture(scope="session")
def build_hf():
    """build(kind, out, image_size=32, patch=8) -> a tiny transformers CLIP/SigLIP model folder."""
    return build


def check_image_tower(backend) -> None:
    """weights_id(image_only=True) follows the image tower's weights and no others, and the image
    embeddings depend on nothing else (what lets a text-only fine-tune share its base's regions)."""
    import copy

    import torch

    from unbag.models.base import weights_id

    b = copy.deepcopy(backend)
    assert b.image_tower
    h, w = b.image_size
    px = torch.randn(2, 3, h, w, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        emb, whole, image = b.encode_images(px).embeds, weights_id(b), weights_id(b, image_only=True)
        for name, p in b.model.named_parameters():
            if not name.startswith(b.image_tower):
                p.add_(0.01)
        assert weights_id(b) != whole and weights_id(b, image_only=True) == image
        assert torch.equal(b.encode_images(px).embeds, emb)
        next(p for name, p in b.model.named_parameters() if name.startswith(b.image_tower)).add_(0.01)
        assert weights_id(b, image_only=True) != image


def check_cpu_chunks(backend) -> None:
    """Encoding in CPU_CHUNK pieces gives the features of the whole batch at once."""
    import torch

    from unbag.models.base import CPU_CHUNK

    h, w = backend.image_size
    n = 2 * CPU_CHUNK + 5
    px = torch.randn(n, 3, h, w, generator=torch.Generator().manual_seed(0))
    ids = backend.tokenize([f"{k} red cubes left of a blue sphere" for k in range(n)])
    with torch.inference_mode():
        for encode, x in ((type(backend).encode_images, px), (type(backend).encode_texts, ids)):
            chunked, whole = encode(backend, x, tokens=True), encode.__wrapped__(backend, x, tokens=True)
            for name in ("embeds", "patches", "grid", "tokens", "mask"):
                a, b = getattr(chunked, name, None), getattr(whole, name, None)
                same = (torch.allclose(a, b, atol=1e-5) if a.is_floating_point() else torch.equal(a, b)) \
                    if isinstance(a, torch.Tensor) else a == b
                assert same, name


@pytest.fixture(scope="session")
def cpu_chunks_check():
    """check_cpu_chunks(backend): see its docstring."""
    return check_cpu_chunks


@pytest.fixture(scope="session")
def image_tower_check():
    """check_image_tower(backend): see its docstring."""
    return check_image_tower


# -- tiny copies of each public benchmark in its official layout --------------------------------
COLORS = ["red", "green", "blue", "yellow", "purple", "cyan", "white", "black"]


def img(path: Path, k: int, size=(48, 40)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(k)
    a = np.full((size[1], size[0], 3), rng.integers(0, 255, 3), np.uint8)
    a[5:20, 5:25] = rng.integers(0, 255, 3)
    Image.fromarray(a).save(path)
    return path


def png_bytes(k: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((32, 32, 3), k * 30 % 255, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="session")
def sugarcrepe_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("sugarcrepe")
    for s, subset in enumerate(["add_att", "replace_obj", "swap_att"]):
        data = {}
        for i in range(4):
            fn = f"0000000{s}{i}.jpg"
            img(root / "val2017" / fn, 10 * s + i)
            c = COLORS[i]
            data[str(i)] = {"filename": fn, "caption": f"a {c} cube on a table", "negative_caption": f"a {c} table on a cube"}
        data["4"] = {"filename": f"0000000{s}0.jpg", "caption": "a tie", "negative_caption": "a tie"}  # a tie: wrong
        (root / "data").mkdir(exist_ok=True)
        (root / "data" / f"{subset}.json").write_text(json.dumps(data))
    return root


@pytest.fixture(scope="session")
def sugarcrepe_pp_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("scpp")
    (root / "data").mkdir()
    for s, subset in enumerate(["replace_att", "swap_obj"]):
        data = []
        for i in range(3):
            fn = f"1{s}{i}.jpg"
            img(root / "images" / fn, 20 + 3 * s + i)
            data.append({"id": i, "filename": fn, "caption": f"a {COLORS[i]} dog", "caption2": f"a dog that is {COLORS[i]}",
                         "negative_caption": f"a {COLORS[i + 1]} dog"})
        (root / "data" / f"{subset}.json").write_text(json.dumps(data))
    return root


@pytest.fixture(scope="session")
def aro_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("aro")
    for k in range(3):
        img(root / "images" / f"{k}.jpg", 40 + k, size=(80, 60))
    rel = []
    for k, name in enumerate(["on", "on", "next to", "holding", "holding", "holding"]):  # "next to" is symmetric
        rel.append({"image_path": f"{k % 3}.jpg", "bbox_x": 5, "bbox_y": 4, "bbox_w": 50, "bbox_h": 40,
                    "true_caption": f"the cup is {name} the table", "false_caption": f"the table is {name} the cup",
                    "relation_name": name})
    (root / "visual_genome_relation.json").write_text(json.dumps(rel))
    att = []
    for k in range(27):
        pair = ["red", "wooden"] if k < 25 else ["small", "white"]
        att.append({"image_path": f"{k % 3}.jpg", "bbox_x": 0, "bbox_y": 0, "bbox_w": 30, "bbox_h": 30,
                    "true_caption": f"the {pair[0]} chair and the {pair[1]} table",
                    "false_caption": f"the {pair[1]} chair and the {pair[0]} table", "attributes": pair})
    (root / "visual_genome_attribution.json").write_text(json.dumps(att))
    # Karpathy's layout for the order tests
    images = [{"filepath": "val2014", "filename": f"COCO_val2014_{k:012d}.jpg", "split": "test" if k < 2 else "train",
               "sentences": [{"raw": f"A man riding a {c} horse next to a small dog."} for c in COLORS[k:k + 2]]}
              for k in range(3)]
    for im in images:
        img(root / im["filepath"] / im["filename"], 50 + len(im["filename"]))
    (root / "dataset_coco.json").write_text(json.dumps({"images": images}))
    flickr = [{"filename": f"{k}.jpg", "split": im["split"], "sentences": im["sentences"]} for k, im in enumerate(images)]
    for k in range(3):  # Karpathy's Flickr30k entries name no folder: the images sit in flickr30k-images/
        img(root / "flickr30k-images" / f"{k}.jpg", 70 + k)
    (root / "dataset_flickr30k.json").write_text(json.dumps({"images": flickr}))
    return root


@pytest.fixture(scope="session")
def valse_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("valse")
    (root / "data").mkdir()
    for piece in ("existence", "counting-hard"):
        data = {}
        for i in range(3):
            fn = f"{piece}-{i}.jpg"
            img(root / "images" / "coco2017" / fn, 60 + i)
            data[f"k{i}"] = {"dataset": "coco2017", "image_file": fn, "caption": f"there are {i + 1} dogs",
                             "foil": f"there are {i + 2} dogs", "classes": None, "classes_foil": None,
                             "mturk": {"caption": 1 if i == 2 else 3, "foil": 0, "other": 0},
                             "linguistic_phenomena": piece}
        (root / "data" / f"{piece}.json").write_text(json.dumps(data))
    return root


@pytest.fixture(scope="session")
def winoground_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("winoground")
    lines = []
    for i, (tag, coll) in enumerate([("Object", "Object"), ("Relation", "Relation"), ("Both", "Both")]):
        img(root / "data" / "images" / f"ex_{i}_img_0.png", 70 + 2 * i)
        img(root / "data" / "images" / f"ex_{i}_img_1.png", 71 + 2 * i)
        lines.append(json.dumps({"id": i, "image_0": f"ex_{i}_img_0", "image_1": f"ex_{i}_img_1",
                                 "caption_0": "a dog bites a man", "caption_1": "a man bites a dog",
                                 "tag": tag, "secondary_tag": "Symbolic" if i == 0 else "",
                                 "num_main_preds": 1, "collapsed_tag": coll}))
    (root / "data" / "examples.jsonl").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="session")
def bivlc_dir(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("bivlc")
    rows = [{"image": {"bytes": png_bytes(2 * k), "path": None}, "caption": f"a {COLORS[k]} cat",
             "negative_caption": f"a {COLORS[k + 1]} cat", "negative_image": {"bytes": png_bytes(2 * k + 1), "path": None},
             "type": "replace" if k < 2 else "swap", "subtype": "att"} for k in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), root / "test-00000.parquet")
    return root


@pytest.fixture(scope="session")
def imagefolder_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("folder")
    for c, name in enumerate(["red_cube", "blue_sphere", "green_cone"]):
        for k in range(2):
            img(root / name / f"{k}.png", 90 + 2 * c + k)
    return root


def _tar(path: Path, members: dict[str, bytes]) -> None:
    import tarfile
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="session")
def wds_classification_dir(tmp_path_factory):
    """CLIP_benchmark's webdataset layout: test/{nshards.txt, 0.tar, 1.tar}, classnames and templates."""
    root = tmp_path_factory.mktemp("wds_cls")
    labels = [0, 1, 2, 0, 0, 1, 2]
    for shard, ks in enumerate(([0, 1, 2, 3], [4, 5, 6])):
        _tar(root / "test" / f"{shard}.tar", {n: d for k in ks for n, d in
                                              ((f"s{k:04d}.png", png_bytes(200 + k)), (f"s{k:04d}.cls", f"{labels[k]}\n".encode()))})
    (root / "test" / "nshards.txt").write_text("2\n")
    (root / "classnames.txt").write_text("red cube\nblue sphere\ngreen cone\n")
    (root / "zeroshot_classification_templates.txt").write_text("a photo of a {c}.\na picture of the {c}.\n")
    return root


@pytest.fixture(scope="session")
def wds_retrieval_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("wds_ret")
    _tar(root / "test" / "0.tar", {n: d for k in range(3) for n, d in
                                   ((f"r{k}.jpg", png_bytes(300 + k)),
                                    (f"r{k}.txt", f"a {COLORS[k]} cube\nthe {COLORS[k]} cube\n".encode()))})
    (root / "test" / "nshards.txt").write_text("1")
    (root / "dataset_type.txt").write_text("retrieval\n")
    return root


@pytest.fixture(scope="session")
def clip_benchmark_retrieval(tmp_path_factory):
    """CLIP_benchmark's retrieval annotation files: coco_test_karpathy.json (COCO captions layout,
    images in val2014/) and flickr30k_test_karpathy.txt (images beside it)."""
    root = tmp_path_factory.mktemp("cb_ret")
    images = [{"id": 10 + k, "file_name": f"COCO_val2014_{k:012d}.jpg"} for k in range(3)]
    anns = [{"image_id": 10 + k, "id": 100 + 2 * k + j, "caption": f"a {COLORS[k + j]} cube"} for k in range(3)
            for j in range(2)]
    for im in images:
        img(root / "val2014" / im["file_name"], 400 + im["id"])
    (root / "coco_test_karpathy.json").write_text(json.dumps({"images": images, "annotations": anns}))
    flickr = root / "flickr"
    lines = ["image,caption"]
    for k in range(2):
        img(flickr / f"{1000 + k}.jpg", 500 + k)
        lines += [f"{1000 + k}.jpg,a {COLORS[k]} dog, running", f"{1000 + k}.jpg,the {COLORS[k]} dog"]
    (flickr / "flickr30k_test_karpathy.txt").write_text("\n".join(lines) + "\n")
    return root


# -- the suite's benchmarks, each laid out as its official release leaves it, with planted ties --

def _json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="session")
def whatsup_dir(tmp_path_factory):
    """whatsup_vlms' data/: Controlled A (2 object pairs x 4 relations; one item's wrong caption
    equals the true one: a tie), Controlled B (1 pair), COCO-QA one (an int and a string id) and
    VG-QA two (one image missing); coco_qa_two and vg_qa_one absent."""
    root = tmp_path_factory.mktemp("whatsup") / "data"
    a = []
    for p, (o1, o2) in enumerate([("mug", "table"), ("beer-bottle", "armchair")]):
        for r, rel in enumerate(["on", "under", "left_of", "right_of"]):
            name = f"{o1}_{rel}_{o2}.jpeg"
            img(root / "controlled_images" / name, 600 + 4 * p + r)
            words = [w.replace("_", " ") for w in ("on", "under", "left_of", "right_of")]
            caps = [f"a {o1} {rel.replace('_', ' ')} a {o2}"] + [f"a {o1} {w} a {o2}" for w in words if w != rel.replace("_", " ")]
            if p == 1 and r == 0:
                caps[2] = caps[0]  # planted tie: wrong for unbag, right for argmax (the true caption is first)
            a.append({"image_path": f"data/controlled_images/{name}", "caption_options": caps})
    _json(root / "controlled_images_dataset.json", a)
    b = []
    for r, rel in enumerate(["left_of", "right_of", "in-front_of", "behind"]):
        name = f"cube_{rel}_sphere.jpeg"
        img(root / "controlled_clevr" / name, 620 + r)
        b.append({"image_path": f"data/controlled_clevr/{name}",
                  "caption_options": [f"a cube {rel.replace('_', ' ')} a sphere"] + [f"a cube {w} a sphere" for w in
                                      ("left of", "right of", "in-front of", "behind") if w != rel.replace("_", " ")]})
    _json(root / "controlled_clevr_dataset.json", b)
    img(root / "val2017" / "000000000139.jpg", 630)
    img(root / "val2017" / "000000000285.jpg", 631)
    _json(root / "coco_qa_one_obj.json", [[139, "a dog on the left", "a dog on the right"],
                                          ["285", "a cat on the right", "a cat on the left"]])
    img(root / "vg_images" / "7.jpg", 632)
    _json(root / "vg_qa_two_obj.json", [[7, "a dog to the left of a cat", "a dog to the right of a cat"],
                                        [8, "a man in front of a car", "a man behind a car"]])  # 8.jpg missing
    return root


@pytest.fixture(scope="session")
def vl_checklist_dir(tmp_path_factory):
    """The project root with corpus/v1 yamls and data/ JSON: two colour sources (vg, vaw), a spatial
    relation file, one item whose negative equals its positive (a tie) and one missing image."""
    root = tmp_path_factory.mktemp("vlc")
    files = {("Attribute/color", "vg"): "data/Attribute/vg/color.json",
             ("Attribute/color", "vaw"): "data/Attribute/vaw/color.json",
             ("Relation/spatial", "vg"): "data/Relation/vg/spatial.json",
             ("Object/Size/large", "swig_agent"): "data/Object/Size/swig_size/swig_agent/swig_agent_large.json"}
    for k, ((kind, corpus), anno) in enumerate(files.items()):
        (root / "corpus" / "v1" / kind).mkdir(parents=True, exist_ok=True)
        (root / "corpus" / "v1" / kind / f"{corpus}.yaml").write_text(
            f'ANNO_PATH: "{anno}"\nIMG_ROOT: "{"swig/" if corpus.startswith("swig") else "vg"}"\nTYPE: "TUPLE_JSON"\n')
        recs = []
        for i in range(3):
            rel = f"VG_100K/{k}{i}.jpg" if not corpus.startswith("swig") else f"{k}{i}.jpg"
            if not (k == 2 and i == 2):  # one image missing: dropped and counted
                img(root / ("swig" if corpus.startswith("swig") else "vg") / rel, 640 + 3 * k + i)
            pos, neg = f"{COLORS[i]} knob", f"{COLORS[i + 1]} knob"
            recs.append([rel, {"POS": [pos, "extra"], "NEG": [pos if (k, i) == (0, 1) else neg]}])
        _json(root / anno, recs)
    return root


@pytest.fixture(scope="session")
def spec_dir(tmp_path_factory):
    """SPEC's data_root: absolute_size with both directions (K=3; planted ties before and after the
    label), count with image2text only (K=4)."""
    root = tmp_path_factory.mktemp("spec")
    for k in range(3):
        for j in range(3):
            img(root / "absolute_size" / f"{k:06d}" / f"{j}.jpg", 700 + 3 * k + j)
    i2t = [{"query": "000000/1.jpg", "keys": ["a small dog", "a medium dog", "a large dog"], "label": 1},
           # a tie with an earlier key: wrong under both rules
           {"query": "000001/0.jpg", "keys": ["a small cat", "a small cat", "a large cat"], "label": 1},
           # a tie with a later key: right for argmax, wrong for unbag
           {"query": "000002/2.jpg", "keys": ["a small cup", "a large cup", "a large cup"], "label": 1}]
    t2i = [{"query": "a large dog", "keys": ["000000/0.jpg", "000000/1.jpg", "000000/2.jpg"], "label": 2},
           {"query": "a small cat", "keys": ["000001/0.jpg", "000001/0.jpg", "000001/2.jpg"], "label": 0}]
    _json(root / "absolute_size" / "image2text.json", i2t)
    _json(root / "absolute_size" / "text2image.json", t2i)
    img(root / "count" / "9" / "a.png", 710)
    _json(root / "count" / "image2text.json", [{"query": "9/a.png", "keys": ["one dog", "two dogs", "three dogs",
                                                                              "four dogs"], "label": 3}])
    return root


@pytest.fixture(scope="session")
def colorswap_dir(tmp_path_factory):
    """ColorSwap's data/ with images.zip left packed; one example's two images are the same picture (ties)."""
    import zipfile

    root = tmp_path_factory.mktemp("colorswap") / "data"
    root.mkdir()
    recs, members = [], {}
    for n, k in enumerate((9, 21, 989)):
        for j in (1, 2):
            members[f"images/img_{k}_{j}.png"] = png_bytes(3 * n + (j if n != 2 else 1))
        recs.append({"id": k, "caption_1": f"a {COLORS[n]} raft on {COLORS[n + 1]} water",
                     "caption_2": f"a {COLORS[n + 1]} raft on {COLORS[n]} water", "image_1": f"images/img_{k}_1.png",
                     "image_2": f"images/img_{k}_2.png", "image_source": "midjourney" if n else "dalle3",
                     "caption_source": "human"})
    with zipfile.ZipFile(root / "images.zip", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    _json(root / "test.json", recs)
    return root


@pytest.fixture(scope="session")
def vismin_dir(tmp_path_factory):
    """The vismin-bench kit as it is today: save_to_disk's data/ (two Arrow stream shards,
    state.json), no solution file; row 2's two images are the same picture (ties)."""
    import pyarrow as pa

    root = tmp_path_factory.mktemp("vismin")
    rows = [{"image_0": {"bytes": png_bytes(20 + 2 * k), "path": None}, "text_0": f"{k + 2} {COLORS[k]} dogs on a sofa",
             "image_1": {"bytes": png_bytes(21 + 2 * k if k != 2 else 24), "path": None},
             "text_1": f"{k + 3} {COLORS[k]} dogs on a sofa", "question_1": "?", "question_2": "?", "question_3": "?",
             "question_4": "?", "id": f"v{k}", "category": ["counting", "object", "counting"][k]} for k in range(3)]
    test = root / "data" / "test"
    test.mkdir(parents=True)
    names = []
    for s, part in enumerate((rows[:2], rows[2:])):
        table = pa.Table.from_pylist(part)
        names.append(f"data-0000{s}-of-00002.arrow")
        with pa.OSFile(str(test / names[-1]), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table)
    _json(test / "state.json", {"_data_files": [{"filename": n} for n in names], "_split": "test"})
    _json(test / "dataset_info.json", {})
    _json(root / "data" / "dataset_dict.json", {"splits": ["test"]})
    return root


@pytest.fixture(scope="session")
def mmvp_vlm_dir(tmp_path_factory):
    """MMVP_VLM: Questions.csv and 'MLLM_VLM Images/<Type>/<id>.jpg', two patterns of one pair each
    plus a pair whose two images are one picture (ties)."""
    root = tmp_path_factory.mktemp("mmvp")
    rows = [(1, "Orientation", "the dog is facing left"), (2, "Orientation", "the dog is facing right"),
            (3, "Camera Perspective", "a close-up of a cube"), (4, "Camera Perspective", "a cube from far away"),
            (5, "Color", "a red cube"), (6, "Color", "a blue cube")]
    for qid, kind, _ in rows:
        img(root / "MLLM_VLM Images" / kind / f"{qid}.jpg", 800 + (qid if qid < 5 else 5))
    (root / "Questions.csv").write_text("Question ID,Type,Statement\n" + "".join(f"{q},{t},{s}\n" for q, t, s in rows))
    return root


@pytest.fixture(scope="session")
def crepe_dir(tmp_path_factory):
    """CREPE's unzipped data/: productivity swap-4 (a set literal; one negative equals the caption:
    a tie) and negate-5, systematicity seen-in-laion with three negative columns; VG images in
    VG_100K and VG_100K_2, one missing; boxes partly outside the picture."""
    root = tmp_path_factory.mktemp("crepe")
    img(root / "VG_100K" / "1.jpg", 900, size=(80, 60))
    img(root / "VG_100K_2" / "2.jpg", 901, size=(80, 60))
    head = "image_id,caption,n,n_objects,n_relations,n_attributes,n_connected_components,hard_negs,x,y,width,height\n"

    def row(i, cap, negs, box="10.0,5.0,50.0,40.0"):
        return f'{i},{cap},4,2,1,1,1,"{negs}",{box}\n'
    swap = head + row(1, "red cube on blue sphere", str({f"{c} cube on red sphere" for c in COLORS[1:6]})) + \
        row(2, "blue cube near red sphere", str(["red cube near blue sphere", "blue cube near red sphere", "a", "b", "c"]),
            "60.0,40.0,50.0,40.0") + row(3, "green cone", str(["red cone"] * 5))  # image 3 missing
    (root / "prod_hard_negatives" / "swap").mkdir(parents=True)
    (root / "prod_hard_negatives" / "swap" / "prod_vg_hard_negs_swap_complexity_4.csv").write_text(swap)
    (root / "prod_hard_negatives" / "negate").mkdir(parents=True)
    (root / "prod_hard_negatives" / "negate" / "prod_vg_hard_negs_negate_complexity_5.csv").write_text(
        head + row(1, "a red cube", str([f"not a {c} cube" for c in COLORS[:5]])))
    (root / "syst_hard_negatives").mkdir()
    (root / "syst_hard_negatives" / "syst_vg_hard_negs_seen_compounds_in_laion.csv").write_text(
        "region_id,image_id,caption,x,y,width,height,valid_hard_negs_atom,valid_hard_negs_comp,valid_hard_negs_combined\n"
        "7,2,blue cube,0,0,40,40,\"['red cube', 'blue cone']\",\"['cube blue']\",\"['red cube', 'blue cone', 'cube blue']\"\n")
    return root


@pytest.fixture(scope="session")
def eqben_dir(tmp_path_factory):
    """EqBen: annotation/ann_json_finegrained_random.json in shuffled order; two subsets; the light
    release's .jpg for an annotated .png; a YouCook2 .npy frame (BGR) whose two images are one (ties)."""
    root = tmp_path_factory.mktemp("eqben")
    recs = []
    for cnt, sub, ext in ((18, "eqbenkubric_cnt", ".png"), (19, "eqbenkubric_cnt", ".png"), (40, "eqbenyoucook2", ".npy")):
        for i in (0, 1):
            rel = f"{sub}/{cnt:05d}/frame_{i}{ext}"
            if ext == ".npy":
                (root / "image" / sub / f"{cnt:05d}").mkdir(parents=True, exist_ok=True)
                np.save(root / "image" / rel, np.full((24, 24, 3), (10, 80, 200), np.uint8))
            elif cnt == 19:
                img(root / "image" / rel.replace(".png", ".jpg"), 910 + i)  # only the light version's .jpg
            else:
                img(root / "image" / rel, 920 + i)
            for c in (0, 1):
                recs.append({"image": rel, "caption": f"{['two', 'three'][c]} {COLORS[cnt % 5]} cubes",
                             "private_info": {"dataset": sub, "name": f"c{c}i{i}", "sample_cnt": cnt}})
    recs = recs[5:] + recs[:5]
    _json(root / "annotation" / "ann_json_finegrained_random.json", recs)
    return root


@pytest.fixture(scope="session")
def imagecode_dir(tmp_path_factory):
    """ImageCoDe's data/ with image-sets/: a video set (frames numbered out of string order) and a
    static set whose target has an identical twin later in the set (a tie)."""
    root = tmp_path_factory.mktemp("imagecode")
    frames = [3, 12, 25, 100, 7, 45, 9, 80, 2, 60]
    for x in frames:
        img(root / "image-sets" / "video-set_1" / f"img{x}.jpg", 930 + x % 17)
    for k in range(10):
        img(root / "image-sets" / "open-images-1_ab" / f"img{k}.jpg", 950 + (k if k != 8 else 4))
    _json(root / "valid_data.json", {"video-set_1": {"3": "a red cube", "0": "a cube"},
                                     "open-images-1_ab": {"4": "a green dog"}, "missing-set": {"1": "x"}})
    return root


@pytest.fixture(scope="session")
def svo_probes_dir(tmp_path_factory):
    """svo_probes.csv with rows negating the subject, the verb, the object, two parts (excluded), one
    with a missing image and one whose two images are one picture (a tie)."""
    root = tmp_path_factory.mktemp("svo")
    for k in range(1, 6):
        img(root / "images" / f"{k}.jpg", 960 + k)
    (root / "images" / "6.png").write_bytes((root / "images" / "5.jpg").read_bytes())  # same picture, as PNG name
    rows = [(0, "A man rides a horse.", "True,False,False", 1, 2), (1, "A dog eats food.", "False,True,False", 3, 4),
            (2, "A girl kicks a ball.", "False,False,True", 5, 6), (3, "A man walks.", "True,True,False", 1, 3),
            (4, "A cat sits.", "False,True,False", 1, 99)]
    (root / "svo_probes.csv").write_text(
        "index,sentence,pos_triplet,neg_triplet,subj_neg,verb_neg,obj_neg,pos_url,neg_url,pos_image_id,neg_image_id\n"
        + "".join(f'{i},{s},"a,b,c","a,d,c",{f},http://x/{p},http://x/{q},{p},{q}\n' for i, s, f, p, q in rows))
    return root


@pytest.fixture(scope="session")
def naturalbench_dir(tmp_path_factory):
    """NaturalBench-Retrieval/: metadata.json and images/, one pair of identical images (ties)."""
    root = tmp_path_factory.mktemp("nb") / "NaturalBench-Retrieval"
    recs = []
    for n in range(3):
        for k in (0, 1):
            img(root / "images" / f"{n}_{k}.jpg", 970 + 2 * n + (k if n != 2 else 0))
        recs.append({"index": n, "image_0": f"{n}_0.jpg", "image_1": f"{n}_1.jpg", "caption_0": f"a {COLORS[n]} dog",
                     "caption_1": f"a {COLORS[n + 1]} dog", "question_0": "?"})
    _json(root / "metadata.json", recs)
    return root


@pytest.fixture(scope="session")
def cola_dir(tmp_path_factory):
    """COLA's data/: the multi-object JSON (urls) and GQA and CLEVR single-object files, one as
    {labels, data}, one as [labels, data] without annotations; a class whose hard set has no positive;
    three records of one picture file, two of them positives of a CLEVR class (tied scores: the
    same file is encoded once, so its scores tie exactly whatever the batch or thread count)."""
    root = tmp_path_factory.mktemp("cola")
    for k in range(6):
        img(root / "images" / f"{k}.jpg", 980 + min(k, 3))
    one = {k: min(k, 3) for k in range(6)}  # records 3, 4 and 5 name the file 3.jpg
    _json(root / "COLA_multiobjects_matching_benchmark.json",
          [[f"https://cs-people.bu.edu/array/data/vg_gqa_images/{a}.jpg", f"a {COLORS[a]} cube and a {COLORS[b]} ball",
            f"https://cs-people.bu.edu/array/data/vg_gqa_images/{b}.jpg", f"a {COLORS[b]} cube and a {COLORS[a]} ball"]
           for a, b in ((0, 1), (2, 3))])
    labels = ["red cube", "blue ball", "green cone"]
    data = [[f"{one[k]}.jpg", {"objects": []}, [int(k % 3 == c) for c in range(3)], [int(c != 2 or k == 4) for c in range(3)]]
            for k in range(6)]
    _json(root / "COLA_singleobjects_benchmark_GQA.json", {"labels": labels, "data": data})
    _json(root / "COLA_singleobjects_benchmark_CLEVR.json",
          [labels, [[f"images/{one[k]}.jpg", [int(k in (4, 5) if c == 0 else k == c) for c in range(3)], [1, 1, 1]]
                    for k in range(6)]])
    return root


@pytest.fixture
def coco_captions(tmp_path):
    """A COCO captions file laid out as captions_train2017.json, its images apart in train2017/."""
    (tmp_path / "train2017").mkdir()
    images, anns = [], []
    for i in range(8):
        name = f"{i:012d}.jpg"
        arr = np.full((48, 64, 3), 30 * i, np.uint8)
        arr[10:30, 10 + 4 * i:30 + 4 * i] = (200, 40, 40)
        Image.fromarray(arr).save(tmp_path / "train2017" / name)
        images.append({"id": 100 + i, "file_name": name, "height": 48, "width": 64})
        anns += [{"id": 2 * i, "image_id": 100 + i, "caption": f"a red square on grey number {i}"},
                 {"id": 2 * i + 1, "image_id": 100 + i, "caption": f"a grey picture {i} with a red block"}]
    ann = tmp_path / "annotations" / "captions_train2017.json"
    ann.parent.mkdir()
    ann.write_text(json.dumps({"images": images, "annotations": anns}))
    return f"coco:{ann}:{tmp_path / 'train2017'}"
