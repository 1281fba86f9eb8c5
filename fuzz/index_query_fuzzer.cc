// ParseIndexQuery (tools/hkv/index_query.h, compiled in) on arbitrary bytes,
// with 32-byte (SHA-256) and 16-byte (XXH3-128) digests: never crashes and
// keeps nothing but the ids. A query it reads is one of the two forms,
// within kMaxTokensPerRequest, reads back the same from its canonical JSON,
// and is one the `hkv index` service's ClusterIndex answers: Match on its
// tokens (the same as MatchKeys on their keys), or MatchKeys on its keys,
// which refuses exactly a key count other than num_tokens / hash_unit. A
// refused body's error reply is valid JSON.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "hkv/cluster_index.h"
#include "hkv/limits.h"
#include "hkv/request.h"
#include "index_query.h"

namespace {

using hkv::fuzz::Require;

constexpr std::uint32_t kUnit = 16;
constexpr std::uint32_t kInstances = 2;

// The service's index: full attention beside a recurrent group, SHA-256
// keys; instance 0 holds the prompt 0..64 (4 units), so queries can hit.
const hkv::ClusterIndex& Index() {
  static const std::unique_ptr<hkv::ClusterIndex> index = [] {
    const hkv::CacheConfig config = {
        .groups = {{.kind = hkv::GroupKind::kFullAttention,
                    .block_size = kUnit},
                   {.kind = hkv::GroupKind::kRecurrent, .block_size = kUnit}},
        .num_blocks = 64,
        .keys = {.hash_unit = kUnit}};
    std::unique_ptr<hkv::ClusterIndex> built = *hkv::ClusterIndex::Create(
        {.instance_config = config, .capacity_keys = 1000}, kInstances);
    std::vector<hkv::TokenId> prompt(65);
    for (std::uint32_t t = 0; t < prompt.size(); ++t) prompt[t] = t;
    const hkv::Request r({}, prompt, built->key_scheme());
    const std::vector<hkv::BlockHash> keys(r.keys().begin(), r.keys().end());
    const hkv::KvEvent events[] = {
        hkv::BlockStored{.block_hashes = keys, .block_size = kUnit},
        hkv::BlockStored{.block_hashes = {keys.back()},
                         .block_size = kUnit,
                         .group = hkv::GroupId{1}}};
    Require(built->Apply(0, events).has_value(), "the seed events apply");
    return built;
  }();
  return *index;
}

// The canonical body of a query read with `digest`-byte keys.
std::string Canonical(const hkv::cli::IndexQuery& q, std::size_t digest) {
  std::string body = q.by_keys ? "{\"keys\":[" : "{\"tokens\":[";
  const std::size_t n = q.by_keys ? q.keys.size() : q.tokens.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) body += ',';
    body += q.by_keys ? '"' + q.keys[i].Hex(digest) + '"'
                      : std::to_string(q.tokens[i]);
  }
  body += ']';
  if (q.by_keys) body += ",\"num_tokens\":" + std::to_string(q.num_tokens);
  return body + '}';
}

void CheckShape(const hkv::cli::IndexQuery& q, std::size_t digest) {
  Require(q.num_tokens <= hkv::kMaxTokensPerRequest,
          "num_tokens within kMaxTokensPerRequest");
  if (q.by_keys) {
    Require(q.tokens.empty(), "a keys query has no tokens");
    Require(q.keys.size() <= hkv::kMaxTokensPerRequest,
            "keys within kMaxTokensPerRequest");
    for (const hkv::BlockHash& key : q.keys) {
      for (std::size_t b = digest; b < key.bytes.size(); ++b) {
        Require(key.bytes[b] == 0, "a key's bytes past its digest are zero");
      }
    }
  } else {
    Require(q.keys.empty(), "a tokens query has no keys");
    Require(q.num_tokens == q.tokens.size(), "num_tokens counts the tokens");
  }
}

void CheckAnswers(std::span<const hkv::InstanceMatch> matches,
                  std::uint32_t num_tokens) {
  Require(matches.size() == kInstances, "an answer per instance");
  const std::uint32_t most = num_tokens > 0 ? num_tokens - 1 : 0;
  for (const hkv::InstanceMatch& m : matches) {
    Require(m.hybrid_tokens <= most && m.attention_tokens <= most,
            "an answer leaves the prompt's last token");
  }
  const std::vector<std::string> endpoints(kInstances, "tcp://x:1");
  Require(nlohmann::json::accept(hkv::cli::AnswerJson(matches, endpoints)),
          "an answer is JSON");
}

// The query as the service answers it.
void Answer(const hkv::cli::IndexQuery& q) {
  const hkv::ClusterIndex& index = Index();
  if (!q.by_keys) {
    const std::vector<hkv::InstanceMatch> matches = index.Match(q.tokens);
    CheckAnswers(matches, q.num_tokens);
    const hkv::Request r({}, q.tokens, index.key_scheme());
    const hkv::Result<std::vector<hkv::InstanceMatch>> by_keys =
        index.MatchKeys(r.keys(), q.num_tokens);
    Require(by_keys.has_value() && *by_keys == matches,
            "MatchKeys on the tokens' keys answers as Match");
    return;
  }
  const hkv::Result<std::vector<hkv::InstanceMatch>> matches =
      index.MatchKeys(q.keys, q.num_tokens);
  Require(matches.has_value() == (q.keys.size() == q.num_tokens / kUnit),
          "MatchKeys refuses exactly a wrong key count");
  if (matches) CheckAnswers(*matches, q.num_tokens);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const std::size_t digest : {std::size_t{32}, std::size_t{16}}) {
    const hkv::Result<hkv::cli::IndexQuery> q =
        hkv::cli::ParseIndexQuery(body, digest);
    if (!q) {
      Require(nlohmann::json::accept(hkv::cli::ErrorJson(q.error().message)),
              "an error reply is JSON");
      continue;
    }
    CheckShape(*q, digest);
    const hkv::Result<hkv::cli::IndexQuery> again =
        hkv::cli::ParseIndexQuery(Canonical(*q, digest), digest);
    Require(again.has_value() && again->by_keys == q->by_keys &&
                again->tokens == q->tokens && again->keys == q->keys &&
                again->num_tokens == q->num_tokens,
            "a query reads back the same from its canonical form");
    // The service's keys are SHA-256 digests.
    if (digest == 32) Answer(*q);
  }
  return 0;
}
