// The shape of issue 19's latency report: a 50-line training script
// (imports, a model class, module-level loops full of GPU lines, an
// evaluation loop) repeated 120 times into one 6,000-line module. Module-level
// code is the hard case for an incremental analyser: the module is one scope
// of 120 copies of the same names, and every loop is a top-level statement.
//
//   node gen_repeated_script.mjs [--copies N] > repeated.py
import { fileURLToPath } from 'node:url';

export const TRAINING_SCRIPT = `import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda")


class Net(nn.Module):
    def __init__(self, dim=512, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 4)
        self.fc2 = nn.Linear(dim * 4, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = self.fc2(h) + x
        return self.head(h)


model = Net().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.randn(4096, 512)
labels = torch.randint(0, 10, (4096,))
losses = []
for step in range(200):
    idx = torch.randint(0, 4096, (64,))
    x = data[idx].to(device)
    y = labels[idx].to(device)
    out = model(x)
    loss = F.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if step % 20 == 0:
        torch.cuda.synchronize()
        print(step, loss.item())

model.eval()
correct = 0
for i in range(0, 4096, 256):
    x = data[i:i + 256].cuda()
    pred = model(x).argmax(dim=1).cpu()
    correct += (pred == labels[i:i + 256]).sum().item()
print("accuracy", correct / 4096)
total = 0.0
for p in model.parameters():
    total += p.norm().item()
print("norm", total)
`;

export function generateRepeatedScript(copies = 120) {
    return TRAINING_SCRIPT.repeat(copies);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    const i = process.argv.indexOf('--copies');
    process.stdout.write(generateRepeatedScript(i > 0 ? Number(process.argv[i + 1]) : 120));
}
