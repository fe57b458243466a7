#include "daemon/run/run_executor.h"

#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include "common/text.h"
#include "common/version.h"
#include "common/workload_output.h"
#include "daemon/run/agent_session.h"
#include "daemon/run/guest_messages.h"
#include "daemon/run/settings_verify.h"

namespace ds {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// The last lines of the guest console, to put next to a boot failure.
std::string console_tail(const std::string& path, std::size_t max_bytes = 600) {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    if (ec || size == 0) return "";
    FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) return "";
    std::size_t take = std::min<std::size_t>(size, max_bytes);
    std::fseek(file, static_cast<long>(size - take), SEEK_SET);
    std::string text(take, '\0');
    text.resize(std::fread(text.data(), 1, take, file));
    std::fclose(file);
    return text;
}

// Whether the guest is gone. The hypervisor may notice a dead QEMU a moment
// after its channel closed, so this waits up to two seconds for that.
bool guest_stopped(Hypervisor& hypervisor, const std::string& vm_name) {
    for (int attempt = 0; attempt < 20; ++attempt) {
        auto running = hypervisor.is_running(vm_name);
        if (running.ok() && !running.value()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

// The body of a run behind the last-resort boundary: an exception escaping it
// is a bug; it fails only this run ("internal error (bug): ...") and the
// caller still tears down. Logged, since nobody expects it.
Status run_guarded(const std::function<Status()>& body, std::int64_t run_id) {
    std::string what;
    try {
        return body();
    } catch (const std::exception& error) {
        what = error.what();
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    std::cerr << "disksweepd: BUG: run " << run_id << " threw: " << what << std::endl;
    return make_error(errc::kInternal, "internal error (bug): " + what);
}

}  // namespace

std::string RunExecutor::vm_name_for(std::int64_t run_id) {
    return std::string(kResourcePrefix) + std::to_string(run_id);
}

RunRecord RunExecutor::execute(const RunRecord& planned, int boot_timeout_s, int run_timeout_s,
                               const std::atomic<bool>& cancelled) {
    RunRecord run = planned;
    const auto run_start = Clock::now();
    const std::string vm_name = vm_name_for(run.id);
    const std::string run_dir = env_.config->run_dir();
    const std::string socket_path = run_dir + "/" + vm_name + ".agent.sock";
    run.vm_name = vm_name;
    run.volume_name = vm_name + "-data";
    run.console_log = run_dir + "/" + vm_name + ".console.log";
    run.accel = std::string(to_string(env_.accel));
    run.started_at = utc_now_iso8601();
    run.status = "running";
    Status marked = env_.store->mark_run_running(run.id, run.vm_name, run.volume_name,
                                                 run.console_log, run.accel, run.started_at);
    if (!marked.ok()) {
        // Cancelled between being queued and starting (or the store failed):
        // start nothing, report the run as the store has it.
        auto current = env_.store->get_run(run.id);
        if (current.ok()) return current.value();
        run.status = "failed";
        run.failure_reason = "cannot start run: " + marked.error().message;
        return run;
    }
    env_.events->publish(run.sweep_id, Json{{"type", "run_started"},
                                            {"run_id", run.id},
                                            {"config_id", run.config_id},
                                            {"workload", run.workload_name},
                                            {"repetition", run.repetition}});

    Json timings = Json::object();
    Json versions = {{"disksweepd", std::string(disksweep_version())}};
    const Json hypervisor_versions = env_.hypervisor->versions();
    for (auto& [key, value] : hypervisor_versions.items()) versions[key] = value;
    versions["accel"] = run.accel;
    Json applied = Json::object();

    // Never throw out of a scheduler worker: error_code overloads throughout.
    std::error_code fs_error;
    std::filesystem::create_directories(run_dir, fs_error);
    std::filesystem::remove(socket_path, fs_error);
    std::filesystem::remove(run.console_log, fs_error);

    bool volume_created = false;
    StorageBackend* storage = nullptr;  // the configuration's own storage, from the registry
    bool timed_out = false;             // the workload's time limit or the result deadline passed

    // The body of the run; any failure returns its Error and the caller
    // records it. Teardown follows in every case.
    auto body = [&]() -> Status {
        if (!std::filesystem::is_directory(run_dir, fs_error)) {
            return make_error(errc::kIo, "cannot create the run directory " + run_dir);
        }
        auto parsed_config = storage_config_from_json(run.config);
        if (!parsed_config.ok()) return parsed_config.error();
        const StorageConfig& config = parsed_config.value();
        auto parsed_workload = workload_from_json(run.workload);
        if (!parsed_workload.ok()) {
            return make_error(errc::kInvalidArgument,
                              "stored workload: " + parsed_workload.error().message);
        }
        const Workload& workload = parsed_workload.value();
        const std::string variant(image_variant_for_kind(workload.kind));
        GuestImage image = env_.image;
        if (env_.image_for_variant) {
            auto located = env_.image_for_variant(variant);
            if (!located.ok()) return located.error();
            image = located.value();
        }

        // The storage the configuration names, never a stand-in: a run can
        // only be recorded under a backend that really made its disk.
        auto found = env_.backends ? env_.backends->storage_for(config)
                                   : Result<StorageBackend*>(env_.storage);
        if (!found.ok()) return found.error();
        storage = found.value();
        auto phase_start = Clock::now();
        auto volume = storage->create_volume(run.volume_name, config);
        if (!volume.ok()) return volume.error();
        volume_created = true;
        timings["provision_s"] = seconds_since(phase_start);
        applied["storage"] = {{"backend", storage->name()},
                              {"source", to_json(volume->source)},
                              {"before", storage->state(run.volume_name)}};

        phase_start = Clock::now();
        VmRequest request;
        request.name = vm_name;
        request.config = config;
        request.data_disk = volume->source;
        request.image = image;
        request.agent_socket_path = socket_path;
        request.console_log_path = run.console_log;
        request.accel = env_.accel;
        request.vcpus = env_.config->vcpus;
        request.memory_mib = env_.config->memory_mib;
        DS_TRY(env_.hypervisor->start_vm(request));

        auto applied_hypervisor = env_.hypervisor->applied_settings(vm_name);
        if (!applied_hypervisor.ok()) return applied_hypervisor.error();
        applied["hypervisor"] = applied_hypervisor.value();

        const auto boot_deadline = Clock::now() + std::chrono::seconds(boot_timeout_s);
        auto session = AgentSession::connect(socket_path, boot_deadline, &cancelled);
        auto hello = session.ok() ? session->receive_hello(boot_deadline)
                                  : Result<guest::Hello>(session.error());
        if (!hello.ok()) {
            if (hello.error().code == errc::kTimeout || hello.error().code == errc::kIo) {
                auto running = env_.hypervisor->is_running(vm_name);
                std::string state = running.ok() && !running.value() ? " (the guest stopped)" : "";
                std::string tail = console_tail(run.console_log);
                return make_error(errc::kTimeout,
                                  "agent did not connect within " + std::to_string(boot_timeout_s) +
                                      " s" + state + "; console log: " + run.console_log +
                                      (tail.empty() ? "" : "\n--- console tail ---\n" + tail));
            }
            return hello.error();
        }
        timings["boot_s"] = seconds_since(phase_start);
        versions["agent_version"] = hello->agent_version;
        versions["kernel"] = hello->kernel;
        versions["fio_version"] = hello->fio_version;
        env_.events->publish(run.sweep_id, Json{{"type", "run_progress"},
                                                {"run_id", run.id},
                                                {"phase", "booted"},
                                                {"message", "agent connected"}});

        const int job_timeout_s = workload.timeout_s > 0 ? workload.timeout_s : run_timeout_s;
        const std::string job_run_id = std::to_string(run.id);
        Json job = {{"run_id", job_run_id},
                    {"filesystem",
                     {{"type", config.filesystem.type},
                      {"mkfs_options", config.filesystem.mkfs_options},
                      {"mount_options", config.filesystem.mount_options},
                      {"post_format", config.filesystem.post_format}}},
                    {"workload", run.workload},
                    {"timeout_s", job_timeout_s}};
        if (Json block = block_settings_json(config); !block.empty()) job["block"] = block;
        DS_TRY(session->send_job(job));
        const int wait_s = workload.timeout_s > 0
                               ? std::max(run_timeout_s, workload.timeout_s + kAgentGraceSeconds)
                               : run_timeout_s;
        const auto run_deadline = Clock::now() + std::chrono::seconds(wait_s);
        phase_start = Clock::now();
        auto result = session->await_result(run_deadline, [&](const guest::Progress& progress) {
            // Checked and cut to guest::kMaxTextBytes per text by the session.
            Json event = {{"type", "run_progress"},
                          {"run_id", run.id},
                          {"phase", progress.phase},
                          {"message", progress.message},
                          {"elapsed_s", progress.elapsed_s}};
            if (progress.fraction) event["fraction"] = *progress.fraction;
            env_.events->publish(run.sweep_id, std::move(event));
        });
        if (!result.ok()) {
            const Error& error = result.error();
            if (error.code == kWorkloadTimedOut) {
                timed_out = true;
                return error;
            }
            if (error.code == errc::kIo || error.code == errc::kTimeout) {
                timed_out = error.code == errc::kTimeout;
                std::string what =
                    error.code == errc::kTimeout
                        ? "run exceeded its time limit of " + std::to_string(wait_s) + " s"
                        : "lost the guest agent mid-run (" + error.message + ")";
                if (error.code == errc::kIo && guest_stopped(*env_.hypervisor, vm_name)) {
                    what += ": the guest stopped unexpectedly";
                }
                return make_error(error.code, what + "; console log: " + run.console_log);
            }
            return error;
        }
        session->send_shutdown();
        // Checked against its schema by the session (guest_messages.h).
        const guest::ResultMessage& payload = result.value();
        if (payload.run_id != job_run_id) {
            return make_error(errc::kProtocol, "agent sent a result for run \"" +
                                                   guest::cut_text(payload.run_id, 80) +
                                                   "\", not for this run (\"" + job_run_id + "\")");
        }

        // The guest is untrusted: metrics are re-derived from the raw
        // output rather than taken from its "metrics".
        auto metrics = metrics_from_workload_output(workload.kind, payload.output);
        if (!metrics.ok()) {
            return make_error(errc::kProtocol, "agent result has unusable " + workload.kind +
                                                   " output: " + metrics.error().message);
        }
        run.metrics = metrics.value();
        run.raw_output = payload.output.dump(-1, ' ', false, Json::error_handler_t::replace);
        for (const auto& [key, seconds] : payload.timings) timings[key] = seconds;
        timings["guest_s"] = seconds_since(phase_start);
        applied["guest"] = payload.readback;
        for (const auto& [key, value] : payload.versions) versions["guest_" + key] = value;

        auto mismatches =
            verify_settings(config, workload, applied["hypervisor"], payload.readback);
        applied["verified"] = mismatches.empty();
        if (!mismatches.empty()) {
            return make_error(errc::kSettingsMismatch,
                              "settings not in force: " + join(mismatches, "; "));
        }
        return ok_status();
    };

    Status outcome = run_guarded(body, run.id);

    // Teardown, always.
    auto teardown_start = Clock::now();
    std::string teardown_problems;
    // Also when start_vm failed half-way: destroy_vm succeeds on a missing VM.
    Status destroyed = env_.hypervisor->destroy_vm(vm_name);
    if (!destroyed.ok()) teardown_problems += destroyed.error().message + "; ";
    if (volume_created) {
        applied["storage"]["after"] = storage->state(run.volume_name);
        Status removed = storage->remove_volume(run.volume_name);
        if (!removed.ok()) teardown_problems += removed.error().message + "; ";
    }
    std::filesystem::remove(socket_path, fs_error);
    timings["teardown_s"] = seconds_since(teardown_start);
    timings["total_s"] = seconds_since(run_start);

    if (outcome.ok()) {
        run.status = "succeeded";
        run.failure_reason.clear();
        // A clean run keeps no console log; a failed one keeps it for reading.
        std::filesystem::remove(run.console_log, fs_error);
        run.console_log.clear();
    } else if (outcome.error().code == errc::kCancelled && env_.shutting_down &&
               env_.shutting_down->load()) {
        // Not the user's cancel: the daemon is stopping. The run was not
        // measured; say so (the next daemon resumes the sweep's pending runs).
        run.status = "failed";
        run.failure_reason = "interrupted: disksweepd stopped during this run";
    } else if (outcome.error().code == errc::kCancelled) {
        run.status = "cancelled";
        run.failure_reason = "cancelled";
    } else if (timed_out) {
        run.status = run_status::kTimedOut;
        run.failure_reason = outcome.error().message;
    } else {
        run.status = "failed";
        run.failure_reason = outcome.error().message;
    }
    if (!teardown_problems.empty()) {
        run.failure_reason += (run.failure_reason.empty() ? "" : "; ") + std::string("teardown: ") +
                              teardown_problems;
    }
    run.timings = timings;
    run.versions = versions;
    run.applied_settings = applied;
    run.finished_at = utc_now_iso8601();
    Status stored = env_.store->finish_run(run);
    if (!stored.ok() && stored.error().code != errc::kConflict) {
        // E.g. a value SQLite cannot hold: record the failure without the
        // measurements rather than leave the run 'running' forever.
        run.status = "failed";
        run.failure_reason = "cannot record result: " + stored.error().message;
        run.metrics.clear();
        run.raw_output.clear();
        (void)env_.store->finish_run(run);
    } else if (!stored.ok()) {
        run.status = "failed";
        run.failure_reason = "cannot record result: " + stored.error().message;
    }
    env_.events->publish(run.sweep_id, Json{{"type", "run_finished"},
                                            {"run_id", run.id},
                                            {"status", run.status},
                                            {"message", run.failure_reason},
                                            {"total_s", timings["total_s"]}});
    return run;
}

}  // namespace ds
