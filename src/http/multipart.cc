#include "http/multipart.h"

#include <algorithm>
#include <cctype>

namespace shoal::http {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of parameter `name` in a header value ("form-data; name=\"x\"");
// quoted strings may hold ';' and \-escapes. Empty when absent.
std::string Param(std::string_view header, std::string_view name) {
  size_t i = header.find(';');
  while (i < header.size()) {
    ++i;  // past the ';'
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
    const size_t key_end = std::min(header.find_first_of("=;", i), header.size());
    const std::string key = Lower(Trim(header.substr(i, key_end - i)));
    i = key_end;
    if (i >= header.size() || header[i] == ';') continue;  // a parameter without a value
    ++i;  // past the '='
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
    std::string value;
    if (i < header.size() && header[i] == '"') {
      for (++i; i < header.size() && header[i] != '"'; ++i) {
        if (header[i] == '\\' && i + 1 < header.size()) ++i;
        value.push_back(header[i]);
      }
      i = std::min(header.find(';', i), header.size());
    } else {
      const size_t end = std::min(header.find(';', i), header.size());
      value = std::string(Trim(header.substr(i, end - i)));
      i = end;
    }
    if (key == name) return value;
  }
  return "";
}

}  // namespace

Result<std::vector<FormPart>> ParseMultipart(std::string_view content_type, std::string_view body) {
  if (!Lower(Trim(content_type.substr(0, content_type.find(';')))).starts_with("multipart/form-data")) {
    return InvalidInput("expected a multipart/form-data body");
  }
  const std::string boundary = Param(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 70) {
    return InvalidInput("multipart/form-data: the Content-Type has no usable boundary");
  }
  const std::string dash = "--" + boundary;
  const std::string delimiter = "\r\n" + dash;
  // The first boundary: at the start, or after a preamble.
  size_t at = body.starts_with(dash) ? dash.size() : body.find(delimiter);
  if (at == std::string_view::npos) return InvalidInput("multipart/form-data: no boundary in the body");
  if (!body.starts_with(dash)) at += delimiter.size();

  std::vector<FormPart> parts;
  for (;;) {
    if (body.substr(at, 2) == "--") return parts;  // the closing boundary
    if (body.substr(at, 2) != "\r\n") return InvalidInput("multipart/form-data: a boundary line is malformed");
    at += 2;
    const size_t headers_end = body.find("\r\n\r\n", at);
    if (headers_end == std::string_view::npos) return InvalidInput("multipart/form-data: a part's headers do not end");
    FormPart part;
    bool disposition = false;
    for (size_t line = at; line < headers_end + 2;) {
      const size_t eol = body.find("\r\n", line);
      const std::string_view header = body.substr(line, eol - line);
      line = eol + 2;
      const size_t colon = header.find(':');
      if (colon == std::string_view::npos) return InvalidInput("multipart/form-data: a malformed part header");
      const std::string name = Lower(Trim(header.substr(0, colon)));
      const std::string_view value = Trim(header.substr(colon + 1));
      if (name == "content-disposition") {
        if (Lower(Trim(value.substr(0, value.find(';')))) != "form-data") {
          return InvalidInput("multipart/form-data: a part's Content-Disposition is not form-data");
        }
        disposition = true;
        part.name = Param(value, "name");
        part.filename = Param(value, "filename");
      } else if (name == "content-type") {
        part.content_type = std::string(value);
      }
    }
    if (!disposition || part.name.empty()) {
      return InvalidInput("multipart/form-data: a part without a Content-Disposition name");
    }
    const size_t data_start = headers_end + 4;
    const size_t data_end = body.find(delimiter, data_start);
    if (data_end == std::string_view::npos) return InvalidInput("multipart/form-data: the body ends inside a part");
    part.data = body.substr(data_start, data_end - data_start);
    parts.push_back(std::move(part));
    at = data_end + delimiter.size();
  }
}

}  // namespace shoal::http
