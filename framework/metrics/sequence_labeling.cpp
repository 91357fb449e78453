// seqeval's default (non-strict) entity extraction and micro / per-type scores. The chunk rules
// are seqeval.metrics.sequence_labeling's end_of_chunk / start_of_chunk, applied to prefix and
// type split exactly as get_entities does with suffix=False.
#include "framework/metrics/sequence_labeling.h"

#include <set>

#include "framework/metrics/check.h"

namespace unif::framework {
namespace {

// A tag split as seqeval does: prefix = chunk[0] (one code point), type = the text after the
// first '-' of chunk[1:] (all of chunk[1:] if it has no '-'), or "_" when that is empty.
struct SplitTag {
  std::string prefix;
  std::string type;
};

std::size_t utf8_lead_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;  // stray continuation byte: treat as one unit
}

SplitTag split_tag(const std::string& chunk, std::size_t index) {
  if (chunk.empty()) {
    throw UserError("get_entities: tag " + std::to_string(index) +
                    " is an empty string (expected a tag such as O, B-PER, I-PER)");
  }
  const std::size_t n = std::min(utf8_lead_length(static_cast<unsigned char>(chunk[0])), chunk.size());
  SplitTag t;
  t.prefix = chunk.substr(0, n);
  const std::string rest = chunk.substr(n);
  const std::size_t dash = rest.find('-');
  t.type = dash == std::string::npos ? rest : rest.substr(dash + 1);
  if (t.type.empty()) t.type = "_";
  return t;
}

// seqeval end_of_chunk: did a chunk end between the previous and the current tag?
bool end_of_chunk(const std::string& prev_tag, const std::string& tag, const std::string& prev_type,
                  const std::string& type) {
  if (prev_tag == "E" || prev_tag == "S") return true;
  if ((prev_tag == "B" || prev_tag == "I") && (tag == "B" || tag == "S" || tag == "O")) { return true; }
  return prev_tag != "O" && prev_tag != "." && prev_type != type;
}

// seqeval start_of_chunk: does a chunk start at the current tag?
bool start_of_chunk(const std::string& prev_tag, const std::string& tag, const std::string& prev_type,
                    const std::string& type) {
  if (tag == "B" || tag == "S") return true;
  if ((prev_tag == "E" || prev_tag == "S" || prev_tag == "O") && (tag == "E" || tag == "I")) { return true; }
  return tag != "O" && tag != "." && prev_type != type;
}

void check_shapes(const std::string& metric, const std::vector<std::vector<std::string>>& t,
                  const std::vector<std::vector<std::string>>& p) {
  detail::check_same_length(metric, t.size(), p.size(), "true_tags (sentences)", "pred_tags (sentences)");
  detail::check_not_empty(metric, t.size());
  for (std::size_t s = 0; s < t.size(); ++s) {
    if (t[s].size() != p[s].size()) {
      throw UserError(metric + ": sentence " + std::to_string(s) + " has " + std::to_string(t[s].size()) +
                      " true tags but " + std::to_string(p[s].size()) + " predicted tags (expected one per token)");
    }
    for (std::size_t i = 0; i < t[s].size(); ++i) {
      if (t[s][i].empty() || p[s][i].empty()) {
        throw UserError(metric + ": sentence " + std::to_string(s) + " token " + std::to_string(i) + " has an empty " +
                        (t[s][i].empty() ? "true" : "predicted") + " tag (expected a tag such as O, B-PER, I-PER)");
      }
    }
  }
}

double harmonic(double p, double r) { return p + r > 0.0 ? 2.0 * p * r / (p + r) : 0.0; }

}  // namespace

std::vector<Entity> get_entities(const std::vector<std::string>& tags) {
  std::string prev_tag = "O", prev_type;  // seqeval starts with prev_type = ''
  int64_t begin = 0;
  std::vector<Entity> chunks;
  for (std::size_t i = 0; i <= tags.size(); ++i) {  // tags + ['O'] sentinel
    const SplitTag t = i < tags.size() ? split_tag(tags[i], i) : SplitTag{"O", "_"};
    const auto pos = static_cast<int64_t>(i);
    if (end_of_chunk(prev_tag, t.prefix, prev_type, t.type)) { chunks.push_back({prev_type, begin, pos - 1}); }
    if (start_of_chunk(prev_tag, t.prefix, prev_type, t.type)) begin = pos;
    prev_tag = t.prefix;
    prev_type = t.type;
  }
  return chunks;
}

std::vector<Entity> get_entities(const std::vector<std::vector<std::string>>& sentences) {
  std::vector<std::string> flat;
  for (const auto& s : sentences) {
    flat.insert(flat.end(), s.begin(), s.end());
    flat.push_back("O");
  }
  return get_entities(flat);
}

std::map<std::string, EntityScore> token_type_scores(const std::vector<std::vector<std::string>>& true_tags,
                                                     const std::vector<std::vector<std::string>>& pred_tags) {
  check_shapes("token_type_scores", true_tags, pred_tags);
  const auto t = get_entities(true_tags), p = get_entities(pred_tags);
  const std::set<Entity> true_set(t.begin(), t.end()), pred_set(p.begin(), p.end());
  std::map<std::string, int64_t> n_true, n_pred, n_correct;
  for (const auto& e : true_set) ++n_true[e.type];
  for (const auto& e : pred_set) {
    ++n_pred[e.type];
    if (true_set.count(e)) ++n_correct[e.type];
  }
  std::map<std::string, EntityScore> out;
  for (const auto& [type, support] : n_true) {
    EntityScore s;
    s.precision = detail::safe_div(n_correct[type], n_pred[type]);
    s.recall = detail::safe_div(n_correct[type], support);
    s.f1 = harmonic(s.precision, s.recall);
    s.support = support;
    out[type] = s;
  }
  return out;
}

MetricSet token_metrics(const std::vector<std::vector<std::string>>& true_tags,
                        const std::vector<std::vector<std::string>>& pred_tags) {
  check_shapes("token_metrics", true_tags, pred_tags);
  const auto t = get_entities(true_tags), p = get_entities(pred_tags);
  const std::set<Entity> true_set(t.begin(), t.end()), pred_set(p.begin(), p.end());
  int64_t correct = 0;
  for (const auto& e : pred_set) correct += static_cast<int64_t>(true_set.count(e));
  const double precision = detail::safe_div(correct, pred_set.size());
  const double recall = detail::safe_div(correct, true_set.size());
  return {{"precision", precision}, {"recall", recall}, {"f1", harmonic(precision, recall)}};
}

}  // namespace unif::framework
