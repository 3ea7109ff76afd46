#!/bin/sh
# Brings the real-code corpus into a git-ignored folder (default .corpus/):
# public repositories nobody on this project wrote, each at a pinned commit,
# with only their source files (Python, CUDA, C/C++ and headers) checked out
# (and an empty git repository in each, as a clone has).
#
# usage: bench/realcode/corpus.sh [DEST]
#
# Each repository is cloned from $ADVISE_MIRROR/<owner>+<name>/repo when that
# git folder exists (a local snapshot), else from https://github.com/. Files
# missing from a snapshot (it leaves out files of 4 MiB and more) are skipped.
#
# Held out for the project's own evaluation, never in this list:
# karpathy/llm.c, karpathy/nanoGPT, pytorch/examples.
set -eu
cd "$(dirname "$0")/../.."
dest=${1:-.corpus}
mirror=${ADVISE_MIRROR:-/work/.mirror}

# owner/name  commit  (what it stands for)
repos="
huggingface/pytorch-image-models aa4b5850c1543fa488abf260f18390eda46cf85d model zoo + training scripts
Lightning-AI/litgpt              26857050fe3ff627cd714fe92f5838f51a3d5efa LLM pretraining/finetuning/generation
facebookresearch/detr            29901c51d7fe8712168b8d0d64351170bc0f83e0 detection training
facebookresearch/mae             efb2a8062c206524e35e47d04501ed4f544c0ae8 self-supervised pretraining
facebookresearch/DiT             ed81ce2229091fd4ecc9a223645f95cf379d582b diffusion transformer training/sampling
kuangliu/pytorch-cifar           49b7aa97b0c12fe0d4054e670403a16b6b834ddd CIFAR training script + models
yunjey/pytorch-tutorial          0500d3df5a2a8080ccfccbc00aca0eacc21818db tutorial training loops
siboehm/SGEMM_CUDA               60cba6f9b20a198116c76f18de8047f44df8c8b8 SGEMM ladder
NVIDIA/cuda-samples              c94ff366aed18c797b8a85dfaac7817b0228b420 CUDA samples
tspeterkim/flash-attention-minimal 00f8f46712d493665c900c32fa3a261c8ef3e20c minimal FlashAttention
xlite-dev/LeetCUDA               cb6a0497e829741fc5e3ad5e43a5beed0d85edcd kernel collection and ladders
ggml-org/ggml                    d99724f2b141fed9e1a9f402213506c081433465 inference engine (ggml-cuda backend)
"

source_file() {
    case "$1" in
    *.py|*.cu|*.cuh|*.c|*.h|*.cc|*.cpp|*.cxx|*.hpp|*.hh|*.hxx|*.inl|*.inc|CMakeLists.txt|.gitignore) return 0 ;;
    esac
    return 1
}

mkdir -p "$dest"
echo "$repos" | while read -r repo commit _; do
    [ -n "$repo" ] || continue
    name=$(echo "$repo" | tr / +)
    out="$dest/$name"
    if [ -f "$out/.advise-corpus-commit" ] && [ "$(cat "$out/.advise-corpus-commit")" = "$commit" ]; then
        continue
    fi
    gitdir="$mirror/$name/repo"
    if [ ! -d "$gitdir" ]; then
        gitdir="$dest/.git-$name"
        [ -d "$gitdir" ] || git clone --quiet --bare --filter=blob:limit=4m "https://github.com/$repo" "$gitdir"
    fi
    git --git-dir="$gitdir" cat-file -e "$commit^{commit}" || { echo "corpus: $repo lacks $commit" >&2; exit 1; }
    rm -rf "$out"
    mkdir -p "$out"
    git --git-dir="$gitdir" ls-tree -r --name-only "$commit" | while IFS= read -r path; do
        source_file "$(basename "$path")" || continue
        mkdir -p "$out/$(dirname "$path")"
        git --git-dir="$gitdir" cat-file blob "$commit:$path" >"$out/$path" 2>/dev/null || rm -f "$out/$path"
    done
    echo "$commit" >"$out/.advise-corpus-commit"
    git init -q "$out" # a checkout, as a user has it: tools find the project's root by its .git
    echo "corpus: $repo at ${commit%????????????????????????????????} in $out" >&2
done
