"""Liveness-based placement of activation buffers in one static arena.

Every arena :class:`~pymli.export.trace.Region` lives from the call that writes it to the last call
that reads it. Regions whose lifetimes overlap get disjoint byte ranges; the others may share memory.
Placement is greedy: each region at the lowest aligned offset free during its whole lifetime, taking
the regions in a few orders (largest first, as TFLite Micro's greedy planner does; program order;
longest lived first; largest size x lifetime first; for up to 64 regions also 64 seeded random
orders) and keeping the smallest arena. The bound is not always reachable (placement is NP-hard). The lower bound of any placement is the
largest total size of the regions alive at one call; :attr:`BufferPlan.peak` is compared with it.
"""

from __future__ import annotations

import dataclasses
import random

from .trace import Program, Region

__all__ = ["BufferPlan", "Buffer", "plan_buffers", "ALIGN"]

ALIGN = 4
"""Byte alignment of every region in the arena (int32 biases and accumulators)."""


def _up(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclasses.dataclass(frozen=True)
class Buffer:
    """A byte range of the arena and the regions (tensors) that use it at different times.

    Attributes:
        offset: first byte in the arena.
        size: bytes.
        regions: region ids placed (at least partly) in this range, in program order.
    """

    offset: int
    size: int
    regions: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class BufferPlan:
    """Where each arena region lives.

    Attributes:
        offsets: region id -> byte offset in the arena (arena regions only).
        peak: arena size in bytes.
        lower_bound: the largest total (aligned) size of the regions alive at the same call.
        buffers: the arena split into ranges shared by regions whose lifetimes do not overlap.
    """

    offsets: dict[int, int]
    peak: int
    lower_bound: int
    buffers: tuple[Buffer, ...]


def _overlap(a: Region, b: Region) -> bool:
    return a.first <= b.last and b.first <= a.last


def plan_buffers(program: Program) -> BufferPlan:
    """Place the arena regions of ``program``.

    Args:
        program: a traced program; regions of kind ``"arena"`` are placed.

    Returns:
        The plan: offsets, peak, the liveness lower bound and the shared buffers.
    """
    regs = [r for r in program.regions if r.kind == "arena"]
    orders = (lambda r: (-_up(r.nbytes), r.first, r.id),              # largest first (TFLM's greedy planner)
              lambda r: (r.first, -_up(r.nbytes), r.id),              # program order
              lambda r: (-(r.last - r.first), -_up(r.nbytes), r.id),  # longest lived first
              lambda r: (-_up(r.nbytes) * (r.last - r.first + 1), r.id))
    candidates = [sorted(regs, key=key) for key in orders]
    if 1 < len(regs) <= 64:  # small programs: a few seeded random orders too (deterministic)
        rng = random.Random(len(regs))
        for _ in range(64):
            order = list(regs)
            rng.shuffle(order)
            candidates.append(order)

    def peak_of(offs: dict[int, int]) -> int:
        return max((offs[r.id] + _up(r.nbytes) for r in regs), default=0)

    offsets = min((_place(order) for order in candidates), key=peak_of)
    peak = max((offsets[r.id] + _up(r.nbytes) for r in regs), default=0)
    n_calls = max((r.last for r in regs), default=-1) + 1
    lower = max((sum(_up(r.nbytes) for r in regs if r.first <= t <= r.last) for t in range(n_calls)), default=0)
    return BufferPlan(offsets, peak, lower, _buffers(regs, offsets))


def _place(order: list[Region]) -> dict[int, int]:
    """Each region at the lowest aligned offset free during its lifetime, in the given order."""
    placed: list[tuple[Region, int]] = []
    offsets: dict[int, int] = {}
    for r in order:
        busy = sorted((off, off + _up(q.nbytes)) for q, off in placed if _overlap(q, r))
        off = 0
        for lo, hi in busy:
            if off + _up(r.nbytes) <= lo:
                break
            off = max(off, hi)
        offsets[r.id] = off
        placed.append((r, off))
    return offsets


def _buffers(regs: list[Region], offsets: dict[int, int]) -> tuple[Buffer, ...]:
    """Group regions whose byte ranges overlap into buffers (connected ranges of the arena)."""
    spans = sorted((offsets[r.id], offsets[r.id] + _up(r.nbytes), r.id) for r in regs if r.nbytes)
    out: list[Buffer] = []
    cur: list[int] = []
    lo = hi = -1
    for a, b, rid in spans:
        if cur and a < hi:
            cur.append(rid)
            hi = max(hi, b)
            continue
        if cur:
            out.append(Buffer(lo, hi - lo, tuple(sorted(cur))))
        cur, lo, hi = [rid], a, b
    if cur:
        out.append(Buffer(lo, hi - lo, tuple(sorted(cur))))
    return tuple(out)
