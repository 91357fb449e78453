// Span extraction (extractive reading comprehension) data: SQuAD-style records to examples, and
// examples to windows `[CLS] question [SEP] context-window [SEP]` that keep, for every context
// piece, its span in the context in Unicode code points.
//
// Records: `question`, `context` (data.text_fields, in that order), `answers` (data.label_field) as
// SQuAD JSON `[{"text": "...", "answer_start": 9}, ...]` or HF datasets' column form
// `{"text": [...], "answer_start": [...]}`, optional `id`. answer_start counts code points (not
// bytes, not UTF-16 units); the context's code points [answer_start, answer_start + |text|) must
// spell the answer exactly, else the record is an error naming its line.
//
// Windows follow Google BERT's run_squad (which UNIF inherited): the question is cut to
// span.max_query_length pieces; the context pieces are laid out in windows of
// max_seq_length - |question| - 3 pieces whose starts are span.doc_stride pieces apart (the last
// window ends at the last piece). HF's tokenizer `stride` is the overlap instead: overlap =
// window - doc_stride. A window's label is the first gold answer's first and last piece when both
// lie inside the window, else position 0 ([CLS], "no answer in this window"), as HF run_qa.
#pragma once
#include <filesystem>
#include <vector>

#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "framework/data/records.h"
#include "framework/text/bert_tokenizer.h"

namespace unif::framework {

/// Examples from SQuAD-style records. With require_labels false (predict) `answers` may be absent.
std::vector<Example> make_span_examples(const DataConfig& cfg, const std::filesystem::path& file,
                                        const std::vector<Record>& records, bool require_labels);

/// The windows of every example, example by example (EncodedExample::example says whose).
/// max_seq_length must be >= 5 (UserError otherwise).
std::vector<EncodedExample> encode_span_examples(const std::vector<Example>& examples, const Tokenizer& tokenizer,
                                                 int max_seq_length, const SpanConfig& span);

/// Code points [start, end) of a UTF-8 string, as UTF-8.
std::string code_point_substr(const std::string& utf8, int64_t start, int64_t end);

}  // namespace unif::framework
