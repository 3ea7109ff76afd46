# Sourced by scripts/fuzz.sh and scripts/fuzz-coverage.sh: the seed folders
# of each fuzz target (relative to the repository root). The test suite's
# replay (CMakeLists.txt, FUZZ_SEEDS_*) takes the same, less the slow CUDA
# fixtures.
seeds_of() {
    case $1 in
        profile) echo tests/fixtures/profiles samples/profiles tests/fuzz/seeds/profile ;;
        torch_import) echo tests/fixtures/traces ;;
        python) echo tests/fixtures/python samples/python ;;
        cuda) echo samples/cuda tests/fixtures/cuda ;;
        *) echo "tests/fuzz/seeds/$1" ;;
    esac
}
