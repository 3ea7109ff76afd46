import torch


def add(a, b):
    return a + b
