// The target that builds tests/support/test_pch.h once (tests/CMakeLists.txt).
