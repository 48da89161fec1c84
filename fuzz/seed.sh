#!/usr/bin/env bash
# Seeds the fuzz corpora (git-ignored) from the real declaration files of the repository.
# Usage: bash fuzz/seed.sh   (from anywhere)
set -euo pipefail
fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$fuzz_dir")"

phase="$fuzz_dir/corpus/phase_schema"
target="$fuzz_dir/corpus/target_toml"
mkdir -p "$phase" "$target"

cp "$root/PhaseSchema.json" "$phase/ours-PhaseSchema.json"
for file in "$root"/tests/fixtures/neverc/PhaseSchema*.json; do
    cp "$file" "$phase/neverc-$(basename "$file")"
done
for file in "$root"/targets/*.toml; do
    cp "$file" "$target/$(basename "$file")"
done

# Saved regressions join the corpora, so a run starts from every input that once failed.
for name in phase_schema target_toml; do
    if [ -d "$fuzz_dir/regressions/$name" ]; then
        find "$fuzz_dir/regressions/$name" -maxdepth 1 -type f ! -name '.*' ! -name '*.md' \
            -exec cp {} "$fuzz_dir/corpus/$name/" \;
    fi
done

echo "phase_schema: $(find "$phase" -type f | wc -l) files; target_toml: $(find "$target" -type f | wc -l) files"
