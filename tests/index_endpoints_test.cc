// `hkv index`'s addresses (tools/hkv/index_endpoints.h): --instance,
// --instances-file and --http.
#include "index_endpoints.h"

#include <gtest/gtest.h>

namespace hkv::cli {
namespace {

TEST(IndexEndpointsTest, AnInstanceHasAnEndpointAndMaybeAReplayEndpoint) {
  Result<InstanceEndpoints> both =
      ParseInstance(" tcp://10.0.0.7:5557 , tcp://10.0.0.7:5558 ");
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->endpoint, "tcp://10.0.0.7:5557");
  EXPECT_EQ(both->replay_endpoint, "tcp://10.0.0.7:5558");
  Result<InstanceEndpoints> one = ParseInstance("ipc:///tmp/kv");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->replay_endpoint, "");
}

TEST(IndexEndpointsTest, MalformedInstancesAreUsageErrors) {
  for (const char* text : {"", "10.0.0.7:5557", "tcp://", "tcp://a,",
                           "tcp://a,tcp://b,tcp://c", "tcp://a b"}) {
    Result<InstanceEndpoints> e = ParseInstance(text);
    ASSERT_FALSE(e) << text;
    EXPECT_EQ(e.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(e.error().message.find("ENDPOINT[,REPLAY_ENDPOINT]"),
              std::string::npos);
  }
}

TEST(IndexEndpointsTest, AListSkipsBlanksAndCommentsAndNamesBadLines) {
  Result<std::vector<InstanceEndpoints>> list = ParseInstanceList(
      "# engines\ntcp://a:1,tcp://a:2\n\n  tcp://b:1\r\n", "f.txt");
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].endpoint, "tcp://b:1");
  Result<std::vector<InstanceEndpoints>> bad =
      ParseInstanceList("tcp://a:1\nnonsense\n", "f.txt");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("f.txt:2: instance \"nonsense\"", 0), 0u);
}

TEST(IndexEndpointsTest, HostAndPort) {
  Result<HostPort> any = ParseHostPort("127.0.0.1:0");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->host, "127.0.0.1");
  EXPECT_EQ(any->port, 0);
  Result<HostPort> v6 = ParseHostPort("[::1]:8088");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8088);
  for (const char* text :
       {"localhost", ":80", "h:", "h:65536", "h:-1", "[::1:80", "h:80x"}) {
    EXPECT_FALSE(ParseHostPort(text)) << text;
  }
}

}  // namespace
}  // namespace hkv::cli
