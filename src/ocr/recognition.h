// Reading a text line's recognizer output: PaddleOCR's CTC decoding
// (CTCLabelDecode). The recognizer gives, for each of T steps across the
// line, a probability per class; class 0 is CTC's blank, then the
// characters of the keys file (ppocr_keys_v1.txt: one per line) in order,
// then a space. The text is each step's most probable class, runs of the
// same class merged and blanks dropped; its confidence the mean of the kept
// steps' probabilities (0 when nothing is kept).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace shoal::ocr {

class Charset {
 public:
  // The keys file: one character (UTF-8) per line, "\n" or "\r\n"; a space
  // class after them when `space` (use_space_char).
  static Result<Charset> Load(const std::string& path, bool space = true);
  static Charset FromCharacters(std::vector<std::string> characters, bool space = true);

  // Classes, the blank included.
  size_t size() const { return classes_.size(); }
  const std::string& at(size_t i) const { return classes_[i]; }

 private:
  std::vector<std::string> classes_;  // [0]: the blank ("")
};

struct RecognizedText {
  std::string text;
  float confidence = 0;
};

// Greedy CTC over each step's most probable class: `top1` holds a (max
// probability, class index) pair per step (Model::Run's RunOutputs::kTop1).
// An index outside the charset is INFERENCE_ERROR.
Result<RecognizedText> CtcDecode(std::span<const float> top1, const Charset& charset);

}  // namespace shoal::ocr
