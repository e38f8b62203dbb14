#!/usr/bin/env python3
"""Train the small CNN of ``pymli demo`` on the 8x8 digits of ``pymli/data/digits.npz`` (run once, offline).

The float weights are written to ``pymli/data/digits_cnn.npz`` in MLI layouts (HWCN convolution
weights, ``[in, out]`` fully connected weights over HWC-flattened inputs), so that the runtime needs
only NumPy. Training uses PyTorch (CPU), which the runtime does not need.

Network (input 8x8x1, pixel / 16):
    conv1 3x3, 8 filters, pad 1, ReLU -> maxpool 2x2 /2 -> conv2 3x3, 16 filters, pad 1, ReLU
    -> avgpool 2x2 /2 -> fc 64 -> 10 -> softmax

usage: python scripts/train_digits.py [--epochs 60] [--out pymli/data/digits_cnn.npz]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pymli.models.digits import SEED  # the split the demo evaluates on
from pymli.models.digits import load_split as split


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "pymli" / "data" / "digits_cnn.npz"))
    args = ap.parse_args()

    import torch
    from torch import nn

    torch.manual_seed(SEED)
    xtr, xte, ytr, yte = split()
    to_t = lambda a: torch.tensor(np.transpose(a, (0, 3, 1, 2)), dtype=torch.float32)
    xtr_t, xte_t = to_t(xtr), to_t(xte)
    ytr_t = torch.tensor(ytr, dtype=torch.long)

    conv1 = nn.Conv2d(1, 8, 3, padding=1)
    conv2 = nn.Conv2d(8, 16, 3, padding=1)
    fc = nn.Linear(64, 10)
    model = nn.Sequential(conv1, nn.ReLU(), nn.MaxPool2d(2), conv2, nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), fc)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(xtr_t))
        for i in range(0, len(perm), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = loss_fn(model(xtr_t[idx]), ytr_t[idx])
            loss.backward()
            opt.step()
        if (epoch + 1) % 10 == 0:
            model.eval()
            with torch.no_grad():
                acc = (model(xte_t).argmax(1).numpy() == yte).mean()
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {100 * acc:.2f} %")

    model.eval()
    with torch.no_grad():
        acc = float((model(xte_t).argmax(1).numpy() == yte).mean())
    hwcn = lambda w: w.detach().numpy().transpose(2, 3, 1, 0)
    # torch flattens CHW; MLI's fully connected reads the HWC tensor row-major
    fc_w = fc.weight.detach().numpy().reshape(10, 16, 2, 2).transpose(2, 3, 1, 0).reshape(64, 10)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out,
        conv1_w=hwcn(conv1.weight).astype(np.float32), conv1_b=conv1.bias.detach().numpy().astype(np.float32),
        conv2_w=hwcn(conv2.weight).astype(np.float32), conv2_b=conv2.bias.detach().numpy().astype(np.float32),
        fc_w=fc_w.astype(np.float32), fc_b=fc.bias.detach().numpy().astype(np.float32),
        float_test_accuracy=np.float64(acc), seed=np.int64(SEED),
        trained_with=np.array(f"torch {torch.__version__}, {args.epochs} epochs, Adam lr 3e-3"),
    )
    print(f"float test accuracy {100 * acc:.2f} % -> {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
