// A small SVG writer of our own (no plotting stack): an element tree that
// escapes every text and attribute as XML, numbers written compactly, and
// the pieces charts are made of (scales with nice ticks, a colour palette, a
// diverging colour scale). daemon/report/charts.h draws the charts with it.
//
// Contract: output is deterministic (the same tree gives the same bytes) and
// always well-formed XML, whatever text it is given: markup characters are
// escaped, and bytes that XML 1.0 cannot hold (control characters, invalid
// UTF-8) are replaced. Nothing here refers to anything outside the document
// (no fonts, images, scripts or stylesheets).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds::svg {

// `text` as XML character data: & < > escaped; control characters other
// than tab, newline and carriage return dropped; invalid UTF-8 sequences
// replaced by U+FFFD.
std::string escape_text(std::string_view text);
// The same for an attribute value in double quotes: also " and ' escaped,
// and tab, newline, carriage return as character references (an XML parser
// would otherwise normalise them to spaces).
std::string escape_attribute(std::string_view text);

// A coordinate or length: at most two decimals, no trailing zeros, no "-0";
// non-finite values as "0" (an SVG attribute cannot hold NaN).
std::string number(double value);

// One SVG (or XHTML) element: a name, attributes in the order they were
// set, and children (elements and text) in order.
class Element {
  public:
    explicit Element(std::string_view name);

    // Sets an attribute; setting one again replaces its value in place.
    Element& set(std::string_view attribute, std::string_view value);
    Element& set(std::string_view attribute, double value);  // number()
    // Appends a child element, or a text node (escaped when written).
    Element& add(Element child);
    Element& text(std::string_view text);

    const std::string& name() const { return name_; }
    // Appends the element's XML to `out` (children without indentation, so
    // text keeps its exact spacing). An element without children is written
    // self-closing.
    void write(std::string& out) const;
    std::string str() const;

  private:
    static Element text_node(std::string_view text);

    std::string name_;  // empty for a text node, whose text is in text_
    std::string text_;
    std::vector<std::pair<std::string, std::string>> attributes_;
    std::vector<Element> children_;
};

// <svg> with the SVG namespace, width, height and a matching viewBox, the
// generic sans-serif font family and the given font size, and a <title>
// child (what a screen reader or a tooltip says).
Element document(double width, double height, std::string_view title, double font_size = 12);

// Shorthands for the elements charts draw.
Element rect(double x, double y, double width, double height, std::string_view fill);
Element line(double x1, double y1, double x2, double y2, std::string_view stroke,
             double stroke_width = 1);
// Text at (x, y) on its baseline; anchor is "start", "middle" or "end".
Element text(double x, double y, std::string_view content, std::string_view anchor = "start");
// A <title> child: the tooltip of the element it is added to.
Element tooltip(std::string_view content);

// An estimate of the width of `text` in pixels at `font_size`, for layout
// (labels are measured before any font is chosen, so this is an average
// sans-serif advance per character, not a measurement).
double text_width(std::string_view text, double font_size);
// `text` cut to at most `max_width` pixels (by text_width), ending in "…"
// when cut.
std::string fit_text(std::string_view text, double max_width, double font_size);

// Axis values: nice round ticks covering [low, high].
struct Ticks {
    std::vector<double> values;  // ascending, first <= low, last >= high
    double step = 0;             // between consecutive values (linear ticks)
};
// About `count` ticks at multiples of 1, 2 or 5 times a power of ten. A
// degenerate range (low == high) is widened to include zero or one unit.
Ticks nice_ticks(double low, double high, int count = 5);
// Powers of ten covering [low, high] (both > 0): the decades of a log axis.
Ticks decade_ticks(double low, double high);

// Maps a domain [domain_low, domain_high] onto pixels [pixel_low,
// pixel_high], linearly or on a log10 scale (the domain then > 0). Values
// outside the domain are clamped to it, so nothing is drawn outside a plot.
class Scale {
  public:
    Scale(double domain_low, double domain_high, double pixel_low, double pixel_high,
          bool logarithmic = false);
    double operator()(double value) const;
    double domain_low() const { return domain_low_; }
    double domain_high() const { return domain_high_; }

  private:
    double transform(double value) const;
    double domain_low_, domain_high_, pixel_low_, pixel_high_;
    bool logarithmic_;
};

// A tick label: "0", "850", "1.5", "12k", "2.5M", "0.004".
std::string tick_label(double value);

// The colour of series `index` (#rrggbb): eight colours that stay apart for
// colour-blind readers (Okabe and Ito's palette, its yellow, too faint on
// white, replaced by a dark grey), repeating.
std::string series_colour(std::size_t index);
// A dash pattern for series `index`: "" (solid) for the first round of
// colours, then dashes, so a repeated colour is still told apart.
std::string series_dash(std::size_t index);

// Diverging colour scale: `score` in [-1, 1] (clamped) from red (-1, worse)
// through light grey (0) to blue (+1, better), as #rrggbb.
std::string diverging_colour(double score);
// Black or white, whichever reads better on `background` (#rrggbb).
std::string text_colour_on(std::string_view background);

}  // namespace ds::svg
