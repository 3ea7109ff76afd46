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
        ],
        # PY009 (#1 of "What to do first"): its fix, as advise writes it. (Before the profiler kept every
        # gap of 1 ms or more, the #1 was PR002 in RNNLM.forward, followed with
        # torch.compile(mode="reduce-overhead"): bench/RESULTS.md.)
        "advised": [
            ("main.py", "from data_utils import Dictionary, Corpus\n",
             "from data_utils import Dictionary, Corpus\ntorch.set_float32_matmul_precision(\"high\")\n"),
        ],
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
