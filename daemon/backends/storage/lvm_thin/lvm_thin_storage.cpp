#include "daemon/backends/storage/lvm_thin/lvm_thin_storage.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/text.h"

namespace ds {
namespace {

// LVM's naming rules (man lvm, VALID NAMES), with the reserved prefixes
// and strings of LVM 2.03's own table (apply_lvname_restrictions).
constexpr std::size_t kMaxNameLength = 127;
constexpr std::string_view kNameCharacters =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+_.-";
constexpr std::array<std::string_view, 2> kReservedLvPrefixes = {"pvmove", "snapshot"};
constexpr std::array<std::string_view, 17> kReservedLvStrings = {
    "_cdata", "_cmeta", "_corig", "_cpool", "_cvol",  "_wcorig", "_mimage",  "_mlog",   "_rimage",
    "_rmeta", "_tdata", "_tmeta", "_vdata", "_imeta", "_iorig",  "_pmspare", "_vorigin"};

// The one report every query reads: the fields of LvReportRow.
constexpr std::string_view kReportFields = "lv_name,pool_lv,data_percent,metadata_percent";

// The longest piece of LVM's stderr an error carries (its last lines).
constexpr std::size_t kMaxLvmMessage = 2000;

Error invalid_name(std::string_view what, std::string_view name, std::string_view why) {
    return make_error(errc::kInvalidArgument,
                      std::string(what) + " '" + std::string(name) + "': " + std::string(why));
}

// The rules VG and LV names share.
Status check_lvm_name(std::string_view what, std::string_view name) {
    if (name.empty()) return invalid_name(what, name, "empty");
    if (name.size() > kMaxNameLength) {
        return invalid_name(what, name,
                            "longer than LVM's " + std::to_string(kMaxNameLength) + " characters");
    }
    if (name.front() == '-') return invalid_name(what, name, "LVM names cannot begin with '-'");
    if (name == "." || name == "..") return invalid_name(what, name, "reserved by LVM");
    if (auto bad = name.find_first_not_of(kNameCharacters); bad != std::string_view::npos) {
        return invalid_name(what, name,
                            std::string("character '") + name[bad] +
                                "' is not allowed (LVM allows a-z A-Z 0-9 + _ . -)");
    }
    return ok_status();
}

// LVM's multi-line stderr as one line: each line trimmed, joined by "; ",
// only the last kMaxLvmMessage characters (the error comes last).
std::string lvm_message(std::string_view stderr_text) {
    std::string message;
    while (!stderr_text.empty()) {
        const auto end = std::min(stderr_text.find('\n'), stderr_text.size());
        const auto line = trim_whitespace(stderr_text.substr(0, end));
        if (!line.empty()) {
            if (!message.empty()) message += "; ";
            message += line;
        }
        stderr_text.remove_prefix(std::min(end + 1, stderr_text.size()));
    }
    if (message.size() > kMaxLvmMessage) {
        message = "..." + message.substr(message.size() - kMaxLvmMessage);
    }
    return message.empty() ? "(no message on stderr)" : message;
}

Error malformed_report(std::string_view why) {
    return make_error(errc::kStorage, "unreadable lvs JSON report: " + std::string(why));
}

// A percentage field: "" (LVM has none) -> nullopt. LVM prints it as a
// string, with the locale's decimal separator; a number is taken as is.
Result<std::optional<double>> percent_field(const Json& row, const char* key) {
    const auto field = row.find(key);
    if (field == row.end()) return std::optional<double>();
    if (field->is_number()) return std::optional<double>(field->get<double>());
    if (!field->is_string()) return malformed_report(std::string(key) + " is not a string");
    std::string text(trim_whitespace(field->get_ref<const std::string&>()));
    if (text.empty()) return std::optional<double>();
    std::replace(text.begin(), text.end(), ',', '.');
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
        return malformed_report(std::string(key) + " '" + text + "' is not a number");
    }
    return std::optional<double>(value);
}

// A string field; a missing one reads as "".
Result<std::string> string_field(const Json& row, const char* key) {
    const auto field = row.find(key);
    if (field == row.end()) return std::string();
    if (!field->is_string()) return malformed_report(std::string(key) + " is not a string");
    return field->get<std::string>();
}

Result<LvReportRow> parse_row(const Json& row) {
    if (!row.is_object()) return malformed_report("an lv entry is not an object");
    if (!row.contains("lv_name")) return malformed_report("an lv entry has no lv_name");
    DS_ASSIGN_OR_RETURN(auto name, string_field(row, "lv_name"));
    DS_ASSIGN_OR_RETURN(auto pool, string_field(row, "pool_lv"));
    DS_ASSIGN_OR_RETURN(auto data, percent_field(row, "data_percent"));
    DS_ASSIGN_OR_RETURN(auto metadata, percent_field(row, "metadata_percent"));
    return LvReportRow{std::move(name), std::move(pool), data, metadata};
}

const LvReportRow* find_row(const std::vector<LvReportRow>& rows, std::string_view name) {
    const auto found =
        std::find_if(rows.begin(), rows.end(), [&](const auto& row) { return row.name == name; });
    return found == rows.end() ? nullptr : &*found;
}

}  // namespace

Status check_volume_group_name(std::string_view name) {
    return check_lvm_name("volume group name", name);
}

Status check_logical_volume_name(std::string_view name) {
    DS_TRY(check_lvm_name("logical volume name", name));
    for (std::string_view prefix : kReservedLvPrefixes) {
        if (name.starts_with(prefix)) {
            return invalid_name("logical volume name", name,
                                "LVM reserves names starting with '" + std::string(prefix) + "'");
        }
    }
    for (std::string_view reserved : kReservedLvStrings) {
        if (name.find(reserved) != std::string_view::npos) {
            return invalid_name("logical volume name", name,
                                "LVM reserves '" + std::string(reserved) + "' for its sub-LVs");
        }
    }
    return ok_status();
}

Result<ThinPoolRef> parse_thin_pool(std::string_view text) {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos) {
        return make_error(errc::kInvalidArgument,
                          "lvm-thin pool '" + std::string(text) + "': expected VG/POOL");
    }
    ThinPoolRef pool{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
    for (Status checked :
         {check_volume_group_name(pool.volume_group), check_logical_volume_name(pool.pool)}) {
        if (!checked.ok()) {
            return make_error(errc::kInvalidArgument, "lvm-thin pool '" + std::string(text) +
                                                          "': " + checked.error().message);
        }
    }
    return pool;
}

Result<std::vector<LvReportRow>> parse_lv_report(std::string_view json_text) {
    const Json document = Json::parse(json_text.begin(), json_text.end(), nullptr,
                                      /*allow_exceptions=*/false);
    if (document.is_discarded()) return malformed_report("not JSON");
    const auto reports = document.is_object() ? document.find("report") : document.end();
    if (reports == document.end() || !reports->is_array()) {
        return malformed_report("no \"report\" array");
    }
    std::vector<LvReportRow> rows;
    for (const Json& report : *reports) {
        if (!report.is_object()) return malformed_report("a report is not an object");
        const auto lvs = report.find("lv");
        if (lvs == report.end()) continue;  // another report type (pv, vg, log)
        if (!lvs->is_array()) return malformed_report("\"lv\" is not an array");
        for (const Json& row : *lvs) {
            DS_ASSIGN_OR_RETURN(auto parsed, parse_row(row));
            rows.push_back(std::move(parsed));
        }
    }
    return rows;
}

LvmThinStorage::LvmThinStorage(ThinPoolRef pool, ProcessRunner& runner)
    : pool_(std::move(pool)), runner_(runner) {}

std::string LvmThinStorage::name() const {
    return "lvm-thin:" + pool_.path();
}

Result<Volume> LvmThinStorage::create_volume(const std::string& name, const StorageConfig& config) {
    DS_TRY(require_raw_format(this->name(), "a thin LV", config));
    return create_thin(name, config.disk_size_bytes);
}

Result<Volume> LvmThinStorage::create_golden(const std::string& name, std::uint64_t size_bytes) {
    return create_thin(name, size_bytes);
}

Result<Volume> LvmThinStorage::create_thin(const std::string& name, std::uint64_t size_bytes) {
    DS_TRY(check_logical_volume_name(name));
    DS_TRY(run_lvm({"lvcreate", "--type", "thin", "--virtualsize", std::to_string(size_bytes) + "b",
                    "--thinpool", pool_.pool, "--name", name, pool_.volume_group}));
    return block_volume(name);
}

Result<Volume> LvmThinStorage::create_snapshot_volume(const std::string& name,
                                                      const std::string& golden) {
    DS_TRY(check_logical_volume_name(name));
    DS_TRY(check_logical_volume_name(golden));
    DS_ASSIGN_OR_RETURN(auto rows, report_volume_group());
    const LvReportRow* origin = find_row(rows, golden);
    if (!origin) {
        return make_error(errc::kNotFound,
                          this->name() + ": no golden volume " + pool_.volume_group + "/" + golden);
    }
    if (origin->pool != pool_.pool) {
        return make_error(
            errc::kInvalidArgument,
            this->name() + ": golden volume " + pool_.volume_group + "/" + golden +
                (origin->pool.empty() ? " is not a thin LV" : " is in thin pool " + origin->pool));
    }
    // Without a size the snapshot is thin, in the origin's pool. LVM marks
    // thin snapshots "skip activation" by default: --setactivationskip n
    // makes this one active like any other volume.
    DS_TRY(run_lvm({"lvcreate", "--snapshot", "--setactivationskip", "n", "--name", name,
                    pool_.volume_group + "/" + golden}));
    return block_volume(name);
}

Result<ClonedVolume> LvmThinStorage::clone_volume(const std::string& golden,
                                                  const std::string& name,
                                                  const StorageConfig& config) {
    DS_TRY(require_raw_format(this->name(), "a thin LV", config));
    DS_ASSIGN_OR_RETURN(auto volume, create_snapshot_volume(name, golden));
    return ClonedVolume{std::move(volume), "thin-snapshot"};
}

Status LvmThinStorage::remove_volume(const std::string& name) {
    DS_TRY(check_logical_volume_name(name));
    if (name == pool_.pool) {
        return make_error(errc::kInvalidArgument, this->name() + ": refusing to remove the pool");
    }
    auto removed = run_lvm({"lvremove", "--force", pool_.volume_group + "/" + name});
    if (removed.ok()) return ok_status();
    // Gone already (or never made) is success; any other failure stands.
    auto rows = report_volume_group();
    if (rows.ok() && !find_row(*rows, name)) return ok_status();
    return removed.error();
}

Result<std::vector<std::string>> LvmThinStorage::list_volumes(const std::string& prefix) {
    DS_ASSIGN_OR_RETURN(auto rows, report_volume_group());
    std::vector<std::string> names;
    for (const LvReportRow& row : rows) {
        if (row.pool == pool_.pool && row.name.starts_with(prefix)) names.push_back(row.name);
    }
    return names;
}

Result<ThinPoolFill> LvmThinStorage::fill(const std::string& volume) {
    DS_ASSIGN_OR_RETURN(auto rows, report_volume_group());
    const LvReportRow* pool = find_row(rows, pool_.pool);
    if (!pool) {
        return make_error(errc::kNotFound, name() + ": the volume group has no LV " + pool_.pool);
    }
    if (!pool->data_percent || !pool->metadata_percent) {
        return make_error(errc::kStorage, name() + ": LVM reports no data and metadata fill for " +
                                              pool_.pool + " (not an active thin pool?)");
    }
    ThinPoolFill fill{*pool->data_percent, *pool->metadata_percent, std::nullopt};
    if (const LvReportRow* own = find_row(rows, volume); own && own->pool == pool_.pool) {
        fill.volume_data_percent = own->data_percent;
    }
    return fill;
}

Json LvmThinStorage::state(const std::string& volume) {
    auto measured = fill(volume);
    if (!measured.ok()) return Json{{"error", measured.error().message}};
    Json state = {{"pool_data_percent", measured->pool_data_percent},
                  {"pool_metadata_percent", measured->pool_metadata_percent}};
    if (measured->volume_data_percent) {
        state["volume_data_percent"] = *measured->volume_data_percent;
    }
    return state;
}

Result<std::uint64_t> LvmThinStorage::allocated_bytes(const std::string& volume) {
    DS_TRY(check_logical_volume_name(volume));
    DS_ASSIGN_OR_RETURN(auto measured, fill(volume));
    if (!measured.volume_data_percent) {
        return make_error(errc::kNotFound,
                          name() + ": no thin LV " + volume + " with a data fill in the pool");
    }
    DS_ASSIGN_OR_RETURN(auto size_text,
                        run_lvm({"lvs", "--noheadings", "--units", "b", "--nosuffix", "--options",
                                 "lv_size", pool_.volume_group + "/" + volume}));
    const std::string digits(trim_whitespace(size_text));
    std::uint64_t size = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    if (error != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
        return make_error(errc::kStorage, name() + ": lvs printed no size in bytes for " + volume +
                                              ": '" + digits.substr(0, 80) + "'");
    }
    return static_cast<std::uint64_t>(*measured.volume_data_percent / 100.0 *
                                      static_cast<double>(size));
}

Result<std::vector<LvReportRow>> LvmThinStorage::report_volume_group() {
    DS_ASSIGN_OR_RETURN(auto output, run_lvm({"lvs", "--reportformat", "json", "--options",
                                              std::string(kReportFields), pool_.volume_group}));
    auto rows = parse_lv_report(output);
    if (!rows.ok()) {
        return make_error(errc::kStorage,
                          name() + ": lvs " + pool_.volume_group + ": " + rows.error().message);
    }
    return rows;
}

Result<std::string> LvmThinStorage::run_lvm(const std::vector<std::string>& argv) {
    auto output = runner_.run(argv, kCommandTimeout);
    if (!output.ok()) {
        return make_error(errc::kStorage,
                          name() + ": cannot run " + argv[0] + ": " + output.error().message);
    }
    if (output->timed_out) {
        return make_error(errc::kTimeout,
                          name() + ": " + describe_command(argv) + " timed out after " +
                              std::to_string(kCommandTimeout.count() / 1000) + " s");
    }
    if (output->exit_code != 0) {
        const std::string how = output->signal
                                    ? "killed by signal " + std::to_string(output->signal)
                                    : "exit code " + std::to_string(output->exit_code);
        return make_error(errc::kStorage, name() + ": " + describe_command(argv) + " failed (" +
                                              how + "): " + lvm_message(output->stderr_text));
    }
    return std::move(output->stdout_text);
}

Volume LvmThinStorage::block_volume(const std::string& name) const {
    // LVM's stable name for an active LV (man lvm: /dev/VG/LV, not
    // /dev/mapper, whose escaping may change).
    return Volume{name, BlockDisk{"/dev/" + pool_.volume_group + "/" + name}};
}

Result<std::unique_ptr<LvmThinStorage>> make_lvm_thin_storage(std::string_view text,
                                                              ProcessRunner& runner) {
    DS_ASSIGN_OR_RETURN(auto pool, parse_thin_pool(text));
    return std::make_unique<LvmThinStorage>(std::move(pool), runner);
}

}  // namespace ds
