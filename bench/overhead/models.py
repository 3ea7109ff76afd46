"""The models of the overhead benchmark, written here (no downloads): a
GPT-style decoder in plain eager PyTorch, and a small Transformer language
model built from torch.nn's layers. Sizes are chosen so that the small ones
are launch-bound on an H200 and gpt2 (124M parameters) is GPU-bound."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, width, heads):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight
        for name, p in self.named_parameters():
            if name.endswith("down.weight") or name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * layers))

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class TransformerLM(nn.Module):
    def __init__(self, vocab, context, layers, width, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.zeros(context, width))
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(width, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.embed(idx) + self.positions[:t]
        x = self.encoder(x, mask=self.mask[:t, :t], is_causal=True)
        logits = self.out(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# name: (constructor, constructor arguments, batch, context, bf16 autocast)
MODELS = {
    "gpt-small": (GPT, dict(vocab=65, context=256, layers=6, width=384, heads=6), 64, 256, True),
    "tlm-small": (TransformerLM, dict(vocab=10000, context=128, layers=4, width=256, heads=4), 32, 128, False),
    "gpt2": (GPT, dict(vocab=50304, context=1024, layers=12, width=768, heads=12), 16, 1024, True),
}
