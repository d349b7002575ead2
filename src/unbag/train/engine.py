"""The trainer: one loop for every method; objectives supply the loss."""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from safetensors.torch import load_file, save_file

from .. import models
from ..errors import UnbagError
from ..utils import atomic_dir, atomic_write, versions, write_json
from .data import batches
from .objectives import OBJECTIVES


@dataclass
class TrainConfig:
    """Everything that determines a run; saved with it, so a run can be reproduced."""
    method: str = "clip"
    model: str = "open_clip:unbag-tiny"
    data: str = "world"
    steps: int = 1000
    batch_size: int = 128
    lr: float = 1e-3
    min_lr: float = 0.0
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-6
    warmup: int = 50
    grad_clip: float = 1.0
    seed: int = 0
    workers: int = 1
    compile: bool = False
    threads: int = 0  # 0: torch's default
    ckpt_every: int = 200
    log_every: int = 10
    device: str = "cpu"
    extra: dict = field(default_factory=dict)


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: no decay on ndim<2 tensors, norms, biases, embeddings' gains, logit_scale."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        skip = p.ndim < 2 or "bias" in name or "ln_" in name or "norm" in name or "logit_scale" in name
        (no_decay if skip else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def lr_lambda(cfg: TrainConfig):
    """Linear warm-up then cosine to min_lr, as a multiplier of cfg.lr."""
    def f(step: int) -> float:
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        floor = cfg.min_lr / cfg.lr
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))
    return f


class Trainer:
    """Runs cfg.steps optimisation steps, checkpointing to out/ckpt and exporting out/model."""

    def __init__(self, cfg: TrainConfig, out: str | os.PathLike):
        if cfg.method not in OBJECTIVES:
            raise UnbagError(f"unknown method {cfg.method!r}; available: {sorted(OBJECTIVES)}")
        self.cfg, self.out = cfg, Path(out)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.backend = models.load(cfg.model, device=cfg.device)
        self.model = self.backend.model
        self.objective = OBJECTIVES[cfg.method]()
        self.opt = torch.optim.AdamW(param_groups(self.model, cfg.weight_decay), lr=cfg.lr,
                                     betas=tuple(cfg.betas), eps=cfg.eps)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lr_lambda(cfg))
        self.step = 0
        self.step_fn = torch.compile(self._loss) if cfg.compile else self._loss

    # -- checkpoints -------------------------------------------------------------------------
    @property
    def ckpt_dir(self) -> Path:
        return self.out / "ckpt"

    def save_checkpoint(self) -> None:
        with atomic_dir(self.ckpt_dir) as tmp:
            save_file({k: v.detach().contiguous().cpu() for k, v in self.model.state_dict().items()},
                      str(tmp / "model.safetensors"))
            torch.save({"optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                        "step": self.step}, tmp / "trainer.pt")
            (tmp / "config.json").write_text(json.dumps(asdict(self.cfg), indent=2))
            # also a loadable model folder: `unbag eval --model OUT/ckpt` works mid-run
            (tmp / "open_clip_config.json").write_text(json.dumps(
                {"model_cfg": self.backend.model_cfg,
                 "preprocess_cfg": {"mean": list(self.backend.mean), "std": list(self.backend.std)}}, indent=2))

    def load_checkpoint(self) -> bool:
        if not (self.ckpt_dir / "trainer.pt").is_file():
            return False
        saved = json.loads((self.ckpt_dir / "config.json").read_text())
        mine = json.loads(json.dumps(asdict(self.cfg)))
        diff = {k for k in mine if saved.get(k) != mine[k] and k not in ("workers", "threads", "device")}
        if diff:
            raise UnbagError(f"{self.ckpt_dir}/config.json: resume with a different config "
                             f"(fields {sorted(diff)}); use a new --out or the same options")
        self.model.load_state_dict(load_file(str(self.ckpt_dir / "model.safetensors"),
                                             device=str(self.backend.device)))
        state = torch.load(self.ckpt_dir / "trainer.pt", weights_only=True, map_location="cpu")
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        return True

    # -- the loop ----------------------------------------------------------------------------
    def _loss(self, batch: dict) -> tuple[torch.Tensor, dict]:
        return self.objective(self.backend, batch)

    def _prepare(self, raw: dict) -> dict:
        dev = self.backend.device
        out = {"pixels": self.backend.normalize_pixels(raw["images"].to(dev)),
               "ids": self.backend.tokenize(raw["captions"]).to(dev), **raw}
        if "twin_images" in raw:
            out["twin_pixels"] = self.backend.normalize_pixels(raw["twin_images"].to(dev))
            out["twin_ids"] = self.backend.tokenize(raw["twin_captions"]).to(dev)
        return out

    def fit(self, resume: bool = False, progress: bool = True) -> Path:
        """Train to cfg.steps (continuing from out/ckpt with resume) and export out/model."""
        cfg = self.cfg
        self.out.mkdir(parents=True, exist_ok=True)
        log_path = self.out / "log.jsonl"
        if resume and self.load_checkpoint():
            # drop log lines past the checkpoint: those steps are run again
            if log_path.exists():
                lines = [ln for ln in log_path.read_text().splitlines()
                         if ln and json.loads(ln).get("step", -1) < self.step]
                atomic_write(log_path, "".join(ln + "\n" for ln in lines))
        elif (self.ckpt_dir / "trainer.pt").exists():
            raise UnbagError(f"{self.out}: holds a checkpoint already; pass --resume or another --out")
        else:
            log_path.unlink(missing_ok=True)
        write_json(self.out / "config.json", {"config": asdict(cfg), "versions": versions()})
        self.model.train()
        px = self.backend.image_size[0]
        it = batches(cfg.data, cfg.seed, cfg.batch_size, px, self.step, cfg.steps, cfg.workers,
                     twins=getattr(self.objective, "needs_twins", False))
        cols = [TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn()]
        t_last, n_last = time.perf_counter(), 0
        with Progress(*cols, disable=not progress, transient=False) as bar, open(log_path, "a") as log:
            task = bar.add_task(f"train {cfg.method}", total=cfg.steps, completed=self.step, info="")
            for raw in it:
                assert raw["step"] == self.step, (raw["step"], self.step)
                batch = self._prepare(raw)
                loss, extra = self.step_fn(batch)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                gnorm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
                self.opt.step()
                self.sched.step()
                self.step += 1
                n_last += len(raw["captions"])
                if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                    dt = time.perf_counter() - t_last
                    rec = {"step": self.step - 1, "loss": float(loss.detach()), "lr": self.sched.get_last_lr()[0],
                           "grad_norm": float(gnorm), "pairs_per_s": n_last / dt, **extra}
                    log.write(json.dumps(rec) + "\n")
                    log.flush()
                    bar.update(task, info=f"loss {rec['loss']:.4f}  {rec['pairs_per_s']:.0f} pairs/s")
                    t_last, n_last = time.perf_counter(), 0
                bar.update(task, completed=self.step)
                if self.step % cfg.ckpt_every == 0 or self.step == cfg.steps:
                    self.save_checkpoint()
        self.model.eval()
        from ..models.openclip import save_local_dir
        return save_local_dir(self.backend, self.out / "model",
                              extra={"trained_by": "unbag train", "config": asdict(cfg)})
