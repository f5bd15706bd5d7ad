// The headers nearly every test file parses: gtest, nlohmann/json, Boost.Beast/Asio (the
// servers, the test HTTPS client, the simulated cluster) and the standard library. One
// precompiled header of them, built once per build directory and reused by every test
// program (tests/CMakeLists.txt), instead of parsing them again in each of about sixty
// test programs (4-7 s each; docs/testing.md "CI"). Only headers the tests would include
// anyway: a test still includes what it uses, so it compiles without this header too.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
