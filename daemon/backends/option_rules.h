// A backend's options as data (one table per backend, e.g. the rbd storage
// and the Proxmox connection and hypervisor): each rule names its key, with
// the help text shown for it, and the function that checks and stores its
// value. Lookup, the list of keys and the "known: ..." text of an error come
// from the table alone, and so does applying one key (apply_option_rule).
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds {

// `Key` has a `key` member: the option's name as written in the config.
template <class Options, class Key>
struct OptionRule {
    using Setter = Status (*)(Options&, std::string_view key, std::string_view value);
    Key key;
    Setter set;
};

// The rule for `key`, or nullptr.
template <class Rule>
const Rule* find_option_rule(std::span<const Rule> rules, std::string_view key) {
    for (const Rule& rule : rules) {
        if (rule.key.key == key) return &rule;
    }
    return nullptr;
}

// "mon_host, id, keyring" for error messages, in table order.
template <class Rule>
std::string known_option_keys(std::span<const Rule> rules) {
    std::string keys;
    for (const Rule& rule : rules) keys += (keys.empty() ? "" : ", ") + std::string(rule.key.key);
    return keys;
}

// The keys with their help, in table order (for documentation and tests).
template <class Rule>
auto option_keys_of(std::span<const Rule> rules) {
    std::vector<decltype(Rule::key)> keys;
    for (const Rule& rule : rules) keys.push_back(rule.key);
    return keys;
}

// Words a backend's errors with its own prefix: "rbd storage option 'KEY': WHY".
using OptionErrorWording = Error (*)(std::string_view key, const std::string& why);

// Keys someone may try for a secret itself (e.g. "password"), refused with the
// way to give it instead: never the value, which may be the secret.
struct SecretOptionKeys {
    std::vector<std::string_view> keys;
    std::string_view refusal;
};

// Sets `key` to `value` in `options` through its rule. A secret key is
// refused with `secrets.refusal`, a key without a rule with the known keys;
// `wording` words both.
template <class Options, class Rule>
Status apply_option_rule(std::span<const Rule> rules, const SecretOptionKeys& secrets,
                         OptionErrorWording wording, Options& options, std::string_view key,
                         std::string_view value) {
    if (std::find(secrets.keys.begin(), secrets.keys.end(), key) != secrets.keys.end()) {
        return wording(key, std::string(secrets.refusal));
    }
    if (const Rule* rule = find_option_rule(rules, key)) return rule->set(options, key, value);
    return wording(key, "unknown key (known: " + known_option_keys(rules) + ")");
}

}  // namespace ds
