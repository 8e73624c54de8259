# Sourced by the measurement scripts (load-ramp.sh, bypass-forward-compare.sh, ...): the repo's
# paths and a `veil serve` started in the background on a free port of a loopback address.
# After `source scripts/serve-lib.sh`: $root (the repo, also the working directory), $veil,
# $media, and VEIL_ASSETS exported.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
veil=${VEIL_BIN:-${BUILD_DIR:-build}/bin/veil}  # VEIL_BIN: another build of veil (a before/after run)
media=${BUILD_DIR:-build}/media

# veil_serve OUT_PREFIX [HOST] -- ARGS...: starts `veil serve --listen HOST:0 ARGS` (HOST
# 127.0.0.1 by default) with stdout/stderr in OUT_PREFIX.out/.log; sets $server (its pid) and
# $url once it listens, or fails.
veil_serve() {
  local prefix=$1 host=127.0.0.1
  shift
  if [ "${1:-}" != "--" ]; then host=$1; shift; fi
  [ "${1:-}" = "--" ] && shift
  "$veil" serve --listen "$host:0" "$@" > "$prefix.out" 2> "$prefix.log" &
  server=$!
  url=
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^veil serve: listening on //p' "$prefix.out")
    [ -n "$url" ] && return 0
    sleep 0.1
  done
  echo "veil serve did not start ($prefix.log)" >&2
  return 1
}

# compare_servers OUT A B 'TOML_A' 'TOML_B' [veil load args...]: two server configurations
# measured in one run. Writes OUT/A.toml and OUT/B.toml (each `[server] max_sessions = "32"`,
# then its TOML text, printf escapes allowed; the text may open other sections) and runs
# `veil load --compare` on them with the 720p clip, alternating, --repeat ${REPEAT:-3},
# INPUT (the clip; default build/media/sample_720p30.ivf), --stage-seconds ${STAGE_SECONDS:-20}, --warmup ${WARMUP:-8}, the extra args (--stages,
# --mode ...) appended, then $LOAD_ARGS (e.g. LOAD_ARGS="--frame-phase aligned": any compare script
# with the sessions' frames arriving together); results in OUT/compare (compare.md, load.json).
compare_servers() {
  local out=$1 a=$2 b=$3 toml_a=$4 toml_b=$5
  shift 5
  mkdir -p "$out"
  printf "[server]\nmax_sessions = \"32\"\n$toml_a" > "$out/$a.toml"
  printf "[server]\nmax_sessions = \"32\"\n$toml_b" > "$out/$b.toml"
  "$veil" load --compare "$out/$a.toml" "$out/$b.toml" --repeat "${REPEAT:-3}" -i "${INPUT:-$media/sample_720p30.ivf}" \
    --stage-seconds "${STAGE_SECONDS:-20}" --warmup "${WARMUP:-8}" --out "$out/compare" "$@" ${LOAD_ARGS:-}
}
