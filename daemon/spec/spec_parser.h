// The TOML reader of sweep specs, one class whose parts live in a file
// each: spec.cpp (the top level, [hypervisor], [guest], repetitions and the
// verdict rules), spec_matrix.cpp ([filesystems], [matrix], [tunings],
// baseline), spec_workloads.cpp ([[workload]] and its options) and
// spec_durability.cpp (durability). Private to spec/: the rest of the daemon
// calls parse_sweep_spec (spec.h).
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "common/workload_kind.h"
#include "daemon/spec/spec.h"
#include "daemon/spec/spec_text.h"

namespace ds {

// "a table", "an integer", ...: what a TOML value is, for errors.
std::string_view type_name(const toml::node& node);

// A workload option as stored in Workload.params: tables as objects, strings,
// integers and booleans as themselves.
Json option_value_as_json(const toml::node& node);

// One [[workload]] option being checked: its row, its value, and how
// messages name it.
struct OptionUnderCheck {
    const WorkloadOptionDef& option;
    const toml::node& node;
    std::string key;          // the option's name
    std::string in_workload;  // " in workload \"NAME\""
};

class SpecParser {
  public:
    explicit SpecParser(std::string_view source_name) : source_(source_name) {}

    Result<SweepSpec> parse(const toml::table& root);

  private:
    // "SOURCE:LINE:COLUMN: message" (just "SOURCE: message" without a position).
    Error error_at(const toml::source_region& region, std::string message) const {
        std::string where = source_;
        if (region.begin.line > 0) {
            where +=
                ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
        }
        return spec_error(where + ": " + message);
    }
    Error error_without_position(std::string message) const {
        return spec_error(source_ + ": " + message);
    }
    Error type_error(std::string_view key, const toml::node& node,
                     std::string_view expected) const {
        return error_at(node.source(), in_quotes(key) + " must be " + std::string(expected) +
                                           ", not " + std::string(type_name(node)));
    }

    Status check_keys(const toml::table& table, const std::vector<std::string_view>& known,
                      std::string_view what, std::string_view where) const;
    Result<std::string> read_name(std::string_view key, const toml::node& node) const;
    Result<int> read_timeout(std::string_view key, const toml::node& node) const;
    // `dataset = "fresh" | "golden"` of a workload of `kind`: golden only
    // for a kind with a preparation step, on storages that clone.
    Result<DatasetSource> read_dataset(const toml::node& node, const WorkloadKind& kind) const;
    // Why a storage of the matrix cannot give a golden dataset, "" if all can.
    std::string storage_without_clone() const;
    // The matrix's storage values as written ("file" when it lists none).
    std::vector<std::string> matrix_storages() const;
    // `unchecked_levels = "NAME"`, one of unchecked_level_policies().
    Status parse_unchecked_levels(const toml::node& node);
    // `durability = { crash_points, volatile_cache, workload }`, after the
    // workloads: marks the ledger workloads, adding one when there is none.
    Status parse_durability(const toml::node& node);
    Result<DurabilityOptions> read_durability_options(const toml::table& table) const;
    // durability.ledger_seconds, when set: 1..kMaxLedgerSeconds.
    Result<std::optional<int>> read_ledger_seconds(const toml::table& table) const;
    Status set_ledger_seconds(Workload& ledger, std::optional<int> seconds,
                              const toml::table& table) const;
    // Why the spec's hypervisor or a storage of its matrix cannot log a
    // run's writes, "" if they all can.
    std::string durability_unsupported() const;
    // The ledger a durability table adds: the first server workload's
    // server's variant (its rules' ledger_variant: database for MariaDB,
    // postgresql for PostgreSQL) with that workload's server settings, else
    // the file variant.
    Workload durability_ledger() const;
    Status parse_hypervisor(const toml::node& node);
    // `[guest] suite = "trixie"`, after [hypervisor]: the guest image's
    // Debian release (common/guest_suite.h).
    Status parse_guest(const toml::node& node);
    Status parse_hosts(const toml::node& node);
    Status parse_filesystems(const toml::node& node);
    Status parse_matrix(const toml::node& node);
    Status read_tuning_axis(const toml::node& node);
    Status parse_tunings(const toml::node* node);
    Status parse_tuning(const toml::key& key, const toml::node& definition_node);
    Status read_baseline_tuning(const toml::node& value);
    Result<std::string> axis_value_text(const AxisDef& axis, const toml::node& element) const;
    Status parse_repetitions(const toml::node& node);
    Result<double> read_percentage(std::string_view key, const toml::node& node) const;
    Status parse_verdict_rules(const toml::table& root);
    Status parse_baseline(const toml::node& node);
    Status parse_workloads(const toml::node& node);
    Status check_workload_option(const WorkloadOptionDef& option, const toml::node& node,
                                 std::string_view workload_name) const;
    Error bad_option_value(const OptionUnderCheck& value, std::string_view detail) const;
    Status check_enum_option(const OptionUnderCheck& value) const;
    Status check_size_option(const OptionUnderCheck& value) const;
    Status check_duration_option(const OptionUnderCheck& value) const;
    Status check_integer_option(const OptionUnderCheck& value) const;
    Status check_flag_option(const OptionUnderCheck& value) const;
    Status check_bool_option(const OptionUnderCheck& value) const;
    Status check_seconds_option(const OptionUnderCheck& value) const;
    Status check_job_file_option(const OptionUnderCheck& value) const;
    Status check_option_table(const OptionUnderCheck& value) const;
    Status check_option_table_name(const OptionUnderCheck& value, const toml::key& entry_key,
                                   const std::string& where) const;
    Status check_fio_refusal(const toml::key& key, const toml::node& value,
                             const std::string& prefix) const;
    Status check_io_option(const toml::key& key, const toml::node& value, std::string_view ioengine,
                           const Workload& workload) const;
    Status check_io_combination(const toml::table& table, const Workload& workload) const;
    Status check_fio_combination(const toml::table& table, const Workload& workload) const;
    Status check_option_combination(const WorkloadKind& kind, const toml::table& table,
                                    const Workload& workload) const;
    Status read_workload_options(const toml::table& table, const WorkloadKind& kind,
                                 Workload& workload) const;
    Status check_kind_option(const WorkloadKind& kind, const toml::key& key,
                             const toml::node& value, const Workload& workload) const;
    Error unknown_option(const toml::key& key, std::string_view kind_name, const Workload& workload,
                         const std::vector<std::string_view>& valid) const;
    Result<std::vector<std::string>> read_filesystems(const toml::node& node,
                                                      const std::string& owner) const;

    std::string source_;
    SweepSpec spec_;
    // Where each value of matrix.tuning is written, for errors found once
    // the [tunings.NAME] tables are read.
    std::vector<toml::source_region> tuning_value_regions_;
};

}  // namespace ds
