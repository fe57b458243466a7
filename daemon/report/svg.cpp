#include "daemon/report/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>

namespace ds::svg {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at the start of `text` whose code
// point XML 1.0 allows (Char production), or nullopt.
std::optional<std::size_t> xml_char_length(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) {
        const bool allowed = lead >= 0x20 || lead == '\t' || lead == '\n' || lead == '\r';
        return allowed ? std::optional<std::size_t>(1) : std::nullopt;
    }
    const std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
    if (length == 0 || lead > 0xF4 || text.size() < length) return std::nullopt;
    std::uint32_t code_point = lead & (0x7F >> length);
    for (std::size_t i = 1; i < length; ++i) {
        if ((byte(i) & 0xC0) != 0x80) return std::nullopt;
        code_point = (code_point << 6) | (byte(i) & 0x3F);
    }
    const std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    const bool valid = code_point >= smallest[length] && code_point <= 0x10FFFF &&
                       !(code_point >= 0xD800 && code_point <= 0xDFFF) && code_point != 0xFFFE &&
                       code_point != 0xFFFF;
    return valid ? std::optional<std::size_t>(length) : std::nullopt;
}

// `text` escaped; `in_attribute` also escapes quotes and the whitespace an
// attribute value would lose.
std::string escape(std::string_view text, bool in_attribute) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const auto length = xml_char_length(text.substr(i));
        if (!length) {
            // A control character is dropped; a broken sequence becomes U+FFFD.
            if (static_cast<unsigned char>(text[i]) >= 0x80) out += kReplacementCharacter;
            ++i;
            continue;
        }
        const char c = text[i];
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += in_attribute ? "&quot;" : "\"";
                break;
            case '\'':
                out += in_attribute ? "&apos;" : "'";
                break;
            case '\t':
                out += in_attribute ? "&#9;" : "\t";
                break;
            case '\n':
                out += in_attribute ? "&#10;" : "\n";
                break;
            case '\r':
                out += "&#13;";
                break;  // a parser would turn a bare CR into LF
            default:
                out.append(text.substr(i, *length));
        }
        i += *length;
    }
    return out;
}

std::size_t code_points(std::string_view text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

struct Rgb {
    double r, g, b;
};

Rgb parse_colour(std::string_view hex) {
    unsigned value = 0;
    if (hex.size() == 7 && hex[0] == '#')
        std::sscanf(std::string(hex.substr(1)).c_str(), "%x", &value);
    return {static_cast<double>((value >> 16) & 0xFF), static_cast<double>((value >> 8) & 0xFF),
            static_cast<double>(value & 0xFF)};
}

std::string colour_text(const Rgb& colour) {
    char buffer[8];
    auto channel = [](double value) {
        return static_cast<int>(std::lround(std::clamp(value, 0.0, 255.0)));
    };
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", channel(colour.r), channel(colour.g),
                  channel(colour.b));
    return buffer;
}

// 1, 2, 5 or 10 times a power of ten near `value` (> 0): rounded to the
// nearest, or the smallest not below it.
double nice_number(double value, bool round) {
    const double exponent = std::floor(std::log10(value));
    const double fraction = value / std::pow(10.0, exponent);
    double nice = 10;
    if (round) {
        nice = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
    } else {
        nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
    }
    return nice * std::pow(10.0, exponent);
}

}  // namespace

std::string escape_text(std::string_view text) {
    return escape(text, false);
}

std::string escape_attribute(std::string_view text) {
    return escape(text, true);
}

std::string number(double value) {
    if (!std::isfinite(value)) return "0";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    std::string text = buffer;
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text == "-0" ? "0" : text;
}

Element::Element(std::string_view name) : name_(name) {}

Element Element::text_node(std::string_view text) {
    Element node("");
    node.text_ = std::string(text);
    return node;
}

Element& Element::set(std::string_view attribute, std::string_view value) {
    for (auto& [name, current] : attributes_) {
        if (name == attribute) {
            current = std::string(value);
            return *this;
        }
    }
    attributes_.emplace_back(std::string(attribute), std::string(value));
    return *this;
}

Element& Element::set(std::string_view attribute, double value) {
    return set(attribute, std::string_view(number(value)));
}

Element& Element::add(Element child) {
    children_.push_back(std::move(child));
    return *this;
}

Element& Element::text(std::string_view text) {
    children_.push_back(text_node(text));
    return *this;
}

void Element::write(std::string& out) const {
    if (name_.empty()) {
        out += escape_text(text_);
        return;
    }
    out += '<';
    out += name_;
    for (const auto& [name, value] : attributes_) {
        out += ' ';
        out += name;
        out += "=\"";
        out += escape_attribute(value);
        out += '"';
    }
    if (children_.empty()) {
        out += "/>";
        return;
    }
    out += '>';
    for (const Element& child : children_) child.write(out);
    out += "</";
    out += name_;
    out += '>';
}

std::string Element::str() const {
    std::string out;
    write(out);
    return out;
}

Element document(double width, double height, std::string_view title, double font_size) {
    Element svg("svg");
    svg.set("xmlns", "http://www.w3.org/2000/svg")
        .set("width", width)
        .set("height", height)
        .set("viewBox", "0 0 " + number(width) + " " + number(height))
        .set("role", "img")
        .set("font-family", "sans-serif")
        .set("font-size", font_size);
    svg.add(tooltip(title));
    return svg;
}

Element rect(double x, double y, double width, double height, std::string_view fill) {
    Element element("rect");
    element.set("x", x)
        .set("y", y)
        .set("width", std::max(0.0, width))
        .set("height", std::max(0.0, height));
    element.set("fill", fill);
    return element;
}

Element line(double x1, double y1, double x2, double y2, std::string_view stroke,
             double stroke_width) {
    Element element("line");
    element.set("x1", x1).set("y1", y1).set("x2", x2).set("y2", y2);
    element.set("stroke", stroke).set("stroke-width", stroke_width);
    return element;
}

Element text(double x, double y, std::string_view content, std::string_view anchor) {
    Element element("text");
    element.set("x", x).set("y", y);
    if (anchor != "start") element.set("text-anchor", anchor);
    element.text(content);
    return element;
}

Element tooltip(std::string_view content) {
    Element element("title");
    element.text(content);
    return element;
}

double text_width(std::string_view text, double font_size) {
    // DejaVu Sans and Liberation Sans average about 0.6 em per character
    // over labels like ours (lower case, digits, punctuation).
    return static_cast<double>(code_points(text)) * font_size * 0.6;
}

std::string fit_text(std::string_view text, double max_width, double font_size) {
    if (text_width(text, font_size) <= max_width) return std::string(text);
    std::string cut(text);
    while (!cut.empty() && text_width(cut + "…", font_size) > max_width) {
        // Drop one code point (its continuation bytes first).
        while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80)
            cut.pop_back();
        if (!cut.empty()) cut.pop_back();
    }
    return cut + "…";
}

Ticks nice_ticks(double low, double high, int count) {
    if (!std::isfinite(low) || !std::isfinite(high)) return {{0, 1}, 1};
    if (low > high) std::swap(low, high);
    if (low == high) {
        low = std::min(low, 0.0);
        high = high == 0 ? 1 : std::max(high, 0.0);
    }
    const double range = nice_number(high - low, false);
    const double step = nice_number(range / std::max(1, count - 1), true);
    const double first = std::floor(low / step);
    const double last = std::ceil(high / step);
    Ticks ticks;
    ticks.step = step;
    for (double i = first; i <= last + 0.5; ++i) {
        const double value = i * step;
        ticks.values.push_back(std::fabs(value) < step * 1e-9 ? 0 : value);
    }
    return ticks;
}

Ticks decade_ticks(double low, double high) {
    Ticks ticks;
    if (!(low > 0) || !(high > 0) || !std::isfinite(low) || !std::isfinite(high))
        return {{1, 10}, 0};
    double first = std::floor(std::log10(std::min(low, high)));
    double last = std::ceil(std::log10(std::max(low, high)));
    if (last <= first) last = first + 1;
    for (double e = first; e <= last + 0.5; ++e) ticks.values.push_back(std::pow(10.0, e));
    return ticks;
}

Scale::Scale(double domain_low, double domain_high, double pixel_low, double pixel_high,
             bool logarithmic)
    : domain_low_(domain_low),
      domain_high_(domain_high),
      pixel_low_(pixel_low),
      pixel_high_(pixel_high),
      logarithmic_(logarithmic) {}

double Scale::transform(double value) const {
    return logarithmic_ ? std::log10(value) : value;
}

double Scale::operator()(double value) const {
    if (!std::isfinite(value)) return pixel_low_;
    const double clamped =
        std::clamp(value, std::min(domain_low_, domain_high_), std::max(domain_low_, domain_high_));
    const double low = transform(domain_low_);
    const double span = transform(domain_high_) - low;
    if (span == 0 || !std::isfinite(span)) return pixel_low_;
    return pixel_low_ + (transform(clamped) - low) / span * (pixel_high_ - pixel_low_);
}

std::string tick_label(double value) {
    char buffer[32];
    const double magnitude = std::fabs(value);
    if (magnitude >= 1e6) {
        std::snprintf(buffer, sizeof buffer, "%.3gM", value / 1e6);
    } else if (magnitude >= 1e4) {
        std::snprintf(buffer, sizeof buffer, "%.3gk", value / 1e3);
    } else {
        std::snprintf(buffer, sizeof buffer, "%.4g", value);
    }
    std::string text = buffer;
    return text == "-0" ? "0" : text;
}

std::string series_colour(std::size_t index) {
    static constexpr std::array<std::string_view, 8> kPalette = {
        "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#777777"};
    return std::string(kPalette[index % kPalette.size()]);
}

std::string series_dash(std::size_t index) {
    static constexpr std::array<std::string_view, 4> kDashes = {"", "6 3", "2 2", "8 3 2 3"};
    return std::string(kDashes[(index / 8) % kDashes.size()]);
}

std::string diverging_colour(double score) {
    // Red to blue through light grey (ColorBrewer's RdBu end points).
    static constexpr std::array<std::string_view, 5> kAnchors = {"#b2182b", "#ef8a62", "#f2f2f2",
                                                                 "#67a9cf", "#2166ac"};
    const double position = (std::clamp(std::isfinite(score) ? score : 0.0, -1.0, 1.0) + 1) * 2;
    const std::size_t segment = std::min<std::size_t>(static_cast<std::size_t>(position), 3);
    const double t = position - static_cast<double>(segment);
    const Rgb from = parse_colour(kAnchors[segment]);
    const Rgb to = parse_colour(kAnchors[segment + 1]);
    return colour_text(
        {from.r + (to.r - from.r) * t, from.g + (to.g - from.g) * t, from.b + (to.b - from.b) * t});
}

std::string text_colour_on(std::string_view background) {
    const Rgb colour = parse_colour(background);
    const double luminance = 0.299 * colour.r + 0.587 * colour.g + 0.114 * colour.b;
    return luminance < 140 ? "#ffffff" : "#1a1a1a";
}

}  // namespace ds::svg
