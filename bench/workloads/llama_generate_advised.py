"""llama_generate.py after following advise's top finding on its H200
profile (2026-11-30): PR002 -- 17,523 tiny kernel launches from the model
call while the GPU idles ~32 us between them: fuse them with torch.compile
(dynamic shapes: the sequence grows every token, so CUDA graphs, the other
half of the advice, would be recorded once per length). Nothing else changed.

    python bench/workloads/llama_generate_advised.py [--tokens 64] [--repeat 1] [--eager]

--repeat N generates N times in the same process and times each (the first
includes compiling, the later ones the steady state). --eager leaves
torch.compile out: llama_generate.py's loop, for the baseline of --repeat.
"""
import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--eager", action="store_true", help="no torch.compile (the baseline)")
    args = parser.parse_args()
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).cuda().eval()
    if not args.eager:
        model = torch.compile(model, dynamic=True)
    prompt = torch.randint(0, config.vocab_size, (1, 32), device="cuda")
    for _ in range(args.repeat):
        ids = prompt
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
