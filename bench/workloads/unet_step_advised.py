"""unet_step.py after following advise's findings on its H200 profile
(2026-11-30): PY007 -- h * torch.sigmoid(h) twice per block: F.silu(h);
PY008 -- AdamW(fused=True); PY009 -- TF32 for float32 matmuls and
convolutions; PY001 -- loss.item() read every 10th step. Nothing else changed.

    python bench/workloads/unet_step_advised.py [--steps 20]
"""
import argparse
import math
import time

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(8, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.norm1(x)
        h = nn.functional.silu(h)
        h = self.conv1(h) + self.time(t)[:, :, None, None]
        h = self.norm2(h)
        h = nn.functional.silu(h)
        return self.conv2(h) + self.skip(x)


class UNet(nn.Module):
    def __init__(self, ch=128, tdim=256):
        super().__init__()
        self.tdim = tdim
        self.inp = nn.Conv2d(4, ch, 3, padding=1)
        self.down1, self.down2 = Block(ch, ch, tdim), Block(ch, 2 * ch, tdim)
        self.mid = Block(2 * ch, 2 * ch, tdim)
        self.up2, self.up1 = Block(4 * ch, ch, tdim), Block(2 * ch, ch, tdim)
        self.out = nn.Conv2d(ch, 4, 3, padding=1)
        self.pool, self.upsample = nn.AvgPool2d(2), nn.Upsample(scale_factor=2)

    def embed(self, t):
        half = self.tdim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.sin(args), torch.cos(args)], dim=1).cuda()

    def forward(self, x, t):
        temb = self.embed(t)
        h0 = self.inp(x)
        h1 = self.down1(h0, temb)
        h2 = self.down2(self.pool(h1), temb)
        m = self.mid(h2, temb)
        u2 = self.up2(torch.cat([m, h2], 1), temb)
        u1 = self.up1(torch.cat([self.upsample(u2), h1], 1), temb)
        return self.out(u1)


def main():
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    model = UNet().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    start = time.perf_counter()
    for step in range(args.steps):
        latents = torch.randn(16, 4, 64, 64, device="cuda")
        noise = torch.randn_like(latents)
        t = torch.randint(0, 1000, (16,))
        loss = nn.functional.mse_loss(model(latents + noise, t), noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
