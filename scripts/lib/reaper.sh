# shellcheck shell=bash
# with_reaper COMMAND [ARGS...]: runs COMMAND under `tini -s`, a child
# subreaper that reaps every orphan below it at once (plain exec when tini is
# missing). Sourced, not run.
#
# Why: libvirt daemonizes each guest's QEMU, so when the guest ends its
# zombie goes to the nearest subreaper above it, else to PID 1, and
# virDomainDestroy polls kill(pid, 0) every 200 ms until someone has reaped
# it (libvirt 9.0, virProcessKillPainfullyDelay). systemd reaps at once; a
# container's or VM sandbox's PID 1 may not: on the CI machine every
# teardown waited 1.3-2 s for it, under tini 0.28 s (bench/run_overhead).
# REAPER: the command prefix, for a caller that needs the started process's
# own pid (`"${REAPER[@]}" daemon ... &` then $!, to which tini forwards
# signals); empty when tini is missing.
REAPER=()
if command -v tini >/dev/null 2>&1; then REAPER=(tini -s --); fi
with_reaper() {
    "${REAPER[@]}" "$@"
}
