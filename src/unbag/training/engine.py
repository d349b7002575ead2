"""The trainer: one loop for every method; objectives supply the loss."""
from __future__ import annotations

import collections
import contextlib
import copy
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from safetensors.torch import save_file

from .. import dist, models
from ..errors import UnbagError, warn
from ..utils import a_number, atomic_dir, atomic_write, check_out, mark, read_json, read_safetensors, versions, whole_numbers, write_json
from . import freeze
from .data import batches
from .ema import EMA
from .objectives import OBJECTIVES, options_of
from .optim import lr_lambda, param_groups, warmup_steps

RUN_FILES = ("config.json", "log.jsonl", "ckpt", "best", "model", "model_ema")  # what a run folder holds


def check_run_out(out: str | os.PathLike, resume: bool, overwrite: bool = False) -> None:
    """Refuse a run folder of other files (`check_out`), unless resuming a checkpoint there."""
    if not (resume and (Path(out) / "ckpt" / "trainer.pt").is_file()):
        check_out(out, "train", overwrite, RUN_FILES)


@dataclass
class TrainConfig:
    """Everything that determines a run; saved with it, so a run can be reproduced."""
    method: str = "clip"
    model: str = "open_clip:unbag-tiny@random"
    data: str = "world"
    steps: int = 1000
    batch_size: int = 128
    lr: float = 1e-3
    min_lr: float = 0.0
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-6
    warmup: float = 50  # steps; a value in (0, 1) is a fraction of the run (CLIC: 0.2)
    grad_clip: float = 1.0
    seed: int = 0
    workers: int = 1
    compile: bool = False
    threads: int = 0  # 0: torch's default
    ckpt_every: int = 200
    log_every: int = 10
    device: str = "cpu"
    lock_image: bool = False
    lock_text: bool = False
    unlock_last: int = 0  # blocks at the end of a locked tower that stay trainable
    accum: int = 1  # micro-batches per step (contrastive negatives come from within a micro-batch)
    precision: str = "auto"  # auto (bf16 autocast on CUDA, fp32 on CPU) | fp32 | bf16 | fp16
    ema: float = 0.0  # EMA decay of a teacher copy of the weights; 0: none
    patch_dropout: float = 0.0  # FLIP (arXiv 2212.00794): share of each image's patch tokens dropped in training
    typed_negatives: int = 4  # per caption, for methods that use typed negatives (DeGLA's K)
    select: str = ""  # "ctrl-id[@WORLD][:N]": export the checkpoint that validates best (select.py); "": the last
    options: dict = field(default_factory=dict)  # the method's own options, as its objective declares them

    def __post_init__(self) -> None:
        whole_numbers(self, {"steps": 1, "batch_size": 1, "accum": 1, "ckpt_every": 1, "log_every": 1,
                             "workers": 0, "typed_negatives": 0, "unlock_last": 0})
        if not 0 <= self.patch_dropout < 1:
            raise UnbagError(f"--patch-dropout {self.patch_dropout}: a share in [0, 1)")
        a_number("lr", self.lr, above=True)
        warmup_steps(self.warmup, self.steps)  # a negative or infinite warm-up refused here, named
        for name in ("min_lr", "weight_decay", "grad_clip"):
            a_number(name, getattr(self, name))
        a_number("eps", self.eps, above=True)
        a_number("ema", self.ema, below=1.0)
        if self.method in OBJECTIVES:  # every option recorded, defaults included
            self.options = options_of(self.method, self.options)

    @classmethod
    def for_method(cls, method: str, **overrides) -> "TrainConfig":
        """The method's spec defaults, then every override that is not None."""
        if method not in OBJECTIVES:
            raise UnbagError(f"unknown method {method!r}; available: {sorted(OBJECTIVES)}")
        names = {f.name for f in fields(cls)}
        own = set(options_of(method, {}))
        unknown = set(overrides) - names - own
        if unknown:
            raise UnbagError(f"unknown training options {sorted(unknown)}"
                             + (f"; method {method} also takes {sorted(own)}" if own else ""))
        kw = dict(OBJECTIVES[method].defaults)
        kw.update({k: v for k, v in overrides.items() if v is not None and k not in own})
        kw["options"] = {**kw.get("options", {}), **{k: v for k, v in overrides.items() if v is not None and k in own}}
        return cls(method=method, **kw)

    @property
    def warmup_steps(self) -> int:
        return warmup_steps(self.warmup, self.steps)


HOW = ("workers", "threads", "device")  # how a run is executed, not what it computes


def config_diff(saved: dict, cfg: TrainConfig) -> list[str]:
    """The fields in which a saved run's config differs from `cfg` (execution settings aside)."""
    mine = json.loads(json.dumps(asdict(cfg)))
    # a field the saved config lacks (a run begun by an older unbag) had its default value; such a
    # run kept the method's options beside the other fields
    default = json.loads(json.dumps(asdict(TrainConfig())))
    if "options" not in saved:
        saved = {**saved, "options": options_of(cfg.method, {k: saved[k] for k in mine["options"] if k in saved})}
    else:  # an option added since (clip-dense's vocabulary) had its default
        saved = {**saved, "options": options_of(saved.get("method", cfg.method), saved["options"])}
    return sorted(k for k in mine if saved.get(k, default[k]) != mine[k] and k not in HOW)


class Trainer:
    """Runs cfg.steps optimisation steps, checkpointing to out/ckpt and exporting out/model.

    Under torchrun every rank runs a Trainer on its slice of each batch (see dist.py); rank 0
    logs, checkpoints and exports.
    """

    def __init__(self, cfg: TrainConfig, out: str | os.PathLike):
        if cfg.method not in OBJECTIVES:
            raise UnbagError(f"unknown method {cfg.method!r}; available: {sorted(OBJECTIVES)}")
        if cfg.precision not in ("auto", "fp32", "bf16", "fp16"):
            raise UnbagError(f"precision {cfg.precision!r}: use auto, fp32, bf16 or fp16")
        self.rank, self.world_size, device = dist.init(cfg.device)
        if cfg.batch_size % (self.world_size * cfg.accum):
            raise UnbagError(f"batch size {cfg.batch_size} must divide into {self.world_size} processes "
                             f"x {cfg.accum} micro-batches")
        self.cfg, self.out = cfg, Path(out)
        torch.manual_seed(cfg.seed)
        self.backend = models.load(cfg.model, device=device)
        self.model = self.backend.model
        if cfg.patch_dropout:  # training mode only: the exported model sees every patch
            self.backend.set_patch_dropout(cfg.patch_dropout)
        dist.broadcast_params(self.model)
        self.frozen = freeze.apply(self.model, cfg.lock_image, cfg.lock_text, cfg.unlock_last)
        self.objective = OBJECTIVES[cfg.method](**cfg.options)
        changed = self.objective.prepare(self.model)  # FSC-CLIP's LoRA: the same factors on every rank
        if changed is not None:
            self.frozen = changed
            dist.broadcast_params(self.model)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        # parameters outside both towers (logit scale/bias) see the global loss directly
        self.shared = {id(p) for n, p in self.model.named_parameters() if freeze.tower(n) is None}
        self.ema = EMA(self.model, cfg.ema) if cfg.ema > 0 else None
        if self.objective.needs.teacher:
            if self.ema is None:
                raise UnbagError(f"method {cfg.method} needs an EMA teacher: set ema > 0")
            teacher = copy.copy(self.backend)
            teacher.model = self.ema.model
            self.objective.teacher = teacher
        self.opt = torch.optim.AdamW(param_groups(self.model, cfg.weight_decay), lr=cfg.lr,
                                     betas=tuple(cfg.betas), eps=cfg.eps)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lr_lambda(cfg))
        cuda = self.backend.device.type == "cuda"
        self.precision = ("bf16" if cuda else "fp32") if cfg.precision == "auto" else cfg.precision
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.precision == "fp16" and cuda)
        self.step = 0
        self.step_fn = torch.compile(self._loss) if cfg.compile else self._loss

    # -- checkpoints -------------------------------------------------------------------------
    @property
    def ckpt_dir(self) -> Path:
        return self.out / "ckpt"

    def save_checkpoint(self) -> None:
        if self.rank:
            return
        with atomic_dir(self.ckpt_dir, "checkpoint", overwrite=True) as tmp:
            # the checkpoint is also a model folder of the backend's kind: `unbag eval --model OUT/ckpt`
            # works mid-run (the trainer's config is train_config.json: transformers owns config.json)
            self.backend.write(tmp)
            if self.ema is not None:
                save_file(_state(self.ema.model), str(tmp / "ema.safetensors"))
            torch.save({"optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                        "scaler": self.scaler.state_dict(), "step": self.step,
                        "objective": self.objective.state()}, tmp / "trainer.pt")
            (tmp / "train_config.json").write_text(json.dumps(asdict(self.cfg), indent=2))

    def load_checkpoint(self) -> bool:
        if not (self.ckpt_dir / "trainer.pt").is_file():
            return False
        if not (self.ckpt_dir / "train_config.json").is_file():
            raise UnbagError(f"{self.ckpt_dir}: a checkpoint from an older unbag (its trainer config was "
                             "config.json); resume it with that version, or start again with another --out")
        diff = config_diff(read_json(self.ckpt_dir / "train_config.json"), self.cfg)
        if diff:
            raise UnbagError(f"{self.ckpt_dir}/train_config.json: resume with a different config "
                             f"(fields {sorted(diff)}); use a new --out or the same options")
        dev = str(self.backend.device)
        self.model.load_state_dict(read_safetensors(self.ckpt_dir / self.backend.weights_file, device=dev))
        if self.ema is not None:
            self.ema.model.load_state_dict(read_safetensors(self.ckpt_dir / "ema.safetensors", device=dev))
        try:
            state = torch.load(self.ckpt_dir / "trainer.pt", weights_only=True, map_location="cpu")
            state["optimizer"], state["scheduler"], state["step"]
        except Exception as e:  # torch raises many kinds for a damaged pickle/zip
            raise UnbagError(f"{self.ckpt_dir / 'trainer.pt'}: cannot read the checkpoint ({type(e).__name__}: "
                             f"{str(e)[:200]}); it is damaged: start again with another --out") from None
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state.get("scaler", {}))
        self.objective.load_state(state.get("objective", {}))
        self.step = int(state["step"])
        return True

    # -- checkpoint selection ----------------------------------------------------------------
    @property
    def best_dir(self) -> Path:
        return self.out / "best"

    def _validate(self, log) -> None:
        """Score this step's weights on the validation split; keep them if they beat the best."""
        from .select import validate
        score = validate(self.backend, self.val_set)
        if self.best is None or score > self.best["val"]:  # strict: the earliest best is kept
            self.best = {"step": self.step, "val": score, "select": self.cfg.select}
            with atomic_dir(self.best_dir, "checkpoint", overwrite=True) as tmp:
                save_file(_state(self.model), str(tmp / "model.safetensors"))
                write_json(tmp / "best.json", self.best)
        log.write(json.dumps({"step": self.step - 1, "val_group": score,
                              "best_step": self.best["step"] - 1}) + "\n")
        log.flush()

    # -- the loop ----------------------------------------------------------------------------
    def _loss(self, batch: dict) -> tuple[torch.Tensor, dict]:
        return self.objective(self.backend, batch)

    def _prepare(self, raw: dict) -> dict:
        """Pixels and token ids on the device for every image/text field of a raw batch."""
        dev, out = self.backend.device, dict(raw)
        for key, to in (("images", "pixels"), ("twin_images", "twin_pixels"), ("object_images", "object_pixels")):
            if key in raw:
                out[to] = self.backend.normalize_pixels(raw[key].to(dev, non_blocking=True))
        for key, to in (("captions", "ids"), ("twin_captions", "twin_ids"), ("neg_captions", "neg_ids"),
                        ("texts", "text_ids"), ("typed_captions", "typed_ids")):
            if key in raw:
                out[to] = self.backend.tokenize(raw[key]).to(dev) if raw[key] else \
                    torch.zeros((0, self.backend.tokenize([""]).shape[1]), dtype=torch.long, device=dev)
        return out

    def _autocast(self):
        if self.precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        return torch.autocast(self.backend.device.type, dtype=dtype)

    def _train_step(self, raw: dict) -> tuple[float, float, dict]:
        cfg, loss_sum, extra = self.cfg, 0.0, {}
        self.opt.zero_grad(set_to_none=True)
        for i in range(cfg.accum):
            batch = self._prepare(micro_batch(raw, i, cfg.accum))
            with self._autocast():
                loss, extra = self.step_fn(batch)
            self.scaler.scale(loss / cfg.accum).backward()
            loss_sum += float(loss.detach()) / cfg.accum
        dist.sum_grads(self.params, self.shared)
        self.scaler.unscale_(self.opt)
        gnorm = torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.sched.step()
        scale = getattr(self.model, "logit_scale", None)
        if isinstance(scale, torch.Tensor):  # CLIP's clamp: temperature 1..100
            with torch.no_grad():
                scale.clamp_(0, math.log(100))
        if self.ema is not None:
            self.ema.update(self.model)
        return loss_sum, float(gnorm), extra

    def fit(self, resume: bool = False, progress: bool = True, overwrite: bool = False) -> Path:
        """Train to cfg.steps (continuing from out/ckpt with resume) and export out/model, on
        cfg.threads torch threads (torch's count is restored afterwards: a caller's process keeps its own)."""
        before = torch.get_num_threads()
        if self.cfg.threads:
            torch.set_num_threads(self.cfg.threads)
        try:
            return self._fit(resume, progress, overwrite)
        finally:
            torch.set_num_threads(before)

    def _fit(self, resume: bool, progress: bool, overwrite: bool) -> Path:
        cfg, lead = self.cfg, self.rank == 0
        if lead:  # one process checks and marks the folder; the others would see its temporary files
            check_run_out(self.out, resume, overwrite)
            self.out.mkdir(parents=True, exist_ok=True)
            mark(self.out, "train", RUN_FILES, grows=True)
        dist.barrier()
        log_path = self.out / "log.jsonl"
        if resume and self.load_checkpoint():
            # drop log lines past the checkpoint: those steps are run again
            if lead and log_path.exists():
                lines = [ln for ln in log_path.read_text().splitlines()
                         if ln and json.loads(ln).get("step", -1) < self.step]
                atomic_write(log_path, "".join(ln + "\n" for ln in lines))
        elif (self.ckpt_dir / "trainer.pt").exists():
            raise UnbagError(f"{self.out}: holds a checkpoint already; pass --resume or another --out")
        elif resume:
            warn(f"{self.out}: --resume, but no checkpoint at {self.ckpt_dir}/trainer.pt: starting from step 0")
        elif lead:
            log_path.unlink(missing_ok=True)
            shutil.rmtree(self.best_dir, ignore_errors=True)
        dist.barrier()
        if lead:
            write_json(self.out / "config.json", {"config": asdict(cfg), "versions": versions(),
                                                  "processes": self.world_size, "precision": self.precision,
                                                  "parameters": self.frozen})
        self.best, self.val_set = None, None
        if cfg.select and lead:
            from .select import validation_set
            self.val_set = validation_set(cfg.select, self.backend.image_size[0])
            if resume and (self.best_dir / "best.json").is_file():
                self.best = read_json(self.best_dir / "best.json")
        self.model.train()
        needs = self.objective.needs  # the data pipeline builds what the objective declares
        it = batches(cfg.data, cfg.seed, cfg.batch_size, self.backend.image_size[0], self.step, cfg.steps,
                     cfg.workers, twins=needs.twins, negatives=needs.negatives, mode="concat" if needs.concat else "pairs",
                     rank=self.rank, world_size=self.world_size, typed=cfg.typed_negatives if needs.typed else 0,
                     objects=needs.objects, slots=needs.slots, negative_images=needs.negative_images)
        cols = [TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn()]
        t_last, n_last = time.perf_counter(), 0
        log = open(log_path, "a") if lead else contextlib.nullcontext()
        with Progress(*cols, disable=not (progress and lead), transient=False) as bar, log:
            task = bar.add_task(f"train {cfg.method}", total=cfg.steps, completed=self.step, info="")
            recent: collections.deque = collections.deque(maxlen=self.objective.log_period)
            for raw in it:
                assert raw["step"] == self.step, (raw["step"], self.step)
                loss, gnorm, extra = self._train_step(raw)
                recent.append({"step": self.step, "loss": loss, "lr": self.sched.get_last_lr()[0],
                               "grad_norm": gnorm, **extra})
                self.step += 1
                n_last += len(raw["images"]) * self.world_size
                if lead and (self.step % cfg.log_every == 0 or self.step == cfg.steps):
                    dt = time.perf_counter() - t_last
                    for rec in recent:  # the last step of each kind the objective alternates between
                        rec = {**rec, "pairs_per_s": n_last / dt}
                        log.write(json.dumps(rec) + "\n")
                    recent.clear()
                    log.flush()
                    bar.update(task, info=f"loss {rec['loss']:.4f}  {rec['pairs_per_s']:.0f} pairs/s")
                    t_last, n_last = time.perf_counter(), 0
                bar.update(task, completed=self.step)
                if self.step % cfg.ckpt_every == 0 or self.step == cfg.steps:
                    if self.val_set is not None:
                        self._validate(log)
                    self.save_checkpoint()
        self.model.eval()
        out = self.out / "model"
        if lead:
            meta = {"trained_by": "unbag train", "config": asdict(cfg)}
            if self.best is not None:  # export the selected checkpoint, and say which it was
                self.model.load_state_dict(read_safetensors(self.best_dir / "model.safetensors",
                                                            device=str(self.backend.device)))
                meta["selected"] = self.best
            self.objective.finish(self.model)  # a plain model of its kind (LoRA merged)
            self.backend.save(out, extra=meta, overwrite=True)  # a part of its own run folder
            if self.ema is not None:
                teacher = copy.copy(self.backend)
                teacher.model = self.ema.model
                teacher.save(self.out / "model_ema", extra=meta | {"weights": "ema"}, overwrite=True)
        dist.barrier()
        return out


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}


def micro_batch(raw: dict, i: int, k: int) -> dict:
    """Micro-batch i of k of a raw batch: samples, their twins/negatives, CLIC's text blocks."""
    if k == 1:
        return raw
    n = len(raw["images"])
    m = n // k
    lo, hi = i * m, (i + 1) * m
    out = {"step": raw["step"], "mode": raw["mode"], "epoch": raw.get("epoch", 0), "images": raw["images"][lo:hi]}
    if "captions" in raw:
        out["captions"] = raw["captions"][lo:hi]
    if "typed_captions" in raw:  # K per sample, sample-major
        kk = len(raw["typed_captions"]) // n
        out["typed_captions"] = raw["typed_captions"][lo * kk:hi * kk]
        out["typed_valid"] = raw["typed_valid"][lo:hi]
    if "texts" in raw:  # blocks [p1; p2; p3; p4; n] of n texts each
        blocks = len(raw["texts"]) // n
        out["texts"] = [t for b in range(blocks) for t in raw["texts"][b * n + lo:b * n + hi]]
    for of, fields_ in (("twin_of", ("twin_images", "twin_captions")), ("neg_of", ("neg_captions",))):
        if of in raw:
            keep = [j for j, owner in enumerate(raw[of].tolist()) if lo <= owner < hi]
            out[of] = raw[of][keep] - lo
            for f in fields_:
                out[f] = raw[f][keep] if isinstance(raw[f], torch.Tensor) else [raw[f][j] for j in keep]
    return out
