#include "guestagent/io_job.h"

#include <chrono>
#include <latch>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "guestagent/io_job_processes.h"
#include "guestagent/io_job_runner.h"
#include "guestagent/io_job_targets.h"
#include "guestagent/io_report.h"

namespace ds::io {
namespace {

// Jobs as threads of this process (fio's thread=1): they start together
// once every thread exists.
Result<std::vector<JobStats>> run_as_threads(Runners& runners, SharedState& shared) {
    for (auto& runner : runners) {
        if (auto status = runner->setup_io(); !status) {
            return job_error(runner->job_index(), status.error());
        }
    }
    std::latch start_gate(1);
    std::vector<std::thread> threads;
    std::optional<Error> spawn_error;
    for (auto& runner : runners) {
        try {
            threads.emplace_back([&start_gate, &runner] {
                start_gate.wait();
                runner->run();
            });
        } catch (const std::system_error& e) {
            spawn_error =
                make_error(errc::kIo, std::string("cannot start a job thread: ") + e.what());
            shared.abort->store(true);
            break;
        }
    }
    start_gate.count_down();
    for (auto& thread : threads) thread.join();
    if (spawn_error) return *spawn_error;
    for (const auto& runner : runners) {
        if (runner->error()) return *runner->error();
    }
    std::vector<JobStats> stats;
    for (auto& runner : runners) stats.push_back(runner->take_stats());
    return stats;
}

}  // namespace

Result<Json> run_io_job(const Json& params, const std::atomic<bool>* stop) {
    auto options = parse_job_options(params);
    if (!options) return options.error();
    return run_io_job(*options, stop);
}

Result<Json> run_io_job(const JobOptions& options, const std::atomic<bool>* stop) {
    if (options.engine == nullptr) {
        return make_error(errc::kInvalidArgument, "io job options have no resolved engine");
    }
    const auto started = std::chrono::system_clock::now();
    auto targets = prepare_targets(options);
    if (!targets) return targets.error();

    std::atomic<bool> thread_abort{false};
    SharedFlags process_flags;
    SharedState shared;
    if (options.thread) {
        shared = SharedState{stop, &thread_abort};
    } else {
        auto mapped = map_shared_flags();
        if (!mapped) return mapped.error();
        process_flags = std::move(*mapped);
        shared = SharedState{&process_flags->stop, &process_flags->abort};
    }
    Runners runners;
    for (unsigned job = 0; job < options.numjobs; ++job) {
        runners.push_back(std::make_unique<JobRunner>(options, (*targets)[job], job, shared));
        if (auto status = runners.back()->open_file(); !status) {
            return job_error(job, status.error());
        }
    }
    auto stats = options.thread ? run_as_threads(runners, shared)
                                : run_as_processes(runners, *process_flags, stop);
    if (!stats) return stats.error();
    if (stop && stop->load()) {
        return make_error(errc::kCancelled, "io job stopped before it ended");
    }
    return io_report_json(options, *stats, started);
}

}  // namespace ds::io
