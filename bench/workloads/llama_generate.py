"""Token-by-token generation with a small Llama-style decoder (transformers,
random weights), written the plain way: a Python loop over tokens, the full
sequence re-fed each step without a KV cache, greedy argmax read back with
.item().

    python bench/workloads/llama_generate.py [--tokens 64]
"""
import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).cuda().eval()
    ids = torch.randint(0, config.vocab_size, (1, 32), device="cuda")
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(args.tokens):
            logits = model(ids, use_cache=False).logits
            next_id = logits[0, -1].argmax().item()
            ids = torch.cat([ids, torch.tensor([[next_id]], device="cuda")], dim=1)
    torch.cuda.synchronize()
    print(f"{args.tokens} tokens in {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
