// Internal to framework/config: every config key, declared once. Fields<S>::visit(v) calls
// v("key", &S::member, how...) for each key of section S in SPEC §3 order; the reader
// (run_config.cpp), the YAML writer (config_writer.cpp) and equality (config_equality.cpp) are
// visitors over these lists, so a key added here is read, written and compared. What a key's value
// may be (`how`: a range rule, a list of allowed names, whether null is accepted) is said here too;
// checks across keys are the reader's (run_config.cpp, one check() per section).
//
// A key usually names one member. A few YAML keys hold two: betas (beta1, beta2), data.labels
// (labels, labels_given), training.loss.class_weights (mode, weights), training.resume (mode, path).
// A member that is a section (a struct with its own Fields) is read and written as a nested mapping.
#pragma once
#include <string>
#include <type_traits>
#include <vector>

#include "framework/common/embedding_names.h"
#include "framework/config/run_config.h"
#include "framework/config/yaml_reader.h"

namespace unif::framework::detail {

/// How a string key takes YAML null: kNullable reads it as "" (and "" is written as null).
enum class Null { Rejected, Allowed };
inline constexpr Null kNullable = Null::Allowed;
inline constexpr Null kNotNull = Null::Rejected;
/// A list-of-strings key that also takes one string (a one-entry list).
struct OneOrList {};
inline constexpr OneOrList kOneOrList{};

// A learning rate float32 can hold: the update lr·u is computed in float32, so an lr past its largest
// finite value (about 3.4e38) makes every parameter inf/NaN at the first step.
inline const NumberRule kLearningRate{"a number > 0 that float32 can hold (at most 3.4e38)",
                                      [](double v) { return v > 0 && v <= 3.4028234663852886e38; }};
inline const IntRule kSeqLength{"an integer >= 3 ([CLS] + one token + [SEP])", [](int64_t v) { return v >= 3; }};
inline const std::vector<std::string> kTruncateMethods{"LIFO", "FIFO", "longer-FO", "longest_first"};
inline const std::vector<std::string> kLongText{"truncate", "windows"};
inline const std::vector<std::string> kLongTextPooling{"mean", "max"};
inline const std::vector<std::string> kHiddenActs{"gelu", "gelu_new", "relu"};  // models::EncoderConfig
// Sentence embeddings: the names of framework/common/embedding_names.h (the models' enums).
inline const std::vector<std::string> kPoolings = enum_name_list<Pooling>();
inline const std::vector<std::string> kEmbeddingLosses = enum_name_list<EmbeddingLoss>();
inline const std::vector<std::string> kSimilarities = enum_name_list<Similarity>();

template <class S>
struct Fields;

template <>
struct Fields<BertOverrides> {
  using S = BertOverrides;
  template <class V>
  static void visit(V& v) {
    v("vocab_size", &S::vocab_size, kPositiveInt);
    v("hidden_size", &S::hidden_size, kPositiveInt);
    v("num_hidden_layers", &S::num_hidden_layers, kPositiveInt);
    v("num_attention_heads", &S::num_attention_heads, kPositiveInt);
    v("intermediate_size", &S::intermediate_size, kPositiveInt);
    v("hidden_act", &S::hidden_act, kHiddenActs);
    v("hidden_dropout_prob", &S::hidden_dropout_prob, kUnitHalfOpen);
    v("attention_probs_dropout_prob", &S::attention_probs_dropout_prob, kUnitHalfOpen);
    v("max_position_embeddings", &S::max_position_embeddings, kPositiveInt);
    v("type_vocab_size", &S::type_vocab_size, kPositiveInt);
    v("initializer_range", &S::initializer_range, kNonNegativeNumber);
    v("layer_norm_eps", &S::layer_norm_eps, kPositiveNumber);
    v("pad_token_id", &S::pad_token_id, kNonNegativeInt);
    v("classifier_dropout", &S::classifier_dropout, kUnitHalfOpen, kNullable);  // null = HF null
  }
};

template <>
struct Fields<GeneratorConfig> {
  using S = GeneratorConfig;
  template <class V>
  static void visit(V& v) {
    v("config", &S::config);  // ElectraConfig fields of the generator, passed through
  }
};

template <>
struct Fields<ModelConfig> {
  using S = ModelConfig;
  template <class V>
  static void visit(V& v) {
    v("pretrained", &S::pretrained, kNullable);
    v("revision", &S::revision, kNotNull);  // of a Hub id pretrained
    v("bert", &S::bert);
    v("config", &S::config);  // a mapping of HF config fields, passed through
    v("vocab", &S::vocab, kNullable);
    v("do_lower_case", &S::do_lower_case);
    v("max_seq_length", &S::max_seq_length, kSeqLength);
    v("truncate_method", &S::truncate_method, kTruncateMethods);
    v("sparse_embeddings", &S::sparse_embeddings);
    v("unpadded", &S::unpadded);
    v("mlm_probability", &S::mlm_probability, kUnitLeftOpen);
    v("whole_word_mask", &S::whole_word_mask);
    v("pooling", &S::pooling, kPoolings);  // null = the pretrained directory's
    v("normalize", &S::normalize);         // null = the pretrained directory's
    v("crf", &S::crf);                     // token_classification
    v("early_exit", &S::early_exit);       // classification
    v("generator", &S::generator);         // replaced_token_detection
  }
};

template <>
struct Fields<RetrievalFilesConfig> {
  using S = RetrievalFilesConfig;
  template <class V>
  static void visit(V& v) {
    v("queries", &S::queries, kNullable);
    v("corpus", &S::corpus, kNullable);
  }
};

template <>
struct Fields<DataConfig> {
  using S = DataConfig;
  template <class V>
  static void visit(V& v) {
    v("train", &S::train, kNullable);
    v("dev", &S::dev, kNullable);
    v("test", &S::test, kNullable);
    v("text_fields", &S::text_fields, kOneOrList);
    v("label_field", &S::label_field, kNotNull);
    v("labels", &S::labels, &S::labels_given);  // null: labels_given false
    v("retrieval", &S::retrieval);
    v("long_text", &S::long_text, kLongText);
    v("long_text_stride", &S::long_text_stride, kNonNegativeInt);
    v("long_text_pooling", &S::long_text_pooling, kLongTextPooling);
  }
};

template <>
struct Fields<OptimizerConfig> {
  using S = OptimizerConfig;
  template <class V>
  static void visit(V& v) {
    v("name", &S::name);
    v("lr", &S::lr, kLearningRate);
    v("weight_decay", &S::weight_decay, kNonNegativeNumber);
    v("betas", &S::beta1, &S::beta2, kUnitHalfOpen);  // [beta1, beta2]
    v("eps", &S::eps, kPositiveNumber);
    v("momentum", &S::momentum, kUnitHalfOpen);
  }
};

template <>
struct Fields<ScheduleConfig> {
  using S = ScheduleConfig;
  template <class V>
  static void visit(V& v) {
    v("name", &S::name);
    v("warmup_ratio", &S::warmup_ratio, kUnitClosed);
    v("warmup_steps", &S::warmup_steps, kNonNegativeInt);
  }
};

template <>
struct Fields<LossConfig> {
  using S = LossConfig;
  template <class V>
  static void visit(V& v) {
    v("label_smoothing", &S::label_smoothing, kUnitHalfOpen);
    v("focal_gamma", &S::focal_gamma, kNonNegativeNumber);
    v("class_weights", &S::class_weights_mode, &S::class_weights);  // null | balanced | [w, ...]
  }
};

template <>
struct Fields<FreezeConfig> {
  using S = FreezeConfig;
  template <class V>
  static void visit(V& v) {
    v("embeddings", &S::embeddings);
    v("layers", &S::layers, kNonNegativeInt);
  }
};

template <>
struct Fields<EarlyStoppingConfig> {
  using S = EarlyStoppingConfig;
  template <class V>
  static void visit(V& v) {
    v("patience", &S::patience, kNonNegativeInt);
    v("metric", &S::metric, kNullable);
    v("min_delta", &S::min_delta, kNonNegativeNumber);
  }
};

template <>
struct Fields<TrainingConfig> {
  using S = TrainingConfig;
  template <class V>
  static void visit(V& v) {
    v("batch_size", &S::batch_size, kPositiveInt);
    v("eval_batch_size", &S::eval_batch_size, kNonNegativeInt);
    v("epochs", &S::epochs, kNonNegativeInt);
    v("max_steps", &S::max_steps, kNonNegativeInt);
    v("grad_accum_steps", &S::grad_accum_steps, kPositiveInt);
    v("optimizer", &S::optimizer);
    v("schedule", &S::schedule);
    v("max_grad_norm", &S::max_grad_norm, kNonNegativeNumber);
    v("layerwise_lr_decay", &S::layerwise_lr_decay, kUnitLeftOpen);
    v("precision", &S::precision);
    v("gradient_checkpointing", &S::gradient_checkpointing);
    v("shuffle", &S::shuffle);
    v("group_by_length", &S::group_by_length);
    v("log_every", &S::log_every, kPositiveInt);
    v("eval_every", &S::eval_every, kNonNegativeInt);
    v("save_every", &S::save_every, kNonNegativeInt);
    v("keep_checkpoints", &S::keep_checkpoints, kPositiveInt);
    v("resume", &S::resume, &S::resume_path);  // auto | never | overwrite | a path (checked at train time)
    v("nonfinite", &S::nonfinite);
    v("loss", &S::loss);
    v("early_stopping", &S::early_stopping);
    v("best_metric", &S::best_metric, kNullable);
    v("freeze", &S::freeze);
    v("report_to", &S::report_to, kOneOrList);
  }
};

template <>
struct Fields<ParallelConfig> {
  using S = ParallelConfig;
  template <class V>
  static void visit(V& v) {
    v("devices", &S::devices, kOneOrList);
    v("threads_per_replica", &S::threads_per_replica, kNonNegativeInt);
  }
};

template <>
struct Fields<AdversarialConfig> {
  using S = AdversarialConfig;
  template <class V>
  static void visit(V& v) {
    v("method", &S::method);
    v("epsilon", &S::epsilon, kNonNegativeNumber);
    v("alpha", &S::alpha, kNonNegativeNumber);
    v("steps", &S::steps, kPositiveInt);
    v("init_mag", &S::init_mag, kNonNegativeNumber);
    v("smart_lambda", &S::smart_lambda, kNonNegativeNumber);
    v("smart_momentum", &S::smart_momentum, kUnitClosed);
    v("smart_bregman", &S::smart_bregman, kNonNegativeNumber);
    v("rdrop_alpha", &S::rdrop_alpha, kNonNegativeNumber);
  }
};

template <>
struct Fields<SpanConfig> {
  using S = SpanConfig;
  template <class V>
  static void visit(V& v) {
    v("doc_stride", &S::doc_stride, kPositiveInt);
    v("max_query_length", &S::max_query_length, kPositiveInt);
    v("max_answer_length", &S::max_answer_length, kPositiveInt);
    v("n_best_size", &S::n_best_size, kPositiveInt);
    v("metric", &S::metric);
    v("null_score_diff_threshold", &S::null_score_diff_threshold, kAnyNumber);
    v("verifier", &S::verifier);
    v("verifier_weight", &S::verifier_weight, kUnitClosed);
  }
};

template <>
struct Fields<EmbeddingConfig> {
  using S = EmbeddingConfig;
  template <class V>
  static void visit(V& v) {
    v("loss", &S::loss, kEmbeddingLosses);
    v("similarity", &S::similarity, kSimilarities);
    v("scale", &S::scale, kPositiveNumber);
    v("symmetric", &S::symmetric);
    v("mini_batch_size", &S::mini_batch_size, kPositiveInt);
    v("matryoshka_dims", &S::matryoshka_dims, kPositiveInt);
    v("matryoshka_weights", &S::matryoshka_weights, kPositiveNumber);
  }
};

template <>
struct Fields<CrfConfig> {
  using S = CrfConfig;
  template <class V>
  static void visit(V& v) {
    v("constrained", &S::constrained);
  }
};

template <>
struct Fields<IntermediateConfig> {
  using S = IntermediateConfig;
  template <class V>
  static void visit(V& v) {
    v("layers", &S::layers, &S::layer_pairs);  // uniform | [[student, teacher], ...]
    v("hidden_weight", &S::hidden_weight, kNonNegativeNumber);
    v("attention_weight", &S::attention_weight, kNonNegativeNumber);
    v("embedding_weight", &S::embedding_weight, kNonNegativeNumber);
  }
};

template <>
struct Fields<DistillConfig> {
  using S = DistillConfig;
  template <class V>
  static void visit(V& v) {
    v("teacher", &S::teacher, kNullable);
    v("temperature", &S::temperature, kPositiveNumber);
    v("alpha", &S::alpha, kUnitClosed);
    v("intermediate", &S::intermediate);  // absent: logits only
  }
};

template <>
struct Fields<ElectraPretrainingConfig> {
  using S = ElectraPretrainingConfig;
  template <class V>
  static void visit(V& v) {
    v("rtd_weight", &S::rtd_weight, kNonNegativeNumber);
  }
};

template <>
struct Fields<RunConfig> {
  using S = RunConfig;  // `source` is not a key: it says where the value came from
  template <class V>
  static void visit(V& v) {
    v("task", &S::task);
    v("output_dir", &S::output_dir, kNotNull);
    v("seed", &S::seed, kNonNegativeInt);
    v("model", &S::model);
    v("data", &S::data);
    v("training", &S::training);
    v("parallel", &S::parallel);
    v("adversarial", &S::adversarial);
    v("span", &S::span);
    v("distill", &S::distill);
    v("embedding", &S::embedding);
    v("crf", &S::crf);
    v("electra", &S::electra);
  }
};

/// Whether S is a section (has a Fields list).
template <class S, class = void>
struct is_section : std::false_type {};
template <class S>
struct is_section<S, std::void_t<decltype(sizeof(Fields<S>))>> : std::true_type {};

}  // namespace unif::framework::detail
