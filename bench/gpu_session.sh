#!/usr/bin/env bash
# One lent GPU's checks and figures in a single call (docs/gpu.md), most important first, each step
# under its own time cap so that a hang cannot spend the whole lease. Each step's log goes to
# $OUT/<step>.log (./gpu-logs without $OUT); the last lines printed are a short summary.
#
#   bash bench/gpu_session.sh                 # every step
#   STEPS="tests speed" bash bench/gpu_session.sh
#
# On a machine without the project's virtual environment it uses the python3 on PATH with the
# repository on PYTHONPATH (the trainer needs torch, pyyaml and pydantic only).
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
STEPS=${STEPS:-"env tests shapes speed packing packing_mps"}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/rnntune-inductor}
SUMMARY=()

step() {  # step NAME CAP_SECONDS COMMAND...: run it, log it, print its tail and record rc and time
    local name=$1 cap=$2
    shift 2
    case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
    echo "== $name (cap ${cap} s) $(date +%T)"
    local t0=$SECONDS
    timeout -k 10 "$cap" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    tail -n "${TAIL:-12}" "$OUT/$name.log"
    SUMMARY+=("$name: rc $rc in $((SECONDS - t0)) s")
}

step env 20 bash -c "nvidia-smi; $PY -c 'import torch, triton, sys; print(sys.version); print(\"torch\", torch.__version__, \"CUDA\", torch.version.cuda, \"cuDNN\", torch.backends.cudnn.version(), \"Triton\", triton.__version__, torch.cuda.get_device_name())'"
# make test-gpu's tests (the graphed path against eager, bf16 autocast, twelve trial shapes in one
# process on captured graphs), run from their files so that no tuner dependency must be installed.
step tests 180 "$PY" -m pytest -m gpu -q -p no:cacheprovider tests/trainer/cells/test_cuda_graphs.py \
    tests/trainer/cells/test_fallback.py tests/trainer/cells/test_cuda_rounds.py
# The first training step of many trial shapes in one process: compile and capture cost on a GPU.
step shapes 50 "$PY" -m bench.compile_cost --device cuda --trials 12
step speed 170 "$PY" -m bench.trainer_speed --device cuda --steps 15 --precisions fp32,bf16,tf32
step packing 100 "$PY" -m bench.packing --device cuda --ks 1,2,4,8 --steps 30
# The same under the MPS daemon, started as the GPU image's worker starts it (tuner/sweeps/cluster/mps.py).
step packing_mps 120 bash -c "export CUDA_MPS_PIPE_DIRECTORY=/tmp/rnntune-mps CUDA_MPS_LOG_DIRECTORY=/tmp/rnntune-mps-log; \
    mkdir -p /tmp/rnntune-mps /tmp/rnntune-mps-log; \
    [ \"\$($PY -m tuner.sweeps.cluster.mps auto 0.25 1)\" = start ] && nvidia-cuda-mps-control -d; \
    $PY -m bench.packing --device cuda --ks 1,4,8 --steps 30; rc=\$?; echo quit | nvidia-cuda-mps-control; exit \$rc"

echo "== summary"
printf '%s\n' "${SUMMARY[@]}"
