#include "tune/profile_writer.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace shoal::tune {
namespace {

using ojson = nlohmann::ordered_json;

// The file as lines, each with its '\n' (the last may have none).
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

bool Blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
}

size_t Indent(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// A line that starts in column 0 with content (a key, a comment, a document
// marker): it ends whatever block came before.
bool TopLevel(std::string_view line) {
  return !Blank(line) && !std::isspace(static_cast<unsigned char>(line[0]));
}

bool IsComment(std::string_view line) {
  const size_t i = Indent(line);
  return i < line.size() && line[i] == '#';
}

// What follows "tuned:" on its line, without a trailing comment or spaces.
std::string_view AfterKey(std::string_view line) {
  std::string_view rest = line.substr(6);
  if (const size_t hash = rest.find(" #"); hash != std::string_view::npos)
    rest = rest.substr(0, hash);
  if (!rest.empty() && rest[0] == '#') rest = {};
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
    rest.remove_suffix(1);
  return rest;
}

// The key of an entry line ("  cpu-x:" or "  'cpu-x': {...}"), unquoted.
std::string EntryKey(std::string_view line) {
  std::string_view s = line.substr(Indent(line));
  if (!s.empty() && (s[0] == '"' || s[0] == '\'')) {
    const size_t close = s.find(s[0], 1);
    if (close != std::string_view::npos) return std::string(s.substr(1, close - 1));
  }
  const size_t colon = s.find(':');
  std::string key(s.substr(0, colon == std::string_view::npos ? s.size() : colon));
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  return key;
}

std::string Scalar(const ojson& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    static const std::regex bare("[A-Za-z][A-Za-z0-9_.-]*");
    std::string lower = s;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const char* kSpecial[] = {"true", "false", "null", "yes", "no", "on",
                                     "off",  "y",     "n",    "nan", "inf"};
    const bool special = std::any_of(std::begin(kSpecial), std::end(kSpecial),
                                     [&](const char* w) { return lower == w; });
    if (!special && std::regex_match(s, bare)) return s;
  }
  return v.dump();  // JSON is YAML flow: numbers, booleans, quoted strings, {...}, [...]
}

void Append(std::string* out, std::string_view s) { out->append(s.data(), s.size()); }

}  // namespace

std::string FormatTunedEntry(std::string_view hardware_class, const ojson& entry, int indent) {
  const std::string pad(static_cast<size_t>(std::max(0, indent)), ' ');
  std::string out = pad + std::string(hardware_class) + ":\n";
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    out += pad + "  " + it.key() + ":";
    if (it->is_object() && it.key() == "evidence") {
      out += "\n";
      for (auto f = it->begin(); f != it->end(); ++f)
        out += pad + "    " + f.key() + ": " + Scalar(*f) + "\n";
    } else if (it->is_object()) {
      out += " {";
      bool first = true;
      for (auto f = it->begin(); f != it->end(); ++f) {
        out += (first ? "" : ", ") + f.key() + ": " + Scalar(*f);
        first = false;
      }
      out += "}\n";
    } else {
      out += " " + Scalar(*it) + "\n";
    }
  }
  return out;
}

namespace {

// Where the block is: lines [begin, end) of `lines`; begin == lines.size()
// when there is none.
struct BlockSpan {
  size_t begin, end;
};

BlockSpan FindBlock(const std::vector<std::string_view>& lines) {
  size_t i = 0;
  while (i < lines.size() && lines[i].substr(0, 6) != "tuned:") ++i;
  size_t j = i + (i < lines.size() ? 1 : 0);
  while (j < lines.size() && !TopLevel(lines[j])) ++j;
  return {i, j};
}

}  // namespace

std::string WithoutTunedBlock(std::string_view profile) {
  const auto lines = Lines(profile);
  const BlockSpan b = FindBlock(lines);
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k < b.begin || k >= b.end) Append(&out, lines[k]);
  }
  return out;
}

Result<std::string> WriteTunedEntry(std::string_view profile, std::string_view hardware_class,
                                    const ojson& entry) {
  const auto lines = Lines(profile);
  const BlockSpan b = FindBlock(lines);
  std::string out;

  if (b.begin == lines.size()) {
    // No block yet: append one after a comment saying what writes it.
    Append(&out, profile);
    if (!out.empty() && out.back() != '\n') out += '\n';
    if (!out.empty() && out.size() >= 2 && out.substr(out.size() - 2) != "\n\n") out += '\n';
    out +=
        "# Measured by `shoal tune` per hardware class (docs/operations.md, \"Tuning\");\n"
        "# it rewrites this block and nothing else.\n";
    out += "tuned:\n" + FormatTunedEntry(hardware_class, entry, 2);
  } else {
    std::string head(lines[b.begin]);
    const std::string_view after = AfterKey(lines[b.begin]);
    if (after == "{}") {
      head = "tuned:\n";
    } else if (!after.empty()) {
      return InvalidInput(
          "tuned: written in flow style (" + std::string(after.substr(0, 40)) +
          "); write it as a block (one hardware class a line) for shoal tune to edit it");
    }
    if (head.back() != '\n') head += '\n';

    // The body's entries, at the first indentation in it.
    const std::vector<std::string_view> body(lines.begin() + b.begin + 1, lines.begin() + b.end);
    size_t indent = 2;
    for (auto line : body) {
      if (!Blank(line) && !IsComment(line)) {
        indent = Indent(line);
        break;
      }
    }
    // Our entry: from its key line to its last non-blank line before a line
    // at the entries' indentation or less.
    size_t ours = body.size(), ours_end = body.size();
    for (size_t k = 0; k < body.size(); ++k) {
      const auto line = body[k];
      if (Blank(line) || IsComment(line) || Indent(line) != indent ||
          EntryKey(line) != hardware_class)
        continue;
      ours = k;
      ours_end = k + 1;
      for (size_t m = k + 1; m < body.size() && (Blank(body[m]) || Indent(body[m]) > indent); ++m) {
        if (!Blank(body[m])) ours_end = m + 1;
      }
      break;
    }
    if (ours == body.size()) {
      // Appended after the last line with content, before trailing blank lines.
      ours = body.size();
      while (ours > 0 && Blank(body[ours - 1])) --ours;
      ours_end = ours;
    }
    std::string block = head;
    for (size_t k = 0; k < ours; ++k) Append(&block, body[k]);
    if (!block.empty() && block.back() != '\n') block += '\n';
    block += FormatTunedEntry(hardware_class, entry, static_cast<int>(indent));
    for (size_t k = ours_end; k < body.size(); ++k) Append(&block, body[k]);

    for (size_t k = 0; k < b.begin; ++k) Append(&out, lines[k]);
    // What followed the block stays where it was; the block goes last.
    for (size_t k = b.end; k < lines.size(); ++k) Append(&out, lines[k]);
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += block;
  }

  try {
    YAML::Node doc = YAML::Load(out);
    if (!doc["tuned"] || !doc["tuned"][std::string(hardware_class)].IsMap()) {
      return Status(Code::kInternal,
                    "the rewritten profile has no tuned entry for " + std::string(hardware_class));
    }
  } catch (const YAML::Exception& e) {
    return InvalidInput(std::string("the rewritten profile is not valid YAML: ") + e.what());
  }
  return out;
}

}  // namespace shoal::tune
