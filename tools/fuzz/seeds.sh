# Sourced, not run: the committed seeds each libFuzzer target starts from (a folder, relative to
# the repository root). tools/fuzz/pack.sh packs them for a campaign, moepage.sh's CI fuzz stage
# runs each target 20,000 inputs from them. plugin-elf starts from the fake plugins of a
# plain build (build/fake-plugins: small ELF files, good and bad), where there is one.
declare -A fuzz_seeds=(
  [safetensors-header]=tests/fuzz/corpus/safetensors_header [shard-index]=tests/fuzz/corpus/shard_index
  [config-json]=tests/fuzz/corpus/config_json [adapter]=tests/fuzz-adapter/seeds/adapter
  [trace]=tests/fuzz-adapter/seeds/trace [profile]=configs [tokenizer-json]=tests/fuzz-tokenizer/seeds
  [plugin-elf]=build/fake-plugins [ablation-spec]=tests/fuzz-spec/seeds/ablation_spec
  [generation-config]=tests/fuzz-spec/seeds/generation_config)
