#include "index_state.h"

#include <chrono>
#include <utility>

#include "hkv/request.h"
#include "index_query.h"

namespace hkv::cli {

IndexState::IndexState(std::unique_ptr<ClusterIndex> index,
                       std::vector<std::string> endpoints, Log& log)
    : log_(log),
      endpoints_(std::move(endpoints)),
      scheme_(index->key_scheme()),
      index_(std::move(index)),
      links_(endpoints_.size()) {}

std::uint32_t IndexState::num_instances() const {
  return static_cast<std::uint32_t>(endpoints_.size());
}

const std::string& IndexState::endpoint(std::uint32_t instance) const {
  return endpoints_.at(instance);
}

BatchOutcome IndexState::Apply(std::uint32_t instance, std::uint64_t sequence,
                               std::string_view batch, BatchSource source,
                               Error* error) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return index_->ApplyBatch(instance, sequence, batch, source, error);
}

std::optional<std::uint64_t> IndexState::expected_sequence(
    std::uint32_t instance) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return index_->expected_sequence(instance);
}

void IndexState::CountBadMessage(std::uint32_t instance) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++links_.at(instance).bad_messages;
}

void IndexState::CountReplay(std::uint32_t instance, bool answered) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++links_.at(instance).replays;
  if (!answered) ++links_.at(instance).replay_failures;
}

void IndexState::CountLinkDrop(std::uint32_t instance) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++links_.at(instance).link_drops;
}

void IndexState::Resync(std::uint32_t instance) {
  const std::lock_guard<std::mutex> lock(mutex_);
  index_->Resync(instance);
}

void IndexState::ReplayCompleted(std::uint32_t instance) {
  const std::lock_guard<std::mutex> lock(mutex_);
  index_->ReplayCompleted(instance);
}

QueryReply IndexState::Refuse(const std::string& message) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++queries_.bad_queries;
  }
  log_.Say("bad query: " + message);
  return {.http_status = 400, .json = ErrorJson(message)};
}

QueryReply IndexState::Query(std::string_view body) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Result<IndexQuery> query =
      ParseIndexQuery(body, DigestSize(scheme_.function));
  if (!query) return Refuse(query.error().message);
  // The prompt's keys, without the lock (ClusterIndex::Match's work).
  std::optional<Request> request;
  if (!query->by_keys)
    request.emplace(RequestOptions{}, query->tokens, scheme_);
  const std::span<const BlockHash> keys =
      request ? request->keys() : std::span<const BlockHash>(query->keys);
  Result<std::vector<InstanceMatch>> matches;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    matches = index_->MatchKeys(keys, query->num_tokens);
  }
  if (!matches) return Refuse(matches.error().message);
  QueryReply reply{.http_status = 200,
                   .json = AnswerJson(*matches, endpoints_)};
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  const std::lock_guard<std::mutex> lock(mutex_);
  ++queries_.queries;
  queries_.query_tokens += query->num_tokens;
  queries_.hit_tokens += (*matches)[BestInstance(*matches)].hybrid_tokens;
  queries_.seconds.Observe(seconds);
  return reply;
}

IndexMetrics IndexState::Snapshot() const {
  IndexMetrics metrics;
  metrics.instances.resize(endpoints_.size());
  const std::lock_guard<std::mutex> lock(mutex_);
  metrics.queries = queries_;
  metrics.memory_bytes = index_->MemoryBytes();
  for (std::uint32_t i = 0; i < num_instances(); ++i) {
    InstanceMetrics& instance = metrics.instances[i];
    instance.endpoint = endpoints_[i];
    instance.index = index_->counters(i);
    instance.link = links_[i];
    instance.resident_keys = index_->ResidentKeys(i);
  }
  return metrics;
}

}  // namespace hkv::cli
