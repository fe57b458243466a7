// One line from an untrusted guest, through what the daemon does with it
// (daemon/run/agent_session.cpp, run_attempt.cpp): protocol::decode, the
// typed check of its message type, and for a result the re-derived metrics of
// every workload kind and the verification of the guest's readback. Errors
// are fine; crashes, sanitizer reports, exceptions and hangs are not.
#include <string_view>
#include <utility>
#include <vector>

#include "common/protocol.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/run/guest_messages.h"
#include "daemon/run/settings_verify.h"
#include "fuzz/fuzz_input.h"

namespace {

// A result claims no kind of its own: the daemon derives metrics for the kind
// it asked for, so every kind must cope with any output.

struct Requested {
    ds::StorageConfig config;
    ds::Workload workload;
};

// Requests every guest-visible setting, so each check of verify_settings runs
// against the fuzzed readback (the default configuration requests none).
Requested everything_requested() {
    Requested requested;
    ds::StorageConfig& config = requested.config;
    config.bus = ds::Bus::kVirtioBlk;
    config.cache = ds::CacheMode::kWritethrough;
    config.discard = true;
    config.ssd = true;
    config.queues = 2;
    config.scheduler = ds::IoScheduler::kBfq;
    config.read_ahead_kb = 512;
    config.nr_requests = 64;
    config.filesystem = {"btrfs-tuned",
                         "btrfs",
                         {"-d", "raid0", "--metadata=dup"},
                         "compress=zstd:3,noatime,nobarrier",
                         {"single", "nocow"}};
    requested.workload.name = "atis";
    requested.workload.kind = "mariadb-atis";
    requested.workload.params = {{"server",
                                  {{"innodb_flush_log_at_trx_commit", 2},
                                   {"innodb_buffer_pool_size", "128M"},
                                   {"innodb_doublewrite", false},
                                   {"innodb_flush_method", "O_DIRECT"}}}};
    return requested;
}

const std::vector<Requested>& requested_runs() {
    static const std::vector<Requested> runs = {Requested{}, everything_requested()};
    return runs;
}

void check_result(ds::guest::ResultMessage result) {
    for (std::string_view kind : ds::workload_kind_names()) {
        (void)ds::metrics_from_workload_output(kind, result.output);
    }
    for (const Requested& run : requested_runs()) {
        (void)ds::verify_settings(run.config, run.workload, nullptr, result.readback);
    }
}

void check_message(ds::Json message) {
    const std::string type = message["type"].get<std::string>();
    if (type == ds::protocol::kHello) {
        (void)ds::guest::parse_hello(std::move(message));
    } else if (type == ds::protocol::kProgress) {
        (void)ds::guest::parse_progress(std::move(message));
    } else if (type == ds::protocol::kError) {
        (void)ds::guest::parse_error(std::move(message));
    } else if (type == ds::protocol::kResult) {
        auto result = ds::guest::parse_result(std::move(message));
        if (result.ok()) check_result(std::move(result.value()));
    }
    // job and shutdown decode (they are protocol types) but the daemon refuses
    // them from a guest without looking inside.
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto message = ds::protocol::decode(ds::fuzz::as_text(data, size));
    if (message.ok()) check_message(std::move(message.value()));
    return 0;
}
