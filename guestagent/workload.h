// What every workload kind's runner gets from the agent and gives back.
// The agent (agent.cpp) has formatted and mounted the disk under test and run
// the post-format steps; a runner only runs its benchmark in `work_dir` and
// returns the raw output the daemon parses (common/workload_output.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"

namespace ds::agent {

// What a job does with its workload's preparation step (ds::WorkloadKind::
// preparation; job.dataset, docs/agent-protocol.md).
enum class DatasetMode {
    kFresh,        // prepare, then run: a fresh disk
    kPrepareOnly,  // prepare a golden volume, run nothing
    kPrepared,     // the disk is a clone of a golden volume: run without preparing
};

struct WorkloadContext {
    ProcessRunner& runner;
    // Directory on the filesystem under test (the mount point: the `nocow`
    // step has made it +C, so what is created below inherits No_COW).
    std::string work_dir;
    // A writable directory on tmpfs for sockets, pid files, config files.
    std::string scratch_dir;
    // The workload's own bound (spec `timeout`, else the job's timeout_s).
    // A runner that exceeds it stops what it started and returns errc::kTimeout.
    std::chrono::seconds time_limit{0};
    // Progress for the host, at most about once a second:
    // (message, seconds since the workload started, fraction done if known).
    std::function<void(const std::string& message, double elapsed_s,
                       std::optional<double> fraction)>
        progress;
    // What the runner decides by: the time limit, elapsed times, pauses
    // between retries. Its waits on what it started stay real waits of a
    // short slice each (common/clock.h).
    const Clock* clock = &real_clock();
    // For kinds that acknowledge records (ledger): called with each id the
    // moment it is acknowledged, on the runner's thread; the agent sends it
    // to the host at once. Unset: nobody listens.
    std::function<void(long long id)> acknowledge = {};
    DatasetMode dataset = DatasetMode::kFresh;
    // For kinds that acknowledge records: called once by the runner after
    // its own setup (a database's initialisation, the ledger's file), right
    // before its first measured write. With job.mark the agent syncs and
    // waits for the host to make everything written so far durable
    // (docs/durability.md, "The measured window"). Unset: nothing to do.
    std::function<Status()> begin_measurement = {};
};

struct WorkloadOutput {
    // Kind-specific raw output: result.output (metrics_from_workload_output).
    Json output = Json::object();
    // Verified state the runner read back (e.g. {"server_variables": {...},
    // "server_version": "..."}): merged into result.readback.
    Json readback = Json::object();
};

// Errors: errc::kTimeout (time limit, the workload was stopped),
// errc::kInvalidArgument (bad params), errc::kAgent (a command failed: the
// message carries its own error line, e.g. the server's "[ERROR] ..." line),
// errc::kIo (no space left on device, with that text in the message).
using WorkloadRunner = Result<WorkloadOutput> (*)(const Workload&, WorkloadContext&);

// guestagent/mariadb_atis_workload.cpp and sysbench_oltp_workload.cpp
Result<WorkloadOutput> run_mariadb_atis(const Workload&, WorkloadContext&);
Result<WorkloadOutput> run_sysbench_oltp(const Workload&, WorkloadContext&);
// Checks params before the disk is formatted (same errors as the runners'
// kInvalidArgument).
Status check_mariadb_atis_params(const Json& params);
Status check_sysbench_oltp_params(const Json& params);

// guestagent/pgbench_workload.cpp (postgresql_session.h): pgbench against
// the runner's own PostgreSQL cluster.
Result<WorkloadOutput> run_pgbench(const Workload&, WorkloadContext&);
Status check_pgbench_params(const Json& params);

}  // namespace ds::agent
