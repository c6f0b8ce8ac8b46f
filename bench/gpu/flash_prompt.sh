# Sourced by the prefill scripts of bench/gpu: the build's moepage and libraries, the 4-layer Flash
# slice (synthesized into MODEL when absent) and a deterministic prompt of LEN ids.
#   flash_prompt BUILD MODEL LEN   -> sets moepage and ids; exits if the synthesis fails
flash_prompt() {
  local build=$1 model=$2 len=$3 vocab
  export LD_LIBRARY_PATH="$build/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  moepage="$build/bin/moepage"
  if [ ! -f "$model/config.json" ]; then
    "$moepage" synth --preset flash --layers 4 --seed 7 --out "$model" --log-level warn || exit 1
  fi
  vocab=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$model/config.json")
  ids=$(python3 -c "import sys; n, v = int(sys.argv[1]), int(sys.argv[2]); print(','.join(str((i*7919+17)%v) for i in range(n)))" "$len" "$vocab")
}
