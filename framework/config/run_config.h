// RunConfig: the run configuration (SPEC §3) as typed structs, and the one place where YAML becomes
// those structs. load_config/parse_config read the YAML, apply `--set a.b=v` overrides, fill the
// defaults and validate everything at once: a ConfigError lists every problem, one per line, each
// naming the file and the key path. Nothing outside framework/config/ touches YAML; the rest of the
// code takes a const sub-struct (TrainingConfig, AdversarialConfig, ...).
//
// Relative paths (model.pretrained, model.vocab, data.*, output_dir, training.resume) are kept as
// written and resolve against the current working directory, as with HF Trainer and torchrun, not
// against the YAML file's folder.
//
// Example:
//   auto cfg = unif::framework::load_config("configs/demo.yaml", {"training.batch_size=8"},
//                                           unif::framework::Purpose::Train);
//   std::cout << unif::framework::to_yaml(cfg);   // every key, defaults filled
#pragma once
#include <cstdint>
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/common/task.h"
#include "framework/config/choices.h"

namespace unif::framework {

/// Bad configuration: what() holds every problem found, one per line, each starting with
/// "<file>: <key.path>: ".
struct ConfigError : UserError {
  explicit ConfigError(std::vector<std::string> lines);
  std::vector<std::string> problems;  // one line each, in the order the keys appear in SPEC §3
};

/// Inverse of to_string(Task) (framework/common/task.h); throws UserError naming the allowed values.
Task parse_task(const std::string& name);

/// `model.bert`: HF BertConfig fields that override the pretrained dir's config.json (or the
/// BertConfig defaults when there is no pretrained dir). Unset = not overridden.
struct BertOverrides {
  std::optional<int64_t> vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size;
  std::optional<std::string> hidden_act;  // gelu | gelu_new | relu
  std::optional<double> hidden_dropout_prob, attention_probs_dropout_prob;
  std::optional<int64_t> max_position_embeddings, type_vocab_size;
  std::optional<double> initializer_range, layer_norm_eps;
  std::optional<int64_t> pad_token_id;
  std::optional<double> classifier_dropout;  // YAML null = HF null (use hidden_dropout_prob)

  bool empty() const;
};

/// `model.generator` (task replaced_token_detection): the ELECTRA generator trained beside the
/// discriminator. `config`: ElectraConfig fields set over the discriminator's with a quarter of its
/// hidden size (models/electra/pretraining.h, generator_options); {} = those defaults.
struct GeneratorConfig {
  nlohmann::json config = nlohmann::json::object();
};

struct ModelConfig {
  std::string pretrained;         // HF-format or sentence-transformers dir; "" = none (YAML null);
                                  // a leading $UNIF_HOME or ~/ is expanded (hf_dir.h); a Hub id
                                  // ("org/name") that is no directory: load_config resolves it through
                                  // the Hugging Face cache, downloading it when absent (hub_cache.h)
  std::string revision = "main";  // the Hub revision (branch, tag or commit) of a Hub id pretrained
  BertOverrides bert;
  /// `model.config`: HF config fields of the model's family (config.json names, any family) set over
  /// the pretrained config.json, or over the family defaults without one. A JSON object; {} = none.
  nlohmann::json config = nlohmann::json::object();
  std::string vocab;                     // "" = <pretrained>/vocab.txt
  bool do_lower_case = true;             // absent: <pretrained>/tokenizer_config.json's, else true
  int64_t max_seq_length = 128;          // >= 3 ([CLS] x [SEP]); the model checks max_position_embeddings
  std::string truncate_method = "LIFO";  // LIFO | FIFO | longer-FO | longest_first
  bool sparse_embeddings = true;
  bool unpadded = true;  // dense layers on the real tokens only where a batch has padding (EncoderConfig::unpad_inputs)
  double mlm_probability = 0.15;  // masked_lm: share of tokens selected for prediction (HF's)
  bool whole_word_mask = false;   // masked_lm: select whole words (all their pieces) at once
  /// embedding: mean | cls | max | lasttoken; unset (YAML null) = the pretrained directory's
  /// sentence-transformers pooling, else mean.
  std::optional<std::string> pooling;
  /// embedding: L2-normalize the embeddings; unset (YAML null) = the pretrained directory's
  /// (a sentence-transformers Normalize module), else false.
  std::optional<bool> normalize;
  /// token_classification: a linear-chain CRF over the tag scores (models/heads/crf.h).
  bool crf = false;
  /// classification: FastBERT's early exit, a classifier after every layer trained by
  /// self-distillation from the model's head (models/heads/early_exit.h).
  bool early_exit = false;
  /// replaced_token_detection: the generator (ElectraForMaskedLM) trained with the discriminator.
  GeneratorConfig generator;
};

/// text_fields/label_field defaults depend on the task when the YAML leaves them out:
/// classification, multilabel, regression: [text] / label; token_classification: [tokens] / tags
/// (one token-list field); span_extraction: [question, context] / answers (the question field, then
/// the context field; answers are SQuAD-style {text, answer_start} lists).
/// `data.retrieval` (task embedding): a retrieval dev set, queries and corpus JSONL files
/// (framework/data/retrieval.h); "" = not given (both or neither).
struct RetrievalFilesConfig {
  std::string queries, corpus;
  bool given() const { return !queries.empty() || !corpus.empty(); }
};

struct DataConfig {
  std::string train, dev, test;  // "" = not given
  std::vector<std::string> text_fields{"text"};
  std::string label_field = "label";
  std::vector<std::string> labels;  // explicit label set, in id order
  bool labels_given = false;        // false: YAML null, collect the labels from train (sorted)
  RetrievalFilesConfig retrieval;   // task embedding: ranked at every dev evaluation
  /// Texts longer than model.max_seq_length (classification, multilabel, regression with one text
  /// field): truncate (cut, as HF) | windows (windows of max_seq_length whose starts are
  /// long_text_stride tokens apart, each a training example with the text's label; evaluation and
  /// prediction pool the windows' logits by long_text_pooling).
  std::string long_text = "truncate";
  int64_t long_text_stride = 0;            // 0 = half a window's text (max_seq_length - 2) / 2
  std::string long_text_pooling = "mean";  // mean | max over the windows' logits
};

struct OptimizerConfig {
  OptimizerKind name = OptimizerKind::AdamW;
  double lr = 5e-5, weight_decay = 0.01;
  double beta1 = 0.9, beta2 = 0.999;  // YAML: betas: [beta1, beta2]
  double eps = 1e-6;
  double momentum = 0.0;  // sgd only
};

struct ScheduleConfig {
  ScheduleKind name = ScheduleKind::Linear;
  double warmup_ratio = 0.1;  // of the total steps
  int64_t warmup_steps = 0;   // wins over warmup_ratio when > 0
};

/// `training.loss` (classification and token_classification; docs/objectives.md has the formulas).
struct LossConfig {
  double label_smoothing = 0.0;                          // ε in [0, 1): torch cross_entropy(label_smoothing=ε)
  double focal_gamma = 0.0;                              // γ >= 0: focal loss (Lin et al. 2017); 0 = cross-entropy
  ClassWeights class_weights_mode = ClassWeights::None;  // YAML null | balanced | a list
  std::vector<double> class_weights;                     // List: one weight > 0 per label, in label id order
};

/// `training.early_stopping`: stop when the dev metric has not improved by more than min_delta for
/// `patience` evaluations in a row (patience 0 = off).
struct EarlyStoppingConfig {
  int64_t patience = 0;
  std::string metric;  // "" (YAML null) = the task's main metric
  double min_delta = 0.0;
};

/// training.freeze: parameters that keep their pretrained values (no gradient, no update).
struct FreezeConfig {
  bool embeddings = false;  // the encoder's embeddings (word, position, token type, their LayerNorm)
  int64_t layers = 0;       // the first N encoder layers
};

struct TrainingConfig {
  int64_t batch_size = 32;      // global: split over every replica and process
  int64_t eval_batch_size = 0;  // dev / test evaluations and `unif eval`; 0 = batch_size
  int64_t epochs = 3;
  int64_t max_steps = 0;  // wins over epochs when > 0
  int64_t grad_accum_steps = 1;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  double max_grad_norm = 1.0;       // 0 disables clipping
  double layerwise_lr_decay = 1.0;  // UNIF's layerwise_lr_decay_ratio, in (0, 1]
  /// fp32 | bf16 | fp16 (SPEC §7): the forward under autocast in bf16 / fp16, weights, gradients and
  /// optimizer state in float32; fp16 with dynamic loss scaling, on CUDA devices only.
  Precision precision = Precision::FP32;
  /// Each encoder layer keeps no activations in training and is run again in backward
  /// (models/layers/checkpoint.h): less memory, about one more forward's compute; same gradients.
  bool gradient_checkpointing = false;
  bool shuffle = true;
  bool group_by_length = false;  // batches of similar lengths (needs shuffle); see batching.h
  int64_t log_every = 10;        // steps, >= 1
  int64_t eval_every = 0;        // steps; 0 = end of each epoch
  int64_t save_every = 0;        // steps; 0 = end of each epoch
  int64_t keep_checkpoints = 2;
  /// auto | never | overwrite | a checkpoint path (Resume::Path, in resume_path; checked when training
  /// starts). overwrite: the files a previous run wrote in output_dir (checkpoints/, final/, best/,
  /// metrics.jsonl, train.log, config.yaml, tensorboard/) are removed before training starts.
  Resume resume = Resume::Auto;
  std::string resume_path;                 // Resume::Path only
  NonFinite nonfinite = NonFinite::Error;  // a step whose loss or gradient norm is not finite
  LossConfig loss;
  EarlyStoppingConfig early_stopping;
  /// The dev metric that picks best/ (and early stopping's, unless it names its own); "" (YAML
  /// null) = the task's main metric. Its direction is the metric's (loss, mse, perplexity lower).
  std::string best_metric;
  FreezeConfig freeze;
  /// Where the run's scalars go besides metrics.jsonl: "tensorboard" = event files in
  /// output_dir/tensorboard. Empty (or [none]) = metrics.jsonl only.
  std::vector<std::string> report_to;
  /// batch_size unless eval_batch_size is set.
  int64_t evaluation_batch_size() const { return eval_batch_size > 0 ? eval_batch_size : batch_size; }
};

struct ParallelConfig {
  std::vector<std::string> devices{"auto"};  // "cpu" | "cuda:N" entries, or the single entry "auto" (SPEC §7)
  int64_t threads_per_replica = 0;           // 0 = cores / replicas
};

struct AdversarialConfig {
  AdversarialMethod method = AdversarialMethod::None;
  double epsilon = 0.3;          // projection radius (0 = unbounded: freelb and smart only)
  double alpha = 0.1;            // step size (FreeLB adv_lr, PGD alpha)
  int64_t steps = 3;             // K
  double init_mag = 0.0;         // FreeLB initial noise magnitude
  double smart_lambda = 1.0;     // SMART's regularizer weight λ
  double smart_momentum = 0.99;  // SMART's teacher momentum β: θ̃ ← (1-β)θ + βθ̃ after each step
  double smart_bregman = 1.0;    // SMART's Bregman proximal term weight μ (0 = off: no teacher)
  double rdrop_alpha = 1.0;      // R-Drop's weight α of the symmetric KL
};

/// `distill`: knowledge distillation from a fine-tuned teacher model directory (absent = off).
/// `distill.intermediate`: TinyBERT's layer-wise terms beside the logits' (absent: logits only).
struct IntermediateConfig {
  /// uniform (the default once the section is given): student layer i learns from teacher layer
  /// i·T/S; Pairs: layer_pairs = student, teacher, student, teacher, ... (1-based layers).
  LayerMap layers = LayerMap::None;
  std::vector<int64_t> layer_pairs;
  double hidden_weight = 1.0;     // MSE of the mapped layers' hidden states
  double attention_weight = 1.0;  // MSE of their attention scores (pre-softmax)
  double embedding_weight = 1.0;  // MSE of the embeddings' outputs
  bool on() const { return layers != LayerMap::None; }
};

struct DistillConfig {
  std::string teacher;       // "" = off
  double temperature = 2.0;  // T > 0
  double alpha = 0.5;        // a in [0, 1]: a·T²·KL + (1-a)·task loss
  IntermediateConfig intermediate;
};

/// `embedding`: how task embedding trains (SPEC §9; docs/spec.md has the math of each loss).
struct EmbeddingConfig {
  std::string loss = "mnrl";               // mnrl | cached_mnrl | cosent | cosine
  std::string similarity = "cosine";       // cosine | dot (mnrl, cached_mnrl)
  double scale = 20.0;                     // the similarities' multiplier (mnrl, cached_mnrl, cosent)
  bool symmetric = false;                  // mnrl: also score each positive against every anchor
  int64_t mini_batch_size = 32;            // cached_mnrl: texts per forward of the gradient cache
  std::vector<int64_t> matryoshka_dims;    // each a leading slice of the embedding, trained too
  std::vector<double> matryoshka_weights;  // one per dim (empty = all 1)
};

/// `span`: span extraction (task span_extraction) windows and decoding, as HF run_qa / Google BERT.
struct SpanConfig {
  int64_t doc_stride = 128;        // tokens between the starts of consecutive context windows
  int64_t max_query_length = 64;   // question pieces kept (the rest cut)
  int64_t max_answer_length = 30;  // longest answer, in word pieces, the decoder considers
  int64_t n_best_size = 20;        // start and end candidates per window
  SpanMetric metric = SpanMetric::Auto;
  /// Unanswerable questions: a question is answered "" (no answer) when the null score ([CLS]'s
  /// start + end logits, the least over its windows) exceeds the best span's by more than this.
  double null_score_diff_threshold = 0.0;
  /// Unanswerable questions: an answerability classifier on [CLS] trained with the spans, its
  /// logit weighed into the null decision (docs/span-extraction.md).
  bool verifier = false;
  /// With the verifier: the null odds are (1 - w) · (null score - best span score) + w · the
  /// verifier's logit (the least over the windows).
  double verifier_weight = 0.5;
  /// Not a key: whether the model answers null at all. Set when the training data holds a question
  /// without answers (SQuAD 2.0 style), and kept in the model directory's unif.yaml.
  bool unanswerable = false;
};

/// `crf`: the CRF of model.crf (token_classification).
struct CrfConfig {
  bool constrained = true;  // forbid the moves the labels' BIO / BIOES scheme disallows
};

/// `electra` (task replaced_token_detection): loss = MLM + rtd_weight · RTD (ELECTRA's λ).
struct ElectraPretrainingConfig {
  double rtd_weight = 50.0;
};

struct RunConfig {
  Task task = Task::Classification;
  std::string output_dir = "runs/demo";
  int64_t seed = 42;
  ModelConfig model;
  DataConfig data;
  TrainingConfig training;
  ParallelConfig parallel;
  AdversarialConfig adversarial;
  SpanConfig span;
  DistillConfig distill;
  EmbeddingConfig embedding;
  CrfConfig crf;
  ElectraPretrainingConfig electra;
  std::filesystem::path source;  // the file (or source name) read; not part of the value
};

/// What the config is for: Train also requires data.train and a vocabulary (model.pretrained or
/// model.vocab); Eval requires data.dev; Any checks only what every use needs.
enum class Purpose { Any, Train, Eval };

/// Reads `file`, applies `overrides` ("a.b=v", v in YAML syntax, e.g. "parallel.devices=[cpu,cpu]",
/// later ones win), validates. Throws ConfigError listing every problem (an unreadable file, a YAML
/// syntax error with its line and column, unknown keys with "did you mean", wrong types,
/// out-of-range values, bad overrides). For Purpose::Train / Eval it also checks on the disk that
/// the files the run reads exist (model.pretrained, model.vocab, data.train/dev/test; data.dev for
/// Eval), each problem naming its key and, for a relative path, the current directory it resolved
/// against. model.vocab left out is filled with <pretrained>/vocab.txt when that file exists.
/// For Purpose::Any / Train, a Hub id in model.pretrained (at model.revision) or distill.teacher
/// that is no directory becomes its snapshot folder in the Hugging Face cache, downloaded when
/// absent (hub_cache.h); a model that cannot be had is a problem naming the key.
RunConfig load_config(const std::filesystem::path& file, const std::vector<std::string>& overrides = {},
                      Purpose purpose = Purpose::Any);

/// As load_config, on YAML text, without the checks on the disk; `source_name` prefixes every
/// message and becomes RunConfig::source.
RunConfig parse_config(const std::string& yaml_text, const std::string& source_name,
                       const std::vector<std::string>& overrides = {}, Purpose purpose = Purpose::Any);

/// What training.resume: overwrite removes from output_dir before a run starts over there: only
/// what a run writes (other files of the user's stay).
inline constexpr std::array<const char*, 7> kOverwriteRemoves{"checkpoints",   "final",     "best",       "tensorboard",
                                                              "metrics.jsonl", "train.log", "config.yaml"};

/// With training.resume: overwrite, a line for each path the run reads (model.pretrained,
/// model.vocab, distill.teacher, data.*) that lies inside what overwrite would remove (a run
/// starting over from its own final/ would delete its starting point); empty otherwise.
std::vector<std::string> overwrite_problems(const RunConfig& cfg);

/// The purpose-specific checks alone, on an already-parsed config (messages name cfg.source).
void validate_for(const RunConfig& cfg, Purpose purpose);

/// The fully resolved config as YAML: every key in SPEC §3 order, defaults filled.
/// parse_config(to_yaml(c), name) == c.
std::string to_yaml(const RunConfig& cfg);

/// The keys whose values differ between a config written by to_yaml (`before`, e.g. a resumed run's)
/// and `now`, one line each in `now`'s key order: "training.optimizer.lr 0.0002 -> 5e-05" ("(absent)"
/// for a key one side lacks). Empty when `before` is empty or not YAML.
std::vector<std::string> config_changes(const std::string& before, const RunConfig& now);

// Value equality; RunConfig's `source` is ignored.
bool operator==(const BertOverrides& a, const BertOverrides& b);
bool operator==(const IntermediateConfig& a, const IntermediateConfig& b);
bool operator==(const ModelConfig& a, const ModelConfig& b);
bool operator==(const RetrievalFilesConfig& a, const RetrievalFilesConfig& b);
bool operator==(const DataConfig& a, const DataConfig& b);
bool operator==(const OptimizerConfig& a, const OptimizerConfig& b);
bool operator==(const ScheduleConfig& a, const ScheduleConfig& b);
bool operator==(const TrainingConfig& a, const TrainingConfig& b);
bool operator==(const ParallelConfig& a, const ParallelConfig& b);
bool operator==(const AdversarialConfig& a, const AdversarialConfig& b);
bool operator==(const SpanConfig& a, const SpanConfig& b);
bool operator==(const EmbeddingConfig& a, const EmbeddingConfig& b);
bool operator==(const CrfConfig& a, const CrfConfig& b);
bool operator==(const GeneratorConfig& a, const GeneratorConfig& b);
bool operator==(const ElectraPretrainingConfig& a, const ElectraPretrainingConfig& b);
bool operator==(const LossConfig& a, const LossConfig& b);
bool operator==(const EarlyStoppingConfig& a, const EarlyStoppingConfig& b);
bool operator==(const FreezeConfig& a, const FreezeConfig& b);
bool operator==(const DistillConfig& a, const DistillConfig& b);
bool operator==(const RunConfig& a, const RunConfig& b);
inline bool operator!=(const RunConfig& a, const RunConfig& b) { return !(a == b); }

}  // namespace unif::framework
