#!/usr/bin/env bash
# Issue 46's grep-level figures for one checkout: how much of the code still treats the report's JSON view
# as its internal API, and how much the Triton kernels repeat themselves.  Run it on two trees (main and a
# branch) and compare; each figure is a count of matching lines or calls, not a verdict.
#
# usage: benchmarks/arch/figures.sh [TREE]     (default: this checkout)
set -u
cd "${1:-$(dirname "$0")/../..}" || exit 2
PKG="operators properties fuzz symbolic kernels integrations reports orchestration experiments app process"
count() { grep -rhoE "$1" --include=*.py $2 2>/dev/null | wc -l; }
echo "tree: $(pwd) ($(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo +dirty))"
echo "JSON-key lookups in reports/ ([\"key\"] and .get(\"key\")): $(count '\["[a-z_]+"\]|\.get\("[a-z_]+"' reports)"
echo "  of them [\"outcome\"]: $(count '\["outcome"\]' reports)"
echo "to_json / view() / stable round trips (calls in the package; a tensor's .view(shape) is not one): $(count '\.(to_json|stable|stable_json)\(|\.view\(\)' "$PKG")"
echo "detail.split (package): $(grep -rn 'detail\.split' --include=*.py $PKG 2>/dev/null | wc -l)"
echo "tier-string dispatches (tier == \"symbolic\"/\"fuzz\", .get(\"tier\") ==): $(grep -rnE '(tier"?\)?\]? ?[=!]= ?"(symbolic|fuzz)"|get\("tier"\) ?[=!]=)' --include=*.py $PKG 2>/dev/null | wc -l)"
writers=$(grep -rnE '^def (write|write_doc|write_all)\(' --include=*.py reports orchestration app 2>/dev/null \
          | sed -E 's/:[0-9]+:def ([a-z_]+).*/.\1/' | sort)
echo "report writers (module-level write / write_doc / write_all): $(echo "$writers" | grep -c .) ($(echo $writers))"
# a constant named for an order (…SEVERITY, …ORDER, …RANK, …FIRST) bound to a tuple or list literal of Outcome
# members: an ordering of outcomes outside the enum (a set of outcomes such as PASSED, or a dict from outcomes to
# words, orders nothing; TIER_ORDER and NEEDS_ORDER order no outcome)
echo "tuple-literal outcome orderings (an ORDER/RANK/SEVERITY/FIRST name = literal of Outcome members): $(grep -rnE '^\s*[A-Z_]*(SEVERITY|ORDER|RANK|FIRST)[A-Z_]*\s*=\s*[\(\[]\s*((V\.)?Outcome\.|$)' --include=*.py reports properties orchestration app 2>/dev/null | wc -l)"
if command -v duplicates > /dev/null; then
  echo "duplicate pairs in kernels/ (duplicates --repo kernels): $(duplicates --repo kernels --seconds 60 | head -1)"
else
  echo "duplicate pairs in kernels/: the duplicates command is not installed here"
fi
