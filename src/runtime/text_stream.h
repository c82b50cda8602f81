// TextStream: turns a sequence's token bytes into the text a client sees,
// piece by piece — whole UTF-8 characters only (a byte-level token may end
// inside one; bytes that can never form a character become U+FFFD, so
// every chunk is valid UTF-8 and valid JSON), and never text that might be
// the start of a stop string: that is held back until it cannot be, or
// cut off when it is (the stop string is not part of the output, as in
// OpenAI's API).
//
// Used by the worker's generation engine and by runtimes that stream their
// own sequences (streaming_generator.h), so stop strings mean one thing.
//
// Threading: one sequence's; not shared.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shoal {

// How `bytes` reads as UTF-8 under TextStream's rules: -1 when a byte can
// never be part of a character where it stands (TextStream would write
// U+FFFD for it), else how many bytes its last character still needs (0: it
// ends between characters).
int Utf8Pending(std::string_view bytes);

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stops);

  // Adds a token's bytes; returns the text now safe to send. Once a stop
  // string completes, `stopped()` is true and nothing more comes out.
  std::string Push(std::string_view bytes);
  // At the end of the sequence: what was held back (a partial character
  // becomes U+FFFD).
  std::string Finish();

  bool stopped() const { return stopped_; }

 private:
  // Moves the whole characters at the front of raw_ into text_.
  void Decode(bool final);
  std::string Release();

  std::vector<std::string> stops_;
  std::string raw_;   // bytes not yet decoded: at most a partial character
  std::string text_;  // decoded, not yet sent (a possible stop prefix)
  bool stopped_ = false;
};

}  // namespace shoal
