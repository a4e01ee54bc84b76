#!/usr/bin/env bash
# Make the reports of one checkout for a small fixed selection at seed 0, for a byte-for-byte comparison
# with another checkout's (compare.py).  Every command the issue-46 acceptance names is run once:
# check (and a two-shard check merged), prove, report merge (fuzz + proofs), verify, gate (re-run and
# --current), lawtable, a check and a prove of expected violations, and a check of the Triton backend under
# the CPU interpreter.
#
# usage: benchmarks/arch/reports.sh TREE OUT
#   TREE  a checkout or worktree with .dev-setup.sh (imported as is, nothing installed)
#   OUT   an empty or missing directory; it is replaced
# Each command's exit code goes to OUT/rc.txt.  About 3-4 minutes on 2 shared cores.
set -u
if [ $# -ne 2 ]; then echo "usage: $0 TREE OUT" >&2; exit 2; fi
tree=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) && rm -rf "${out:?}"/* || exit 2
cd "$tree" && source .dev-setup.sh
run() { local name=$1; shift; "$@"; echo "$name rc=$?" >> "$out/rc.txt"; }

SEL=(--operator oattention --operator sdpa --contract null_receiver --contract closure
     --seed 0 --workers 1 --examples 5 --progress off)
run check tokenlaw check "${SEL[@]}" --out "$out/check"
run shard1 tokenlaw check "${SEL[@]}" --shard 1/2 --out "$out/shard1"
run shard2 tokenlaw check "${SEL[@]}" --shard 2/2 --out "$out/shard2"
run merge tokenlaw report merge "$out/shard1/conformance.json" "$out/shard2/conformance.json" --out "$out/merged"
run prove tokenlaw prove --operator oattention --contract null_receiver --contract closure --workers 1 \
    --out "$out/prove"
run merge-verification tokenlaw report merge "$out/check/conformance.json" "$out/prove/proofs.json" --out "$out/verif"
run verify tokenlaw verify --operator oattention --contract null_receiver --seed 0 --workers 1 --examples 5 \
    --out "$out/verify"
run gate tokenlaw gate --baseline "$out/check/conformance.json" --out "$out/gate" --workers 1 --json \
    > "$out/gate.json"
run gate-current tokenlaw gate --baseline "$out/check/conformance.json" --current "$out/merged/conformance.json" \
    --json > "$out/gate-current.json"
run lawtable tokenlaw report lawtable "$out/check/conformance.json" "$out/prove/proofs.json" > "$out/lawtable.md"
# expected violations (a search that finds and shrinks one, the symbolic tier refuting one) beside a claimed row
VIOL=(--operator pn_fir_tau --contract score_shift_invariance --contract null_receiver)
run check-violation tokenlaw check "${VIOL[@]}" --seed 0 --workers 1 --examples 5 --progress off \
    --out "$out/check-violation"
run prove-violation tokenlaw prove "${VIOL[@]}" --workers 1 --out "$out/prove-violation"
# the kernels: forward and backward of all three Triton operators, interpreted
TRITON_INTERPRET=1 run check-triton tokenlaw check --backend triton --operator oattention --operator sm_fir \
    --operator pn_fir_tau --contract null_receiver --contract gradient_agreement --dtype float32 \
    --seed 0 --workers 1 --examples 3 --progress off --out "$out/check-triton"
# wall-clock timings are written beside the reports by design; they are not part of a report
find "$out" \( -name '*.timings.json' -o -name '*.timings.js' \) -delete
cat "$out/rc.txt"
