// A spec's `durability` table (docs/durability.md): the ledger workloads it
// marks, or the ledger it adds.
#include <algorithm>

#include "common/json_fields.h"
#include "common/text.h"
#include "common/workload_kind.h"
#include "daemon/backends/registry.h"
#include "daemon/spec/spec_parser.h"

namespace ds {
namespace {

// The ledger a `durability` table adds when the spec has none
// (docs/durability.md): long enough under TCG for a few hundred commits,
// short enough that its log and crash images stay small.
constexpr std::string_view kDurabilityLedgerName = "durability-ledger";
constexpr int kDurabilityLedgerSeconds = 20;
constexpr int kDurabilityLedgerRecords = 100000;
// durability.ledger_seconds: long enough for several host writeback windows
// (35 s by default), short enough for its log to stay a few GiB.
constexpr int kMaxLedgerSeconds = 3600;

}  // namespace

Status SpecParser::parse_durability(const toml::node& node) {
    const auto* table = node.as_table();
    if (table == nullptr) {
        return type_error("durability", node, "a table (durability = { crash_points = 50 })");
    }
    DS_TRY(check_keys(
        *table, {"crash_points", "volatile_cache", "keep_files", "workload", "ledger_seconds"},
        "key", "in durability"));
    DS_ASSIGN_OR_RETURN(DurabilityOptions options, read_durability_options(*table));
    DS_ASSIGN_OR_RETURN(const std::optional<int> seconds, read_ledger_seconds(*table));
    if (const std::string problem = durability_unsupported(); !problem.empty()) {
        return error_at(node.source(), "durability: " + problem);
    }
    std::vector<Workload>& workloads = spec_.workloads;
    if (const toml::node* named = table->get("workload")) {
        DS_ASSIGN_OR_RETURN(std::string name, read_name("workload", *named));
        const auto found = std::find_if(workloads.begin(), workloads.end(),
                                        [&](const Workload& w) { return w.name == name; });
        if (found == workloads.end() || !kind_acknowledges(found->kind)) {
            return error_at(named->source(), "durability.workload " + in_quotes(name) +
                                                 " must name a [[workload]] of kind \"" +
                                                 std::string(durability_ledger_kind().name) + "\"");
        }
        found->durability = options;
        return set_ledger_seconds(*found, seconds, *table);
    }
    bool marked = false;
    for (Workload& workload : workloads) {
        if (!kind_acknowledges(workload.kind)) continue;
        workload.durability = options;
        DS_TRY(set_ledger_seconds(workload, seconds, *table));
        marked = true;
    }
    if (!marked) {
        workloads.push_back(durability_ledger());
        workloads.back().durability = options;
        if (seconds) workloads.back().params.erase("time");  // its default gives way
        DS_TRY(set_ledger_seconds(workloads.back(), seconds, *table));
    }
    return ok_status();
}

Result<std::optional<int>> SpecParser::read_ledger_seconds(const toml::table& table) const {
    const toml::node* node = table.get("ledger_seconds");
    if (node == nullptr) return std::optional<int>{};
    const auto* integer = node->as_integer();
    if (integer == nullptr) return type_error("ledger_seconds", *node, "an integer of seconds");
    if (integer->get() < 1 || integer->get() > kMaxLedgerSeconds) {
        return error_at(node->source(),
                        "'ledger_seconds' must be 1 to " + std::to_string(kMaxLedgerSeconds));
    }
    return std::optional<int>(static_cast<int>(integer->get()));
}

// The marked ledger runs for `seconds` (its own `time` must agree), with
// records enough not to end first.
Status SpecParser::set_ledger_seconds(Workload& ledger, std::optional<int> seconds,
                                      const toml::table& table) const {
    if (!seconds) return ok_status();
    const Json& time = json_read::field(ledger.params, "time");
    if (!time.is_null() && !(time.is_number_integer() && time.get<int>() == *seconds)) {
        return error_at(table.get("ledger_seconds")->source(),
                        "durability.ledger_seconds = " + std::to_string(*seconds) +
                            " and workload " + in_quotes(ledger.name) + "'s time = " + time.dump() +
                            " disagree: set one of them");
    }
    ledger.params["time"] = *seconds;
    if (!ledger.params.contains("records")) ledger.params["records"] = kDurabilityLedgerRecords;
    return ok_status();
}

Result<DurabilityOptions> SpecParser::read_durability_options(const toml::table& table) const {
    DurabilityOptions options;
    if (const toml::node* points = table.get("crash_points")) {
        const auto* integer = points->as_integer();
        if (integer == nullptr) return type_error("crash_points", *points, "an integer");
        if (integer->get() < 1 || integer->get() > kMaxCrashPoints) {
            return error_at(points->source(),
                            "'crash_points' must be 1 to " + std::to_string(kMaxCrashPoints));
        }
        options.crash_points = static_cast<int>(integer->get());
    }
    if (const toml::node* rule = table.get("volatile_cache")) {
        const auto* flag = rule->as_boolean();
        if (flag == nullptr) return type_error("volatile_cache", *rule, "true or false");
        options.volatile_cache = flag->get();
    }
    if (const toml::node* keep = table.get("keep_files")) {
        const auto* flag = keep->as_boolean();
        if (flag == nullptr) return type_error("keep_files", *keep, "true or false");
        options.keep_files = flag->get();
    }
    return options;
}

std::string SpecParser::durability_unsupported() const {
    const HypervisorKindDef* hypervisor = find_hypervisor_kind(spec_.hypervisor);
    if (hypervisor != nullptr && !hypervisor->no_write_log.empty()) {
        return std::string(hypervisor->no_write_log);
    }
    for (const std::string& storage : matrix_storages()) {
        const StorageKindDef* definition = find_storage_kind(storage.substr(0, storage.find(':')));
        if (definition == nullptr || !definition->pre_run_copy.empty()) continue;
        std::vector<std::string_view> copying;
        for (const StorageKindDef& other : storage_kinds()) {
            if (!other.pre_run_copy.empty()) copying.push_back(other.kind);
        }
        return "storage " + in_quotes(storage) +
               " cannot keep a copy of the volume as it was before the run, which every crash "
               "image starts from (storages that can: " +
               join(copying, ", ") + ")";
    }
    return "";
}

Workload SpecParser::durability_ledger() const {
    Workload ledger;
    ledger.name = std::string(kDurabilityLedgerName);
    ledger.kind = std::string(durability_ledger_kind().name);
    ledger.params = {{"variant", "file"},
                     {"records", kDurabilityLedgerRecords},
                     {"time", kDurabilityLedgerSeconds}};
    // A sweep of a server's workload measures its durability in that server:
    // the ledger variant its rules name, under the workload's settings.
    for (const Workload& workload : spec_.workloads) {
        const ServerSettingsRules* rules = kind_server_settings(workload.kind, workload.params);
        if (rules == nullptr) continue;
        ledger.params["variant"] = std::string(rules->ledger_variant);
        if (workload.params.contains("server")) ledger.params["server"] = workload.params["server"];
        break;
    }
    return ledger;
}

}  // namespace ds
