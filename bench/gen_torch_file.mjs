// Writes a PyTorch-dense Python module of at least N lines, deterministically
// (same seed, same text): models, training and evaluation loops, data loading,
// timing, checkpoints and small utilities, the way a research code base looks.
// Most of it is correct code; here and there it has the habits advise reports
// (.item() every step, empty_cache() in a loop, host tensors moved to the GPU,
// unpinned loaders, host-clock timing), at a natural rate.
//
//   node gen_torch_file.mjs [--lines N] [--seed S] > models.py
import { fileURLToPath } from 'node:url';

export function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const HEADER = `"""Models, training and evaluation loops for the vision and language experiments.

Generated for advise's LSP benchmark (bench/gen_torch_file.mjs): a long module
of the kind research code bases grow into.
"""
import argparse
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
`;

export function generateTorchFile(minLines = 6000, seed = 1234) {
    const rnd = mulberry32(seed);
    const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
    const chance = (p) => rnd() < p;
    const dims = [64, 128, 256, 384, 512, 768, 1024];
    const acts = [['nn.ReLU()', 'F.relu'], ['nn.GELU()', 'F.gelu'], ['nn.SiLU()', 'F.silu'], ['nn.Tanh()', 'torch.tanh']];
    const opts = ['torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)',
                  'torch.optim.Adam(model.parameters(), lr=lr)',
                  'torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True)',
                  'torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), fused=True)'];
    const parts = [HEADER];
    let lines = HEADER.split('\n').length - 1;
    const add = (text) => {
        parts.push(text);
        lines += text.split('\n').length - 1;
    };

    const templates = [
        // an MLP block
        (k) => {
            const [act, fact] = pick(acts), d = pick(dims), h = pick(dims) * 2;
            return `
class FeedForward${k}(nn.Module):
    """Position-wise feed-forward block with a residual connection."""

    def __init__(self, dim=${d}, hidden=${h}, dropout=${pick(['0.0', '0.1', '0.2'])}):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = ${act}
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        residual = x
        x = self.norm(x)
        x = self.drop(self.act(self.fc1(x)))
        x = self.drop(self.fc2(x))
        return residual + x

    def extra_repr(self):
        return f"dim={self.fc1.in_features}, hidden={self.fc1.out_features}, act=${fact}"
`;
        },
        // attention
        (k) => {
            const d = pick([256, 384, 512, 768]), heads = pick([4, 8, 12]);
            return `
class SelfAttention${k}(nn.Module):
    def __init__(self, dim=${d}, heads=${heads}, dropout=0.1, causal=${pick(['True', 'False'])}):
        super().__init__()
        assert dim % heads == 0, "dim must be divisible by heads"
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.dropout = dropout
        self.causal = causal

    def forward(self, x, mask=None):
        b, t, c = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        if mask is None and not self.causal:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0)
        else:
            scores = (q @ k.transpose(-2, -1)) * self.scale
            if self.causal:
                causal_mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(causal_mask, float("-inf"))
            if mask is not None:
                scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
            attn = scores.softmax(dim=-1)
            attn = F.dropout(attn, p=self.dropout, training=self.training)
            out = attn @ v
        out = out.transpose(1, 2).reshape(b, t, c)
        return self.proj(out)
`;
        },
        // conv block
        (k) => {
            const c = pick([32, 64, 128, 256]);
            return `
class ConvBlock${k}(nn.Module):
    def __init__(self, in_channels=${c}, out_channels=${c * 2}, stride=${pick([1, 2])}):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x), inplace=True)
`;
        },
        // a full model
        (k) => {
            const d = pick([256, 512, 768]), layers = pick([4, 6, 8, 12]);
            return `
class Encoder${k}(nn.Module):
    def __init__(self, vocab_size=32000, dim=${d}, depth=${layers}, max_len=${pick([512, 1024, 2048])}, num_classes=${pick([2, 10, 100, 1000])}):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(torch.zeros(1, max_len, dim))
        self.blocks = nn.ModuleList(
            [nn.TransformerEncoderLayer(dim, dim // 64, dim * 4, batch_first=True, norm_first=True) for _ in range(depth)]
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)
        nn.init.trunc_normal_(self.pos, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, tokens, padding_mask=None):
        x = self.tok(tokens) + self.pos[:, : tokens.size(1)]
        for block in self.blocks:
            x = block(x, src_key_padding_mask=padding_mask)
        x = self.norm(x)
        if padding_mask is not None:
            keep = (~padding_mask).unsqueeze(-1).to(x.dtype)
            x = (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        else:
            x = x.mean(dim=1)
        return self.head(x)
`;
        },
        // a training loop
        (k) => {
            const amp = chance(0.5), perStepItem = chance(0.3), emptyCache = chance(0.25), blocking = chance(0.3);
            const to = blocking ? '.to(device)' : '.to(device, non_blocking=True)';
            const lines = [`
def train_epoch${k}(model, loader, optimizer, scheduler=None, epoch=0, log_every=${pick([10, 20, 50, 100])}, clip=${pick(['1.0', '0.5', 'None'])}):
    model.train()
    ${amp ? 'scaler = torch.cuda.amp.GradScaler()' : 'scaler = None'}
    running_loss = 0.0
    seen = 0
    losses = []
    for step, (inputs, targets) in enumerate(loader):
        inputs = inputs${to}
        targets = targets${to}
        optimizer.zero_grad(set_to_none=True)`];
            if (amp) {
                lines.push(`        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(inputs)
            loss = F.cross_entropy(logits, targets, label_smoothing=0.1)
        scaler.scale(loss).backward()
        if clip is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(optimizer)
        scaler.update()`);
            } else {
                lines.push(`        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()`);
            }
            lines.push(`        if scheduler is not None:
            scheduler.step()`);
            if (perStepItem) lines.push(`        running_loss += loss.item() * inputs.size(0)
        losses.append(loss.item())`);
            else lines.push(`        running_loss += loss.detach() * inputs.size(0)
        losses.append(loss.detach())`);
            lines.push(`        seen += inputs.size(0)
        if step % log_every == 0:
            lr = optimizer.param_groups[0]["lr"]
            print(f"epoch {epoch} step {step:5d} loss {loss.item():.4f} lr {lr:.2e}")`);
            if (emptyCache) lines.push(`        torch.cuda.empty_cache()`);
            lines.push(`    mean_loss = float(running_loss) / max(seen, 1)
    return mean_loss, losses
`);
            return lines.join('\n');
        },
        // evaluation
        (k) => {
            const noGrad = pick(['torch.no_grad()', 'torch.inference_mode()']);
            return `
@torch.no_grad()
def evaluate${k}(model, loader, num_classes=${pick([10, 100, 1000])}, topk=(1, 5)):
    model.eval()
    correct = torch.zeros(len(topk), device=device)
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.long, device=device)
    total = 0
    total_loss = torch.zeros((), device=device)
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        with ${noGrad}:
            logits = model(images)
        total_loss += F.cross_entropy(logits, labels, reduction="sum")
        maxk = max(topk)
        _, pred = logits.topk(maxk, dim=1)
        hits = pred.eq(labels[:, None])
        for i, kk in enumerate(topk):
            correct[i] += hits[:, :kk].any(dim=1).sum()
        confusion.index_put_((labels, pred[:, 0]), torch.ones_like(labels), accumulate=True)
        total += labels.numel()
    model.train()
    accuracy = (correct / max(total, 1)).tolist()
    return {"loss": total_loss.item() / max(total, 1), "topk": dict(zip(topk, accuracy)), "confusion": confusion.cpu()}
`;
        },
        // data loading
        (k) => {
            const pinned = chance(0.7);
            return `
class RandomTokens${k}(Dataset):
    def __init__(self, size=${pick([1000, 10000, 50000])}, seq_len=${pick([128, 256, 512])}, vocab_size=32000, seed=0):
        generator = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, vocab_size, (size, seq_len), generator=generator)
        self.labels = torch.randint(0, 2, (size,), generator=generator)

    def __len__(self):
        return self.tokens.size(0)

    def __getitem__(self, index):
        return self.tokens[index], self.labels[index]


def make_loaders${k}(batch_size=${pick([32, 64, 128, 256])}, workers=${pick([2, 4, 8])}):
    train_set = RandomTokens${k}(seed=1)
    val_set = RandomTokens${k}(size=1000, seed=2)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers, ${pinned ? 'pin_memory=True, ' : ''}drop_last=True, persistent_workers=workers > 0)
    val_loader = DataLoader(val_set, batch_size=batch_size * 2, num_workers=workers, pin_memory=True)
    return train_loader, val_loader
`;
        },
        // timing
        (k) => {
            const synced = chance(0.7);
            return `
def benchmark_forward${k}(model, batch, warmup=${pick([3, 5, 10])}, iters=${pick([20, 50, 100])}):
    model.eval()
    with torch.no_grad():
        for _ in range(warmup):
            model(batch)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            model(batch)
${synced ? '        torch.cuda.synchronize()\n' : ''}        elapsed = time.perf_counter() - start
    per_iter_ms = elapsed / iters * 1000.0
    throughput = batch.size(0) * iters / elapsed
    print(f"forward: {per_iter_ms:.3f} ms/iter, {throughput:.1f} samples/s")
    return per_iter_ms
`;
        },
        // utilities
        (k) => {
            const hostMove = chance(0.3);
            return `
def count_parameters${k}(model, trainable_only=True):
    params = model.parameters()
    if trainable_only:
        params = (p for p in params if p.requires_grad)
    return sum(p.numel() for p in params)


def save_checkpoint${k}(path, model, optimizer, epoch, best_metric=None):
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
        "best_metric": best_metric,
        "rng": torch.get_rng_state(),
    }
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint${k}(path, model, optimizer=None):
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    if optimizer is not None and "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"].cpu())
    return state.get("epoch", 0), state.get("best_metric")


def mixup${k}(inputs, targets, num_classes, alpha=0.2):
    lam = float(np.random.beta(alpha, alpha))
    index = torch.randperm(inputs.size(0), device=inputs.device)
    mixed = lam * inputs + (1.0 - lam) * inputs[index]
    one_hot = F.one_hot(targets, num_classes).float()
    mixed_targets = lam * one_hot + (1.0 - lam) * one_hot[index]
    return mixed, mixed_targets


def positional_table${k}(length, dim):
    ${hostMove ? 'table = torch.zeros(length, dim).cuda()' : 'table = torch.zeros(length, dim, device=device)'}
    position = torch.arange(length, device=table.device).float()[:, None]
    div = torch.exp(torch.arange(0, dim, 2, device=table.device).float() * (-math.log(10000.0) / dim))
    table[:, 0::2] = torch.sin(position * div)
    table[:, 1::2] = torch.cos(position * div)
    return table
`;
        },
        // EMA + distributed
        (k) => `
class ModelEma${k}:
    def __init__(self, model, decay=${pick(['0.999', '0.9995', '0.9999'])}):
        self.decay = decay
        self.shadow = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}

    @torch.no_grad()
    def update(self, model):
        for name, p in model.named_parameters():
            if name in self.shadow:
                self.shadow[name].mul_(self.decay).add_(p.detach(), alpha=1.0 - self.decay)

    @torch.no_grad()
    def copy_to(self, model):
        for name, p in model.named_parameters():
            if name in self.shadow:
                p.copy_(self.shadow[name])


def all_reduce_mean${k}(tensor):
    if not (dist.is_available() and dist.is_initialized()):
        return tensor
    tensor = tensor.clone()
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor / dist.get_world_size()


def cosine_lr${k}(step, total_steps, base_lr=${pick(['1e-3', '3e-4', '5e-4'])}, warmup=${pick([100, 500, 1000])}, min_lr=1e-6):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
`,
        // a main-like driver
        (k) => `
@dataclass
class RunConfig${k}:
    epochs: int = ${pick([3, 10, 30, 90])}
    lr: float = ${pick(['1e-3', '3e-4', '0.1'])}
    batch_size: int = ${pick([64, 128, 256])}
    compile: bool = ${pick(['True', 'False'])}
    out_dir: str = "runs/exp${k}"


def run_experiment${k}(config=None):
    config = config or RunConfig${k}()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    train_loader, val_loader = make_loaders${k}(batch_size=config.batch_size)
    model = Encoder${k}().to(device)
    if config.compile:
        model = torch.compile(model)
    lr = config.lr
    optimizer = ${pick(opts)}
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=config.epochs * len(train_loader))
    ema = ModelEma${k}(model)
    best = 0.0
    history = []
    for epoch in range(config.epochs):
        loss, _ = train_epoch${k}(model, train_loader, optimizer, scheduler, epoch=epoch)
        ema.update(model)
        metrics = evaluate${k}(model, val_loader, num_classes=2, topk=(1,))
        history.append((epoch, loss, metrics["topk"][1]))
        if metrics["topk"][1] > best:
            best = metrics["topk"][1]
            save_checkpoint${k}(os.path.join(config.out_dir, "best.pt"), model, optimizer, epoch, best)
        print(f"epoch {epoch}: loss {loss:.4f} acc {metrics['topk'][1]:.4f} best {best:.4f}")
    return best, history
`,
    ];

    for (let k = 0; lines < minLines; k++) {
        // every group defines the names run_experiment{k} uses, in an order that varies
        const order = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
        for (let i = order.length - 1; i > 0; i--) {
            const j = Math.floor(rnd() * (i + 1));
            [order[i], order[j]] = [order[j], order[i]];
        }
        for (const t of order) add(templates[t](k));
        add(templates[10](k));
    }
    add(`

def main():
    parser = argparse.ArgumentParser(description="Run one of the experiments in this module.")
    parser.add_argument("--experiment", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    runner = globals()[f"run_experiment{args.experiment}"]
    config = globals()[f"RunConfig{args.experiment}"](epochs=args.epochs)
    best, _ = runner(config)
    print(f"best accuracy {best:.4f}")


if __name__ == "__main__":
    main()
`);
    return parts.join('');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    const arg = (name, dflt) => {
        const i = process.argv.indexOf(name);
        return i > 0 ? Number(process.argv[i + 1]) : dflt;
    };
    process.stdout.write(generateTorchFile(arg('--lines', 6000), arg('--seed', 1234)));
}
