// Task datasets: records (framework/data/records.h) → labelled examples → encoded examples ready to
// batch, for classification, multilabel, regression and token classification; span extraction's
// reader and window encoder live in framework/data/span_dataset.h and are reached through the same
// make_examples / encode_examples. The label set is explicit (data.labels) or collected from train, sorted.
//
// Field conventions (SPEC §3): text_fields names one or two text fields (a sentence or a pair);
// label_field holds a label (classification), a list of labels (multilabel; in TSV space-separated),
// a number (regression), or, for token_classification, text_fields = [tokens] is a list of words and
// label_field a list of BIO tags of the same length (in TSV both space-separated; in JSONL both
// arrays: a string is an error). An optional numeric field `weight` is the example's sample weight.
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
  std::vector<std::string> names;                              // id order
  std::map<std::string, int64_t> index;                        // name -> id
  static LabelSet from_names(std::vector<std::string> names);  // throws UserError on duplicates
  int64_t size() const { return static_cast<int64_t>(names.size()); }
};

/// A gold answer of a span-extraction example: its text and where it starts in the context, in
/// Unicode code points (SQuAD's answer_start).
struct SpanAnswer {
  std::string text;
  int64_t start = 0;
};

struct Example {
  std::vector<std::string> texts;  // 1-2 text segments; token tasks: the words; span: {question, context}
  std::vector<int64_t> labels;     // classification {id}; multilabel ids; token tasks one tag id per word
  double value = 0.0;              // regression target
  double weight = 1.0;
  bool has_label = false;
  std::vector<SpanAnswer> answers;  // span extraction: gold answers (the first one trains)
  std::string id;                   // span extraction: the record's `id` (else its line number)
  nlohmann::json record;            // the input record (predict carries it through)
};

struct EncodedExample {
  std::vector<int64_t> input_ids, token_type_ids;  // (L) unpadded
  std::vector<int64_t> token_labels;               // token tasks: (L) tag id at each word's first piece, else -100
  std::vector<int64_t> word_start;                 // token tasks: (L) word index at first pieces, else -1
  int64_t example = 0;                             // index into the example list
  // Span extraction: one window `[CLS] question [SEP] context-window [SEP]` of an example.
  std::vector<CharSpan> context_spans;           // (L) code-point span in the context of each context
                                                 // piece; {-1,-1} at [CLS], question, [SEP]
  int64_t start_position = 0, end_position = 0;  // answer pieces (inclusive); 0/0 = [CLS]: not in window
  // Embedding: every text field encoded alone, [CLS] text [SEP] each (input_ids is the first).
  std::vector<std::vector<int64_t>> columns;
  bool truncated = false;  // a text task's input cut to max_seq_length (predict says so)
};

/// data.long_text windows of one-text sequence tasks (classification, multilabel, regression): a text
/// longer than max_seq_length becomes windows `[CLS] pieces[s, s + W) [SEP]` (W = max_seq_length - 2,
/// the family's own specials) whose starts s are `stride` pieces apart, the last reaching the end;
/// evaluation and prediction pool the windows' logits (mean or max) into the text's.
struct TextWindows {
  bool on = false;
  int64_t stride = 0;  // 0: W / 2
  bool max_pooling = false;
  /// From the config keys (data.long_text, long_text_stride, long_text_pooling).
  static TextWindows of(const std::string& long_text, int64_t stride, const std::string& pooling) {
    return {long_text == "windows", stride, pooling == "max"};
  }
};

/// The record's optional numeric `weight` field (1 when absent or null); UserError naming file and
/// line unless it is a non-negative number.
double sample_weight(const std::filesystem::path& file, const Record& r);

/// What read_records checks for `task` and `cfg`: the header of a TSV or CSV holds the text fields
/// (and the label field when `require_labels`); CoNLL files only for token classification, their
/// sentences getting cfg's token and tag field names.
RecordFields record_fields(Task task, const DataConfig& cfg, bool require_labels);

/// The labels a task uses, from the config or collected (sorted) from the training records.
/// Regression has none.
LabelSet collect_labels(Task task, const DataConfig& cfg, const std::filesystem::path& file,
                        const std::vector<Record>& records);

/// Lines for the training log about the label set of classification, multilabel and token
/// classification: the labels with their counts in `examples`, then "warning: ..." lines for values
/// that are likely mistakes (an empty label; JSON numbers among strings, each read as text and so a
/// class of its own). Empty for the other tasks.
std::vector<std::string> label_report(Task task, const DataConfig& cfg, const LabelSet& labels,
                                      const std::filesystem::path& file, const std::vector<Record>& records,
                                      const std::vector<Example>& examples);

/// Turns records into examples; labels must be in `labels` (else UserError naming file, line and
/// label). With require_labels false (predict) records without the label field are accepted.
std::vector<Example> make_examples(Task task, const DataConfig& cfg, const LabelSet& labels,
                                   const std::filesystem::path& file, const std::vector<Record>& records,
                                   bool require_labels);

/// Encodes every example with the tokenizer (no padding; batches pad dynamically). Span
/// extraction yields one entry per context window (see span_dataset.h; `span` sets the windows);
/// a one-text sequence task with `windows` on one entry per window of a long text; every other
/// task exactly one entry per example, in example order.
std::vector<EncodedExample> encode_examples(Task task, const std::vector<Example>& examples, const Tokenizer& tokenizer,
                                            int max_seq_length, TruncateMethod method, const SpanConfig& span = {},
                                            const TextWindows& windows = {});

}  // namespace unif::framework
