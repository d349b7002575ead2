"""Train an alignment head from a feature cache: the backbone never runs here."""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from rich.progress import Progress
from safetensors.torch import save_file

from ..errors import UnbagError
from ..training.optim import lr_lambda, param_groups, warmup_steps
from ..utils import a_number, atomic_dir, read_json, read_safetensors, versions, whole_numbers
from .cache import FeatureCache
from .common import HeadConfig, head_class, head_inputs, image_fields, match_loss, text_fields, token_count

# what the cache fields a head may miss hold, for the error that names one
FIELD_NAMES = {"img_patches_early": "early patches", "img_regions": "region features", "reg_size": "region sizes",
               "phr_want": "each phrase's region size", "txt_tokens": "caption tokens"}


@dataclass
class HeadTrainConfig:
    """Head training run: architecture plus optimisation."""
    head: HeadConfig = field(default_factory=HeadConfig)
    steps: int = 1000
    batch_size: int = 64
    negatives: int = 3  # random in-batch candidates per positive, besides its twin
    lr: float = 2e-3
    warmup: float = 50  # steps, or a fraction of the run if in (0, 1), as for the trainer
    min_lr: float = 0.0  # end of the cosine
    weight_decay: float = 0.01
    seed: int = 0
    hard_negatives: bool = True  # caption-data caches: score each image against its negative caption

    def __post_init__(self) -> None:
        # 0 steps: the head as initialised (the Python API; plans and the CLI ask for at least 1)
        whole_numbers(self, {"steps": 0, "batch_size": 1, "negatives": 0})
        if self.batch_size < self.negatives + 1:
            raise UnbagError(f"--batch-size {self.batch_size}: a head draws --negatives {self.negatives} other items of "
                             f"its batch per item, so a batch needs at least {self.negatives + 1}")
        a_number("lr", self.lr, above=True)
        warmup_steps(self.warmup, self.steps)  # a negative or infinite warm-up refused here, named
        for name in ("min_lr", "weight_decay"):
            a_number(name, getattr(self, name))

    @property
    def warmup_steps(self) -> int:
        return warmup_steps(self.warmup, self.steps)


def head_config(method: str, options: dict) -> HeadTrainConfig:
    """The training config of head `method` from flat options (its architecture's and its
    training's, as the CLI's flags name them); an unknown option is an error naming them all."""
    from dataclasses import fields

    arch = {f.name for f in fields(HeadConfig)} - {"kind", "dim", "patches"}
    run = {f.name for f in fields(HeadTrainConfig)} - {"head"}
    unknown = sorted(set(options) - arch - run)
    if unknown:
        raise UnbagError(f"unknown options for head {method}: {', '.join(unknown)}; heads take "
                         f"{', '.join(sorted(arch | run))}")
    head = HeadConfig(kind=method, **{k: v for k, v in options.items() if k in arch})
    head_class(method).check_config(head)
    return HeadTrainConfig(head=head, **{k: v for k, v in options.items() if k in run})


def schedule(cfg: HeadTrainConfig):
    """The trainer's learning-rate multiplier (training/optim.py): linear warm-up (steps, or a
    fraction of the run if in (0, 1); 0: none) then a cosine to min_lr."""
    return lr_lambda(cfg)


def build(cfg: HeadConfig) -> torch.nn.Module:
    """A registered head, untrained, for `cfg` (its options checked)."""
    cls = head_class(cfg.kind)
    cls.check_config(cfg)
    return cls(cfg)


def _fields(cache: FeatureCache, rows: np.ndarray, cfg: HeadConfig) -> dict:
    return {n: cache.get(n, rows) for n in image_fields(cfg) + text_fields(cfg)}


def step_loss(head: torch.nn.Module, cache: FeatureCache, rows: np.ndarray, twins: np.ndarray,
              k: int, rng: np.random.Generator, hard_negatives: bool = True) -> torch.Tensor:
    """Each positive (image i, text i) against its twin's text / image and k random others; with
    a cache of caption data, image i also against its hard negative caption (text only)."""
    b = len(rows)
    others = np.stack([rng.choice(np.delete(rows, i), size=k, replace=False) for i in range(b)])
    cand = np.concatenate([rows[:, None], np.where(twins < 0, rows, twins)[:, None], others], 1)  # [B, 2+k]
    valid = torch.ones(cand.shape, dtype=torch.bool)
    valid[:, 1] = torch.from_numpy(twins >= 0)
    img_pos, txt_pos = head_inputs(_fields(cache, rows, head.cfg), head.cfg)
    img_all, txt_all = head_inputs(_fields(cache, cand.reshape(-1), head.cfg), head.cfg)
    rep = lambda d: {n: None if t is None else t.repeat_interleave(cand.shape[1], 0) for n, t in d.items()}  # noqa: E731
    # image i vs candidate texts, then candidate images vs text i
    i2t = head(**rep(img_pos), **txt_all).view(b, -1)
    t2i = head(**img_all, **rep(txt_pos)).view(b, -1)
    i2t_valid = valid
    if hard_negatives and "has_neg" in cache.index["fields"]:  # a hard negative caption: one more text candidate
        negs = {n: cache.get(f"neg_{n}", rows) for n in text_fields(head.cfg)}
        neg = head(**img_pos, **head_inputs({**_fields(cache, rows, head.cfg), **negs}, head.cfg)[1])
        i2t = torch.cat([i2t, neg[:, None]], 1)
        i2t_valid = torch.cat([valid, cache.get("has_neg", rows)[:, None]], 1)
    return (match_loss(i2t, i2t_valid) + match_loss(t2i, valid)) / 2


def train_head(cache_dir: str | os.PathLike, cfg: HeadTrainConfig, out: str | os.PathLike,
               progress: bool = True, overwrite: bool = False) -> Path:
    """Train on every cache row as a positive; save head.safetensors + head.json to `out`."""
    cache = FeatureCache(cache_dir)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    fields = cache.index["fields"]
    cfg.head.dim = fields["img_global"]["shape"][0]
    plain = replace(cfg.head, calibrate=False)  # calibration's alternatives are computed when scoring
    missing = [n for n in image_fields(plain) + text_fields(plain) if n not in fields]
    if missing:
        raise UnbagError(f"{cache_dir}: this cache has no field {missing[0]!r}, which head {cfg.head.kind} reads "
                         f"({FIELD_NAMES.get(missing[0], 'a feature of another unbag version')}); rebuild it "
                         "with `unbag features`")
    if cfg.steps and cache.rows < cfg.batch_size:
        raise UnbagError(f"{cache_dir}: the cache has {cache.rows} rows, fewer than a batch ({cfg.batch_size}); "
                         "give a smaller --batch-size or extract more rows")
    cfg.head.patches = token_count(fields, cfg.head)
    head = build(cfg.head)
    # calibration is a scoring rule: the correction learns on the plain score (trained on the
    # calibrated one, it lost 12 points of size out of distribution in 300 steps: docs/heads.md)
    head.cfg = replace(cfg.head, calibrate=False)
    opt = torch.optim.AdamW(param_groups(head, cfg.weight_decay), lr=cfg.lr)  # the trainer's groups
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule(cfg))
    twin_all = cache.get("twin", np.arange(cache.rows)).numpy()
    log, t0 = [], time.perf_counter()
    head.train()
    with Progress(disable=not progress) as bar:
        task = bar.add_task(f"train {cfg.head.kind}/{cfg.head.text}", total=cfg.steps)
        for step in range(cfg.steps):
            rows = rng.choice(cache.rows, size=cfg.batch_size, replace=False)
            loss = step_loss(head, cache, rows, twin_all[rows], cfg.negatives, rng, cfg.hard_negatives)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
            opt.step()
            sched.step()
            if step % 10 == 0 or step == cfg.steps - 1:
                log.append({"step": step, "loss": float(loss.detach()), "lr": sched.get_last_lr()[0],
                            "elapsed_s": time.perf_counter() - t0})
            bar.update(task, advance=1, description=f"train {cfg.head.kind}/{cfg.head.text} loss {float(loss.detach()):.3f}")
    head.eval()
    head.cfg = cfg.head
    record = {"head": asdict(cfg.head), "train": {k: v for k, v in asdict(cfg).items() if k != "head"},
              "backbone": cache.index["backbone"], "backbone_id": cache.index["backbone_id"],
              "cache": str(cache_dir), "params": sum(p.numel() for p in head.parameters()),
              "train_s": time.perf_counter() - t0, "versions": versions(), "log": log}
    with atomic_dir(out, "train", overwrite) as tmp:
        save_file({k: v.contiguous() for k, v in head.state_dict().items()}, str(tmp / "head.safetensors"))
        (tmp / "head.json").write_text(json.dumps(record, indent=2) + "\n")
    return Path(out)


def load_head(path: str | os.PathLike) -> tuple[torch.nn.Module, dict]:
    """A trained head and its record (backbone, config, log)."""
    from dataclasses import fields
    path = Path(path)
    f = path / "head.json"
    record = read_json(f, "not a head checkpoint (no head.json)")
    if not isinstance(record, dict) or not isinstance(record.get("head"), dict):
        raise UnbagError(f"{f}: field 'head' (the head's architecture) is missing; not a head checkpoint")
    for key in ("backbone", "backbone_id"):
        if not isinstance(record.get(key), str):
            raise UnbagError(f"{f}: field '{key}' (the backbone the head was trained on) is missing")
    known = {x.name for x in fields(HeadConfig)}
    unknown = sorted(set(record["head"]) - known)
    if unknown:
        raise UnbagError(f"{f}: field 'head.{unknown[0]}' is not an option of a head ({', '.join(sorted(known))}); "
                         "the file is damaged or from another version of unbag")
    head_class(str(record["head"].get("kind", HeadConfig.kind)))  # an unknown kind names the registered ones
    try:
        head = build(HeadConfig(**record["head"]))
        head.load_state_dict(read_safetensors(path / "head.safetensors"))
    except (RuntimeError, TypeError, ValueError) as e:
        raise UnbagError(f"{path}: head.json and head.safetensors do not match ({str(e).splitlines()[0]})") from None
    return head.eval(), record


def head_id(path: str | os.PathLike, record: dict) -> str:
    """SHA-1 of what a head scores with: its weights file and its record's (`load_head`'s)
    architecture, training config and backbone (a result is reused only when the head is the same)."""
    import hashlib
    path = Path(path)
    h = hashlib.sha1(json.dumps({k: record.get(k) for k in ("head", "train", "backbone", "backbone_id")},
                                sort_keys=True).encode())
    with open(path / "head.safetensors", "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
