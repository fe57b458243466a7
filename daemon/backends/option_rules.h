// A backend's options as data (one table per backend, e.g. the rbd storage
// and the Proxmox connection and hypervisor): each rule names its key, with
// the help text shown for it, and the function that checks and stores its
// value. Lookup, the list of keys and the "known: ..." text of an error come
// from the table alone.
#pragma once

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

}  // namespace ds
