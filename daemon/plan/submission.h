// A sweep as it is accepted: its spec parsed and expanded into the records
// the store keeps (the sweep and its planned runs), and checked against the
// backends this daemon has configured. The API plans every submission here,
// and start-up re-plans the sweeps it resumes here too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/backends/registry.h"
#include "daemon/plan/timeouts.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace ds {

// The records a spec plans; errors are the spec's (kInvalidSpec).
struct SweepSubmission {
    SweepRecord sweep;
    std::vector<RunRecord> runs;
    SweepTimeouts timeouts;
    // The guest images the runs need (the spec's [guest] suite, each
    // workload's variant), sorted, distinct.
    std::vector<ImageChoice> images;
    // (configuration, workload) pairs left out by workloads' `filesystems`.
    int skipped_pairs = 0;
    // The spec's [hypervisor] hosts: where its runs may be placed.
    std::vector<std::string> pinned_hosts;
    // The spec's [hypervisor] identical_hosts.
    bool identical_hosts = false;
    // The most rounds the sweep runs (max_repetitions), and the runs a
    // verdict needs on each side (min_runs_for_verdict).
    int max_rounds = 1;
    int min_runs_for_verdict = 3;
};
// Parses `spec_text` and plans it (tests; the daemon parses through
// SweepSpecs and calls the overload below).
Result<SweepSubmission> plan_submission(std::string_view spec_text, std::string_view source,
                                        const SweepTimeouts& defaults);
// The same for a spec already parsed from `spec_text`, which is not parsed
// again; the sweep record keeps the text and its source.
Result<SweepSubmission> plan_submission(const SweepSpec& spec, std::string_view spec_text,
                                        std::string_view source, const SweepTimeouts& defaults);

// Refuses a submission any of whose configurations names a hypervisor or
// storage that `backends` does not have, a pair it cannot combine, or that
// none of its pinned hosts could run: the error names the first such
// configuration and lists what is configured.
Status check_backends(const SweepSubmission& submission, const BackendCatalog& backends);

// What the submitter should know of where its runs go: a sweep whose
// rounds may spread over H > 1 hosts (not pinned to one, not
// identical_hosts) while rounds / H is below min_runs_for_verdict gets
// that said, with what to do (HostPool places whole rounds on one host and
// compare keeps hosts apart). One line per warning.
std::vector<std::string> placement_warnings(const SweepSubmission& submission,
                                            const BackendCatalog& backends);

// Whether any of the submission's runs boots the project's guest image (a
// hypervisor kind with boots_project_image, or one this build does not know).
bool boots_project_image(const SweepSubmission& submission);

}  // namespace ds
