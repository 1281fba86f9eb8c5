// `hkv index`'s Prometheus text (tools/hkv/index_metrics.h): the families,
// their labels, the cumulative histogram and label escaping.
#include "index_metrics.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace hkv::cli {
namespace {

IndexMetrics TwoInstances() {
  IndexMetrics m;
  m.queries.queries = 3;
  m.queries.bad_queries = 1;
  m.queries.query_tokens = 750;
  m.queries.hit_tokens = 384;
  m.queries.seconds.Observe(0.0002);
  m.queries.seconds.Observe(0.003);
  m.queries.seconds.Observe(30.0);
  m.memory_bytes = 4096;
  m.instances.push_back({.endpoint = "tcp://10.0.0.7:5557",
                         .index = {.batches = 12, .gaps = 1, .rejected = 2},
                         .link = {.replays = 1, .bad_messages = 5},
                         .resident_keys = {12, 1}});
  m.instances.push_back({.endpoint = "tcp://\"odd\"\\name\n",
                         .index = {.restarts = 4},
                         .link = {},
                         .resident_keys = {0, 0}});
  return m;
}

bool HasLine(const std::string& text, const std::string& line) {
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (l == line) return true;
  }
  return false;
}

TEST(IndexMetricsTest, CountsPerServiceAndPerInstance) {
  const std::string text = PrometheusText(TwoInstances());
  for (const char* line : {
           "# TYPE hkv_index_queries_total counter",
           "hkv_index_queries_total 3",
           "hkv_index_bad_queries_total 1",
           "hkv_index_prefix_cache_queries_total 750",
           "hkv_index_prefix_cache_hits_total 384",
           "hkv_index_batches_total{instance=\"0\"} 12",
           "hkv_index_gaps_total{instance=\"0\"} 1",
           "hkv_index_rejected_batches_total{instance=\"0\"} 2",
           "hkv_index_replays_total{instance=\"0\"} 1",
           "hkv_index_bad_messages_total{instance=\"0\"} 5",
           "hkv_index_restarts_total{instance=\"1\"} 4",
           "# TYPE hkv_index_resident_keys gauge",
           "hkv_index_resident_keys{instance=\"0\",group=\"1\"} 1",
           "hkv_index_memory_bytes 4096",
       }) {
    EXPECT_TRUE(HasLine(text, line)) << line << "\n" << text;
  }
  EXPECT_NE(text.find("vllm:prefix_cache_queries"), std::string::npos);
  EXPECT_NE(text.find("vllm:prefix_cache_hits"), std::string::npos);
}

TEST(IndexMetricsTest, HistogramBucketsAreCumulative) {
  const std::string text = PrometheusText(TwoInstances());
  EXPECT_TRUE(HasLine(text, "# TYPE hkv_index_query_seconds histogram"));
  EXPECT_TRUE(HasLine(text, "hkv_index_query_seconds_bucket{le=\"0.0001\"} 0"));
  EXPECT_TRUE(
      HasLine(text, "hkv_index_query_seconds_bucket{le=\"0.00025\"} 1"));
  EXPECT_TRUE(HasLine(text, "hkv_index_query_seconds_bucket{le=\"0.005\"} 2"));
  EXPECT_TRUE(HasLine(text, "hkv_index_query_seconds_bucket{le=\"2.5\"} 2"));
  EXPECT_TRUE(HasLine(text, "hkv_index_query_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(HasLine(text, "hkv_index_query_seconds_count 3"));
  EXPECT_TRUE(HasLine(text, "hkv_index_query_seconds_sum 30.0032"));
}

TEST(IndexMetricsTest, EndpointLabelsAreEscaped) {
  EXPECT_TRUE(HasLine(PrometheusText(TwoInstances()),
                      R"(hkv_index_instance_info{instance="1",endpoint=)"
                      R"("tcp://\"odd\"\\name\n"} 1)"));
}

TEST(IndexMetricsTest, NegativeAndNanTimesCountAsZero) {
  LatencyHistogram h;
  h.Observe(-1.0);
  h.Observe(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(h.buckets[0], 2u);
  EXPECT_EQ(h.count, 2u);
  EXPECT_EQ(h.sum, 0.0);
}

}  // namespace
}  // namespace hkv::cli
