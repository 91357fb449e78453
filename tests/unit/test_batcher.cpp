// unif::Batcher (framework/inference/batcher.h) and Predictor's three steps on the tiny fixture,
// without HTTP: preprocess / forward / postprocess answer as predict() does, requests of several
// callers in one forward; batches bounded by a token budget with padding counted (rows x the
// longest row) as well as by records; a request over the budget on its own runs alone; a request
// whose caller has gone is dropped before its batch runs, the others answered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "framework/inference/batcher.h"
#include "framework/inference/predictor.h"

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const unif::Predictor& tiny() {
  static const auto p = unif::Predictor::load(std::filesystem::path(UNIF_TEST_FIXTURES) / "tiny-bert-zh");
  return p;
}

// A text of `n` CJK characters: one piece each in the fixture's vocabulary.
json text_of(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "天";
  return json{{"text", s}};
}

// What each batch held, as the run saw it.
struct Seen {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> batches;  // (rows, longest row) of each run
};

unif::Batcher::Run recording(Seen& seen) {
  return [&seen](const std::vector<unif::PreparedRecord>& records) {
    int64_t rows = 0, longest = 0;
    for (const auto& r : records) {
      rows += r.rows();
      longest = std::max(longest, r.longest());
    }
    {
      std::lock_guard<std::mutex> lock(seen.mutex);
      seen.batches.emplace_back(rows, longest);
    }
    return tiny().postprocess(records, tiny().forward(records));
  };
}

void wait_queued(const unif::Batcher& b, size_t n) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (b.queued() < n && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
}

}  // namespace

TEST_CASE("predictor steps: preprocess, forward, postprocess answer as predict does, across callers", "[predict]") {
  const auto& p = tiny();
  const std::vector<json> a{json{{"text", "今天天气很好"}}, json{{"nope", 1}}, json(3)};
  const std::vector<json> b{json{{"text_a", "明天"}, {"text_b", "下雨"}}, json{{"text", "北京"}, {"id", 7}}};
  const auto pa = p.preprocess(a), pb = p.preprocess(b);
  // Rows and lengths, for a batcher's budget: [CLS] + 6 + [SEP]; a rejected record has no row.
  CHECK(pa[0].rows() == 1);
  CHECK(pa[0].longest() == 8);
  CHECK(pa[1].rows() == 0);
  CHECK(pa[2].rows() == 0);
  CHECK(pb[0].longest() == 7);  // [CLS] 明 天 [SEP] 下 雨 [SEP]
  // Both callers' records in one forward pass: the answers predict() gives the five in one call,
  // but errors name records within their own call ("record:2" of a).
  std::vector<unif::PreparedRecord> both = pa;
  both.insert(both.end(), pb.begin(), pb.end());
  const auto answered = p.postprocess(both, p.forward(both));
  std::vector<json> all = a;
  all.insert(all.end(), b.begin(), b.end());
  const auto together = p.predict(all);
  REQUIRE(answered.size() == 5);
  for (size_t i : {0, 3, 4}) CHECK(answered[i].to_json() == together[i].to_json());
  CHECK(answered[1].to_json() ==
        json{{"error", "record:2: missing field 'text' (or 'text_a' and 'text_b' for a sentence pair)"}});
  CHECK(answered[2].to_json() == json{{"error", "record:3: expected a JSON object, a string or a pair of strings"}});
  CHECK(answered[4].to_json().at("input") == json{{"text", "北京"}, {"id", 7}});
  // predict() is the three steps.
  const auto alone = p.predict(b);
  const auto steps = p.postprocess(pb, p.forward(pb));
  for (size_t i = 0; i < b.size(); ++i) CHECK(steps[i].to_json() == alone[i].to_json());
  // The outputs belong to their records.
  CHECK_THROWS(p.postprocess(pa, p.forward(both)));
}

TEST_CASE("serve batcher: a batch's padded tokens stay within the budget, a request over it runs alone", "[serve]") {
  const auto& p = tiny();
  Seen seen;
  unif::BatcherOptions o;
  o.max_batch = 64;
  o.max_batch_tokens = 100;
  o.max_wait = 2000ms;
  unif::Batcher b(recording(seen), o);
  // One long text (40 pieces + 2) first, then short ones (2 + 2): the long one and one short one
  // pad to 2 x 42 = 84 tokens; a second short one would make 3 x 42 = 126, over 100, though their
  // unpadded tokens (42 + 4 + 4 = 50) would fit.
  const auto long_one = p.preprocess({text_of(40)});
  REQUIRE(long_one[0].longest() == 42);
  std::vector<std::thread> callers;
  std::atomic<int> answered{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int64_t> first_ms{-1};
  const auto submit = [&](std::vector<json> records) {
    callers.emplace_back([&, records] {
      const auto a = b.submit_prepared(tiny().preprocess(records));
      answered += a && a->outputs.size() == records.size() && a->failed.empty();
      if (records.front() == text_of(40))
        first_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    });
  };
  submit({text_of(40)});
  wait_queued(b, 1);
  submit({text_of(2)});
  wait_queued(b, 2);
  submit({text_of(2)});
  for (auto& c : callers) c.join();
  callers.clear();
  CHECK(answered == 3);
  // The queue held more than the budget: the first batch ran at once, not after max_wait.
  CHECK(first_ms >= 0);
  CHECK(first_ms < 1500);
  {
    std::lock_guard<std::mutex> lock(seen.mutex);
    REQUIRE(seen.batches.size() == 2);
    CHECK(seen.batches[0] == std::make_pair(int64_t{2}, int64_t{42}));
    CHECK(seen.batches[1] == std::make_pair(int64_t{1}, int64_t{4}));
    seen.batches.clear();
  }
  // Many short requests at once: every batch within 100 padded tokens, several requests a batch.
  answered = 0;
  for (int i = 0; i < 12; ++i) submit({text_of(8), text_of(3)});  // 2 rows of up to 10 tokens
  for (auto& c : callers) c.join();
  callers.clear();
  CHECK(answered == 12);
  {
    std::lock_guard<std::mutex> lock(seen.mutex);
    size_t most = 0;
    for (const auto& [rows, longest] : seen.batches) {
      CHECK(rows * longest <= 100);
      most = std::max<size_t>(most, static_cast<size_t>(rows));
    }
    CHECK(most > 2);  // batched across requests
    CHECK(seen.batches.size() < 12);
    seen.batches.clear();
  }
  // A request over the budget on its own (3 x 42 tokens) is answered, as a batch of its own.
  const auto big = b.submit_prepared(p.preprocess({text_of(40), text_of(40), text_of(40)}));
  REQUIRE(big.has_value());
  CHECK(big->outputs.size() == 3);
  CHECK(big->failed.empty());
  std::lock_guard<std::mutex> lock(seen.mutex);
  REQUIRE(seen.batches.size() == 1);
  CHECK(seen.batches[0] == std::make_pair(int64_t{3}, int64_t{42}));
}

TEST_CASE("serve batcher: batches hold at most max_batch records, and its stats say what ran", "[serve]") {
  Seen seen;
  unif::BatcherOptions o;
  o.max_batch = 4;
  o.max_batch_tokens = 1 << 20;
  o.max_wait = 300ms;
  std::mutex stats_mutex;
  std::vector<unif::BatchStats> stats;
  unif::Batcher b(recording(seen), o, [&](const unif::BatchStats& s) {
    std::lock_guard<std::mutex> lock(stats_mutex);
    stats.push_back(s);
  });
  std::vector<std::thread> callers;
  for (int i = 0; i < 6; ++i)
    callers.emplace_back([&, i] { b.submit_prepared(tiny().preprocess({text_of(1 + i), json(7)})); });
  for (auto& c : callers) c.join();
  std::lock_guard<std::mutex> lock(stats_mutex);
  size_t records = 0;
  for (const auto& s : stats) {
    CHECK(s.records <= 4);
    CHECK(s.records == 2 * s.requests);  // whole requests, the non-object record counted too
    CHECK(s.rows == static_cast<int64_t>(s.requests));
    CHECK(s.tokens <= s.rows * 8);
    records += s.records;
  }
  CHECK(records == 12);
  CHECK(stats.size() >= 3);
}

TEST_CASE("serve batcher: a request whose caller has gone is dropped before its batch runs", "[serve]") {
  const auto& p = tiny();
  Seen seen;
  unif::BatcherOptions o;
  o.max_wait = 300ms;
  unif::Batcher b(recording(seen), o);
  // Gone before it was queued: nothing runs.
  const auto gone = b.submit_prepared(p.preprocess({text_of(3)}), [] { return true; });
  REQUIRE(gone.has_value());
  CHECK(gone->dropped);
  CHECK(gone->outputs.empty());
  CHECK(b.dropped() == 1);
  {
    std::lock_guard<std::mutex> lock(seen.mutex);
    CHECK(seen.batches.empty());
  }
  // Gone while it waits in the queue, beside a live request: only the live one runs.
  std::atomic<bool> left{false};
  std::optional<unif::Batcher::Answers> leaving, staying;
  std::thread t1([&] {
    leaving = b.submit_prepared(p.preprocess({text_of(5), text_of(6)}), [&] { return left.load(); });
  });
  wait_queued(b, 1);
  std::thread t2([&] { staying = b.submit_prepared(p.preprocess({text_of(4)}), [] { return false; }); });
  wait_queued(b, 2);
  left = true;
  t1.join();
  t2.join();
  REQUIRE(leaving.has_value());
  CHECK(leaving->dropped);
  REQUIRE(staying.has_value());
  CHECK_FALSE(staying->dropped);
  REQUIRE(staying->outputs.size() == 1);
  CHECK(staying->outputs[0].ok());
  CHECK(b.dropped() == 2);
  std::lock_guard<std::mutex> lock(seen.mutex);
  REQUIRE(seen.batches.size() == 1);
  CHECK(seen.batches[0] == std::make_pair(int64_t{1}, int64_t{6}));  // the live request's row only
}
