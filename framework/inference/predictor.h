// Predictor: inference on a model directory unif writes or reads (every task, every architecture
// unif supports), loaded once, then asked for predictions on batches of records. `unif predict`
// and `unif serve` answer through it, so the JSON objects to_json() gives are exactly the lines
// `unif predict` writes (docs/spec.md §4).
//
//   #include <unif/unif.h>
//   auto p = unif::Predictor::load("runs/demo/best", {/*device*/ "cpu", /*batch_size*/ 32});
//   auto out = p.predict({{{"text", "今天天气很好"}}, {{"text", "明天下雨"}}});
//   out[0].label;           // classification: the best label; out[0].scores: every label, best first
//   out[0].to_json().dump() // {"input":{...},"label":"...","logits":[...],"probs":[...]}
//
// A record is what one `unif predict` input line holds: a JSON object with the model's text fields
// (unif.yaml text_fields; a plain HF directory: "text", or "text_a" and "text_b"; token
// classification: "tokens", a list of words, or "text", a string split into words by split_words;
// span extraction: "question" and "context"; masked_lm: the text with [MASK]). Other fields are
// carried through as "input". A record that cannot be read (a missing or mistyped field) gets a
// Prediction with `error` set and `rejected` true; the others in the batch are answered.
//
// predict() runs in three steps, each public: preprocess (read and tokenize the records), forward
// (the model on a batch of prepared records, which may come from several callers) and postprocess
// (the answers). unif::Batcher (framework/inference/batcher.h) batches concurrent callers' records
// with them, as `unif serve` does.
//
// Thread safety: predict() may be called from any number of threads at once; the forward passes
// of concurrent calls run one at a time (each already spreads its batches over the worker threads).
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/task.h"
#include "framework/data/records.h"
#include "framework/model/fill_mask.h"

namespace unif {

namespace framework {
struct RunConfig;  // framework/config/run_config.h: Predictor::evaluate's configuration
}

struct PredictorOptions {
  /// "cpu", "cuda", "cuda:N", or "auto" (the first GPU when one is visible, else the CPU).
  std::string device = "cpu";
  /// Examples per forward pass (batches are length-sorted within one predict() call).
  int64_t batch_size = 32;
  /// CPU worker threads running batches at once; 0: one per physical core for models up to hidden
  /// size 768, else 1 (the `auto` rule of parallel.devices).
  int64_t threads = 0;
  /// Classification and multilabel: to_json() adds "top" with the k best labels (0: no "top").
  int64_t top_k = 0;
  /// "none", or "int8": every Linear layer computes in dynamic int8 on the CPU (models/quantize.h;
  /// faster, within about a point of fp32's accuracy). A CUDA device refuses it.
  std::string quantize = "none";
  /// Where a batch has padding, the encoder's dense layers run on its real tokens only (same
  /// outputs, less work; model.unpadded). false: the padded rectangle.
  bool unpadded = true;
  /// Embedding models: keep the first K features of each embedding (0: all; Matryoshka-trained
  /// models keep their quality at the trained sizes).
  int64_t dimensions = 0;
  /// Embedding models: L2-normalize the (cut) embedding; unset: as the model does (its Normalize).
  std::optional<bool> normalize;
  /// Classifiers trained with model.early_exit: answer each record at the first layer whose exit's
  /// normalized entropy is below this (in [0, 1]; 0: every record through every layer), and write
  /// the layer as "exit_layer". Unset: the model's own head. UserError for a model without exits.
  std::optional<double> exit_threshold;
};

/// A label and its probability.
struct LabelScore {
  std::string label;
  double score = 0.0;
};

/// A named entity found in token classification's {"text"} input: `start` and `end` are
/// character (Unicode code point) offsets into the text, `text` = that slice, `score` the mean of
/// its words' tag probabilities.
struct Entity {
  std::string type;
  std::string text;
  int64_t start = 0;
  int64_t end = 0;
  double score = 0.0;
};

/// One word of a text (split_words): its text and code point span [start, end).
struct Word {
  std::string text;
  int64_t start = 0;
  int64_t end = 0;
};

/// One token of a text as the model reads it (Predictor::tokenize).
struct TextToken {
  int64_t id = 0;
  std::string token;     // the vocabulary's piece: "##ing", "Ġworld", "[CLS]"
  bool special = false;  // added by the model's template ([CLS], [SEP], <s>, </s>), not from the text
  int segment = 0;       // 0: from the text, 1: from the pair (a special token: -1)
  int64_t start = -1;    // code point span [start, end) in its segment's text; -1 for a special token
  int64_t end = -1;
};

/// The answer to one record. Which fields are set depends on the task (see to_json()).
struct Prediction {
  Task task = Task::Classification;
  /// Set when the record has no answer: a rejected record ("<source>:<N>: missing field 'text'"),
  /// a blank line, or outputs that are not finite. to_json() is then {"error": ...} (+ "input").
  std::string error;
  /// The record itself is bad (a missing or mistyped field): `unif predict` stops at such a line
  /// unless --keep-going.
  bool rejected = false;
  /// The record, carried through as "input" (null: none, e.g. a rejected record).
  nlohmann::json input;

  // classification: `label`, `probs` (softmax), `logits`; multilabel: `labels` (probability above
  // 0.5), `probs` (sigmoid), `logits` (not written by to_json). Both: `scores`, every label with its
  // probability, highest first.
  std::string label;
  std::vector<std::string> labels;
  std::vector<double> probs, logits;
  std::vector<LabelScore> scores;
  int64_t exit_layer = 0;  // classification with an exit threshold: the layer that answered (1-based)
  // classification, multilabel, regression: the text was cut to max_seq_length (data.long_text
  // truncate), written as "truncated": true; windows: how many the text made, written when > 1.
  bool truncated = false;
  int64_t windows = 0;
  int64_t top_k = 0;  // how many of `scores` to_json() writes as "top" (PredictorOptions::top_k)
  // regression
  double value = 0.0;
  // token classification: a tag per word (nullopt: a word without any word piece, which the model
  // never sees) and its probability (NaN where nullopt). {"text"} input also: the words and the
  // entities (has_entities).
  std::vector<std::optional<std::string>> tags;
  std::vector<double> tag_scores;
  std::vector<Word> words;
  std::vector<Entity> entities;
  bool has_entities = false;
  // span extraction: the answer and its code point span in the context; no_answer: a model trained
  // with unanswerable questions judged the context not to answer it (answer "", score = the null
  // score)
  std::string answer;
  int64_t start = 0, end = 0;
  double score = 0.0;
  bool no_answer = false;
  // masked_lm: per [MASK], the top 5 tokens with their probabilities
  std::vector<framework::MaskFill> masks;
  // embedding: the text's embedding, and how many tokens the model read (special tokens counted;
  // not written by to_json)
  std::vector<double> embedding;
  int64_t tokens = 0;

  bool ok() const { return error.empty(); }
  /// The object `unif predict` writes for this record.
  nlohmann::json to_json() const;
};

/// One record read and tokenized for the model (Predictor::preprocess), waiting for its forward
/// pass. A record the model need not see (a rejected record, a blank line, a text without words)
/// holds its answer already and adds no row to a batch. A handle: copies share the inputs.
class PreparedRecord {
 public:
  /// The rows it adds to a batch: 0 (answered without the model), 1, or one per window of a long
  /// input (token classification, span extraction).
  int64_t rows() const;
  /// Its longest row in tokens, special tokens counted (0 without rows). A batch of records is
  /// padded to the longest row of its records: rows x longest tokens.
  int64_t longest() const;

  struct Inputs;  // what the model reads and postprocess needs (internal)

 private:
  friend class Predictor;
  std::shared_ptr<const Inputs> inputs_;
};

/// The model's outputs on a batch of prepared records (Predictor::forward), read by
/// Predictor::postprocess with the same records.
class ForwardOutputs {
 public:
  struct Outputs;  // per record: logits, span answer, fills (internal)

 private:
  friend class Predictor;
  std::shared_ptr<const Outputs> outputs_;
};

/// What `unif eval` prints: the model's metrics on labelled data.
struct EvalResult {
  /// The task's metrics (accuracy, f1, pearson, ...) and "loss".
  std::map<std::string, double> metrics;
  int64_t examples = 0;
  /// With a report asked for: the per-class table (as `unif eval --report` prints it) and its
  /// numbers; else "" and null.
  std::string report_text;
  nlohmann::json report;
  /// {<metric>: value, ..., "examples": N} (+ "report"): the line `unif eval` writes.
  nlohmann::json to_json() const;
};

class Predictor {
 public:
  /// Loads a model directory (ours, with unif.yaml, or a plain HF one), or a Hub id ("org/name")
  /// that is no directory through the Hugging Face cache, downloaded when absent (hub_cache.h).
  /// UserError for a directory that is missing, incomplete or corrupt, a model that cannot be had,
  /// or a device that is not there.
  static Predictor load(const std::filesystem::path& dir, const PredictorOptions& options = {});

  /// One Prediction per record, in order. A record that is not a JSON object, or lacks a field,
  /// gets an error naming it "record:N" (N from 1).
  std::vector<Prediction> predict(const std::vector<nlohmann::json>& records) const;
  /// The same for records read from a file: errors name `source` and each record's line, and a
  /// record whose fields are null (a blank line) gets {"error": "blank line"}.
  std::vector<Prediction> predict(const std::vector<framework::Record>& records, const std::string& source) const;
  /// One record.
  Prediction predict_one(const nlohmann::json& record) const;
  /// An embedding model's embeddings of `texts`, in order (PredictorOptions' dimensions and
  /// normalize applied; each text truncated to the model's max_seq_length). UserError for a model
  /// of another task, or a text the model cannot embed (naming it "text:N", N from 1).
  ///   auto e = unif::Predictor::load("runs/embed/final").embed({"a cat", "a dog"});  // e[0].size() == H
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const;
  /// The model's tokens of `text` (and of `pair`, a second text), whole (not truncated to
  /// max_seq_length): with add_special_tokens, in the model's template ([CLS] text [SEP] pair
  /// [SEP], <s> text </s></s> pair </s>, ...). Ids and pieces as `unif tokenize --model` gives.
  ///   p.tokenize("今天")  // [CLS] 今 天 [SEP]: ids, pieces, spans {0,1} {1,2}, specials flagged
  std::vector<TextToken> tokenize(std::string_view text, std::optional<std::string_view> pair = std::nullopt,
                                  bool add_special_tokens = true) const;
  /// An embedding model's pooling: "mean", "cls", "max" or "lasttoken"; "" for another task.
  std::string pooling() const;

  /// predict() in its three steps, for a caller that batches the records of many requests
  /// (unif::Batcher, `unif serve`): preprocess reads and tokenizes records on the calling thread
  /// (no lock: any number of threads at once); forward runs the model on prepared records, of one
  /// or more preprocess() calls, as one batch (forward passes run one at a time); postprocess turns
  /// its outputs into one Prediction per record, in order. predict(records, source) is
  /// postprocess(p, forward(p)) with p = preprocess(records, source).
  std::vector<PreparedRecord> preprocess(const std::vector<framework::Record>& records,
                                         const std::string& source) const;
  /// Records as predict(json) takes them: a record that is not a JSON object, or lacks a field,
  /// gets an error naming it "record:N" (N from `first`, 1 unless given).
  std::vector<PreparedRecord> preprocess(const std::vector<nlohmann::json>& records, int64_t first = 1) const;
  ForwardOutputs forward(const std::vector<PreparedRecord>& records) const;
  std::vector<Prediction> postprocess(const std::vector<PreparedRecord>& records, const ForwardOutputs& outputs) const;

  /// Evaluates the model on the labelled file `config.data.dev` (read with the config's data
  /// fields and span settings), as `unif eval` does: the metrics of the dev evaluations of
  /// training, with the run's loss (training.loss: class weights, label smoothing, focal; distill).
  /// `report`: also the per-class table (classification, multilabel, token classification).
  /// UserError when config.task is not the model's, the data's fields do not fit the model, or the
  /// task has no classes to report on.
  EvalResult evaluate(const framework::RunConfig& config, bool report = false) const;
  /// A pair model as a reranker on a ranking file (framework/data/ranking.h: one {"query", "texts",
  /// "labels"} a line): each query's texts ranked by the model's score of (query, text), the ranking
  /// metrics of framework/metrics/retrieval.h (mrr@10, ndcg@10, map@100, recall@K, accuracy@K) over
  /// the queries with a relevant text; "examples" counts those, "queries_without_relevant" the rest.
  /// The score of a pair: a regression model's value, a 2-label classifier's last logit minus its
  /// first (the order of the last label's probability), a 1-label multilabel model's logit.
  /// UserError for another model, or a bad file.
  EvalResult evaluate_ranking(const std::filesystem::path& file) const;
  /// The ranking score of one answer of a pair model (see evaluate_ranking); UserError for a
  /// model that is not one, or an answer with an error.
  double ranking_score(const Prediction& p) const;
  /// The configuration evaluate() takes for a model without a config file: the directory's task,
  /// input fields, label field and span settings, `data` as data.dev, then `sets` (--set a.b=v).
  framework::RunConfig eval_config(const std::string& data, const std::vector<std::string>& sets = {}) const;
  /// The options a run configuration asks for: parallel.devices' first device (its CPU entries as
  /// worker threads), model.unpadded; `quantize` as given.
  static PredictorOptions options_for(const framework::RunConfig& config, const std::string& quantize = "none");

  Task task() const;
  /// The label names in id order (empty for regression and span extraction).
  const std::vector<std::string>& labels() const;
  /// The record fields the model reads (unif.yaml text_fields) and its label field (read from
  /// records only to be checked: predictions ignore it).
  const std::vector<std::string>& text_fields() const;
  const std::string& label_field() const;
  const PredictorOptions& options() const;
  /// The model's maximum sequence length (pieces, with special tokens).
  int64_t max_seq_length() const;
  /// Whether the directory has no unif.yaml (a plain HF model directory).
  bool plain_hf() const;
  /// With PredictorOptions::quantize int8: "int8: N Linear layers on ENGINE, weights X MB -> Y MB";
  /// else "".
  const std::string& quantization() const;

 private:
  struct State;
  explicit Predictor(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

/// Token classification's {"text"} input as words, the way BERT's basic tokenizer pre-splits
/// text: white space separates words and is dropped; control and format characters (U+200B,
/// U+200D, U+00AD, ...) are deleted, joining the characters around them; and every
/// punctuation character (Unicode P*, ASCII symbols) and every CJK ideograph is a word of its own.
/// One rule for every tokenizer family.
std::vector<Word> split_words(std::string_view text);

/// Entities from per-word tags, grouped as HF's token-classification pipeline with
/// aggregation_strategy="simple" groups its tokens: "B-X" starts an entity of type X, "I-X"
/// continues one of type X (or starts one after anything else), a tag without a prefix continues
/// an entity of its own name; BIOES also: "S-X" is a one-word entity, "E-X" ends one. "O" words and
/// words without a tag (nullopt) are not entities. Score: the mean of the words' scores. `text` is
/// the text the words' code point offsets point into.
std::vector<Entity> group_entities(std::string_view text, const std::vector<Word>& words,
                                   const std::vector<std::optional<std::string>>& tags,
                                   const std::vector<double>& scores);

}  // namespace unif
