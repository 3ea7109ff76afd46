# PyTorch's entry must win over CUPTI's for this process and device.
import torch
x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
for _ in range(3):
    y = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    y.fill_(1)
    del y
torch.cuda.synchronize()
print("torch: max_memory_allocated", torch.cuda.max_memory_allocated(), "max_memory_reserved", torch.cuda.max_memory_reserved())
