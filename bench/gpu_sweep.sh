#!/usr/bin/env bash
# A PTB-size sweep end to end on the GPU of this machine (docs/gpu.md, "A PTB-size sweep on a GPU"):
# the mogrifier_lstm space at its 24M weights on a corpus of PTB's size (bench/ptb_size_corpus.py),
# PER_GPU trials packed on the GPU under CUDA MPS, early stopping on (the default scheduler), the
# study in $OUT/study.db; then one line per trial from the study. The study's page: open that file
# with `rnntune serve --db sqlite:///.../study.db`.
#
#   PTB_DIR=data/ptb-size bash bench/gpu_sweep.sh
#   PTB_DIR=data/ptb-size TRIALS=32 MAX_STEPS=2080 MAX_HOURS=1 bash bench/gpu_sweep.sh
#
# Every trial trains MAX_STEPS steps unless stopped early (832: 4 passes over PTB's training set at
# batch 64 and BPTT 70), evaluated every EVAL_EVERY steps; no trial starts after MAX_HOURS (those
# in flight finish). MPS=0 packs the trials without MPS (they then take turns on the GPU).
# KERNEL=fused trains with the Mogrifier rounds in one Triton kernel per step (mogrifier_kernel).
# The corpus is PTB's shape, not PTB: docs/gpu.md says what it was built from.
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
PTB_DIR=${PTB_DIR:?set PTB_DIR to a folder with ptb.train.txt, ptb.valid.txt and ptb.test.txt}
TRIALS=${TRIALS:-20} PER_GPU=${PER_GPU:-4} MAX_STEPS=${MAX_STEPS:-832} EVAL_EVERY=${EVAL_EVERY:-104}
MAX_HOURS=${MAX_HOURS:-0.1} CPUS=${CPUS:-2} MPS=${MPS:-1} KERNEL=${KERNEL:-torch}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/rnntune-inductor}

if [ "$MPS" = 1 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/rnntune-mps CUDA_MPS_LOG_DIRECTORY=/tmp/rnntune-mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        trap 'echo quit | nvidia-cuda-mps-control' EXIT
        echo "CUDA MPS started"
    else
        echo "CUDA MPS did not start: the packed trials take turns on the GPU" >&2
    fi
fi

GPUS_PER_TRIAL=$("$PY" -c "print(1 / $PER_GPU)")
set -o pipefail
"$PY" -c 'from tuner.cli import main; main()' sweep --space mogrifier_lstm \
    --set "data_dir=$(realpath "$PTB_DIR")" --set "max_steps=$MAX_STEPS" --set "eval_every=$EVAL_EVERY" \
    --set "mogrifier_kernel=$KERNEL" --trials "$TRIALS" --parallel "$PER_GPU" --gpus-per-trial "$GPUS_PER_TRIAL" --cpus-per-trial "$CPUS" \
    --max-hours "$MAX_HOURS" --keep-top 2 --db "sqlite:///$(realpath "$OUT")/study.db" \
    --storage "${STORAGE:-/tmp/rnntune-studies}" --name "${NAME:-ptb-size-gpu}" 2>&1 | tee "$OUT/sweep.log"
rc=$?
"$PY" - "$OUT/study.db" "${NAME:-ptb-size-gpu}" <<'PY'
import sys
import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name=sys.argv[2], storage=f"sqlite:///{sys.argv[1]}")
print("trial  state     val loss  steps  s/step   wall s  path    rounds  rank")
for t in study.trials:
    a, p = t.user_attrs, t.params
    steps = max(t.intermediate_values, default=0)
    print(
        f"{t.number:5d}  {t.state.name:8s}  {t.value if t.value is not None else float('nan'):8.4f}  {steps:5d}"
        f"  {a.get('seconds_per_step', float('nan')):6.3f}  {a.get('wall_time_s', float('nan')):7.1f}"
        f"  {a.get('cuda_path_used', '-'):6s}  {p.get('mogrifier_rounds', '-')!s:6s}  {p.get('mogrifier_rank', '-')!s:4s}"
    )
PY
exit $rc
