// What a hostctl sub-command is: its row of the command table (CommandSpec)
// and what its handler is given (Invocation), with the steps handlers share
// (an id argument, printing an answer as text or --json). Each family of
// commands declares its rows in a file of its own (sweep_commands.h,
// results_commands.h, daemon_commands.h); commands.cpp parses the command
// line against them.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/api/json_codec.h"
#include "hostctl/commands.h"
#include "hostctl/daemon_client.h"

namespace ds::hostctl {

// Everything a handler needs: the client, the parsed command line, streams.
struct Invocation {
    std::string command;  // e.g. "sweep show", for messages
    std::string usage;
    DaemonClient client;
    bool json_output = false;
    std::map<std::string, std::string> arguments;  // positional, by name
    std::set<std::string> flags;                   // sub-command switches given
    std::map<std::string, std::string> values;     // sub-command options given (--name VALUE)
    std::ostream& out;
    std::ostream& err;
    const Environment& environment;

    const std::string& argument(const std::string& name) const { return arguments.at(name); }
    bool flag(const std::string& name) const { return flags.count(name) > 0; }
    // The value of option --name, "" when not given.
    std::string value(const std::string& name) const {
        auto found = values.find(name);
        return found == values.end() ? std::string() : found->second;
    }

    ExitCode usage_error(const std::string& message) const {
        err << "hostctl: " << command << ": " << message << "\nusage: " << usage << "\n";
        return ExitCode::kUsage;
    }
    // Prints why an API call failed; the exit code says what kind of failure.
    ExitCode fail(const ApiReply& reply) const { return fail(*reply.failure); }
    ExitCode fail(const ApiFailure& failure) const {
        err << "hostctl: " << failure.message << "\n";
        return failure.kind == ApiFailure::Kind::kUnreachable ? ExitCode::kUnreachable
                                                              : ExitCode::kFailed;
    }
    // Says why the daemon's answer does not decode (common/api/json_codec.h).
    ExitCode fail_to_read(const Error& error) const {
        err << "hostctl: cannot read disksweepd's answer: " << error.message << "\n";
        return ExitCode::kFailed;
    }
    // --json prints the API's answer as one line of JSON (so that a
    // `sweep submit --wait --json` is NDJSON as a whole).
    void print_json(const Json& body) const { out << body.dump() << "\n" << std::flush; }

    std::chrono::steady_clock::time_point now() const {
        return environment.now ? environment.now() : std::chrono::steady_clock::now();
    }
};

using CommandHandler = ExitCode (*)(Invocation&);

// A sub-command switch (--name), or with a value_name an option taking a
// value (--name VALUE).
struct FlagSpec {
    std::string_view name;
    std::string_view help;
    std::string_view value_name = {};
    char short_name = 0;  // e.g. 'o': -o is the same as --output
};

// One sub-command: its words, positional arguments (all required, in order),
// switches, help text and handler. Usage lines and parsing come from this.
struct CommandSpec {
    std::string_view name;
    std::vector<std::string_view> arguments;
    std::vector<FlagSpec> flags;
    std::string_view help;
    CommandHandler handler;
};

// A positive integer id argument, or a usage error (printed; nullopt).
std::optional<long> id_argument(Invocation& invocation, const std::string& name);

// Prints an answer: its JSON with --json, else `format` of it; the API
// call's failure when it failed.
ExitCode print_reply(Invocation& invocation, const ApiReply& reply,
                     std::string (*format)(const Json&));
// GETs `target` and prints its answer as print_reply does.
ExitCode print_get(Invocation& invocation, const std::string& target,
                   std::string (*format)(const Json&));

// Prints a typed answer: its JSON as the daemon sent it with --json, else
// `format` of it decoded as Reply; the API call's failure when it failed,
// and why the answer does not decode when it does not.
template <api::DecodableMessage Reply>
ExitCode print_reply(Invocation& invocation, const ApiReply& reply,
                     std::string (*format)(const Reply&)) {
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
        return ExitCode::kOk;
    }
    auto decoded = api::decode<Reply>(reply.body);
    if (!decoded.ok()) return invocation.fail_to_read(decoded.error());
    invocation.out << format(decoded.value());
    return ExitCode::kOk;
}
template <api::DecodableMessage Reply>
ExitCode print_get(Invocation& invocation, const std::string& target,
                   std::string (*format)(const Reply&)) {
    return print_reply(invocation, invocation.client.get(target), format);
}

// `text` as one URI query component: RFC 3986 unreserved characters as
// they are, every other byte as %XX.
std::string query_component(std::string_view text);

}  // namespace ds::hostctl
