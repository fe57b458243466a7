// Just enough of PNG to check a browser's screenshot: 8-bit RGB or RGBA,
// not interlaced (what Chromium writes), inflated with zlib.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds::test {

struct PngImage {
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::vector<std::uint32_t> pixels;  // 0xRRGGBB, row by row (alpha dropped)
};

namespace png_detail {

inline std::uint32_t big_endian(std::string_view bytes, std::size_t at) {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i)
        value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
    return value;
}

inline int paeth(int left, int up, int up_left) {
    const int estimate = left + up - up_left;
    const int to_left = std::abs(estimate - left), to_up = std::abs(estimate - up),
              to_up_left = std::abs(estimate - up_left);
    if (to_left <= to_up && to_left <= to_up_left) return left;
    return to_up <= to_up_left ? up : up_left;
}

// Undoes the per-row filters of `data` (rows of 1 + stride bytes) in place.
inline Status unfilter(std::vector<unsigned char>& data, std::size_t stride, std::size_t pixel,
                       std::uint32_t height) {
    for (std::uint32_t y = 0; y < height; ++y) {
        unsigned char* row = data.data() + y * (stride + 1);
        const unsigned char* above = y > 0 ? row - (stride + 1) : nullptr;
        const int filter = row[0];
        for (std::size_t i = 1; i <= stride; ++i) {
            const int left = i > pixel ? row[i - pixel] : 0;
            const int up = above ? above[i] : 0;
            const int up_left = above && i > pixel ? above[i - pixel] : 0;
            int predicted = 0;
            switch (filter) {
                case 0:
                    break;
                case 1:
                    predicted = left;
                    break;
                case 2:
                    predicted = up;
                    break;
                case 3:
                    predicted = (left + up) / 2;
                    break;
                case 4:
                    predicted = paeth(left, up, up_left);
                    break;
                default:
                    return make_error(errc::kInvalidArgument, "unknown PNG row filter");
            }
            row[i] = static_cast<unsigned char>(row[i] + predicted);
        }
    }
    return ok_status();
}

}  // namespace png_detail

inline Result<PngImage> decode_png(std::string_view bytes) {
    using png_detail::big_endian;
    if (bytes.size() < 8 || bytes.substr(0, 8) != std::string_view("\x89PNG\r\n\x1a\n", 8))
        return make_error(errc::kInvalidArgument, "not a PNG file");
    PngImage image;
    int colour_type = -1;
    std::string compressed;
    for (std::size_t at = 8; at + 12 <= bytes.size();) {
        const std::uint32_t length = big_endian(bytes, at);
        const std::string_view type = bytes.substr(at + 4, 4);
        if (at + 12 + length > bytes.size())
            return make_error(errc::kInvalidArgument, "truncated PNG");
        const std::string_view body = bytes.substr(at + 8, length);
        if (type == "IHDR") {
            image.width = big_endian(body, 0);
            image.height = big_endian(body, 4);
            colour_type = static_cast<unsigned char>(body[9]);
            if (body[8] != 8 || body[12] != 0 || (colour_type != 2 && colour_type != 6))
                return make_error(errc::kInvalidArgument, "not an 8-bit RGB(A) non-interlaced PNG");
        } else if (type == "IDAT") {
            compressed.append(body);
        }
        at += 12 + length;
    }
    const std::size_t pixel = colour_type == 6 ? 4 : 3;
    const std::size_t stride = image.width * pixel;
    std::vector<unsigned char> data((stride + 1) * image.height);
    uLongf size = data.size();
    if (colour_type < 0 ||
        uncompress(data.data(), &size, reinterpret_cast<const Bytef*>(compressed.data()),
                   compressed.size()) != Z_OK ||
        size != data.size())
        return make_error(errc::kInvalidArgument, "PNG image data does not inflate to its size");
    DS_TRY(png_detail::unfilter(data, stride, pixel, image.height));
    image.pixels.reserve(static_cast<std::size_t>(image.width) * image.height);
    for (std::uint32_t y = 0; y < image.height; ++y) {
        const unsigned char* row = data.data() + y * (stride + 1) + 1;
        for (std::uint32_t x = 0; x < image.width; ++x) {
            const unsigned char* p = row + x * pixel;
            image.pixels.push_back((std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2]);
        }
    }
    return image;
}

}  // namespace ds::test
