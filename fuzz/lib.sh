# shellcheck shell=bash
# Shell functions shared by scripts/fuzz-smoke.sh and bench/fuzz.sh: how the
# fuzz targets are built and how one of them is run and summarised. Sourced,
# not run. Needs: clang++-14 or, on Debian 13, clang++-19 (scripts/install-deps.sh), cmake, ninja; ccache if present.

FUZZ_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FUZZ_BUILD_DIR=${DISKSWEEP_FUZZ_BUILD_DIR:-$FUZZ_REPO/build-fuzz}
# How far the instrumented project code is optimised. CI's two stages
# (scripts/test-sanitizers.sh, scripts/fuzz-smoke.sh) build at -O0: the tree
# compiles about twice as fast as at -O1 (daemon/api/api.cpp 13 s against
# 24 s), and what they run is short. bench/fuzz.sh's long runs build at -O1,
# in a directory of their own (DISKSWEEP_FUZZ_OPT, DISKSWEEP_FUZZ_BUILD_DIR).
FUZZ_OPT=${DISKSWEEP_FUZZ_OPT:--O0}
FUZZ_TARGETS=(fuzz_spec fuzz_guest_result fuzz_http_request fuzz_output_parsers fuzz_write_log)
# libFuzzer options a target always runs with. The HTTP target's inputs may
# be as long as the largest request head the daemon accepts
# (http::ServerLimits::max_head_bytes, 64 KiB), so that the route matcher
# sees paths of that length. The output parsers' inputs stop at 8 KiB: the
# default, the largest seed (a 70 KB fio json+ output), ran about 200 exec/s
# once the corpus filled with such inputs, and 8 KiB still holds a whole
# one-job fio JSON output; the small json+ seed
# (fio-randrw_4k_numjobs2_jsonplus_small.json) keeps its histogram bins in
# reach. The others keep libFuzzer's default (4 KiB or the largest seed).
declare -A FUZZ_TARGET_OPTIONS=([fuzz_http_request]="-max_len=65536"
                                [fuzz_output_parsers]="-max_len=8192")

# Findings abort with a stack trace; libFuzzer turns an abort into a saved
# crash input. Leak checking stays on (libFuzzer's default with ASan).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Configures FUZZ_BUILD_DIR: the release's clang, the whole tree instrumented
# (fuzz/Instrument.cmake: ASan + UBSan + libFuzzer coverage) at FUZZ_OPT, the tests
# included, so that one instrumented build serves both the fuzz targets and
# the sanitizer tier (scripts/test-sanitizers.sh builds its tests here). Run
# every time (seconds): a directory configured otherwise is brought in line.
# The clang scripts/install-deps.sh installs for the host's release:
# clang-14 on Debian 12, clang-19 on Debian 13 (docs/platforms.md).
FUZZ_CLANG_CANDIDATES=(clang++-14 clang++-19)
fuzz_configure() {
    local candidate cxx=""
    for candidate in "${FUZZ_CLANG_CANDIDATES[@]}"; do
        if command -v "$candidate" >/dev/null; then cxx=$candidate && break; fi
    done
    [ -n "$cxx" ] || {
        echo "[fuzz] none of ${FUZZ_CLANG_CANDIDATES[*]} is installed (Debian 12: clang-14," \
            "Debian 13: clang-19; scripts/install-deps.sh)" >&2
        return 1
    }
    # shellcheck source=../scripts/ccache.sh
    source "$FUZZ_REPO/scripts/ccache.sh"
    cmake -S "$FUZZ_REPO" -B "$FUZZ_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$FUZZ_OPT -DNDEBUG" -DCMAKE_CXX_COMPILER="$cxx" \
        "${CCACHE_CMAKE_ARGS[@]}" -DDISKSWEEP_FUZZ=ON -DBUILD_TESTING=ON >/dev/null
}

# Builds every fuzz target (and what they link), FUZZ_BUILD_JOBS (default:
# one per core) at a time.
fuzz_build() {
    fuzz_configure || return 1
    ninja -C "$FUZZ_BUILD_DIR" -j"${FUZZ_BUILD_JOBS:-$(nproc)}" fuzz_targets
}

# A command fuzz_run puts before the target, e.g. (setarch x86_64 -R).
FUZZ_LAUNCHER=()

# fuzz_run TARGET CRASH_DIR WORK_CORPUS [LIBFUZZER_OPTION...]
# Runs TARGET on WORK_CORPUS (new inputs go there) plus its committed seeds
# (read only), crash inputs into CRASH_DIR/TARGET-*. Prints one line
# "TARGET EXECS EXEC_PER_S CRASHES SECONDS" and returns libFuzzer's status.
# The full log is CRASH_DIR/TARGET.log.
fuzz_run() {
    local target=$1 crash_dir=$2 work_corpus=$3
    shift 3
    local log="$crash_dir/$target.log" status=0 start end stamp
    mkdir -p "$crash_dir" "$work_corpus"
    stamp=$(mktemp)  # crash inputs newer than this are this run's
    start=$(date +%s.%N)
    # shellcheck disable=SC2086  # the target's options are words
    "${FUZZ_LAUNCHER[@]}" "$FUZZ_BUILD_DIR/fuzz/$target" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$crash_dir/$target-" ${FUZZ_TARGET_OPTIONS[$target]:-} "$@" \
        "$work_corpus" "$FUZZ_REPO/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
    end=$(date +%s.%N)
    local execs crashes
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(find "$crash_dir" -maxdepth 1 -name "$target-*" -newer "$stamp" | wc -l)
    rm -f "$stamp"
    awk -v t="$target" -v n="${execs:-0}" -v c="$crashes" -v s="$start" -v e="$end" \
        'BEGIN { d = e - s; printf "%s %d %.0f %d %.1f\n", t, n, (d > 0 ? n / d : 0), c, d }'
    return "$status"
}

# fuzz_replay TARGET DIR: runs every input in DIR once (no fuzzing). For the
# saved reproducers of fuzz/regressions/TARGET/.
fuzz_replay() {
    local target=$1 dir=$2
    [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] || return 0
    "$FUZZ_BUILD_DIR/fuzz/$target" -timeout=10 -rss_limit_mb=2048 "$dir"/* >/dev/null 2>&1
}
