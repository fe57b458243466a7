// Reading the report's SVG as XML with libxml2 (a real parser, no network,
// no DTD): well-formedness, and the elements and attributes tests measure.
#pragma once

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ds::test {

using XmlDocument = std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)>;

// The parsed document; null when `text` is not well-formed XML, with
// libxml2's message in `problem`.
inline XmlDocument parse_xml(std::string_view text, std::string* problem = nullptr) {
    xmlResetLastError();
    xmlDoc* document =
        xmlReadMemory(text.data(), static_cast<int>(text.size()), "report.svg", nullptr,
                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (document == nullptr && problem != nullptr) {
        const xmlError* error = xmlGetLastError();
        *problem = error && error->message ? error->message : "not well-formed";
    }
    return XmlDocument(document, xmlFreeDoc);
}

// "" when `text` is well-formed XML, else why not.
inline std::string xml_problem(std::string_view text) {
    std::string problem;
    return parse_xml(text, &problem) ? "" : problem;
}

using XmlAttributes = std::map<std::string, std::string>;

// The attributes of every element named `name` (and, when given, whose
// class attribute is `css_class`), in document order.
inline std::vector<XmlAttributes> xml_elements(std::string_view text, std::string_view name,
                                               std::string_view css_class = "") {
    std::vector<XmlAttributes> found;
    XmlDocument document = parse_xml(text);
    if (!document) return found;
    std::vector<xmlNode*> pending = {xmlDocGetRootElement(document.get())};
    while (!pending.empty()) {
        xmlNode* node = pending.back();
        pending.pop_back();
        for (xmlNode* child = node ? node->last : nullptr; child; child = child->prev)
            if (child->type == XML_ELEMENT_NODE) pending.push_back(child);
        if (!node || name != reinterpret_cast<const char*>(node->name)) continue;
        XmlAttributes attributes;
        for (xmlAttr* attribute = node->properties; attribute; attribute = attribute->next) {
            xmlChar* value = xmlNodeListGetString(node->doc, attribute->children, 1);
            attributes[reinterpret_cast<const char*>(attribute->name)] =
                value ? reinterpret_cast<const char*>(value) : "";
            xmlFree(value);
        }
        if (css_class.empty() || attributes["class"] == css_class)
            found.push_back(std::move(attributes));
    }
    return found;
}

// Every <svg ...>...</svg> of an HTML page, as text.
inline std::vector<std::string> svg_fragments(const std::string& html) {
    std::vector<std::string> fragments;
    for (std::size_t start = html.find("<svg"); start != std::string::npos;
         start = html.find("<svg", start + 1)) {
        const std::size_t end = html.find("</svg>", start);
        if (end == std::string::npos) break;
        fragments.push_back(html.substr(start, end + 6 - start));
    }
    return fragments;
}

}  // namespace ds::test
