#include "daemon/durability/crash_verdict.h"

#include <algorithm>

namespace ds {
namespace {

constexpr std::string_view kBadReport = "crash check report: ";

Error bad_report(const std::string& what) {
    return make_error(errc::kProtocol, std::string(kBadReport) + what);
}

bool flag(const Json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_boolean() && found->get<bool>();
}

std::string text_or_empty(const Json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>().substr(0, 500)
                                                       : std::string();
}

Result<IdRanges> parse_ranges(const Json& array, const std::string& where) {
    if (!array.is_array()) return bad_report(where + " is not an array");
    if (array.size() > kMaxCheckRanges) {
        return bad_report(where + " has more than " + std::to_string(kMaxCheckRanges) + " ranges");
    }
    IdRanges ranges;
    for (std::size_t i = 0; i < array.size(); ++i) {
        const Json& pair = array[i];
        const std::string at = where + "[" + std::to_string(i) + "]";
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
            !pair[1].is_number_integer()) {
            return bad_report(at + " is not a pair of integers");
        }
        const long long first = pair[0].get<long long>();
        const long long last = pair[1].get<long long>();
        if (first < 1 || last < first) return bad_report(at + " is not 1 <= first <= last");
        if (!ranges.empty() && first <= ranges.back().second + 1) {
            return bad_report(at + " does not come after the range before it");
        }
        ranges.emplace_back(first, last);
    }
    return ranges;
}

Result<CrashCheck> parse_ledger_section(const Json& ledger, CrashCheck check) {
    if (!ledger.is_object()) return bad_report("ledger is not an object");
    const bool database = ledger.contains("recovered");
    check.recovered = database ? flag(ledger, "recovered") : !ledger.contains("error");
    if (!check.recovered) {
        check.problem = text_or_empty(ledger, database ? "recovery_error" : "error");
        return check;
    }
    DS_ASSIGN_OR_RETURN(check.present,
                        parse_ranges(ledger.value("present", Json()), "ledger.present"));
    const auto torn = ledger.find("torn");
    if (torn != ledger.end()) {
        if (!torn->is_number_integer() || torn->get<long long>() < 0) {
            return bad_report("ledger.torn is not a count");
        }
        check.torn = torn->get<long long>();
    }
    return check;
}

}  // namespace

Result<CrashCheck> parse_crash_check(const Json& report) {
    if (!report.is_object()) return bad_report("not an object");
    CrashCheck check;
    check.mounted = flag(report, "mounted");
    const auto after = report.find("fsck_after");
    check.fsck_clean = after != report.end() && after->is_object() && flag(*after, "clean");
    if (!check.mounted) {
        check.problem = text_or_empty(report, "mount_error");
        return check;
    }
    const auto ledger = report.find("ledger");
    if (ledger == report.end()) return bad_report("mounted, but no ledger section");
    return parse_ledger_section(*ledger, check);
}

Result<std::vector<CrashCheck>> parse_crash_checks(const Json& output, std::size_t expected) {
    if (!output.is_object()) return bad_report("output is not an object");
    const auto states = output.find("states");
    if (states == output.end() || !states->is_array()) {
        return bad_report("output has no states array");
    }
    if (states->size() != expected) {
        return bad_report("states has " + std::to_string(states->size()) + " reports, expected " +
                          std::to_string(expected));
    }
    std::vector<CrashCheck> checks;
    checks.reserve(expected);
    for (std::size_t i = 0; i < expected; ++i) {
        auto check = parse_crash_check((*states)[i]);
        if (!check.ok()) {
            std::string_view what = check.error().message;
            if (what.starts_with(kBadReport)) what.remove_prefix(kBadReport.size());
            return bad_report("states[" + std::to_string(i) + "]: " + std::string(what));
        }
        checks.push_back(std::move(*check));
    }
    return checks;
}

long long acknowledged_before(const std::vector<AckEntry>& acks, std::uint64_t log_offset) {
    long long acknowledged = 0;
    for (const AckEntry& ack : acks) {
        if (!ack.log_bytes || *ack.log_bytes > log_offset) break;
        acknowledged = ack.id;
    }
    return acknowledged;
}

long long lost_records(long long acknowledged, const IdRanges& present) {
    long long found = 0;
    for (const auto& [first, last] : present) {
        if (first > acknowledged) break;
        found += std::min(last, acknowledged) - first + 1;
    }
    return acknowledged - found;
}

DurabilitySummary summarize(const std::vector<CrashStateResult>& states) {
    DurabilitySummary summary;
    summary.crash_states = static_cast<int>(states.size());
    long long total_lost = 0;
    for (const CrashStateResult& state : states) {
        summary.mount_failures += state.check.mounted ? 0 : 1;
        summary.fsck_failures += state.check.fsck_clean ? 0 : 1;
        // Before the first acknowledgement the ledger may not exist yet (its
        // file not created, MariaDB still being installed): nothing was
        // promised, so only a file system that fails counts there.
        summary.recovery_failures +=
            state.check.mounted && !state.check.recovered && state.acknowledged > 0 ? 1 : 0;
        summary.states_with_losses += state.lost > 0 ? 1 : 0;
        summary.max_lost = std::max(summary.max_lost, state.lost);
        total_lost += state.lost;
    }
    if (!states.empty()) {
        summary.mean_lost = static_cast<double>(total_lost) / static_cast<double>(states.size());
    }
    return summary;
}

std::string DurabilitySummary::verdict() const {
    std::string text =
        states_with_losses == 0
            ? "kept every acknowledged commit in " + std::to_string(crash_states) + " crash states"
            : "lost acknowledged commits in " + std::to_string(states_with_losses) + " of " +
                  std::to_string(crash_states) + " crash states (up to " +
                  std::to_string(max_lost) + ")";
    std::vector<std::string> failures;
    if (mount_failures > 0) failures.push_back(std::to_string(mount_failures) + " did not mount");
    if (fsck_failures > 0) failures.push_back(std::to_string(fsck_failures) + " failed fsck");
    if (recovery_failures > 0)
        failures.push_back(std::to_string(recovery_failures) + " did not recover");
    for (std::size_t i = 0; i < failures.size(); ++i) text += (i == 0 ? "; " : ", ") + failures[i];
    return text;
}

Json DurabilitySummary::to_json() const {
    return Json{{"crash_states", crash_states},
                {"mount_failures", mount_failures},
                {"fsck_failures", fsck_failures},
                {"recovery_failures", recovery_failures},
                {"states_with_losses", states_with_losses},
                {"max_lost", max_lost},
                {"mean_lost", mean_lost},
                {"verdict", verdict()}};
}

}  // namespace ds
