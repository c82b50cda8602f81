#include "admin/provenance.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "admin/gguf_header.h"
#include "store/manifest.h"

namespace shoal::admin {
namespace {

namespace fs = std::filesystem;

std::string Head(const fs::path& file, size_t bytes) {
  std::ifstream in(file, std::ios::binary);
  std::string text(bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(bytes));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    s = s.substr(1, s.size() - 2);
  return std::string(s);
}

// A model card's YAML front matter: `license:` (and `license_name:`, what
// the Hub asks for when the license is "other").
std::string CardLicense(const fs::path& readme) {
  std::istringstream in(Head(readme, 64 * 1024));
  std::string line, license, name;
  if (!std::getline(in, line) || Trim(line) != "---") return {};
  while (std::getline(in, line) && Trim(line) != "---") {
    if (line.starts_with("license:")) license = Trim(std::string_view(line).substr(8));
    if (line.starts_with("license_name:")) name = Trim(std::string_view(line).substr(13));
  }
  return license == "other" && !name.empty() ? name : license;
}

bool Has(const std::string& text, std::string_view phrase) {
  return std::search(text.begin(), text.end(), phrase.begin(), phrase.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

// A license file, by phrases its text is known by.
std::string LicenseOfText(const std::string& text) {
  if (Has(text, "Apache License") && Has(text, "Version 2.0")) return "apache-2.0";
  if (Has(text, "MIT License") || Has(text, "Permission is hereby granted, free of charge"))
    return "mit";
  if (Has(text, "GNU GENERAL PUBLIC LICENSE") && Has(text, "Version 3")) return "gpl-3.0";
  if (Has(text, "Attribution-NonCommercial 4.0")) return "cc-by-nc-4.0";
  if (Has(text, "Attribution 4.0 International")) return "cc-by-4.0";
  if (Has(text, "LLAMA 3.2 COMMUNITY LICENSE")) return "llama3.2";
  if (Has(text, "LLAMA 3.1 COMMUNITY LICENSE")) return "llama3.1";
  if (Has(text, "META LLAMA 3 COMMUNITY LICENSE")) return "llama3";
  if (Has(text, "Gemma Terms of Use")) return "gemma";
  if (Has(text, "Redistribution and use in source and binary forms")) {
    return Has(text, "Neither the name") ? "bsd-3-clause" : "bsd-2-clause";
  }
  return "other";
}

}  // namespace

LicenseFinding FindLicense(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return {};
  if (!fs::is_directory(path, ec)) {
    auto gguf = GgufString(path, "general.license");
    if (gguf.ok() && !gguf->empty()) return {Trim(*gguf), "gguf"};
    return {};  // one file (its directory may hold other models: not read)
  }
  const fs::path dir(path);
  if (fs::is_regular_file(dir / "README.md", ec)) {
    if (std::string l = CardLicense(dir / "README.md"); !l.empty()) return {l, "README.md"};
  }
  for (const char* name : {"LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE"}) {
    if (fs::is_regular_file(dir / name, ec))
      return {LicenseOfText(Head(dir / name, 16 * 1024)), name};
  }
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".gguf") continue;
    auto gguf = GgufString(e.path().string(), "general.license");
    if (gguf.ok() && !gguf->empty()) return {Trim(*gguf), "gguf"};
  }
  return {};
}

Result<LicenseFinding> SettleLicense(const std::string& path, std::string_view stated,
                                     bool required) {
  LicenseFinding found = FindLicense(path);
  const std::string said = Trim(stated);
  if (!found.license.empty()) {
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return s;
    };
    if (!said.empty() && lower(said) != lower(found.license)) {
      return InvalidInput("license: the model's " + found.source + " says '" + found.license +
                          "', not '" + said + "'");
    }
    return found;
  }
  if (!said.empty()) return LicenseFinding{said, "registrant"};
  if (required) {
    return InvalidInput(
        "license: the model's files state none (README.md front matter, LICENSE, GGUF "
        "general.license) and this catalog requires one: state it (\"license\", --license)");
  }
  return found;
}

Status RecordFiles(const std::string& path, PromotionRecord* record) {
  record->files.clear();
  record->files_digest.clear();
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return Status::Ok();
  store::ModelManifest manifest;
  if (fs::is_directory(path, ec)) {
    SHOAL_ASSIGN_OR_RETURN(manifest, store::ManifestOfDirectory(path));
  } else {
    SHOAL_ASSIGN_OR_RETURN(std::string hex, store::Sha256OfFile(path));
    manifest.files.push_back(
        {fs::path(path).filename().string(), fs::file_size(path, ec), std::move(hex)});
  }
  for (const store::ManifestFile& f : manifest.files)
    record->files.push_back({f.path, f.bytes, f.sha256});
  record->files_digest = manifest.Digest();
  return Status::Ok();
}

std::string CommandLineOwner() {
  std::string user = "unknown";
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) user = pw->pw_name;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return "cli:" + user + "@" + host;
}

}  // namespace shoal::admin
