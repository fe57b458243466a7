// A database server's rules for the settings a workload gives it (the
// `server` option's table, its "tunings"): how the server's own readback
// shows them, which of them trade durability for speed, and the lines of
// the configuration file that sets them. A workload kind with a server
// points at its server's rules (WorkloadKind::server_settings,
// common/workload_kind.h); the daemon's verify phase, comparisons, reports
// and `results apply` ask the kind, never the server by name.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds {

using Json = nlohmann::json;

// `server` in each function below is a workload's `server` table: setting
// name -> string | integer | boolean, as the spec writes it. Each function
// accepts any JSON (a non-object has no settings) and never throws.
struct ServerSettingsRules {
    // The server as messages name it: "MariaDB", "PostgreSQL".
    std::string_view server;
    // The `results apply` format that prints the settings
    // (daemon/apply/apply_snippets.h), unique among the rule sets; its
    // comments are "# " lines, as in my.cnf and postgresql.conf.
    std::string_view format;
    // What the format prints, as help texts name it: "the [mysqld] lines".
    std::string_view format_help;
    // Every way `requested` (a `server` table) is not in force on the server
    // whose readback shows `shown` (the guest's untrusted map of setting
    // name -> the server's text) and that reported `server_version`; one
    // line each, "server variable NAME: requested VALUE, ...".
    std::vector<std::string> (*mismatches)(const Json& requested, const Json& shown,
                                           std::string_view server_version) = nullptr;
    // The settings of `server` that trade durability for speed, each
    // "name=value" (the durability risk labels, beside the disk's).
    std::vector<std::string> (*risks)(const Json& server) = nullptr;
    // The body of `format`: the lines that set `server`, each ending in '\n'.
    std::string (*render)(const Json& server) = nullptr;
    // What the agent sets beside the workload's settings for its own paths,
    // a note of the format's snippet; "": nothing.
    std::string_view agent_settings_note;
    // What each risk puts at stake, for the report: a risk is explained by
    // the first entry whose prefix it starts with.
    std::vector<std::pair<std::string_view, std::string_view>> risk_explanations;
    // The ledger's variant that commits into this server (docs/spec.md,
    // `kind = "ledger"`): a sweep's durability runs measure a workload's
    // settings with it, and only its runs speak for this server's risks.
    std::string_view ledger_variant;
    // The tool the image manifest check knows this server by
    // (daemon/run/image_manifest.h): the version a run's readback reports
    // (`server_version`) is compared with the image's package.
    std::string_view identity_tool;
};

// MariaDB's rules: SHOW VARIABLES as the server's version reads it
// (ds::server_variable_mismatches), ds::server_variable_risks, and mycnf:
// "[mysqld]" then "name=value" lines (booleans ON/OFF, strings as written,
// numbers as JSON spells them).
const ServerSettingsRules& mariadb_server_settings();

// PostgreSQL's rules:
//  * mismatches: each requested setting (a GUC, named as SHOW spells it:
//    lowercase; server_setting_name) against SHOW's text: "server variable NAME: requested V,
//    SHOW did not list it" when absent; booleans match in any spelling
//    (server_setting_boolean) on either side, anything else SHOW's text
//    case-insensitively after trimming; otherwise "..., server has X". The
//    server's version changes nothing.
//  * risks: synchronous_commit=off (not local, remote_write or on),
//    fsync=off, full_page_writes=off, each "name=value" as requested.
//  * pgconf: "name = value" lines for postgresql.conf or a file it
//    includes (include_dir, conf.d), not ALTER SYSTEM: booleans on/off,
//    numbers as JSON spells them, strings single-quoted with ' doubled.
const ServerSettingsRules& postgresql_server_settings();

// The spellings both servers share, defined once:
// A setting's name as the servers' readbacks spell it: lowercase, trimmed,
// '-' as '_' (MariaDB's option files take either; PostgreSQL's names have
// no '-').
std::string server_setting_name(std::string_view name);
// What a readback (`shown`: name -> value) shows for `name` (a
// server_setting_name; the readback's names compared as such), or nullopt;
// a value that is not a string as its JSON (at most 200 characters).
std::optional<std::string> shown_server_setting(const Json& shown, std::string_view name);
// A boolean setting's value: 0/1/true/false/on/off/yes/no in any case,
// around whitespace; nullopt for anything else.
std::optional<bool> server_setting_boolean(std::string_view text);
// A requested value as text: strings as written, numbers as JSON spells
// them, booleans 1/0; nullopt for anything else (arrays, objects, null).
std::optional<std::string> server_setting_text(const Json& requested);
// A requested value as mismatch lines show it: booleans on/off, else its
// text, else its JSON (at most 200 characters).
std::string server_setting_display(const Json& requested);

}  // namespace ds
