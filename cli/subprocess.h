// Runs a program and captures what it writes (for commgate evaluate's local probe and the
// kubectl plugin's kubectl calls). No shell: arguments are passed as they are; the child
// inherits stdin and the environment.
#pragma once

#include <string>
#include <vector>

namespace commgate {

struct Captured {
  int code = 0;  // the exit status; 128 + signal when killed; 127 when it could not run
  std::string out;
  std::string err;
};

// argv[0] is the program's path. Throws std::runtime_error when pipes or fork fail.
Captured run_capture(const std::vector<std::string>& argv);

// The first executable `name` on $PATH, or "".
std::string find_on_path(const std::string& name);

}  // namespace commgate
