import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_bench(tmp_path_factory):
    """A small ctrl benchmark on disk (3 items per category and split)."""
    from unbag.world.io import build

    return build(tmp_path_factory.mktemp("bench") / "ctrl", seed=3, per_category=3, progress=False)

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
    import json

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
