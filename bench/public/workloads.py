"""Public training workloads nobody on this project wrote, for the proof of
issue 17: each is the repository's own script at a pinned commit, run on
random data, as written and with advise's advice followed.

A workload is described, never copied: the script comes from the corpus
(bench/realcode/corpus.sh fetches it into .corpus/), and the few edits that
make it run here are listed below as (file, old text, new text). Each old
text must occur exactly once, so a changed upstream file stops the run
instead of timing something else.

- "random" edits make the script run headless on random data of the size
  the harness asks for: one epoch, no download (the dataset classes are
  replaced in bench/public/launch.py), no terminal queries.
- "advised" edits follow advise's findings on the recorded profile; which
  finding each follows is named beside it.
- "variants" (optional) holds further named sets of edits, each another way
  of following a finding (run.py --variants as-written,graphed,...); each
  named copy has the random-data edits and its own, not "advised"'s.
"""

# Each workload: where its files are, how many optimizer steps make one
# training iteration, the stand-in data, and its edits.
WORKLOADS = {
    "cifar": {
        "repo": "kuangliu/pytorch-cifar",
        "commit": "49b7aa97b0c12fe0d4054e670403a16b6b834ddd",
        "corpus": "kuangliu+pytorch-cifar",
        "copy": ["main.py", "utils.py", "models"],
        "script": "main.py",
        "steps_per_iteration": 1,
        "batch": 128,
        "data": "cifar10",
        "random": [
            ("main.py", "for epoch in range(start_epoch, start_epoch+200):",
             "for epoch in range(start_epoch, start_epoch+1):"),
            ("utils.py", "_, term_width = os.popen('stty size', 'r').read().split()",
             "term_width = 80"),
        ],
        # PR003 (#1 of "What to do first"): the GPU idle 3.16 ms before the batch's copy at line 100, 349
        # times, the host busy after line 110; its advice for PyTorch: "use `DataLoader(num_workers=...,
        # pin_memory=True)`". (Before the profiler kept every gap of 1 ms or more, the #1 was PR002 at
        # lines 103-104, followed with torch.compile(mode="reduce-overhead"): bench/RESULTS.md.)
        "advised": [
            ("main.py", "trainset, batch_size=128, shuffle=True, num_workers=2)",
             "trainset, batch_size=128, shuffle=True, num_workers=8, pin_memory=True)"),
        ],
        "variants": {
            # PR002 (#1 of "What to do first" since the critical path, 3.29 ms per step: launch-bound at
            # train's forward and loss, lines 103-104) says "capture them in a CUDA graph
            # (`torch.compile(mode="reduce-overhead")`, ...)": the model compiled so, before DataParallel
            # wraps it (the first pass's edit, 5f9af5b)
            "compiled": [
                ("main.py", "net = net.to(device)\n",
                 "net = torch.compile(net.to(device), mode=\"reduce-overhead\")\n"),
            ],
            # The same two PR002 findings (2026-12-04 05:24 recording: #1 BasicBlock.forward, lines 37-40,
            # 2.78 ms per step; #2 train's loss and backward, lines 103-104, 1.86 ms) followed the way the
            # estimate models it, CUDA graphs alone, without torch.compile's fusion: the model's forward
            # and backward captured with torch.cuda.make_graphed_callables for the training batch's shape
            # (every batch holds 128 images here; the evaluation, in eval mode, runs the eager forward).
            # cudnn.benchmark, which the script sets a few lines below, is set before the capture so that
            # the graph holds the kernels the eager copy picks.
            "graphed": [
                ("main.py", "net = net.to(device)\n",
                 "net = net.to(device)\n"
                 "cudnn.benchmark = True\n"
                 "net = torch.cuda.make_graphed_callables(net, (torch.randn(128, 3, 32, 32, device=device),))\n"),
            ],
        },
    },
    "lstm": {
        "repo": "yunjey/pytorch-tutorial",
        "commit": "0500d3df5a2a8080ccfccbc00aca0eacc21818db",
        "corpus": "yunjey+pytorch-tutorial",
        "copy": ["tutorials/02-intermediate/language_model/main.py",
                 "tutorials/02-intermediate/language_model/data_utils.py"],
        "script": "main.py",
        "steps_per_iteration": 1,
        "batch": 20 * 30,
        "data": "text",
        "random": [
            ("main.py", "num_epochs = 5", "num_epochs = 1"),
            # the last step's loss, printed after the timed steps (on the line of a comment: no line moves)
            ("main.py", "# Test the model\n",
             "print('Last step, Loss: {:.4f}'.format(loss.item()))  # Test the model\n"),
        ],
        # PY009 (#1 of "What to do first"): its fix, as advise writes it. (Before the profiler kept every
        # gap of 1 ms or more, the #1 was PR002 in RNNLM.forward, followed with
        # torch.compile(mode="reduce-overhead"): bench/RESULTS.md.)
        "advised": [
            ("main.py", "from data_utils import Dictionary, Corpus\n",
             "from data_utils import Dictionary, Corpus\ntorch.set_float32_matmul_precision(\"high\")\n"),
        ],
        # PR002, #1 since the critical path (815 µs per step: 23,336 tiny launches from lines 40-46 of
        # RNNLM.forward) and #2 (557 µs: lines 80-81, loss.backward() and clip_grad_norm_): "capture them
        # in a CUDA graph (`torch.compile(mode="reduce-overhead")`, `torch.cuda.graph`) or fuse them
        # (`torch.compile`)". The first pass's torch.compile(mode="reduce-overhead") saved 0.17 ms: dynamo
        # leaves nn.LSTM eager unless torch._dynamo.config.allow_rnn is set, so cuDNN's launches stayed.
        "variants": {
            # the model's forward (lines 40-49) and its backward captured as two CUDA graphs with
            # torch.cuda.make_graphed_callables, through a module taking and returning tensors only;
            # the loss, clip_grad_norm_ and Adam stay eager, and the sampling after training uses the
            # eager model (other shapes)
            "graphed": [
                ("main.py", "optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)\n",
                 "optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)\n"
                 "\n"
                 "# PR002: the model's forward and backward replayed as CUDA graphs\n"
                 "class Step(nn.Module):\n"
                 "    # make_graphed_callables takes and returns tensors: (x, h0, c0) -> (out, h, c)\n"
                 "    def __init__(self, model):\n"
                 "        super().__init__()\n"
                 "        self.model = model\n"
                 "\n"
                 "    def forward(self, x, h0, c0):\n"
                 "        out, (h, c) = self.model(x, (h0, c0))\n"
                 "        return out, h, c\n"
                 "\n"
                 "graphed_model = torch.cuda.make_graphed_callables(Step(model), (\n"
                 "    torch.randint(0, vocab_size, (batch_size, seq_length), device=device),\n"
                 "    torch.zeros(num_layers, batch_size, hidden_size, device=device),\n"
                 "    torch.zeros(num_layers, batch_size, hidden_size, device=device)))\n"),
                ("main.py", "        outputs, states = model(inputs, states)\n",
                 "        outputs, h, c = graphed_model(inputs, *states)\n"
                 "        states = (h, c)\n"),
            ],
            # the first pass's torch.compile(mode="reduce-overhead"), with dynamo tracing nn.LSTM
            "compiled-rnn": [
                ("main.py", "model = RNNLM(vocab_size, embed_size, hidden_size, num_layers).to(device)",
                 "torch._dynamo.config.allow_rnn = True\n"
                 "model = torch.compile(RNNLM(vocab_size, embed_size, hidden_size, num_layers).to(device), "
                 "mode=\"reduce-overhead\")"),
                # workarounds (2026-12-03, PyTorch 2.11): compiled so, the model returned h and c 4-D,
                # (1, 1, 20, 1024), which the next call's nn.LSTM refused: back to (layers, batch, hidden),
                # shapes printed once; and they live in the CUDA graph's memory, which the next replay
                # overwrites ("accessing tensor output of CUDAGraphs that has been overwritten"): cloned
                ("main.py", "    return [state.detach() for state in states] \n",
                 "    if any(s.dim() != 3 for s in states) and not getattr(detach, \"shown\", False):\n"
                 "        print(\"compiled model returned h, c of shapes\", [tuple(s.shape) for s in states])\n"
                 "        detach.shown = True\n"
                 "    return [state.detach().reshape(num_layers, batch_size, hidden_size).clone() for state in states]\n"),
                ("main.py", "            output, state = model(input, state)\n",
                 "            output, state = model(input, state)\n"
                 "            state = tuple(s.reshape(num_layers, 1, hidden_size).clone() for s in state)\n"),
            ],
        },
    },
    "gan": {
        "repo": "yunjey/pytorch-tutorial",
        "commit": "0500d3df5a2a8080ccfccbc00aca0eacc21818db",
        "corpus": "yunjey+pytorch-tutorial",
        "copy": ["tutorials/03-advanced/generative_adversarial_network/main.py"],
        "script": "main.py",
        "steps_per_iteration": 2,
        "batch": 100,
        "data": "mnist",
        "random": [
            ("main.py", "num_epochs = 200", "num_epochs = 1"),
        ],
        "advised": [
            # PY014 (#1 of "What to do first"): its fix, as advise writes it
            ("main.py", "                                          shuffle=True)",
             "                                          shuffle=True, num_workers=4, persistent_workers=True)"),
        ],
    },
    "vae": {
        "repo": "yunjey/pytorch-tutorial",
        "commit": "0500d3df5a2a8080ccfccbc00aca0eacc21818db",
        "corpus": "yunjey+pytorch-tutorial",
        "copy": ["tutorials/03-advanced/variational_autoencoder/main.py"],
        "script": "main.py",
        "steps_per_iteration": 1,
        "batch": 128,
        "data": "mnist",
        "random": [
            ("main.py", "num_epochs = 15", "num_epochs = 1"),
        ],
        "advised": [
            # PY014 (#1 of "What to do first"): its fix, as advise writes it
            ("main.py", "                                          shuffle=True)",
             "                                          shuffle=True, num_workers=4, persistent_workers=True)"),
        ],
    },
}

# The language model's next advice once graphed (2026-12-03 22:24 recording of the graphed copy: PY009,
# #1 of "What to do first", 645 µs per step, "Enable TF32 matmuls with
# torch.set_float32_matmul_precision("high")"): the graphed copy with that fix, so that the estimate is
# measured against the copy it was made on.
WORKLOADS["lstm"]["variants"]["graphed-tf32"] = (
    WORKLOADS["lstm"]["variants"]["graphed"] + WORKLOADS["lstm"]["advised"])
