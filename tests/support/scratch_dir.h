// A directory of this test process's own under $TMPDIR (gtest's TempDir), removed when the
// process exits: for a test's files with fixed names (a child's logs), so that concurrent
// runs do not share them and nothing is left behind in /tmp.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace commgate::testing {

inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern = ::testing::TempDir() + "commgate-test.XXXXXX";
      if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
      path = pattern;
    }
    ~Dir() {
      std::error_code ignored;  // at exit: nothing to report to
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

}  // namespace commgate::testing
