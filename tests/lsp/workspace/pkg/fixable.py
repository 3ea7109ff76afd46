import torch

buf = torch.zeros(3, 4).cuda()
