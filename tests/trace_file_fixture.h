// A fixture writing trace files into a fresh directory per test, removed
// after it, for the trace reader and replay tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hkv/mooncake_trace.h"

namespace hkv::testing {

// Writes trace files into a fresh directory, removed after the test.
class TraceFileFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    dir_ = std::filesystem::temp_directory_path() / ("hkv_trace_test." + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path Write(const std::string& contents) {
    const std::filesystem::path path = dir_ / "trace.jsonl";
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }

  std::vector<TraceRequest> Read(const std::string& contents) {
    Result<std::vector<TraceRequest>> trace =
        ReadMooncakeTrace(Write(contents));
    EXPECT_TRUE(trace.has_value()) << trace.error().message;
    return trace.value_or(std::vector<TraceRequest>{});
  }

  std::filesystem::path dir_;
};

// A well-formed Mooncake line of 600 tokens.
inline constexpr char kGoodLine[] =
    R"({"timestamp": 0, "input_length": 600, "output_length": 7, "hash_ids": [0, 1]})";

}  // namespace hkv::testing
