"""open_clip backend: `open_clip:NAME[@PRETRAINED]`, `open_clip:local-dir:PATH`, `open_clip:hf-hub:ID`."""
from __future__ import annotations

import logging
from pathlib import Path

import torch
from PIL import Image
from safetensors import SafetensorError

from ..errors import UnbagError
from . import stem
from .base import Backend, Form, ImageFeatures, TextFeatures, by_length, cpu_chunked, gather_tokens, memo_tokenize

CONFIG_DIR = Path(__file__).parent / "configs"
_configs_added = False


def _open_clip():
    global _configs_added
    import open_clip

    if not _configs_added:  # unbag's own model configs (the built-in model) join open_clip's registry
        open_clip.add_model_config(CONFIG_DIR)
        _configs_added = True
    return open_clip


RANDOM = "random"  # `open_clip:NAME@random`: random weights, asked for by name


def parse(spec: str) -> tuple[str, str | None]:
    """'NAME@PRETRAINED' -> (NAME, PRETRAINED), 'NAME@random' -> (NAME, None); schemas (local-dir:,
    hf-hub:) pass through. A bare NAME is refused: open_clip would build random, unseeded weights
    and only warn on stderr, so random weights must be asked for."""
    if spec.startswith(("local-dir:", "hf-hub:")):
        return spec, None
    name, at, pretrained = spec.partition("@")
    if not at or not pretrained:
        raise UnbagError(f"open_clip:{spec}: names no weights; add @PRETRAINED (e.g. open_clip:{name}@openai, "
                         f"see open_clip.list_pretrained()) or @random for random weights on purpose")
    return name, None if pretrained == RANDOM else pretrained


def _config(folder: Path) -> dict:
    """A local-dir model's open_clip_config.json, checked: an object with its model_cfg."""
    from ..utils import read_json
    cfg = read_json(folder / "open_clip_config.json")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("model_cfg"), dict):
        raise UnbagError(f"{folder / 'open_clip_config.json'}: field 'model_cfg' (the model's architecture) is "
                         "missing")
    return cfg


def check(rest: str) -> None:
    """Refuse, without building it, an open_clip spec that cannot load: no weights named, a
    local-dir without its config, a model name open_clip and unbag do not know."""
    name, pretrained = parse(rest)
    if name.startswith("local-dir:"):
        if not (Path(name[len("local-dir:"):]) / "open_clip_config.json").is_file():
            raise UnbagError(f"open_clip:{rest}: not an open_clip local-dir model (no open_clip_config.json)")
    elif not name.startswith("hf-hub:"):
        oc = _open_clip()
        if name not in oc.list_models() and f"{name}-quickgelu" not in oc.list_models():
            raise UnbagError(f"open_clip has no model config {name!r} (see open_clip.list_models())")


def _quickgelu_name(oc, name: str, pretrained: str | None) -> str:
    """OpenAI weights were trained with QuickGELU: map NAME to NAME-quickgelu or refuse."""
    if pretrained != "openai" or "quickgelu" in name.lower():
        return name
    if f"{name}-quickgelu" in oc.list_models():
        logging.info("open_clip: %s@openai -> %s-quickgelu (OpenAI weights use QuickGELU)", name, name)
        return f"{name}-quickgelu"
    raise UnbagError(f"open_clip:{name}@openai: OpenAI weights need QuickGELU but no "
                     f"'{name}-quickgelu' config exists; refusing to build a silently wrong model")


class OpenCLIPBackend(Backend):
    """An open_clip `CLIP` model (ViT image tower, transformer text tower)."""

    image_tower = ("visual.",)

    def __init__(self, spec: str, name: str, pretrained: str | None = None,
                 device: str | torch.device = "cpu", load_weights: bool = True):
        oc = _open_clip()
        self.spec = spec
        # open_clip builds random weights when none are named: recorded with every result
        self.random_weights = pretrained is None and not name.startswith(("local-dir:", "hf-hub:"))
        name = _quickgelu_name(oc, name, pretrained)
        if name.startswith("local-dir:"):
            root = Path(name[len("local-dir:"):])
            if not (root / "open_clip_config.json").is_file():
                raise UnbagError(f"{root}: not an open_clip local-dir model (no open_clip_config.json)")
        elif not name.startswith("hf-hub:") and name not in oc.list_models():
            raise UnbagError(f"open_clip has no model config {name!r} "
                             f"(see open_clip.list_models(); unbag adds: {sorted(self.own_configs())})")
        model_cfg = self._model_cfg(oc, name)
        try:
            if any(k in model_cfg for k in stem.OWN_KEYS):  # unbag's own tower: open_clip's factory does not know it
                model, preprocess = self._own_tower(oc, name, model_cfg, pretrained, device, load_weights)
            else:
                model, _, preprocess = oc.create_model_and_transforms(
                    name, pretrained=pretrained, device=device, load_weights=load_weights)
        except (RuntimeError, FileNotFoundError, ValueError, OSError, SafetensorError) as e:
            hint = (" (offline: put the weights file where `pretrained` points, or set "
                    "HF_HUB_OFFLINE=0 on a machine with internet)" if pretrained else "")
            if isinstance(e, SafetensorError):
                hint = " (the weights file is truncated or not a safetensors file: restore or rebuild it)"
            raise UnbagError(f"{spec}: cannot load model: {e}{hint}") from None
        self._attach(model, preprocess, oc.get_tokenizer(name), model_cfg)

    @classmethod
    def _own_tower(cls, oc, name: str, model_cfg: dict, pretrained: str | None, device, load_weights: bool):
        """A model whose config names unbag's stem or token pooling (stem.py), built here, with the
        weights open_clip would load: the local-dir folder's file or `pretrained` as a path; none is random."""
        preprocess_cfg = {}
        if name.startswith("local-dir:"):
            root = Path(name[len("local-dir:"):])
            preprocess_cfg = _config(root).get("preprocess_cfg", {})
            found = [root / f for f in (cls.weights_file, "open_clip_pytorch_model.bin") if (root / f).is_file()]
            if not found:
                raise FileNotFoundError(f"no {cls.weights_file} in {root}")
            pretrained = str(found[0])
        elif pretrained is not None and not Path(pretrained).is_file():
            raise FileNotFoundError(f"{name}: unbag's own tower loads weights from a file, not {pretrained!r}")
        model, preprocess = cls._built(oc, model_cfg, preprocess_cfg, device)
        if pretrained is not None and load_weights:
            oc.load_checkpoint(model, pretrained)
        return model, preprocess

    @staticmethod
    def _built(oc, model_cfg: dict, preprocess_cfg: dict, device):
        """The model of model_cfg (random weights) and its eval preprocessing."""
        import dataclasses

        from open_clip.transform import PreprocessCfg, image_transform_v2
        model = stem.build(oc, model_cfg).to(device)
        pp = {**dataclasses.asdict(PreprocessCfg()), **preprocess_cfg, "size": model.visual.image_size}
        oc.set_model_preprocess_cfg(model, pp)
        return model, image_transform_v2(PreprocessCfg(**pp), is_train=False)

    @classmethod
    def unloaded(cls, spec: str, folder: Path, device: str | torch.device = "cpu") -> "OpenCLIPBackend":
        """The model of the open_clip config in `folder`, built without its weights for the caller
        to copy its own in (the built-in model's packed ones); open_clip's factory is not used, as
        it would warn that the folder holds no weights and the model is initialised randomly."""

        oc = _open_clip()
        cfg = _config(folder)
        model, preprocess = cls._built(oc, cfg["model_cfg"], cfg.get("preprocess_cfg", {}), device)
        self = cls.__new__(cls)
        self.spec, self.random_weights = spec, False
        self._attach(model, preprocess, oc.get_tokenizer(f"local-dir:{folder}"), cfg["model_cfg"])
        return self

    def _attach(self, model, preprocess, tokenizer, model_cfg: dict) -> None:
        model.eval()
        self.model = model
        self.model_cfg = model_cfg
        self._preprocess = preprocess
        self.tokenizer = tokenizer
        self._ids: dict[str, torch.Tensor] = {}  # token ids of texts seen (memo_tokenize)
        cfg = model.visual.preprocess_cfg
        self.image_size = tuple(cfg["size"]) if not isinstance(cfg["size"], int) else (cfg["size"],) * 2
        self.mean, self.std = tuple(cfg["mean"]), tuple(cfg["std"])
        if not hasattr(model, "token_embedding") or not hasattr(model.visual, "conv1"):
            raise UnbagError(f"open_clip:{self.spec}: only CLIP models with a ViT image tower and an "
                             "open_clip text transformer are supported here; for SigLIP use the "
                             "transformers weights through hf:PATH (attention-pooled towers: docs/benchmarks.md)")

    @staticmethod
    def _model_cfg(oc, name: str) -> dict:
        if name.startswith("local-dir:"):
            return _config(Path(name[len("local-dir:"):]))["model_cfg"]
        return oc.get_model_config(name) or {}

    @staticmethod
    def own_configs() -> list[str]:
        return [p.stem for p in CONFIG_DIR.glob("*.json")]

    def config_record(self) -> dict:
        """The base record, the model config and the whole preprocess config open_clip applies
        (size, resize mode, interpolation, fill, mean, std) and the tokenizer's context length."""
        return {**super().config_record(), "model_cfg": self.model_cfg,
                "preprocess_cfg": dict(getattr(self.model.visual, "preprocess_cfg", {}) or {}),
                "context_length": getattr(self.tokenizer, "context_length", None)}

    def preprocess(self, image: Image.Image) -> torch.Tensor:
        return self._preprocess(image)

    def preprocessor(self):
        return self._preprocess  # torchvision's Compose: picklable, no model inside

    def tokenize(self, texts: list[str]) -> torch.Tensor:
        return memo_tokenize(self._ids, list(texts), self.tokenizer)

    @cpu_chunked
    def encode_images(self, pixels: torch.Tensor, tokens: bool = False) -> ImageFeatures:
        visual = self.model.visual
        if not tokens:
            return ImageFeatures(visual(pixels))
        # With output_tokens the ViT returns (pooled, ln_post patch tokens); they are projected below.
        visual.output_tokens = True
        try:
            pooled, toks = visual(pixels)
        finally:
            visual.output_tokens = False
        if visual.proj is not None:
            toks = toks @ visual.proj
        side = int(round(toks.shape[1] ** 0.5))
        return ImageFeatures(pooled, toks, (side, toks.shape[1] // side))

    def set_patch_dropout(self, share: float) -> None:
        from open_clip.transformer import PatchDropout
        self.model.visual.patch_dropout = PatchDropout(share) if share > 0 else torch.nn.Identity()

    def encode_patch_subsets(self, pixels: torch.Tensor, keep: list[tuple[int, torch.Tensor]]) -> torch.Tensor | None:
        visual = self.model.visual
        if not all(hasattr(visual, a) for a in ("_embeds", "_pool", "transformer")):
            return None  # an open_clip release without the ViT's staged forward
        # the ViT's own steps (conv patches + CLS + positions, ln_pre; blocks; pooling; proj), with
        # each region's sequence cut down to the CLS token and its patches after the embedding
        x = visual._embeds(pixels)

        def encode(rows: list[int]) -> torch.Tensor:
            pooled, _ = visual._pool(visual.transformer(gather_tokens(x, keep, rows, lead=1)))
            return pooled @ visual.proj if visual.proj is not None else pooled
        return by_length(keep, encode)

    def early_patches(self, pixels: torch.Tensor, layer: int = 0) -> torch.Tensor:
        """Patch tokens after transformer block `layer`, through ln_post and the projection [N, P, D].

        Not part of the Backend contract: an extra view for the heads (a prototype of
        the world found early-layer patches help a local head)."""
        visual = self.model.visual
        out = visual.forward_intermediates(pixels, indices=[layer], normalize_intermediates=True,
                                           intermediates_only=True, output_fmt="NLC")
        toks = out["image_intermediates"][0]
        return toks @ visual.proj if visual.proj is not None else toks

    @cpu_chunked
    def encode_texts(self, ids: torch.Tensor, tokens: bool = False) -> TextFeatures:
        from open_clip.transformer import text_global_pool

        m = self.model
        if not tokens:
            return TextFeatures(m.encode_text(ids))
        # encode_text ignores output_tokens in the CLIP class: same steps, keeping every position.
        cast = m.transformer.get_cast_dtype()
        x = m.token_embedding(ids).to(cast) + m.positional_embedding.to(cast)
        x = m.ln_final(m.transformer(x, attn_mask=m.attn_mask))
        proj = (lambda t: m.text_projection(t)) if isinstance(m.text_projection, torch.nn.Linear) \
            else (lambda t: t @ m.text_projection)
        pooled = proj(text_global_pool(x, ids, m.text_pool_type,
                                       eos_token_id=getattr(m, "text_eos_id", None)))
        toks = proj(x)
        end = ids.argmax(dim=-1) if m.text_pool_type == "argmax" else (ids != 0).sum(-1) - 1
        mask = torch.arange(ids.shape[1], device=ids.device)[None] <= end[:, None]
        return TextFeatures(pooled, toks, mask)

    @property
    def logit_scale(self) -> torch.Tensor:
        return self.model.logit_scale.exp().clamp(max=100)

    weights_file = "open_clip_model.safetensors"

    def write_config(self, folder: Path, extra: dict | None = None) -> None:
        """open_clip's `local-dir` layout: open_clip_config.json (and unbag's record under "unbag")."""
        import json

        cfg = {"model_cfg": self.model_cfg, "preprocess_cfg": {"mean": list(self.mean), "std": list(self.std)}}
        if extra:
            cfg["unbag"] = extra
        (Path(folder) / "open_clip_config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def _from_spec(spec: str, rest: str, device) -> OpenCLIPBackend:
    name, pretrained = parse(rest)
    return OpenCLIPBackend(spec, name, pretrained, device=device)


MODELS = {"open_clip": Form("open_clip:NAME[@PRETRAINED] | open_clip:local-dir:PATH | open_clip:hf-hub:ORG/REPO",
                            _from_spec, check)}
