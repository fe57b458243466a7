#include "guestagent/ledger_workload.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/file_descriptor.h"
#include "common/ledger_output.h"
#include "common/units.h"
#include "common/workload_kind.h"
#include "guestagent/crash_check.h"
#include "guestagent/mariadb_workload.h"

namespace ds::agent {
namespace {

constexpr const char* kKind = "ledger";
// A record holds "ledger <id>\n" and a final '\n': ids up to 10^12 fit.
constexpr std::uint64_t kMinRecordSize = 32;
// One record per fsync: a large one measures bandwidth, not commits.
constexpr std::uint64_t kMaxRecordSize = 1u << 20;
constexpr std::string_view kLedgerFile = "ledger.dat";
// Progress at most this often while records are acknowledged.
constexpr auto kReportEvery = std::chrono::seconds(1);
// Without a time limit from the job: a day bounds the run.
constexpr std::chrono::seconds kNoTimeLimit{24 * 3600};

Result<std::uint64_t> record_size_param(const Json& params) {
    if (!params.contains("record_size")) return LedgerPlan{}.record_size;
    const Json& value = params["record_size"];
    std::optional<std::uint64_t> size;
    if (value.is_number_integer() && value.get<long long>() >= 0) size = value.get<std::uint64_t>();
    if (value.is_string()) size = parse_fio_size(value.get_ref<const std::string&>());
    if (!size || *size < kMinRecordSize || *size > kMaxRecordSize) {
        return mariadb::invalid_param(kKind, "record_size",
                                      "is " + value.dump() + ", expected a size from " +
                                          std::to_string(kMinRecordSize) + " bytes to 1m");
    }
    return *size;
}

Result<std::string> variant_param(const Json& params) {
    if (!params.contains("variant")) return LedgerPlan{}.variant;
    const Json& value = params["variant"];
    if (!value.is_string() || find_ledger_variant(value.get<std::string>()) == nullptr) {
        return mariadb::invalid_param(
            kKind, "variant",
            "is " + value.dump() + ", expected \"file\", \"database\" or \"postgresql\"");
    }
    return value.get<std::string>();
}

double percentile(std::vector<double> values, double share) {
    if (values.empty()) return 0;
    const auto rank =
        static_cast<std::size_t>(std::ceil(share * static_cast<double>(values.size())) - 1);
    const auto at = values.begin() + static_cast<std::ptrdiff_t>(std::min(rank, values.size() - 1));
    std::nth_element(values.begin(), at, values.end());
    return *at;
}

// `error` is the errno of the failed call, taken before `what` was built.
Error errno_error(int error, const std::string& what) {
    return make_error(error == ENOSPC ? errc::kIo : errc::kAgent,
                      what + ": " + std::strerror(error));
}

// Record after record: pwrite at its offset, fsync, acknowledge.
Result<WorkloadOutput> run_ledger_file(const LedgerPlan& plan, WorkloadContext& ctx) {
    const std::string path = ctx.work_dir + "/" + std::string(kLedgerFile);
    FileDescriptor file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!file.valid()) return errno_error(errno, "ledger: cannot create " + path);
    LedgerTally tally(ctx, plan);
    DS_TRY(tally.start());
    for (long long id = 1; id <= plan.records && !tally.out_of_time(); ++id) {
        if (tally.past_time_limit()) {
            return make_error(errc::kTimeout, "ledger stopped at record " + std::to_string(id) +
                                                  ": it exceeded the workload's time limit");
        }
        const std::string record = ledger_record(id, plan.record_size);
        const auto offset =
            static_cast<off_t>(static_cast<std::uint64_t>(id - 1) * plan.record_size);
        if (::pwrite(file.get(), record.data(), record.size(), offset) !=
            static_cast<ssize_t>(record.size())) {
            return errno_error(errno,
                               "ledger: writing record " + std::to_string(id) + " to " + path);
        }
        if (::fsync(file.get()) != 0) {
            return errno_error(errno, "ledger: fsync after record " + std::to_string(id));
        }
        DS_TRY(tally.acknowledge(id));
    }
    WorkloadOutput result;
    result.output = tally.output();
    result.output["variant"] = "file";
    return result;
}

}  // namespace

Result<LedgerPlan> parse_ledger_plan(const Json& params) {
    DS_TRY(mariadb::check_param_names(kKind, params,
                                      {"variant", "records", "time", "record_size", "server"}));
    LedgerPlan plan;
    DS_ASSIGN_OR_RETURN(plan.variant, variant_param(params));
    DS_ASSIGN_OR_RETURN(plan.records,
                        mariadb::integer_param(kKind, params, "records", 1, plan.records));
    if (plan.records > kMaxLedgerRecords) {
        return mariadb::invalid_param(kKind, "records",
                                      "is above " + std::to_string(kMaxLedgerRecords));
    }
    if (params.contains("time")) {
        const auto seconds = mariadb::whole_seconds(params["time"]);
        if (!seconds) {
            return mariadb::invalid_param(
                kKind, "time",
                "is " + params["time"].dump() + ", expected whole seconds >= 1 (\"30s\", 30)");
        }
        plan.time = std::chrono::seconds(*seconds);
    }
    DS_TRY(check_variant_options(*find_workload_kind(kKind), params));
    DS_ASSIGN_OR_RETURN(plan.record_size, record_size_param(params));
    return plan;
}

Status check_ledger_params(const Json& params) {
    DS_TRY(parse_ledger_plan(params));
    return ok_status();
}

std::string ledger_record(long long id, std::uint64_t size) {
    std::string record = "ledger " + std::to_string(id) + "\n";
    record.resize(static_cast<std::size_t>(size) - 1, '.');
    record.push_back('\n');
    return record;
}

LedgerTally::LedgerTally(WorkloadContext& ctx, const LedgerPlan& plan) : ctx_(ctx), plan_(plan) {}

Status LedgerTally::start() {
    if (ctx_.begin_measurement) DS_TRY(ctx_.begin_measurement());
    start_ = last_ = last_report_ = ctx_.clock->now();
    return ok_status();
}

Status LedgerTally::acknowledge(long long id) {
    if (id != acknowledged_ + 1) {
        return make_error(errc::kAgent, "ledger: acknowledgement of record " + std::to_string(id) +
                                            " after record " + std::to_string(acknowledged_) +
                                            ": records must be acknowledged in order");
    }
    const auto now = ctx_.clock->now();
    acknowledged_ = id;
    if (ctx_.acknowledge) ctx_.acknowledge(id);
    latencies_us_.push_back(std::chrono::duration<double, std::micro>(now - last_).count());
    last_ = now;
    const auto second = static_cast<std::size_t>(
        std::chrono::duration_cast<std::chrono::seconds>(now - start_).count());
    if (per_second_.size() <= second) per_second_.resize(second + 1, 0);
    ++per_second_[second];
    if (ctx_.progress && now - last_report_ >= kReportEvery) {
        last_report_ = now;
        ctx_.progress("ledger: " + std::to_string(id) + " records acknowledged",
                      std::chrono::duration<double>(now - start_).count(),
                      static_cast<double>(id) / static_cast<double>(plan_.records));
    }
    return ok_status();
}

bool LedgerTally::out_of_time() const {
    return plan_.time && ctx_.clock->now() - start_ >= *plan_.time;
}

bool LedgerTally::past_time_limit() const {
    const auto limit = ctx_.time_limit > std::chrono::seconds(0) ? ctx_.time_limit : kNoTimeLimit;
    return ctx_.clock->now() - start_ >= limit;
}

Json LedgerTally::output() const {
    const double wall_s = std::chrono::duration<double>(last_ - start_).count();
    const auto max = std::max_element(latencies_us_.begin(), latencies_us_.end());
    return Json{{"acknowledged", acknowledged_},
                {"wall_s", wall_s},
                {"commit_latency_us",
                 {{"p50", percentile(latencies_us_, 0.50)},
                  {"p99", percentile(latencies_us_, 0.99)},
                  {"max", max == latencies_us_.end() ? 0.0 : *max}}},
                {"per_second", per_second_}};
}

const LedgerVariant* find_ledger_variant(std::string_view name) {
    static const LedgerVariant kVariants[] = {
        {"file",
         [](const Workload&, const LedgerPlan& plan, WorkloadContext& ctx) {
             return run_ledger_file(plan, ctx);
         },
         &scan_ledger_file_on_mount},
        {"database", &run_ledger_database,
         [](const Workload& ledger, const LedgerPlan&, WorkloadContext& ctx) {
             return recover_ledger_database(ledger, ctx);
         }},
        {"postgresql", &run_ledger_postgresql,
         [](const Workload& ledger, const LedgerPlan&, WorkloadContext& ctx) {
             return recover_ledger_postgresql(ledger, ctx);
         }},
    };
    for (const LedgerVariant& variant : kVariants) {
        if (variant.name == name) return &variant;
    }
    return nullptr;
}

Result<WorkloadOutput> run_ledger(const Workload& workload, WorkloadContext& ctx) {
    DS_ASSIGN_OR_RETURN(const LedgerPlan plan, parse_ledger_plan(workload.params));
    return find_ledger_variant(plan.variant)->run(workload, plan, ctx);
}

}  // namespace ds::agent
