// Task datasets: records (framework/data/records.h) → labelled examples → encoded examples ready to
// batch, for classification, multilabel, regression and token classification (span extraction has
// its own module). The label set is explicit (data.labels) or collected from train, sorted.
//
// Field conventions (SPEC §3): text_fields names one or two text fields (a sentence or a pair);
// label_field holds a label (classification), a list of labels (multilabel; in TSV space-separated),
// a number (regression), or, for token_classification, text_fields = [tokens] is a list of words and
// label_field a list of BIO tags of the same length (in TSV both space-separated). An optional
// numeric field `weight` is the example's sample weight.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/config/run_config.h"
#include "framework/data/records.h"
#include "framework/text/encoding.h"

namespace unif::framework {

struct LabelSet {
  std::vector<std::string> names;          // id order
  std::map<std::string, int64_t> index;    // name -> id
  static LabelSet from_names(std::vector<std::string> names);  // throws UserError on duplicates
  int64_t size() const { return static_cast<int64_t>(names.size()); }
};

struct Example {
  std::vector<std::string> texts;  // 1-2 text segments; token tasks: the words
  std::vector<int64_t> labels;     // classification {id}; multilabel ids; token tasks one tag id per word
  double value = 0.0;              // regression target
  double weight = 1.0;
  bool has_label = false;
  nlohmann::json record;           // the input record (predict carries it through)
};

struct EncodedExample {
  std::vector<int64_t> input_ids, token_type_ids;  // (L) unpadded
  std::vector<int64_t> token_labels;               // token tasks: (L) tag id at each word's first piece, else -100
  std::vector<int64_t> word_start;                 // token tasks: (L) word index at first pieces, else -1
  int64_t example = 0;                             // index into the example list
};

/// The labels a task uses, from the config or collected (sorted) from the training records.
/// Regression has none.
LabelSet collect_labels(Task task, const DataConfig& cfg, const std::filesystem::path& file,
                        const std::vector<Record>& records);

/// Turns records into examples; labels must be in `labels` (else UserError naming file, line and
/// label). With require_labels false (predict) records without the label field are accepted.
std::vector<Example> make_examples(Task task, const DataConfig& cfg, const LabelSet& labels,
                                   const std::filesystem::path& file, const std::vector<Record>& records,
                                   bool require_labels);

/// Encodes every example with the tokenizer (no padding; batches pad dynamically).
std::vector<EncodedExample> encode_examples(Task task, const std::vector<Example>& examples,
                                            const BertTokenizer& tokenizer, int max_seq_length,
                                            TruncateMethod method);

}  // namespace unif::framework
