#!/usr/bin/env bash
# CUDA MPS (the Multi-Process Service) for processes sharing one GPU: their kernels run at once on the card's SMs
# instead of taking turns (issue 52, item 3). A daemon of its own, its pipe and log folders in DIR:
#   scripts/mps.sh start DIR   # then give the processes CUDA_MPS_PIPE_DIRECTORY=DIR/pipe (what `env` prints)
#   scripts/mps.sh env DIR     # the variables a client needs, as `export` lines
#   scripts/mps.sh stop DIR    # that daemon quits; its folders stay
# DIR is made and marked as this script's own (DIR/.mps-own); a DIR that exists without that mark is refused, and
# nothing is ever deleted. Where the driver has no nvidia-cuda-mps-control (or it does not start), start says so and
# exits 3, so a caller can go on without MPS. A mistake is one line, exit 2.
set -uo pipefail
say() { echo "mps.sh: $*" >&2; }
[ $# = 2 ] && [ -n "$2" ] || { say "usage: mps.sh start|env|stop DIR"; exit 2; }
what=$1 dir=$2
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
mark="$dir/.mps-own"
own() { [ -d "$dir" ] && [ ! -L "$dir" ] && [ -f "$mark" ] && [ ! -L "$mark" ]; }
case "$what" in
  start)
    if [ -e "$dir" ] || [ -L "$dir" ]; then
      own || { say "$dir exists and is not a folder this script made (no $mark); give another DIR"; exit 2; }
    fi
    command -v nvidia-cuda-mps-control >/dev/null || { say "no nvidia-cuda-mps-control on PATH: no MPS here"; exit 3; }
    if ! own; then
      mkdir -p "$dir" && : > "$mark" || { say "cannot make $dir"; exit 2; }
    fi
    mkdir -p "$dir/pipe" "$dir/log" || exit 2
    CUDA_MPS_PIPE_DIRECTORY="$dir/pipe" CUDA_MPS_LOG_DIRECTORY="$dir/log" nvidia-cuda-mps-control -d ||
      { say "nvidia-cuda-mps-control -d failed (the driver may not allow MPS here): no MPS"; exit 3; }
    echo "started: export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log" ;;
  env)
    own || { say "$dir is not a folder this script made (start first)"; exit 2; }
    echo "export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log" ;;
  stop)
    own || { say "$dir is not a folder this script made; nothing stopped"; exit 2; }
    command -v nvidia-cuda-mps-control >/dev/null || { say "no nvidia-cuda-mps-control on PATH: nothing to stop"; exit 3; }
    echo quit | CUDA_MPS_PIPE_DIRECTORY="$dir/pipe" nvidia-cuda-mps-control ;;
  *) say "usage: mps.sh start|env|stop DIR (got '$what')"; exit 2 ;;
esac
