#include "daemon/durability/crash_verdict.h"

#include <algorithm>
#include <utility>

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

// What the report's "ledger" section says, of the first mount or of the
// mount after repair.
struct LedgerFindings {
    bool recovered = false;
    IdRanges present;
    long long torn = 0;
    std::string problem;
};

Result<LedgerFindings> parse_ledger_section(const Json& ledger) {
    if (!ledger.is_object()) return bad_report("ledger is not an object");
    LedgerFindings found;
    const bool database = ledger.contains("recovered");
    found.recovered = database ? flag(ledger, "recovered") : !ledger.contains("error");
    if (!found.recovered) {
        found.problem = text_or_empty(ledger, database ? "recovery_error" : "error");
        return found;
    }
    DS_ASSIGN_OR_RETURN(found.present,
                        parse_ranges(ledger.value("present", Json()), "ledger.present"));
    const auto torn = ledger.find("torn");
    if (torn != ledger.end()) {
        if (!torn->is_number_integer() || torn->get<long long>() < 0) {
            return bad_report("ledger.torn is not a count");
        }
        found.torn = torn->get<long long>();
    }
    return found;
}

Result<LedgerFindings> parse_ledger_of(const Json& report, const char* when) {
    const auto ledger = report.find("ledger");
    if (ledger == report.end()) return bad_report(std::string(when) + ", but no ledger section");
    return parse_ledger_section(*ledger);
}

// One of repair.steps: its command line, and its exit code (-1 when the
// step has an "error" instead: it did not run to its end).
Result<std::pair<std::string, int>> parse_repair_step(const Json& step, const std::string& at) {
    if (!step.is_object()) return bad_report(at + " is not an object");
    const auto command = step.find("command");
    if (command == step.end() || !command->is_string())
        return bad_report(at + ".command is not a string");
    const auto exit_code = step.find("exit_code");
    if (exit_code == step.end()) {
        if (!step.contains("error")) return bad_report(at + " has neither exit_code nor error");
        return std::pair{command->get<std::string>().substr(0, 500), -1};
    }
    if (!exit_code->is_number_integer() || exit_code->get<long long>() < -1 ||
        exit_code->get<long long>() > 255) {
        return bad_report(at + ".exit_code is not an integer in [-1, 255]");
    }
    return std::pair{command->get<std::string>().substr(0, 500), exit_code->get<int>()};
}

Result<RepairOutcome> parse_repair(const Json& repair) {
    if (!repair.is_object()) return bad_report("repair is not an object");
    RepairOutcome outcome;
    outcome.tried = true;
    const auto steps = repair.find("steps");
    if (steps == repair.end() || !steps->is_array() || steps->size() > kMaxCheckRepairSteps) {
        return bad_report("repair.steps is not an array of at most " +
                          std::to_string(kMaxCheckRepairSteps) + " steps");
    }
    for (std::size_t i = 0; i < steps->size(); ++i) {
        DS_ASSIGN_OR_RETURN(
            const auto step,
            parse_repair_step((*steps)[i], "repair.steps[" + std::to_string(i) + "]"));
        outcome.commands += (i == 0 ? "" : "; ") + step.first;
        outcome.exit_code = step.second;
    }
    const auto mounted = repair.find("mounted");
    if (mounted == repair.end() || !mounted->is_boolean())
        return bad_report("repair.mounted is not a boolean");
    outcome.mounted = mounted->get<bool>();
    outcome.log_zeroed = flag(repair, "log_zeroed");
    outcome.problem = text_or_empty(repair, "problem");
    return outcome;
}

// A report whose first mount failed: the repair, if any, and what the
// repaired image kept.
Result<CrashCheck> parse_unmounted(const Json& report, CrashCheck check) {
    check.problem = text_or_empty(report, "mount_error");
    const auto repair = report.find("repair");
    if (repair == report.end()) return check;
    DS_ASSIGN_OR_RETURN(check.repair, parse_repair(*repair));
    // The fsck after a repair judges the repair's work, not the crash's.
    check.fsck_clean = false;
    if (!check.repair.mounted) return check;
    DS_ASSIGN_OR_RETURN(const LedgerFindings found,
                        parse_ledger_of(report, "mounted after repair"));
    check.repair.recovered = found.recovered;
    check.repair.present = found.present;
    check.repair.torn = found.torn;
    if (!found.recovered) check.repair.problem = found.problem;
    return check;
}

}  // namespace

Result<CrashCheck> parse_crash_check(const Json& report) {
    if (!report.is_object()) return bad_report("not an object");
    CrashCheck check;
    check.mounted = flag(report, "mounted");
    const auto after = report.find("fsck_after");
    check.fsck_clean = after != report.end() && after->is_object() && flag(*after, "clean");
    if (!check.mounted) return parse_unmounted(report, check);
    DS_ASSIGN_OR_RETURN(const LedgerFindings found, parse_ledger_of(report, "mounted"));
    check.recovered = found.recovered;
    check.present = found.present;
    check.torn = found.torn;
    check.problem = found.problem;
    return check;
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

long long lost_after_repair(long long acknowledged, long long lost, const CrashCheck& check) {
    if (check.mounted || !check.repair.tried) return lost;
    if (!check.repair.mounted || !check.repair.recovered) return acknowledged;
    return lost_records(acknowledged, check.repair.present);
}

CrashStateResult crash_state_result(std::uint64_t log_offset, long long acknowledged,
                                    CrashCheck check) {
    CrashStateResult result;
    result.log_offset = log_offset;
    result.acknowledged = acknowledged;
    result.lost = lost_records(acknowledged, check.present);
    result.lost_after_repair = lost_after_repair(acknowledged, result.lost, check);
    result.check = std::move(check);
    return result;
}

namespace {

void add_repair(DurabilitySummary& summary, const CrashStateResult& state) {
    summary.states_repaired += state.check.repair.tried ? 1 : 0;
    summary.mounted_after_repair += state.check.repair.mounted ? 1 : 0;
    summary.states_with_losses_after_repair += state.lost_after_repair > 0 ? 1 : 0;
    summary.max_lost_after_repair =
        std::max(summary.max_lost_after_repair, state.lost_after_repair);
}

}  // namespace

DurabilitySummary summarize(const std::vector<CrashStateResult>& states) {
    DurabilitySummary summary;
    summary.crash_states = static_cast<int>(states.size());
    long long total_lost = 0;
    long long total_lost_after_repair = 0;
    for (const CrashStateResult& state : states) {
        add_repair(summary, state);
        total_lost_after_repair += state.lost_after_repair;
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
        const auto count = static_cast<double>(states.size());
        summary.mean_lost = static_cast<double>(total_lost) / count;
        summary.mean_lost_after_repair = static_cast<double>(total_lost_after_repair) / count;
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
    if (states_repaired > 0) {
        failures.push_back(std::to_string(mounted_after_repair) + " mounted after repair");
        failures.push_back(states_with_losses_after_repair == 0
                               ? std::string("none lost after repair")
                               : "lost after repair in " +
                                     std::to_string(states_with_losses_after_repair) + " (up to " +
                                     std::to_string(max_lost_after_repair) + ")");
    }
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
                {"states_repaired", states_repaired},
                {"mounted_after_repair", mounted_after_repair},
                {"states_with_losses_after_repair", states_with_losses_after_repair},
                {"max_lost_after_repair", max_lost_after_repair},
                {"mean_lost_after_repair", mean_lost_after_repair},
                {"verdict", verdict()}};
}

}  // namespace ds
