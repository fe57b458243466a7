#include "common/server_settings.h"

#include <algorithm>

#include "common/text.h"
#include "common/workload_output.h"

namespace ds {
namespace {

// One line per setting of `server`: "NAME" `separator` value_text(VALUE).
std::string setting_lines(const Json& server, std::string_view separator,
                          std::string (*value_text)(const Json&)) {
    std::string lines;
    if (!server.is_object()) return lines;
    for (const auto& [name, value] : server.items())
        lines += name + std::string(separator) + value_text(value) + "\n";
    return lines;
}

// ---- MariaDB -----------------------------------------------------------------

// A MariaDB variable's value as an option file line wants it: booleans
// ON/OFF, strings as written, numbers as JSON spells them.
std::string option_file_value(const Json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean()) return value.get<bool>() ? "ON" : "OFF";
    return value.dump();
}

// mycnf: the workload's `server` table, as the agent writes it into [mysqld].
std::string mycnf_lines(const Json& server) {
    return "[mysqld]\n" + setting_lines(server, "=", option_file_value);
}

// ---- PostgreSQL --------------------------------------------------------------

// The settings whose "off" (in any boolean spelling) trades durability for
// speed. synchronous_commit's other values (local, remote_write) still wait
// for the local WAL flush.
constexpr std::string_view kPostgresqlRiskySettings[] = {"synchronous_commit", "fsync",
                                                         "full_page_writes"};

// Whether SHOW's `shown` text is what `requested` asks for: booleans in any
// spelling on either side, anything else the same text in any case.
bool postgresql_setting_matches(const Json& requested, std::string_view shown) {
    const auto wanted = server_setting_text(requested);
    if (!wanted) return false;
    const auto want_bool = server_setting_boolean(*wanted);
    const auto got_bool = server_setting_boolean(shown);
    if (want_bool && got_bool) return *want_bool == *got_bool;
    return ascii_lower(trim_whitespace(*wanted)) == ascii_lower(trim_whitespace(shown));
}

std::vector<std::string> postgresql_mismatches(const Json& requested, const Json& shown,
                                               std::string_view /*server_version*/) {
    std::vector<std::string> lines;
    if (!requested.is_object()) return lines;
    for (const auto& [raw_name, want] : requested.items()) {
        const std::string head =
            "server variable " + raw_name + ": requested " + server_setting_display(want);
        const auto got = shown_server_setting(shown, server_setting_name(raw_name));
        if (!got) {
            lines.push_back(head + ", SHOW did not list it");
        } else if (!postgresql_setting_matches(want, *got)) {
            lines.push_back(head + ", server has " + *got);
        }
    }
    return lines;
}

std::vector<std::string> postgresql_risks(const Json& server) {
    std::vector<std::string> risks;
    if (!server.is_object()) return risks;
    for (const auto& [raw_name, value] : server.items()) {
        const std::string name = server_setting_name(raw_name);
        if (std::find(std::begin(kPostgresqlRiskySettings), std::end(kPostgresqlRiskySettings),
                      name) == std::end(kPostgresqlRiskySettings))
            continue;
        const auto text = server_setting_text(value);
        if (!text || server_setting_boolean(*text) != std::optional<bool>(false)) continue;
        risks.push_back(name + "=" + std::string(trim_whitespace(server_setting_display(value))));
    }
    return risks;
}

// A value as postgresql.conf reads it: booleans on/off, numbers as JSON
// spells them, anything else a single-quoted string with ' doubled.
std::string pgconf_value(const Json& value) {
    if (value.is_boolean()) return value.get<bool>() ? "on" : "off";
    if (value.is_number()) return value.dump();
    const std::string text = value.is_string()
                                 ? value.get<std::string>()
                                 : value.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted + "'";
}

std::string pgconf_lines(const Json& server) {
    return setting_lines(server, " = ", pgconf_value);
}

}  // namespace

const ServerSettingsRules& mariadb_server_settings() {
    static const ServerSettingsRules rules = {
        .server = "MariaDB",
        .format = "mycnf",
        .format_help = "the [mysqld] lines",
        .mismatches = &server_variable_mismatches,
        .risks = &server_variable_risks,
        .render = &mycnf_lines,
        .agent_settings_note =
            "the agent also set datadir, socket, pid-file, log-error, user and skip-networking for "
            "its own paths; they are not part of the configuration",
        .risk_explanations =
            {
                {"innodb_flush_method=nosync",
                 "InnoDB never syncs its files: a crash or power cut loses committed transactions "
                 "and "
                 "can corrupt tables"},
                {"innodb_flush_log_at_trx_commit=",
                 "the redo log is written or synced about once a second, not at every commit: up "
                 "to a "
                 "second of committed transactions is lost on a crash"},
                {"innodb_doublewrite=0",
                 "no doublewrite buffer: a page torn by a crash mid-write can corrupt a table"},
            },
        .ledger_variant = "database",
        .identity_tool = "mariadb"};
    return rules;
}

const ServerSettingsRules& postgresql_server_settings() {
    static const ServerSettingsRules rules = {
        .server = "PostgreSQL",
        .format = "pgconf",
        .format_help = "the postgresql.conf lines",
        .mismatches = &postgresql_mismatches,
        .risks = &postgresql_risks,
        .render = &pgconf_lines,
        .agent_settings_note =
            "the agent also set listen_addresses, unix_socket_directories and logging_collector "
            "on the server's command line for its own paths; they are not part of the "
            "configuration",
        .risk_explanations =
            {
                {"synchronous_commit=",
                 "a commit is acknowledged before its WAL reaches the disk: a crash or power cut "
                 "loses the last acknowledged transactions (the database stays consistent)"},
                {"fsync=",
                 "PostgreSQL never syncs its WAL or data files: a crash or power cut loses "
                 "committed "
                 "transactions and can corrupt the database"},
                {"full_page_writes=",
                 "no full page images in the WAL: a page torn by a crash mid-write can corrupt the "
                 "database beyond what recovery repairs"},
            },
        .ledger_variant = "postgresql",
        .identity_tool = "postgresql"};
    return rules;
}

std::string server_setting_name(std::string_view name) {
    std::string out = ascii_lower(trim_whitespace(name));
    std::replace(out.begin(), out.end(), '-', '_');
    return out;
}

std::optional<std::string> shown_server_setting(const Json& shown, std::string_view name) {
    if (!shown.is_object()) return std::nullopt;
    for (const auto& [key, value] : shown.items()) {
        if (server_setting_name(key) != name) continue;
        if (value.is_string()) return value.get<std::string>();
        return value.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 200);
    }
    return std::nullopt;
}

std::optional<bool> server_setting_boolean(std::string_view text) {
    const std::string value = ascii_lower(trim_whitespace(text));
    if (value == "on" || value == "true" || value == "yes" || value == "1") return true;
    if (value == "off" || value == "false" || value == "no" || value == "0") return false;
    return std::nullopt;
}

std::optional<std::string> server_setting_text(const Json& requested) {
    if (requested.is_string()) return requested.get<std::string>();
    if (requested.is_boolean()) return std::string(requested.get<bool>() ? "1" : "0");
    if (requested.is_number()) return requested.dump();
    return std::nullopt;
}

std::string server_setting_display(const Json& requested) {
    if (requested.is_boolean()) return requested.get<bool>() ? "on" : "off";
    return server_setting_text(requested).value_or(
        requested.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 200));
}

}  // namespace ds
