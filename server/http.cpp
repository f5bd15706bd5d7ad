#include "server/http.h"

#include <cctype>

namespace commgate::server {

namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

bool header_name_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (header_name_equal(k, name)) return v;
  }
  return {};
}

bool Request::has_header(std::string_view name) const {
  for (const auto& kv : headers) {
    if (header_name_equal(kv.first, name)) return true;
  }
  return false;
}

std::string Request::query_param(std::string_view name) const {
  return find_query_param(name).value_or(std::string{});
}

std::optional<std::string> Request::find_query_param(std::string_view name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    if (percent_decode(key) != name) continue;
    return eq == std::string_view::npos ? std::string{} : percent_decode(pair.substr(eq + 1));
  }
  return std::nullopt;
}

Response Response::text(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response Response::json(int status, std::string body) {
  Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

Response Response::streaming(int status, std::string content_type, StreamProducer producer) {
  Response r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.stream = std::move(producer);
  return r;
}

Response& Response::with_header(std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
  return *this;
}

}  // namespace commgate::server
