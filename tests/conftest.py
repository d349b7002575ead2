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

import importlib.util  # noqa: E402
import json  # noqa: E402
import pkgutil  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
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


# -- the public benchmarks' tiny releases (tests/benchmarks/releases: one file each) ---------------

def _releases() -> dict:
    """The modules of tests/benchmarks/releases, loaded as a package of their own (the tests are no
    package: pytest imports them by path)."""
    d, name = Path(__file__).parent / "benchmarks" / "releases", "unbag_test_releases"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, d / "__init__.py", submodule_search_locations=[str(d)])
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return {m.name: importlib.import_module(f"{name}.{m.name}") for m in pkgutil.iter_modules([str(d)])
            if not m.name.startswith("_")}


RELEASES = _releases()
for _stem, _module in RELEASES.items():  # each release a session fixture, MODULE_dir
    globals()[f"{_stem}_dir"] = pytest.fixture(scope="session", name=f"{_stem}_dir")(_module.make)

# every registered benchmark -> (the fixture its spec reads, its spec with "{dir}" for that folder)
BENCH_SPECS = {"ctrl": ("tiny_bench", "ctrl:{dir}"), "ctrl-retrieval": (None, "ctrl-retrieval:12"),
               **{b: (f"{stem}_dir", form) for stem, m in RELEASES.items() for b, form in m.SPECS.items()}}


@pytest.fixture(scope="session")
def bench_spec(request):
    """name -> the spec of that registered benchmark on its tiny release; `.names`: every name."""
    def spec(name: str) -> str:
        fixture, form = BENCH_SPECS[name]
        return form.format(dir=request.getfixturevalue(fixture)) if fixture else form
    spec.names = set(BENCH_SPECS)
    return spec


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
