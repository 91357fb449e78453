// Entity-level metrics for token classification, exactly as the Python `seqeval` package computes
// them by default (`classification_report` / `f1_score` without mode="strict", suffix=False):
// chunks are read off BIO / IOB2 / IOBES tags by seqeval's lenient `get_entities`, and precision,
// recall and F1 are micro-averaged over the set of (type, start, end) entities of all sentences.
// Pure C++, no Torch.
//
// A tag's first character is its prefix and the text after the first '-' its type ("B-PER" ->
// 'B', "PER"; "O" -> 'O', "_"; a bare "B" -> 'B', "_"; "PER" -> 'P', "ER" as in seqeval). A chunk
// ends before the current tag when the previous tag was E or S; when B/I is followed by B, S or O;
// or when the previous tag was not O and the type changes. A chunk starts at B or S; at I/E after
// O, E or S; or at any non-O tag whose type differs from the previous one. So "I-PER" after "O"
// starts an entity, and "B-PER I-LOC" is two entities.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "framework/metrics/metric_set.h"

namespace unif::framework {

/// A chunk: type and inclusive token offsets [start, end], as seqeval's (type, start, end) tuple.
struct Entity {
  std::string type;
  int64_t start = 0;
  int64_t end = 0;  // inclusive
  bool operator==(const Entity& o) const { return type == o.type && start == o.start && end == o.end; }
  bool operator<(const Entity& o) const {
    if (type != o.type) return type < o.type;
    if (start != o.start) return start < o.start;
    return end < o.end;
  }
};

/// seqeval.metrics.sequence_labeling.get_entities on one sentence, in the order seqeval returns
/// them (by end offset). UserError on an empty tag string.
std::vector<Entity> get_entities(const std::vector<std::string>& tags);

/// seqeval's nested-list form: the sentences are concatenated with an "O" after each, so offsets
/// are global over that concatenation and no entity crosses a sentence boundary.
std::vector<Entity> get_entities(const std::vector<std::vector<std::string>>& sentences);

/// Scores of one entity type: correct / predicted, correct / true, their harmonic mean (each 0 on
/// a zero denominator), support = number of true entities of the type.
struct EntityScore {
  double precision = 0.0;
  double recall = 0.0;
  double f1 = 0.0;
  int64_t support = 0;
};

/// Per-type scores for every type that has a true entity (the rows of seqeval's
/// classification_report; types seen only in predictions get no row but do lower the micro
/// precision). UserError when the sentence counts or any sentence's lengths differ.
std::map<std::string, EntityScore> token_type_scores(const std::vector<std::vector<std::string>>& true_tags,
                                                     const std::vector<std::vector<std::string>>& pred_tags);

/// {"precision", "recall", "f1"}, micro-averaged over all entities (seqeval precision_score,
/// recall_score, f1_score): precision = |T ∩ P| / |P|, recall = |T ∩ P| / |T|, 0 on a zero
/// denominator. UserError when the sentence counts or any sentence's lengths differ, or when
/// there are no sentences.
MetricSet token_metrics(const std::vector<std::vector<std::string>>& true_tags,
                        const std::vector<std::vector<std::string>>& pred_tags);

}  // namespace unif::framework
