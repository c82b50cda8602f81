// shoal tokenize PATH (a tokenizer.json, or a model directory): reads one text per stdin line and prints
// its token ids as one JSON array per line, flushed at once so it works
// interactively and as a pipe (the tokenizer reference test drives it). The
// tokenizer is the native runtime's, loaded through the runtime contract
// (Runtime::LoadTokenizer).
//
// Lines are raw UTF-8 without their '\n'; with --json-lines each line is a
// JSON string instead, so texts may hold newlines. A line that cannot be
// encoded prints `null` (keeping output lines aligned with input lines), its
// error goes to stderr, and the exit status is 1.
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "runtime/registry/registry.h"

namespace shoal::cli {
namespace {

struct TokenizeFlags {
  std::string path;
  bool no_special_tokens = false;
  bool json_lines = false;
};

void AppendIds(std::string& out, const std::vector<int32_t>& ids) {
  out.push_back('[');
  char buf[16];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(',');
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), ids[i]);
    out.append(buf, end);
  }
  out.push_back(']');
}

int RunTokenize(const TokenizeFlags& flags) {
  auto tokenizer = FindRuntime("native")->LoadTokenizer(flags.path);
  if (!tokenizer.ok()) {
    std::cerr << "error: " << tokenizer.status().ToString() << "\n";
    return 1;
  }

  int status = 0;
  size_t line_no = 0;
  std::string line, text, out;
  while (std::getline(std::cin, line)) {
    ++line_no;
    out.clear();
    const std::string* input = &line;
    bool ok = true;
    if (flags.json_lines) {
      auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded() || !parsed.is_string()) {
        std::cerr << "line " << line_no << ": expected a JSON string\n";
        ok = false;
      } else {
        text = parsed.get<std::string>();
        input = &text;
      }
    }
    if (ok) {
      auto ids = (*tokenizer)->Encode(*input, !flags.no_special_tokens);
      if (ids.ok()) {
        AppendIds(out, *ids);
      } else {
        std::cerr << "line " << line_no << ": " << ids.status().ToString() << "\n";
        ok = false;
      }
    }
    if (!ok) {
      out = "null";
      status = 1;
    }
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

Subcommand AddTokenize(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "tokenize", "Print the token ids of each stdin line as a JSON array (one line each)");
  auto flags = std::make_shared<TokenizeFlags>();
  sub->add_option("tokenizer", flags->path, "a Hugging Face tokenizer.json, or a model directory (its tokenizer.json, or SigLIP's spiece.model)")
      ->required()
      ->check(CLI::ExistingPath);
  sub->add_flag("--no-special-tokens", flags->no_special_tokens,
                "do not add the post-processor's special tokens (BOS, [CLS] ...)");
  sub->add_flag("--json-lines", flags->json_lines,
                "each input line is a JSON string (for texts with newlines)");
  return {sub, [flags] { return RunTokenize(*flags); }};
}

}  // namespace shoal::cli
