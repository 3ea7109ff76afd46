"""Sample tokens from a tiny GPT-style decoder with random weights.

An inference script as people write it while prototyping: the attention and the
GELU are spelled out by hand, the key/value cache is preallocated, and tokens are
sampled one at a time (top-k, temperature) until --steps tokens are produced.

    python generate_text.py --steps 64

What `advise check` should report in this file:

  PY007 unfused-elementwise           line 51   tanh-GELU formula in gelu_tanh() -> F.gelu(x, approximate="tanh")
  PY006 unfused-attention             line 77   weights @ v after scores = q @ k.transpose(-2, -1) / math.sqrt(d),
                                                masked_fill, softmax (lines 73-77) -> F.scaled_dot_product_attention
  PY004 host-tensor-moved-to-device   line 107  torch.zeros(shape).to(prompt.device): the KV cache -> device=
  PY010 inference-without-no-grad     line 119  model(next_token, ...) in the decode loop after model.eval(), no no_grad

Suppressed on purpose with `# advise: ignore[PY001]`: line 115, next_token.item()
in the decode loop syncs every step, but the sampled id must reach the host to be
streamed and checked against EOS: that sync is inherent to token-by-token decoding.

Look-alikes that are deliberately correct and must NOT be reported:

  - the causal-mask buffer torch.tril(torch.ones(...)) moves once with the
    module; torch.arange/torch.randint get device=                           PY004
  - F.softmax over the top-k logits in the sampler: no `@ v` follows          PY006
  - the prefill call model(prompt, ...) runs once, outside any loop          PY010
  - generation is timed with torch.cuda.synchronize() before the second
    time.perf_counter() read (guarded by `if device.type == "cuda":`)        PY002
  - torch.set_float32_matmul_precision("high") enables TF32                  PY009
"""
import argparse
import math
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 4096
    d_model: int = 256
    n_heads: int = 4
    n_layers: int = 4
    max_len: int = 512


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc_in = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.fc_out = nn.Linear(4 * cfg.d_model, cfg.d_model)
        self.register_buffer("causal_mask", torch.tril(torch.ones(cfg.max_len, cfg.max_len, dtype=torch.bool)))

    def attention(self, x, cache, pos):
        B, T, C = x.shape
        heads = (B, T, self.n_heads, self.head_dim)
        q, k, v = (t.view(heads).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        cache[:, :, :, pos:pos + T] = torch.stack((k, v))
        k, v = cache[:, :, :, :pos + T]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = self.causal_mask[pos:pos + T, :pos + T]
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = weights @ v
        return self.proj(out.transpose(1, 2).reshape(B, T, C))

    def forward(self, x, cache, pos):
        x = x + self.attention(self.ln1(x), cache, pos)
        return x + self.fc_out(gelu_tanh(self.fc_in(self.ln2(x))))


class TinyDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, tokens, caches, pos):
        positions = torch.arange(pos, pos + tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos_embed(positions)
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i], pos)
        return self.lm_head(self.ln_f(x))


def generate(model, prompt, max_new_tokens, temperature=0.8, top_k=50, eos_id=None):
    model.eval()
    cfg = model.cfg
    shape = (cfg.n_layers, 2, prompt.shape[0], cfg.n_heads, cfg.max_len, cfg.d_model // cfg.n_heads)
    caches = torch.zeros(shape).to(prompt.device)
    logits = model(prompt, caches, 0)
    pos = prompt.shape[1]
    generated = []
    for _ in range(max_new_tokens):
        top_logits, top_ids = torch.topk(logits[:, -1, :] / temperature, top_k, dim=-1)
        probs = F.softmax(top_logits, dim=-1)
        next_token = top_ids.gather(-1, torch.multinomial(probs, num_samples=1))
        token_id = next_token.item()  # advise: ignore[PY001] needed on the host to stream it and stop at EOS
        generated.append(token_id)
        if token_id == eos_id or pos + 1 >= cfg.max_len:
            break
        logits = model(next_token, caches, pos)
        pos += 1
    return generated


def main():
    parser = argparse.ArgumentParser(description="Sample from a tiny random-weight decoder.")
    parser.add_argument("--steps", type=int, default=200, help="tokens to generate")
    parser.add_argument("--prompt-len", type=int, default=16)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.set_float32_matmul_precision("high")

    cfg = Config()
    model = TinyDecoder(cfg).to(device)
    prompt = torch.randint(0, cfg.vocab_size, (1, args.prompt_len), device=device)
    max_new = max(1, min(args.steps, cfg.max_len - args.prompt_len))

    t0 = time.perf_counter()
    tokens = generate(model, prompt, max_new)
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0

    print(f"final: generated {len(tokens)} tokens in {elapsed:.3f} s "
          f"({len(tokens) / elapsed:.1f} tok/s) on {device.type}, first ids {tokens[:8]}")


if __name__ == "__main__":
    main()
