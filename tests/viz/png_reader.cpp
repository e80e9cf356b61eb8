// read_png for the viz suite: stb_image (static copy, compiled here only) decodes what stb_image_write
// encoded, so a test sees the file as any PNG viewer would.
#include "viz_test_util.h"

#include <catch2/catch.hpp>

#include "test_util.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#include <stb_image.h>

namespace tt::testing {

DecodedPng read_png(const std::string& path) {
  std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() > 8);
  REQUIRE(bytes.substr(1, 3) == "PNG");
  int w = 0, h = 0, channels = 0;
  unsigned char* data = stbi_load_from_memory(reinterpret_cast<const unsigned char*>(bytes.data()), int(bytes.size()),
                                              &w, &h, &channels, 3);
  REQUIRE(data != nullptr);
  DecodedPng out;
  out.width = w;
  out.height = h;
  out.rgb.assign(data, data + size_t(w) * size_t(h) * 3);
  stbi_image_free(data);
  return out;
}

}  // namespace tt::testing
