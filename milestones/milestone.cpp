// The figures the milestones save (decision boundaries, a confusion matrix, an image grid) and the
// output folder, drawn with tinytorch/viz's Image.
#include "milestone.h"

#include <filesystem>

#include <tinytorch/viz/colormap.h>
#include <tinytorch/viz/image.h>

namespace milestones {

using tt::viz::Color;
using tt::viz::Image;

std::string Common::path(const std::string& name) const {
  std::filesystem::create_directories(out);
  return (std::filesystem::path(out) / name).string();
}

namespace {

// Class colours: blue, orange, green, red, purple, ... (distinct, readable on white).
Color class_color(int64_t c) {
  static const Color colors[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                                 {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return colors[size_t(c) % 10];
}

// c mixed with white: t = 0 gives white, 1 gives c.
Color tint(Color c, double t) {
  auto mix = [t](uint8_t v) { return uint8_t(std::lround(255 - t * (255 - v))); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

std::vector<float> floats(const tt::Tensor& t) {
  const tt::Tensor c = t.to(tt::kCPU).to(tt::kFloat32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

std::vector<int64_t> ints(const tt::Tensor& t) {
  const tt::Tensor c = t.to(tt::kCPU).to(tt::kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

void draw_title(Image& img, const std::string& title) {
  img.draw_text((img.width() - tt::viz::text_width(title, 2)) / 2, 8, title, tt::viz::kBlack, 2);
}

}  // namespace

void save_decision_boundaries(const std::string& path, const std::vector<ScatterPanel>& panels,
                              const std::string& title) {
  const int side = 360, margin = 20, top = 44;
  Image img(int(panels.size()) * (side + margin) + margin, side + top + 36);
  draw_title(img, title);
  for (size_t p = 0; p < panels.size(); ++p) {
    const ScatterPanel& panel = panels[p];
    TT_CHECK_SHAPE(panel.points.dim() == 2 && panel.points.size(0) >= 1 && panel.points.size(1) == 2 &&
                       panel.labels.dim() == 1 && panel.labels.size(0) == panel.points.size(0),
                   "save_decision_boundaries: a panel needs points [N, 2] with N >= 1 and labels [N], got ",
                   panel.points.shape(), " and ", panel.labels.shape());
    const std::vector<float> xy = floats(panel.points);
    const std::vector<int64_t> labels = ints(panel.labels);
    const size_t n = labels.size();
    // The view: the points' bounding box with a 15% border.
    float lo[2] = {xy[0], xy[1]}, hi[2] = {xy[0], xy[1]};
    for (size_t i = 0; i < n; ++i)
      for (int d = 0; d < 2; ++d) lo[d] = std::min(lo[d], xy[2 * i + d]), hi[d] = std::max(hi[d], xy[2 * i + d]);
    for (int d = 0; d < 2; ++d) {
      const float pad = 0.15f * std::max(hi[d] - lo[d], 1e-3f);
      lo[d] -= pad, hi[d] += pad;
    }
    const int x0 = margin + int(p) * (side + margin), y0 = top;
    // The classifier's regions, one prediction per 4x4 pixel cell.
    const int cell = 4, cells = side / cell;
    std::vector<float> grid(size_t(cells) * cells * 2);
    for (int r = 0; r < cells; ++r)
      for (int c = 0; c < cells; ++c) {
        grid[(size_t(r) * cells + c) * 2] = lo[0] + (c + 0.5f) / cells * (hi[0] - lo[0]);
        grid[(size_t(r) * cells + c) * 2 + 1] = hi[1] - (r + 0.5f) / cells * (hi[1] - lo[1]);
      }
    const std::vector<int64_t> region =
        ints(panel.predict(tt::tensor(grid, {int64_t(cells) * cells, 2})));
    for (int r = 0; r < cells; ++r)
      for (int c = 0; c < cells; ++c)
        img.fill_rect(x0 + c * cell, y0 + r * cell, cell, cell, tint(class_color(region[size_t(r) * cells + c]), 0.25));
    const std::vector<int64_t> predicted = ints(panel.predict(panel.points.to(tt::kFloat32)));
    for (size_t i = 0; i < n; ++i) {
      const int px = x0 + int((xy[2 * i] - lo[0]) / (hi[0] - lo[0]) * side);
      const int py = y0 + int((hi[1] - xy[2 * i + 1]) / (hi[1] - lo[1]) * side);
      if (predicted[i] != labels[i]) img.fill_rect(px - 5, py - 5, 11, 11, tt::viz::kBlack);
      img.fill_rect(px - 3, py - 3, 7, 7, class_color(labels[i]));
    }
    img.draw_rect(x0, y0, side, side, tt::viz::kGrey);
    img.draw_text(x0 + (side - tt::viz::text_width(panel.title)) / 2, y0 + side + 12, panel.title, tt::viz::kBlack);
  }
  img.save_png(path);
}

void save_confusion_matrix(const std::string& path, const tt::Tensor& truth, const tt::Tensor& predicted,
                           const std::vector<std::string>& class_names, const std::string& title) {
  const std::vector<int64_t> t = ints(truth), p = ints(predicted);
  const int64_t k = int64_t(class_names.size());
  TT_CHECK(t.size() == p.size(), "save_confusion_matrix: ", t.size(), " true labels but ", p.size(),
           " predictions");
  std::vector<int64_t> counts(size_t(k * k), 0);
  int64_t most = 1;
  for (size_t i = 0; i < t.size(); ++i) {
    TT_CHECK(t[i] >= 0 && t[i] < k && p[i] >= 0 && p[i] < k, "save_confusion_matrix: class ",
             std::max(t[i], p[i]), " outside [0, ", k, ")");
    most = std::max(most, ++counts[size_t(t[i] * k + p[i])]);
  }
  int label_w = 0;
  for (const std::string& name : class_names) label_w = std::max(label_w, tt::viz::text_width(name));
  const int cell = 40, left = label_w + 24, top = 60 + label_w;
  Image img(std::max(left + int(k) * cell + 20, tt::viz::text_width(title, 2) + 20), top + int(k) * cell + 40);
  draw_title(img, title);
  for (int64_t r = 0; r < k; ++r) {
    img.draw_text(left - 8 - tt::viz::text_width(class_names[size_t(r)]), top + int(r) * cell + cell / 2 - 4,
                  class_names[size_t(r)], tt::viz::kBlack);
    img.draw_text_vertical(left + int(r) * cell + cell / 2 - 4, top - 8 - tt::viz::text_width(class_names[size_t(r)]),
                           class_names[size_t(r)], tt::viz::kBlack);
    for (int64_t c = 0; c < k; ++c) {
      const int64_t n = counts[size_t(r * k + c)];
      const double share = double(n) / double(most);
      const Color fill = n == 0 ? tt::viz::kWhite : (r == c ? tint({44, 160, 44}, 0.2 + 0.8 * share)
                                                             : tint({214, 39, 40}, 0.25 + 0.75 * share));
      const int x = left + int(c) * cell, y = top + int(r) * cell;
      img.fill_rect(x, y, cell, cell, fill);
      img.draw_rect(x, y, cell, cell, tt::viz::kLightGrey);
      if (n > 0) {
        const std::string s = std::to_string(n);
        img.draw_text(x + (cell - tt::viz::text_width(s)) / 2, y + cell / 2 - 4, s,
                      share > 0.6 ? tt::viz::kWhite : tt::viz::kBlack);
      }
    }
  }
  img.draw_text(left, top + int(k) * cell + 14, "rows: true class, columns: predicted", tt::viz::kGrey);
  img.save_png(path);
}

void save_image_grid(const std::string& path, const tt::Tensor& images, const std::vector<std::string>& captions,
                     const std::vector<bool>& wrong, const std::string& title) {
  TT_CHECK_SHAPE(images.dim() == 4 && images.size(1) == 1 && images.size(0) >= 1,
                 "save_image_grid: images must be [N, 1, H, W] with N >= 1, got ", images.shape());
  const int64_t n = images.size(0), h = images.size(2), w = images.size(3);
  TT_CHECK(int64_t(captions.size()) == n && int64_t(wrong.size()) == n, "save_image_grid: ", n,
           " images but ", captions.size(), " captions and ", wrong.size(), " flags");
  const std::vector<float> px = floats(images);
  const int scale = std::max<int>(2, int(84 / std::max<int64_t>(h, w)));
  const int cols = int(std::min<int64_t>(n, 10)), rows = int((n + cols - 1) / cols);
  const int cw = int(w) * scale + 16, ch = int(h) * scale + 24, top = 44;
  Image img(std::max(cols * cw + 16, tt::viz::text_width(title, 2) + 20), top + rows * ch + 8);
  draw_title(img, title);
  for (int64_t i = 0; i < n; ++i) {
    const int x0 = 8 + int(i % cols) * cw + 8, y0 = top + int(i / cols) * ch;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const float v = std::clamp(px[size_t((i * h + y) * w + x)], 0.0f, 1.0f);
        const uint8_t g = uint8_t(std::lround(255 * (1 - v)));
        img.fill_rect(x0 + int(x) * scale, y0 + int(y) * scale, scale, scale, {g, g, g});
      }
    img.draw_text(x0, y0 + int(h) * scale + 4, captions[size_t(i)],
                  wrong[size_t(i)] ? Color{214, 39, 40} : tt::viz::kBlack);
  }
  img.save_png(path);
}

}  // namespace milestones
