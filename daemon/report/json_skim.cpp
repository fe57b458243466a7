#include "daemon/report/json_skim.h"

#include <algorithm>

namespace ds::report {
namespace {

// How the path walked so far relates to the paths asked for.
enum class Match {
    kNone,    // leads to none: skip the value
    kPrefix,  // leads to one: descend
    kWhole,   // is one: parse the value
};

class Skimmer {
  public:
    Skimmer(std::string_view text, const std::vector<JsonPath>& paths)
        : text_(text), paths_(paths) {}

    std::optional<Json> top() {
        skip_space();
        if (peek() != '{') return std::nullopt;
        std::optional<Json> value = object();
        skip_space();
        if (pos_ != text_.size()) return std::nullopt;
        return value;
    }

  private:
    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                       text_[pos_] == '\r' || text_[pos_] == '\t'))
            ++pos_;
    }

    Match match() const {
        Match best = Match::kNone;
        for (const JsonPath& path : paths_) {
            if (path.size() < path_.size() || !std::equal(path_.begin(), path_.end(), path.begin()))
                continue;
            if (path.size() == path_.size()) return Match::kWhole;
            best = Match::kPrefix;
        }
        return best;
    }

    // At a '"': moves past the closing quote; the raw contents.
    std::optional<std::string_view> string() {
        const std::size_t start = ++pos_;
        while (true) {
            const std::size_t quote = text_.find('"', pos_);
            if (quote == std::string_view::npos) return std::nullopt;
            std::size_t backslashes = 0;
            while (quote - backslashes > start && text_[quote - 1 - backslashes] == '\\')
                ++backslashes;
            pos_ = quote + 1;
            if (backslashes % 2 == 0) return text_.substr(start, quote - start);
        }
    }

    // At a '{' or '[': moves past its match, skipping strings.
    bool skip_container() {
        int depth = 0;
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '"') {
                if (!string()) return false;
                continue;
            }
            if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                ++pos_;
                return true;
            }
            ++pos_;
        }
        return false;
    }

    bool skip_value() {
        const char c = peek();
        if (c == '"') return string().has_value();
        if (c == '{' || c == '[') return skip_container();
        const std::size_t start = pos_;  // a number, true, false or null
        while (pos_ < text_.size() &&
               std::string_view(",]} \n\r\t").find(text_[pos_]) == std::string_view::npos)
            ++pos_;
        return pos_ > start;
    }

    std::optional<Json> parse_whole() {
        const std::size_t start = pos_;
        if (!skip_value()) return std::nullopt;
        Json value = Json::parse(text_.substr(start, pos_ - start), nullptr, false);
        if (value.is_discarded()) return std::nullopt;
        return value;
    }

    // The value at the current position, the path leading to a kept member.
    std::optional<Json> value() {
        if (match() == Match::kWhole) return parse_whole();
        if (peek() == '{') return object();
        if (peek() == '[') return array();
        if (!skip_value()) return std::nullopt;
        return Json::object();  // a scalar where a path goes on: nothing to keep
    }

    // Moves past a ',' (true) or the closing `end` (false, done); nullopt
    // for anything else.
    std::optional<bool> next_item(char end) {
        skip_space();
        if (peek() == ',') {
            ++pos_;
            return true;
        }
        if (peek() != end) return std::nullopt;
        ++pos_;
        return false;
    }

    std::optional<Json> object() {
        Json result = Json::object();
        ++pos_;
        skip_space();
        if (peek() == '}') {
            ++pos_;
            return result;
        }
        for (bool more = true; more;) {
            skip_space();
            if (peek() != '"') return std::nullopt;
            const std::optional<std::string_view> key = string();
            skip_space();
            if (!key || peek() != ':') return std::nullopt;
            ++pos_;
            skip_space();
            path_.emplace_back(*key);
            if (match() == Match::kNone) {
                if (!skip_value()) return std::nullopt;
            } else {
                std::optional<Json> member = value();
                if (!member) return std::nullopt;
                result[std::string(*key)] = std::move(*member);
            }
            path_.pop_back();
            const std::optional<bool> next = next_item('}');
            if (!next) return std::nullopt;
            more = *next;
        }
        return result;
    }

    std::optional<Json> array() {
        Json result = Json::array();
        ++pos_;
        skip_space();
        if (peek() == ']') {
            ++pos_;
            return result;
        }
        path_.emplace_back("*");
        for (bool more = true; more;) {
            skip_space();
            std::optional<Json> element = Json::object();
            if (match() == Match::kNone) {
                if (!skip_value()) return std::nullopt;
            } else {
                element = value();
                if (!element) return std::nullopt;
            }
            result.push_back(std::move(*element));
            const std::optional<bool> next = next_item(']');
            if (!next) return std::nullopt;
            more = *next;
        }
        path_.pop_back();
        return result;
    }

    std::string_view text_;
    const std::vector<JsonPath>& paths_;
    std::size_t pos_ = 0;
    std::vector<std::string> path_;  // the member names (and "*") walked so far
};

}  // namespace

std::optional<Json> skim_json(std::string_view text, const std::vector<JsonPath>& paths) {
    return Skimmer(text, paths).top();
}

}  // namespace ds::report
