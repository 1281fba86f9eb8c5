// KV events on the wire (hkv/event_publisher.h): the msgpack batch layout,
// the bounded queue, and a publisher on loopback sockets with its replay.
#include "hkv/event_publisher.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <thread>
#include <zmq.hpp>

#include "events/batch_queue.h"

namespace hkv {
namespace {

BlockHash Counting() {
  BlockHash h;
  for (std::size_t i = 0; i < h.bytes.size(); ++i) {
    h.bytes[i] = static_cast<std::uint8_t>(i);
  }
  return h;
}

std::vector<KvEvent> ThreeEvents() {
  return {BlockStored{.block_hashes = {Counting(), Counting()},
                      .token_ids = {1, 2, 3, 4},
                      .block_size = 2,
                      .group = GroupId{1},
                      .spec_kind = "mamba"},
          BlockRemoved{.block_hashes = {Counting()}, .group = GroupId{1}},
          AllBlocksCleared{}};
}

msgpack::object_handle Decode(const std::string& bytes) {
  return msgpack::unpack(bytes.data(), bytes.size());
}

TEST(EventWireTest, ABatchIsTsEventsAndRank) {
  const std::string bytes = EncodeEventBatch(
      ThreeEvents(), 12.5, 3, KeyFunction::kSha256Cbor, HashEncoding::kBytes);
  const msgpack::object_handle handle = Decode(bytes);
  const msgpack::object& batch = handle.get();
  ASSERT_EQ(batch.type, msgpack::type::ARRAY);
  EXPECT_EQ(static_cast<std::uint8_t>(bytes[1]), 0xcb);  // float64, always
  EXPECT_EQ(Decode(EncodeEventBatch({}, 3.0, 0, KeyFunction::kSha256Cbor,
                                    HashEncoding::kBytes))
                .get()
                .via.array.ptr[0]
                .type,
            msgpack::type::FLOAT64);
  ASSERT_EQ(batch.via.array.size, 3u);
  EXPECT_EQ(batch.via.array.ptr[0].as<double>(), 12.5);
  EXPECT_EQ(batch.via.array.ptr[2].as<int>(), 3);
  const msgpack::object& events = batch.via.array.ptr[1];
  ASSERT_EQ(events.via.array.size, 3u);
  // ["BlockStored", hashes, parent, tokens, block_size, lora_id, medium,
  //  lora_name, extra_keys, group_idx, kind]
  const msgpack::object& stored = events.via.array.ptr[0];
  ASSERT_EQ(stored.via.array.size, 11u);
  EXPECT_EQ(stored.via.array.ptr[0].as<std::string>(), "BlockStored");
  const msgpack::object& hashes = stored.via.array.ptr[1];
  ASSERT_EQ(hashes.via.array.size, 2u);
  EXPECT_EQ(hashes.via.array.ptr[0].type, msgpack::type::BIN);
  EXPECT_EQ(hashes.via.array.ptr[0].via.bin.size, 32u);
  EXPECT_TRUE(stored.via.array.ptr[2].is_nil());
  EXPECT_EQ(stored.via.array.ptr[3].as<std::vector<int>>(),
            (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(stored.via.array.ptr[4].as<int>(), 2);
  EXPECT_TRUE(stored.via.array.ptr[5].is_nil());
  EXPECT_EQ(stored.via.array.ptr[6].as<std::string>(), "GPU");
  EXPECT_TRUE(stored.via.array.ptr[7].is_nil());
  EXPECT_TRUE(stored.via.array.ptr[8].is_nil());
  EXPECT_EQ(stored.via.array.ptr[9].as<int>(), 1);
  EXPECT_EQ(stored.via.array.ptr[10].as<std::string>(), "mamba");
  const msgpack::object& removed = events.via.array.ptr[1];
  ASSERT_EQ(removed.via.array.size, 4u);
  EXPECT_EQ(removed.via.array.ptr[0].as<std::string>(), "BlockRemoved");
  EXPECT_EQ(removed.via.array.ptr[2].as<std::string>(), "GPU");
  EXPECT_EQ(removed.via.array.ptr[3].as<int>(), 1);
  const msgpack::object& cleared = events.via.array.ptr[2];
  ASSERT_EQ(cleared.via.array.size, 1u);
  EXPECT_EQ(cleared.via.array.ptr[0].as<std::string>(), "AllBlocksCleared");
}

TEST(EventWireTest, HashesAreTheDigestOrItsLow64Bits) {
  const std::vector<KvEvent> events = {
      BlockRemoved{.block_hashes = {Counting()}}};
  const auto first_hash = [&](KeyFunction f, HashEncoding e) {
    const msgpack::object_handle handle =
        Decode(EncodeEventBatch(events, 0, 0, f, e));
    return msgpack::object(handle.get()
                               .via.array.ptr[1]
                               .via.array.ptr[0]
                               .via.array.ptr[1]
                               .via.array.ptr[0]);
  };
  EXPECT_EQ(
      first_hash(KeyFunction::kXxh3_128Cbor, HashEncoding::kBytes).via.bin.size,
      16u);
  // Bytes 24..31 (SHA-256) or 8..15 (XXH3-128) as a big-endian integer.
  EXPECT_EQ(first_hash(KeyFunction::kSha256Cbor, HashEncoding::kLow64)
                .as<std::uint64_t>(),
            0x18191a1b1c1d1e1fu);
  EXPECT_EQ(first_hash(KeyFunction::kXxh3_128Cbor, HashEncoding::kLow64)
                .as<std::uint64_t>(),
            0x08090a0b0c0d0e0fu);
}

TEST(EventWireTest, SkippedContextFillsTheFieldsBetween) {
  const std::vector<KvEvent> events = {
      BlockStored{.block_hashes = {Counting()},
                  .token_ids = {5, 6},
                  .block_size = 2,
                  .extra_keys = {std::vector<EventExtraKey>{
                      std::string("salt"), EventItemOffset{"img", -1}}},
                  .skipped_token_ids = {3, 4}}};
  const msgpack::object_handle handle = Decode(EncodeEventBatch(
      events, 0, 0, KeyFunction::kSha256Cbor, HashEncoding::kBytes));
  const msgpack::object& stored =
      handle.get().via.array.ptr[1].via.array.ptr[0];
  ASSERT_EQ(stored.via.array.size, 18u);
  const msgpack::object& extra = stored.via.array.ptr[8].via.array.ptr[0];
  EXPECT_EQ(extra.via.array.ptr[0].as<std::string>(), "salt");
  EXPECT_EQ(extra.via.array.ptr[1].via.array.ptr[1].as<int>(), -1);
  for (int field : {10, 11, 12, 13, 14, 15}) {
    EXPECT_TRUE(stored.via.array.ptr[field].is_nil()) << field;
  }
  EXPECT_EQ(stored.via.array.ptr[16].as<std::vector<int>>(),
            (std::vector<int>{3, 4}));
  EXPECT_TRUE(stored.via.array.ptr[17].is_nil());
}

TEST(BatchQueueTest, AFullQueueDropsItsOldestBatch) {
  internal::BatchQueue queue(2);
  for (double ts : {1.0, 2.0, 3.0}) queue.Push({.timestamp_s = ts});
  EXPECT_EQ(queue.dropped(), 1u);
  EXPECT_FALSE(queue.WaitDrained(std::chrono::milliseconds(0)));
  for (double ts : {2.0, 3.0}) {
    std::optional<internal::PendingBatch> batch =
        queue.Pop(std::chrono::milliseconds(0));
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->timestamp_s, ts);
    EXPECT_EQ(batch->seq, static_cast<std::uint64_t>(ts) - 1);  // 0 dropped
    queue.MarkDone();
  }
  EXPECT_TRUE(queue.WaitDrained(std::chrono::milliseconds(0)));
  queue.Close();
  EXPECT_FALSE(queue.Pop(std::chrono::milliseconds(1000)).has_value());
}

std::uint64_t Sequence(const zmq::message_t& frame) {
  std::uint64_t value = 0;
  const auto* bytes = static_cast<const std::uint8_t*>(frame.data());
  for (std::size_t i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return value;
}

std::string BigEndian(std::uint64_t value) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

class LoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<EventPublisher>> created =
        EventPublisher::Create({.endpoint = "tcp://127.0.0.1:*",
                                .replay_endpoint = "tcp://127.0.0.1:*",
                                .topic = "kv",
                                .replay_batches = 4});
    ASSERT_TRUE(created.has_value()) << created.error().message;
    publisher_ = std::move(*created);
    sub_.set(zmq::sockopt::rcvtimeo, 2000);
    sub_.set(zmq::sockopt::subscribe, "kv");
    sub_.connect(publisher_->endpoint());
    // The subscription reaches the publisher after a while: probe until a
    // batch arrives (bounded).
    for (int attempt = 0; attempt < 200 && probes_ == 0; ++attempt) {
      publisher_->Publish({}, 0.0);
      zmq::message_t frame;
      zmq::pollitem_t item{sub_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(10)) > 0) {
        std::vector<zmq::message_t> frames = Receive();
        next_seq_ = Sequence(frames[1]) + 1;
        ++probes_;
      }
    }
    ASSERT_GT(probes_, 0);
    // Drain the probes still in flight.
    ASSERT_TRUE(publisher_->Flush(std::chrono::milliseconds(2000)));
    sub_.set(zmq::sockopt::rcvtimeo, 200);
    while (true) {
      zmq::message_t frame;
      if (!sub_.recv(frame)) break;
      if (!frame.more()) ++next_seq_;
    }
    sub_.set(zmq::sockopt::rcvtimeo, 2000);
  }

  std::vector<zmq::message_t> Receive() {
    std::vector<zmq::message_t> frames;
    do {
      zmq::message_t frame;
      EXPECT_TRUE(sub_.recv(frame).has_value());
      frames.push_back(std::move(frame));
    } while (frames.back().more());
    return frames;
  }

  zmq::context_t context_{1};
  zmq::socket_t sub_{context_, zmq::socket_type::sub};
  std::unique_ptr<EventPublisher> publisher_;
  std::uint64_t next_seq_ = 0;
  int probes_ = 0;
};

TEST_F(LoopbackTest, BatchesCarryTopicSequenceAndPayload) {
  for (double ts : {1.0, 2.0}) publisher_->Publish(ThreeEvents(), ts);
  for (double ts : {1.0, 2.0}) {
    std::vector<zmq::message_t> frames = Receive();
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0].to_string(), "kv");
    EXPECT_EQ(Sequence(frames[1]), next_seq_++);
    EXPECT_EQ(frames[2].to_string(),
              EncodeEventBatch(ThreeEvents(), ts, 0, KeyFunction::kSha256Cbor,
                               HashEncoding::kBytes));
  }
}

TEST_F(LoopbackTest, ReplayReturnsTheKeptBatchesFromASequenceNumber) {
  for (int i = 0; i < 6; ++i) publisher_->Publish(ThreeEvents(), i);
  ASSERT_TRUE(publisher_->Flush(std::chrono::milliseconds(2000)));
  zmq::socket_t dealer(context_, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 2000);
  dealer.connect(*publisher_->replay_endpoint());
  const std::uint64_t last = next_seq_ + 5;
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(BigEndian(last - 1)), zmq::send_flags::none);
  std::vector<std::uint64_t> seqs;
  while (true) {
    std::vector<zmq::message_t> frames;
    do {
      zmq::message_t frame;
      ASSERT_TRUE(dealer.recv(frame).has_value());
      frames.push_back(std::move(frame));
    } while (frames.back().more());
    ASSERT_EQ(frames.size(), 3u);  // empty delimiter, seq, payload
    if (Sequence(frames[1]) == ~std::uint64_t{0}) break;  // -1: the end
    seqs.push_back(Sequence(frames[1]));
  }
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{last - 1, last}));
  // A malformed request is counted and ignored; replay keeps working.
  dealer.send(zmq::buffer(std::string("x")), zmq::send_flags::none);
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(BigEndian(last)), zmq::send_flags::none);
  zmq::message_t delimiter;
  ASSERT_TRUE(dealer.recv(delimiter).has_value());
  zmq::message_t seq;
  ASSERT_TRUE(dealer.recv(seq).has_value());
  EXPECT_EQ(Sequence(seq), last);
  EXPECT_EQ(publisher_->counters().bad_replay_requests, 1u);
}

TEST(EventPublisherTest, BadOptionsAreNamed) {
  EXPECT_EQ(EventPublisher::Create({.queue_batches = 0}).error().message,
            "queue_batches 0 is outside [1, 2^24]");
  const Result<std::unique_ptr<EventPublisher>> bad =
      EventPublisher::Create({.endpoint = "nonsense"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("\"nonsense\""), std::string::npos);
  Result<std::unique_ptr<EventPublisher>> first =
      EventPublisher::Create({.endpoint = "tcp://127.0.0.1:*"});
  ASSERT_TRUE(first.has_value());
  const Result<std::unique_ptr<EventPublisher>> taken =
      EventPublisher::Create({.endpoint = (*first)->endpoint()});
  ASSERT_FALSE(taken.has_value());
  EXPECT_EQ(taken.error().code, ErrorCode::kIoError);
}

}  // namespace
}  // namespace hkv
