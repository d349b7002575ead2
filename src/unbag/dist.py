"""Data parallelism under torchrun: process group set-up, feature gathering, gradient sums.

unbag's objectives compute the loss of the *global* batch on every rank, from features gathered
across ranks; the local slice of a gathered tensor keeps its autograd graph and the other slices
are constants. Each rank's gradient is then exactly its own samples' share of the global loss's
gradient, and summing gradients over ranks (`sum_grads`) gives the gradient of the global loss:
what a 1-process run with the same global batch computes. Parameters that act on the global loss
directly rather than through one rank's features (the logit scale) get the whole gradient on
every rank, so their sum is divided by the number of ranks. This replaces torch DDP's wrapper
(which only syncs through `forward`, while objectives call the encoders directly) and needs
only all_gather and all_reduce, which gloo and nccl both have.
"""
from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def init(device: str) -> tuple[int, int, str]:
    """Join the torchrun process group when WORLD_SIZE > 1: (rank, world size, device for this rank)."""
    n = int(os.environ.get("WORLD_SIZE", "1"))
    if n > 1 and not dist.is_initialized():
        cuda = device.startswith("cuda")
        dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(minutes=30))
        if cuda:
            local = int(os.environ.get("LOCAL_RANK", "0"))
            torch.cuda.set_device(local)
            device = f"cuda:{local}"
    return rank(), world_size(), device


def gather(x: torch.Tensor) -> torch.Tensor:
    """Concatenate x over ranks (rank order); only the local slice carries gradient."""
    if world_size() == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(world_size())]
    dist.all_gather(parts, x.detach().contiguous())
    parts[rank()] = x
    return torch.cat(parts)


def gather_varlen(x: torch.Tensor) -> torch.Tensor:
    """`gather` for tensors whose first dimension differs between ranks."""
    if world_size() == 1:
        return x
    n = torch.tensor([len(x)], device=x.device)
    sizes = [torch.empty_like(n) for _ in range(world_size())]
    dist.all_gather(sizes, n)
    sizes = [int(s) for s in sizes]
    pad = torch.zeros((max(sizes) - len(x), *x.shape[1:]), dtype=x.dtype, device=x.device)
    parts = [torch.empty((max(sizes), *x.shape[1:]), dtype=x.dtype, device=x.device) for _ in sizes]
    dist.all_gather(parts, torch.cat([x.detach(), pad]).contiguous())
    parts = [p[:s] for p, s in zip(parts, sizes)]
    parts[rank()] = x
    return torch.cat(parts)


def sum_grads(params: list[torch.nn.Parameter], shared: set[int] = frozenset()) -> None:
    """Sum gradients over ranks in one flat all_reduce (see the module docstring for why sum);
    parameters whose id() is in `shared` are averaged instead."""
    if world_size() == 1:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    k = 0
    for p, g in zip(params, grads):
        n = g.numel()
        p.grad = flat[k:k + n].view_as(p).clone()
        if id(p) in shared:
            p.grad /= world_size()
        k += n


def broadcast_params(model: torch.nn.Module) -> None:
    """Make every rank start from rank 0's weights."""
    if world_size() == 1:
        return
    for t in list(model.parameters()) + list(model.buffers()):
        dist.broadcast(t.data, 0)


def finish() -> None:
    """Leave the process group together: every rank waits for the others, then tears it down (a rank
    that exits with gloo's threads still running can abort with 'terminate called without an active
    exception' and take the whole torchrun job down)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def barrier() -> None:
    if world_size() > 1:
        dist.barrier()
