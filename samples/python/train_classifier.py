"""Train a small MLP classifier on random data and report validation accuracy.

A typical first training script: features come from torch.randn, labels from a
random linear "teacher", a DataLoader serves the batches, Adam trains a 3-layer
MLP with a hand-written Swish activation, and validate() measures accuracy on a
held-out split after every epoch.

    python train_classifier.py --steps 50 --epochs 2

What `advise check` should report in this file:

  PY007 unfused-elementwise           line 51   h * torch.sigmoid(h) in MLP.forward -> F.silu(h)
  PY010 inference-without-no-grad     line 63   model(x) in validate()'s loop after model.eval(), no torch.no_grad()
  PY005 unpinned-host-to-device-copy  line 92   DataLoader(train_set, ...) without pin_memory=True; batches go .to(device)
  PY008 unfused-optimizer             line 96   torch.optim.Adam(...) without fused=True / foreach=True
  PY005 unpinned-host-to-device-copy  line 104  x.to(device) without non_blocking=True
  PY005 unpinned-host-to-device-copy  line 105  y.to(device) without non_blocking=True
  PY001 host-sync-in-loop             line 111  running_loss += loss.item() on every step
  PY003 sync-in-hot-loop              line 117  torch.cuda.empty_cache() once per epoch inside the epoch loop

Look-alikes that are deliberately correct and must NOT be reported:

  - F.silu(h) in MLP.forward (already fused)                                 PY007
  - val_loader = DataLoader(..., pin_memory=True) and its batches moved with
    .to(device, non_blocking=True) in validate()                             PY005
  - correct = torch.zeros((), device=device, ...): created on the device     PY004
  - correct accumulates on the GPU; correct.item() runs once, after the loop PY001
  - loss.item() under `if step % args.log_every == 0:` (periodic logging)    PY001
  - the per-epoch print() formats Python floats, not tensors                 PY001
  - MLP(...).to(device): a module moved once, not a host tensor factory      PY004
  - torch.backends.cuda.matmul.allow_tf32 = True is set                      PY009
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, in_features, hidden, num_classes):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        h = self.fc1(x)
        h = h * torch.sigmoid(h)  # Swish
        h = F.silu(self.norm(self.fc2(h)))
        return self.head(h)


def validate(model, loader, device):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total = 0
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        logits = model(x)
        correct += (logits.argmax(dim=1) == y).sum()
        total += y.numel()
    model.train()
    return correct.item() / total


def main():
    parser = argparse.ArgumentParser(description="Train a small MLP on random data.")
    parser.add_argument("--steps", type=int, default=40, help="training steps per epoch")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--log-every", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    in_features, num_classes = 64, 10
    n_train = args.steps * args.batch_size
    n_val = max(args.batch_size, n_train // 10)
    features = torch.randn(n_train + n_val, in_features)
    teacher = torch.randn(in_features, num_classes)
    labels = (features @ teacher).argmax(dim=1)
    train_set = TensorDataset(features[:n_train], labels[:n_train])
    val_set = TensorDataset(features[n_train:], labels[n_train:])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, pin_memory=True)

    model = MLP(in_features, 512, num_classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    val_acc = 0.0
    running_loss = 0.0
    for epoch in range(args.epochs):
        running_loss = 0.0
        for step, (x, y) in enumerate(train_loader):
            x = x.to(device)
            y = y.to(device)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if step % args.log_every == 0:
                print(f"epoch {epoch} step {step:4d} loss {loss.item():.4f}")
        scheduler.step()
        val_acc = validate(model, val_loader, device)
        print(f"epoch {epoch}: mean loss {running_loss / len(train_loader):.4f}, val acc {val_acc:.3f}")
        torch.cuda.empty_cache()

    print(f"final: train_loss={running_loss / len(train_loader):.4f} val_acc={val_acc:.3f} device={device.type}")


if __name__ == "__main__":
    main()
