#include "cli/command_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/yaml_json.h"

namespace commgate {

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError(path + " is a directory: name a manifest file (YAML or JSON)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    throw UsageError(path + " is not a text manifest: it holds a NUL byte at offset " +
                     std::to_string(nul) + " (a binary file?)");
  }
  return text;
}

void write_text_file(const std::string& path, const std::string& text) {
  if (path.empty()) throw UsageError("cannot write a file with an empty name");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("cannot write " + path + ": it is a directory (name a file)");
  auto fail = [&](const std::string& temp, int error) {
    if (!temp.empty()) ::unlink(temp.c_str());
    throw UsageError("cannot write " + path + ": " + std::strerror(error));
  };
  // A name of its own beside the target (the rename must not cross file systems), created
  // exclusively; 0666 less the umask, as any file the user writes.
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) fail("", errno);
  }
  if (fd < 0) fail("", EEXIST);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      fail(temp, error);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail(temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail(temp, errno);
}

std::vector<nlohmann::json> read_manifests(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return parse_manifests(text);
  } catch (const std::exception& e) {
    throw UsageError(path + ": " + printable(e.what()));
  }
}

std::string kind_of(const nlohmann::json& document) {
  if (!document.is_object()) return "";
  auto it = document.find("kind");
  return it != document.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += '\n';  // messages are multi-line on purpose
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace commgate
