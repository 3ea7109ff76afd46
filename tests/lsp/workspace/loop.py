import torch


def run(loader):
    for x in loader:
        torch.cuda.empty_cache()
