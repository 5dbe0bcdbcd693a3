# shellcheck shell=bash
# Sourced by the H200 batch scripts (h200_issue14.sh, h200_issue14_autotune.sh): one bounded step.
# Needs $out (the output folder); $bundle, when set, is a .tgz of $out rewritten after every step
# (what a bounded device call brings back).
step() { # name seconds command...
  local name=$1 seconds=$2 t0 rc
  : "${out:?h200_steps.sh: set out to the output folder before sourcing}"
  shift 2
  t0=$(date +%s)
  timeout -k 10 "$seconds" "$@" >"$out/$name.out" 2>&1
  rc=$?
  echo "$name: rc=$rc, $(($(date +%s) - t0)) s" | tee -a "$out/summary.txt"
  [ -z "${bundle:-}" ] || tar czf "$bundle" -C "$out" .
  return "$rc"
}
