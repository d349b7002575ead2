"""Hugging Face backend: `hf:PATH_OR_ID` for transformers CLIPModel and SiglipModel (v5 outputs).

Joint-space tokens (docs/benchmarks.md, notes; docs/heads.md):
- CLIP: patches = visual_projection(post_layernorm(last_hidden_state[:, 1:])); text tokens =
  text_projection(last_hidden_state); the global embeddings are the same maps of the pooled
  (CLS / end-of-text) token, so token and global features live in one space.
- SigLIP pools image patches with attention (a MAP head), which has no linear map into the joint
  space. unbag's approximation: each patch goes through the head as if the pooling attended to
  it alone — out_proj(v_proj(x)), then the head's residual MLP — which is exactly the pooled
  embedding when attention is one-hot on that patch. Text tokens go through SigLIP's text head.
Preprocessing: resize the shorter side (bicubic) and centre-crop to the processor's crop size,
then the processor's mean/std; SigLIP's processor squashes to a square, which unbag follows.
Offline first: with HF_HUB_OFFLINE=1 only local folders and the local cache are read.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from safetensors import SafetensorError

from ..errors import UnbagError
from .base import Backend, Form, ImageFeatures, TextFeatures, by_length, cpu_chunked, gather_tokens, memo_tokenize, resize_crop


def _load(path: str):
    try:
        import transformers
    except ImportError:
        raise UnbagError("hf: backends need transformers: pip install transformers") from None
    if (Path(path) / "open_clip_config.json").is_file():
        raise UnbagError(f"hf:{path}: an open_clip model folder, not a transformers one; load it as "
                         f"open_clip:local-dir:{path} (or just {path})")
    try:
        cfg = transformers.AutoConfig.from_pretrained(path)
    except ValueError as e:
        raise UnbagError(f"hf:{path}: not a transformers CLIP/SigLIP folder ({e})") from None
    except OSError as e:
        raise UnbagError(f"hf:{path}: cannot find the model ({e}). Download it where a network is "
                         "available (huggingface-cli download ID --local-dir DIR) and pass hf:DIR") from None
    kinds = {"clip": transformers.CLIPModel, "siglip": transformers.SiglipModel}
    if cfg.model_type not in kinds:
        raise UnbagError(f"hf:{path}: model type {cfg.model_type!r} is not supported (clip, siglip)")
    try:
        model = kinds[cfg.model_type].from_pretrained(path)
    except (OSError, ValueError, SafetensorError) as e:
        raise UnbagError(f"hf:{path}: cannot load the weights ({e})") from None
    return cfg.model_type, model, transformers


class HFBackend(Backend):
    """A transformers CLIPModel or SiglipModel behind unbag's backend contract."""

    def __init__(self, spec: str, path: str, device: str | torch.device = "cpu"):
        self.spec = spec
        self.kind, model, tf = _load(path)
        self.model = model.to(device).eval()
        self.tokenizer = tf.AutoTokenizer.from_pretrained(path)
        self._ids: dict[str, torch.Tensor] = {}  # token ids of texts seen (memo_tokenize)
        proc = self._proc = self._processor_config(path)
        vcfg = model.config.vision_config
        side = proc.get("crop_size") or proc.get("size") or {"height": vcfg.image_size}
        h = side.get("height", side.get("shortest_edge", vcfg.image_size)) if isinstance(side, dict) else side
        self.image_size = (int(h), int(h))
        self.mean = tuple(proc.get("image_mean", (0.5, 0.5, 0.5)))
        self.std = tuple(proc.get("image_std", (0.5, 0.5, 0.5)))
        self.squash = self.kind == "siglip"
        self.image_tower = ("vision_model.", "visual_projection.") if self.kind == "clip" else ("vision_model.",)
        self.patch = vcfg.patch_size
        tcfg = model.config.text_config
        self.context = min(getattr(self.tokenizer, "model_max_length", 10**6) or 10**6,
                           tcfg.max_position_embeddings)

    def config_record(self) -> dict:
        """The base record, the transformers config (without its version stamp and path) and the
        preprocessor config."""
        cfg = {k: v for k, v in self.model.config.to_dict().items()
               if k not in ("transformers_version", "_name_or_path", "_commit_hash")}
        return {**super().config_record(), "kind": self.kind, "config": cfg, "processor": self._proc,
                "context": self.context}

    @staticmethod
    def _processor_config(path: str) -> dict:
        f = Path(path) / "preprocessor_config.json"
        if f.is_file():
            return json.loads(f.read_text())
        try:  # a hub id in the local cache
            from transformers import AutoImageProcessor
            p = AutoImageProcessor.from_pretrained(path)
            return {k: getattr(p, k) for k in ("crop_size", "size", "image_mean", "image_std") if hasattr(p, k)}
        except (OSError, ValueError):
            return {}

    def preprocess(self, image: Image.Image) -> torch.Tensor:
        return self.preprocessor()(image)

    def preprocessor(self) -> "Preprocess":
        return Preprocess(self.image_size[0], self.mean, self.std, self.squash)

    def tokenize(self, texts: list[str]) -> torch.Tensor:
        return memo_tokenize(self._ids, list(texts), lambda new: self.tokenizer(
            new, padding="max_length", truncation=True, max_length=self.context, return_tensors="pt")["input_ids"])

    def _mask(self, ids: torch.Tensor) -> torch.Tensor:
        pad = self.tokenizer.pad_token_id
        if pad is None:
            return torch.ones_like(ids, dtype=torch.bool)
        real = ids != pad
        if self.kind == "clip" and self.tokenizer.eos_token_id == pad:
            # CLIP pads with its end token: keep the first one (the pooled position)
            first = (ids == pad).int().argmax(-1)
            real[torch.arange(len(ids)), first] = True
        return real

    @cpu_chunked
    def encode_images(self, pixels: torch.Tensor, tokens: bool = False) -> ImageFeatures:
        vm = self.model.vision_model
        out = vm(pixel_values=pixels)
        if self.kind == "clip":
            emb = self.model.visual_projection(out.pooler_output)
            if not tokens:
                return ImageFeatures(emb)
            toks = self.model.visual_projection(vm.post_layernorm(out.last_hidden_state[:, 1:]))
        else:
            emb = out.pooler_output
            if not tokens:
                return ImageFeatures(emb)
            toks = self._siglip_patch_tokens(out.last_hidden_state)
        g = pixels.shape[-1] // self.patch
        return ImageFeatures(emb, toks, (pixels.shape[-2] // self.patch, g))

    def encode_patch_subsets(self, pixels: torch.Tensor, keep: list[tuple[int, torch.Tensor]]) -> torch.Tensor | None:
        vm = self.model.vision_model
        if not all(hasattr(vm, a) for a in ("embeddings", "encoder", "post_layernorm")):
            return None
        # the vision tower's own steps (patch + position embeddings, pre-norm; encoder; pooling),
        # each region's sequence cut down to its patches (and CLIP's CLS token) after the embedding
        x = vm.embeddings(pixels)
        lead = 1 if self.kind == "clip" else 0
        if self.kind == "clip":
            x = vm.pre_layrnorm(x)

        def encode(rows: list[int]) -> torch.Tensor:
            h = vm.encoder(inputs_embeds=gather_tokens(x, keep, rows, lead)).last_hidden_state
            if self.kind == "clip":
                return self.model.visual_projection(vm.post_layernorm(h[:, 0]))
            return vm.head(vm.post_layernorm(h))
        return by_length(keep, encode)

    def _siglip_patch_tokens(self, x: torch.Tensor) -> torch.Tensor:
        head = self.model.vision_model.head
        att = head.attention
        d = x.shape[-1]
        w_v, b_v = att.in_proj_weight[2 * d:], att.in_proj_bias[2 * d:]
        h = att.out_proj(torch.nn.functional.linear(x, w_v, b_v))  # attention one-hot on each patch
        return h + head.mlp(head.layernorm(h))

    @cpu_chunked
    def encode_texts(self, ids: torch.Tensor, tokens: bool = False) -> TextFeatures:
        tm = self.model.text_model
        mask = self._mask(ids)
        attn = mask.long() if self.kind == "clip" else None
        out = tm(input_ids=ids, attention_mask=attn)
        if self.kind == "clip":
            emb = self.model.text_projection(out.pooler_output)
            toks = self.model.text_projection(out.last_hidden_state) if tokens else None
        else:
            emb = out.pooler_output
            toks = tm.head(out.last_hidden_state) if tokens else None
        return TextFeatures(emb, toks, mask if tokens else None)

    @property
    def logit_scale(self) -> torch.Tensor:
        return self.model.logit_scale.exp().clamp(max=100)

    def write_config(self, folder: Path, extra: dict | None = None) -> None:
        """transformers' layout (config.json, tokenizer, preprocessor_config.json); unbag's record in unbag.json."""
        folder = Path(folder)
        self.model.config.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        proc = dict(self._proc)
        px = self.image_size[0]
        proc.setdefault("crop_size" if self.kind == "clip" else "size", {"height": px, "width": px})
        proc.update(image_mean=list(self.mean), image_std=list(self.std))
        (folder / "preprocessor_config.json").write_text(json.dumps(proc, indent=2) + "\n")
        if extra:
            (folder / "unbag.json").write_text(json.dumps(extra, indent=2) + "\n")


class Preprocess:
    """Resize (shorter side, or squash) and centre-crop to px, then normalise: picklable."""

    def __init__(self, px: int, mean: tuple, std: tuple, squash: bool):
        self.px, self.mean, self.std, self.squash = px, mean, std, squash

    def __call__(self, image: Image.Image) -> torch.Tensor:
        px = self.px
        image = image.convert("RGB").resize((px, px), Image.BICUBIC) if self.squash else resize_crop(image, px)
        x = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).float().div_(255)
        mean = torch.tensor(self.mean).view(3, 1, 1)
        std = torch.tensor(self.std).view(3, 1, 1)
        return (x - mean) / std


def _check_hf(rest: str) -> None:
    if not rest:
        raise UnbagError("hf: names no model; use hf:PATH_OR_ID")


MODELS = {"hf": Form("hf:PATH_OR_ID (transformers CLIP/SigLIP)",
                     lambda spec, rest, device: HFBackend(spec, rest, device=device), _check_hf)}
