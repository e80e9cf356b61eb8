#!/usr/bin/env bash
# nccl_check.sh: on the GPU machine, proves that training through DistributedDataParallel on NCCL with
# a world of one gives the numbers of training without it (issue 20). It runs
# examples/train_gpt_task --device cuda three times with the same seed: twice plainly (to see whether
# the GPU run repeats itself bit for bit) and once with --ddp (init_process_group(NCCL) without mpirun:
# every gradient goes through a bucket, an NCCL all-reduce with ncclAvg over one rank on the
# communication stream, and back). It compares the last step's loss and the sum of the held-out logits
# that each run prints ("last step: loss X; held-out logits sum Y"): they must be equal, or, when the
# plain runs already differ from each other (atomic additions in a backward kernel), the DDP run must
# be as close to the first as the second is. Several ranks on NCCL need a GPU each: this one-GPU
# machine cannot run them (NCCL refuses two ranks on one GPU).
#
# Run it from the project root on the GPU machine, after the build (../shared/gpu/README.md):
#   bash .gpu-deps/gpu-check build && bash tools/gpu/nccl_check.sh
# Environment: TT_GPU_BUILD (default /tmp/ttgpu), OUT (logs; default /tmp/gpu-check), STEPS (60).
# Exit status 0 when the runs agree, 1 otherwise.
set -uo pipefail

B=${TT_GPU_BUILD:-/tmp/ttgpu}
OUT=${OUT:-/tmp/gpu-check}
STEPS=${STEPS:-60}
mkdir -p "$OUT"
exe=$B/examples/train_gpt_task
if [[ ! -x $exe ]]; then
  echo "nccl_check: $exe is missing: run 'bash .gpu-deps/gpu-check build' first" >&2
  exit 1
fi
if ! grep -q "TINYTORCH_HAS_NCCL" "$B/build.ninja" 2>/dev/null; then
  echo "nccl_check: the build in $B has no NCCL (CUDA on and nccl.h, libnccl in the CUDA prefix?)" >&2
  exit 1
fi

args=(--device cuda --steps "$STEPS" --length 6 --eval-every "$STEPS" --eval-size 200 --target 0 --seed 3
  --out "$OUT/nccl_runs")
log=$OUT/nccl_check.txt
: > "$log"

# run NAME [EXTRA ARGS]: one training run; prints its "last step" line (empty when it failed).
run() {
  local name=$1
  shift
  echo "=== $name: $exe ${args[*]} $*" >> "$log"
  if ! OMP_NUM_THREADS=4 timeout 300 "$exe" "${args[@]}" "$@" >> "$log" 2>&1; then
    echo "nccl_check: the $name run failed (see $log):" >&2
    tail -5 "$log" >&2
    return 1
  fi
  grep -a "^last step:" "$log" | tail -1
}

plain1=$(run plain) || exit 1
plain2=$(run "plain again") || exit 1
ddp=$(run "ddp (NCCL, world of one)" --ddp) || exit 1
grep -aq "^data parallel: 1 rank .*(NCCL)" "$log" || {
  echo "nccl_check: the --ddp run did not report an NCCL group (see $log)" >&2
  exit 1
}
echo "plain:       $plain1"
echo "plain again: $plain2"
echo "ddp (NCCL):  $ddp"

# The numbers of a "last step: loss X; held-out logits sum Y" line: "X Y".
numbers() { sed -E 's/^last step: loss ([^;]+); held-out logits sum (.+)$/\1 \2/' <<< "$1"; }
if [[ $plain1 == "$plain2" ]]; then
  if [[ $ddp == "$plain1" ]]; then
    echo "OK: DDP on NCCL (world of one) gives bit-identical numbers to plain training ($STEPS steps)"
    exit 0
  fi
  echo "FAIL: the plain runs repeat exactly but the DDP run differs"
  exit 1
fi
# The GPU run does not repeat itself exactly: DDP must stay within the plain runs' own spread.
read -r l1 s1 <<< "$(numbers "$plain1")"
read -r l2 s2 <<< "$(numbers "$plain2")"
read -r l3 s3 <<< "$(numbers "$ddp")"
python3 - "$l1" "$s1" "$l2" "$s2" "$l3" "$s3" <<'PY'
import sys
l1, s1, l2, s2, l3, s3 = map(float, sys.argv[1:])
ok = True
for what, a, b, c in (("loss", l1, l2, l3), ("logits sum", s1, s2, s3)):
    spread = abs(a - b)
    off = abs(a - c)
    bound = 4 * spread + 1e-6 * max(1.0, abs(a))
    print(f"{what}: plain runs differ by {spread:.3g}, DDP differs from the first by {off:.3g} (bound {bound:.3g})")
    ok = ok and off <= bound
print("OK: DDP on NCCL (world of one) matches plain training within the GPU's own run-to-run spread" if ok
      else "FAIL: DDP on NCCL differs from plain training by more than the plain runs differ")
sys.exit(0 if ok else 1)
PY
