"""Several training processes: the process group, DDP / FSDP wrapping, and gathering sharded state.

torchrun and ``accelerate launch`` set RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR; a plain run is
a world of one. DDP keeps a full replica per process; FSDP (PyTorch's ``fully_shard``, one unit per
base decoder layer plus the root) shards weights, gradients and optimizer state. For checkpoints,
FSDP weights are gathered into full tensors (`gathered`), and the optimizer state is saved in the
full, name-keyed form of ``torch.distributed.checkpoint.state_dict`` so any world size can load it.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from hamburger.core.base import pick_device


@dataclass
class Dist:
    """This process's place in the job."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world > 1

    def all_sum(self, t: torch.Tensor) -> torch.Tensor:
        if self.active:
            t = t.to(self.device)
            torch.distributed.all_reduce(t)
        return t.cpu()

    def all_max(self, t: torch.Tensor) -> torch.Tensor:
        if self.active:
            t = t.to(self.device)
            torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return t.cpu()

    def barrier(self) -> None:
        if self.active:
            torch.distributed.barrier()

    def close(self) -> None:
        """Leave the process group cleanly (every rank, after the last collective), so that no
        communication thread is still alive when the interpreter exits."""
        if self.active and torch.distributed.is_initialized():
            torch.distributed.barrier()
            torch.distributed.destroy_process_group()


def init_dist(device: str = "auto") -> Dist:
    """Join the process group when launched with WORLD_SIZE > 1: nccl on GPU, gloo on CPU."""
    use_cuda = pick_device(device).type == "cuda"
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device(f"cuda:{local}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(dev)
    if world <= 1:
        return Dist(device=dev)
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if use_cuda else "gloo")
    return Dist(torch.distributed.get_rank(), torch.distributed.get_world_size(), local, dev)


def wrap(net: nn.Module, layers: list[nn.Module], dist: Dist, parallel: str) -> nn.Module:
    """DDP around ``net``, or FSDP with one unit per module in ``layers`` and one for the rest."""
    if not dist.active:
        return net
    if parallel == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(dist.device.type, (dist.world,))
        for layer in layers:
            fully_shard(layer, mesh=mesh)
        return fully_shard(net, mesh=mesh)
    from torch.nn.parallel import DistributedDataParallel

    ids = [dist.device.index] if dist.device.type == "cuda" else None
    return DistributedDataParallel(net, device_ids=ids, find_unused_parameters=True)


def is_fsdp(net: nn.Module) -> bool:
    return hasattr(net, "set_requires_gradient_sync")


@contextmanager
def grad_sync(net: nn.Module, sync: bool):
    """Skip the gradient all-reduce / reduce-scatter of all but the last micro-batch of a step."""
    if sync or not (is_fsdp(net) or hasattr(net, "no_sync")):
        yield
    elif is_fsdp(net):
        net.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            net.set_requires_gradient_sync(True)
    else:
        with net.no_sync():
            yield


@contextmanager
def gathered(module: nn.Module):
    """Within the block, every sharded (DTensor) parameter of ``module`` is replaced by its full tensor.

    Collective: every process must enter. Shared parameters (tied embeddings) stay shared.
    """
    from torch.distributed.tensor import DTensor

    swaps, full = [], {}
    for mod in module.modules():
        for name, p in list(mod._parameters.items()):
            if isinstance(p, DTensor):
                if id(p) not in full:
                    full[id(p)] = nn.Parameter(p.full_tensor().detach(), requires_grad=p.requires_grad)
                swaps.append((mod, name, p))
                mod._parameters[name] = full[id(p)]
    try:
        yield module
    finally:
        for mod, name, p in swaps:
            mod._parameters[name] = p


def optimizer_state(net: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The optimizer state to save: torch's own for one process or DDP, full and name-keyed for FSDP."""
    if not is_fsdp(net):
        return optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    return get_optimizer_state_dict(net, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_optimizer_state(net: nn.Module, optimizer: torch.optim.Optimizer, state: dict) -> None:
    if not is_fsdp(net):
        optimizer.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    set_optimizer_state_dict(net, optimizer, optim_state_dict=state,
                             options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=False))
