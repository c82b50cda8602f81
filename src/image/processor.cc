#include "image/processor.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace shoal::image {
namespace {

using nlohmann::json;

constexpr std::array<float, 3> kOpenAiClipMean = {0.48145466f, 0.4578275f, 0.40821073f};
constexpr std::array<float, 3> kOpenAiClipStd = {0.26862954f, 0.26130258f, 0.27577711f};

// The keys read below, and those that only name things.
const std::set<std::string, std::less<>> kKnownKeys = {
    "image_processor_type", "feature_extractor_type", "processor_class", "do_convert_rgb", "do_resize", "size",
    "resample", "do_center_crop", "crop_size", "do_rescale", "rescale_factor", "do_normalize", "image_mean",
    "image_std"};

Status Bad(const std::string& key, const std::string& why) {
  return InvalidInput("preprocessor_config.json: " + key + ": " + why);
}

Result<bool> Flag(const json& c, const char* key, bool fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_boolean()) return Bad(key, "expected true or false");
  return c[key].get<bool>();
}

Result<uint32_t> Side(const json& v, const std::string& key) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 16384) {
    return Bad(key, "expected a whole number of pixels from 1 to 16384");
  }
  return static_cast<uint32_t>(v.get<int64_t>());
}

// {"height": h, "width": w}, or a number n (n × n).
Status ReadBox(const json& v, const std::string& key, uint32_t* height, uint32_t* width) {
  if (v.is_number()) {
    SHOAL_ASSIGN_OR_RETURN(*height, Side(v, key));
    *width = *height;
    return Status::Ok();
  }
  if (!v.is_object() || v.size() != 2 || !v.contains("height") || !v.contains("width")) {
    return Bad(key, "expected {\"height\": H, \"width\": W} or a number, got " + v.dump());
  }
  SHOAL_ASSIGN_OR_RETURN(*height, Side(v["height"], key + ".height"));
  SHOAL_ASSIGN_OR_RETURN(*width, Side(v["width"], key + ".width"));
  return Status::Ok();
}

Status ReadTriple(const json& c, const char* key, std::array<float, 3>* out) {
  if (!c.contains(key) || c[key].is_null()) return Status::Ok();
  json v = c[key];
  if (v.is_number()) v = json::array({v, v, v});
  if (!v.is_array() || v.size() != 3) return Bad(key, "expected three numbers (red, green, blue)");
  for (size_t i = 0; i < 3; ++i) {
    if (!v[i].is_number()) return Bad(key, "expected three numbers (red, green, blue)");
    (*out)[i] = v[i].get<float>();
  }
  return Status::Ok();
}

// transformers' center_crop: the box at ((H - h) // 2, (W - w) // 2), with
// zero padding where the image is smaller than the box.
Image CenterCrop(const Image& in, uint32_t height, uint32_t width) {
  auto floor_half = [](int64_t d) { return d >= 0 ? d / 2 : -((-d + 1) / 2); };
  const int64_t top = floor_half(int64_t{in.height} - height), left = floor_half(int64_t{in.width} - width);
  Image out = BlankImage(width, height);
  for (uint32_t y = 0; y < height; ++y) {
    const int64_t sy = top + y;
    if (sy < 0 || sy >= in.height) continue;
    for (uint32_t x = 0; x < width; ++x) {
      const int64_t sx = left + x;
      if (sx >= 0 && sx < in.width) std::copy_n(in.Pixel(uint32_t(sx), uint32_t(sy)), 3, out.Pixel(x, y));
    }
  }
  return out;
}

}  // namespace

Result<ImageProcessor> ImageProcessor::FromConfig(const json& c) {
  if (!c.is_object()) return InvalidInput("preprocessor_config.json: expected a JSON object");
  std::string type;
  for (const char* key : {"image_processor_type", "feature_extractor_type"}) {
    if (c.contains(key) && c[key].is_string() && type.empty()) type = c[key].get<std::string>();
  }
  ImageProcessor p;
  if (type == "CLIPImageProcessor" || type == "CLIPFeatureExtractor") {
    p.shortest_edge_ = true;
    p.crop_ = true;
    p.mean_ = kOpenAiClipMean;
    p.std_ = kOpenAiClipStd;
  } else if (type == "ViTImageProcessor" || type == "ViTFeatureExtractor") {
    p.resample_ = Resample::kBilinear;
  } else if (type != "SiglipImageProcessor") {
    return Bad("image_processor_type", "'" + type +
                                           "' is not one Shoal implements (CLIPImageProcessor, SiglipImageProcessor, "
                                           "ViTImageProcessor)");
  }
  for (const auto& [key, value] : c.items()) {
    if (!kKnownKeys.count(key) && key.rfind("do_", 0) == 0 && value == true) {
      return Bad(key, "this step is not one Shoal's " + type + " implements");
    }
  }
  SHOAL_ASSIGN_OR_RETURN(p.resize_, Flag(c, "do_resize", true));
  if (c.contains("size") && !c["size"].is_null()) {
    const json& size = c["size"];
    if (size.is_object() && size.contains("shortest_edge")) {
      if (size.size() != 1) return Bad("size", "only shortest_edge alone is supported, got " + size.dump());
      p.shortest_edge_ = true;
      SHOAL_ASSIGN_OR_RETURN(p.height_, Side(size["shortest_edge"], "size.shortest_edge"));
      p.width_ = p.height_;
    } else if (size.is_number() && p.shortest_edge_) {  // CLIP reads a bare number as the shortest edge
      SHOAL_ASSIGN_OR_RETURN(p.height_, Side(size, "size"));
      p.width_ = p.height_;
    } else {
      p.shortest_edge_ = false;
      SHOAL_RETURN_IF_ERROR(ReadBox(size, "size", &p.height_, &p.width_));
    }
  }
  if (c.contains("resample") && !c["resample"].is_null()) {
    if (!c["resample"].is_number_integer()) return Bad("resample", "expected PIL's filter number");
    SHOAL_ASSIGN_OR_RETURN(p.resample_, ResampleFromPil(c["resample"].get<int>()));
  }
  SHOAL_ASSIGN_OR_RETURN(p.crop_, Flag(c, "do_center_crop", p.crop_));
  if (c.contains("crop_size") && !c["crop_size"].is_null()) {
    SHOAL_RETURN_IF_ERROR(ReadBox(c["crop_size"], "crop_size", &p.crop_height_, &p.crop_width_));
  }
  SHOAL_ASSIGN_OR_RETURN(p.rescale_, Flag(c, "do_rescale", true));
  if (c.contains("rescale_factor") && !c["rescale_factor"].is_null()) {
    if (!c["rescale_factor"].is_number() || !(c["rescale_factor"].get<double>() > 0)) {
      return Bad("rescale_factor", "expected a positive number");
    }
    p.rescale_factor_ = c["rescale_factor"].get<double>();
  }
  SHOAL_ASSIGN_OR_RETURN(p.normalize_, Flag(c, "do_normalize", true));
  SHOAL_RETURN_IF_ERROR(ReadTriple(c, "image_mean", &p.mean_));
  SHOAL_RETURN_IF_ERROR(ReadTriple(c, "image_std", &p.std_));
  for (float s : p.std_) {
    if (!(s > 0)) return Bad("image_std", "every value must be positive");
  }
  if (!p.resize_ && !p.crop_) return Bad("do_resize", "false without a centre crop gives inputs of any size");
  return p;
}

PixelValues ImageProcessor::Apply(const Image& image) const {
  const Image* img = &image;  // each step's output, without copying the input
  Image resized, cropped;
  if (resize_) {
    uint32_t h = height_, w = width_;
    if (shortest_edge_) {  // transformers' get_resize_output_image_size, default_to_square=False
      const uint32_t shorter = std::min(image.width, image.height), longer = std::max(image.width, image.height);
      const auto scaled = static_cast<uint32_t>(static_cast<double>(uint64_t{height_} * longer) / shorter);
      h = image.width <= image.height ? scaled : height_;
      w = image.width <= image.height ? height_ : scaled;
    }
    if (w != img->width || h != img->height) img = &(resized = Resize(*img, w, h, resample_));
  }
  if (crop_) img = &(cropped = CenterCrop(*img, crop_height_, crop_width_));
  PixelValues out{img->height, img->width, std::vector<float>(size_t{3} * img->height * img->width)};
  const size_t plane = size_t{img->height} * img->width;
  for (size_t i = 0; i < plane; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      const uint8_t u = img->rgb[i * 3 + c];
      float v = rescale_ ? static_cast<float>(u * rescale_factor_) : static_cast<float>(u);
      if (normalize_) v = (v - mean_[c]) / std_[c];
      out.chw[c * plane + i] = v;
    }
  }
  return out;
}

}  // namespace shoal::image
