// The YAML config.yaml holds (to_yaml), byte for byte: checkpoints store it and a resumed run compares
// it key by key ("changed on resume"), so its text must not drift when the code that writes it
// changes. Also: every example in the docs reads, writes and reads back the same, and each choice's
// name table maps names and values one to one.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "framework/config/run_config.h"
#include "support/files.h"

using namespace unif::framework;
namespace fs = std::filesystem;

using unif::test::slurp;

namespace {

// The ```yaml blocks of a markdown file.
std::vector<std::string> yaml_blocks(const std::string& md) {
  std::vector<std::string> out;
  std::istringstream lines(md);
  std::string line, block;
  bool in = false;
  while (std::getline(lines, line)) {
    if (!in && line.rfind("```yaml", 0) == 0) {
      in = true;
      block.clear();
    } else if (in && line.rfind("```", 0) == 0) {
      in = false;
      out.push_back(block);
    } else if (in) {
      block += line + "\n";
    }
  }
  return out;
}

// read -> write -> read gives the same config, and writing it again the same bytes.
void check_round_trip(const RunConfig& c) {
  const std::string yaml = to_yaml(c);
  const RunConfig again = parse_config(yaml, "again.yaml");
  CHECK(again == c);
  CHECK(to_yaml(again) == yaml);
}

}  // namespace

TEST_CASE("to_yaml of the defaults: every key, in SPEC order, byte for byte", "[unit][config]") {
  const std::string expected = R"(task: classification
output_dir: runs/demo
seed: 42
model:
  pretrained: ~
  revision: main
  bert: {}
  config: {}
  vocab: ~
  do_lower_case: true
  max_seq_length: 128
  truncate_method: LIFO
  sparse_embeddings: true
  unpadded: true
  mlm_probability: 0.15
  whole_word_mask: false
  crf: false
  early_exit: false
  generator:
    config: {}
data:
  train: ~
  dev: ~
  test: ~
  text_fields: [text]
  label_field: label
  labels: ~
  retrieval:
    queries: ~
    corpus: ~
  long_text: truncate
  long_text_stride: 0
  long_text_pooling: mean
training:
  batch_size: 32
  eval_batch_size: 0
  epochs: 3
  max_steps: 0
  grad_accum_steps: 1
  optimizer:
    name: adamw
    lr: 5e-05
    weight_decay: 0.01
    betas: [0.9, 0.999]
    eps: 1e-06
    momentum: 0.0
  schedule:
    name: linear
    warmup_ratio: 0.1
    warmup_steps: 0
  max_grad_norm: 1.0
  layerwise_lr_decay: 1.0
  precision: fp32
  gradient_checkpointing: false
  shuffle: true
  group_by_length: false
  log_every: 10
  eval_every: 0
  save_every: 0
  keep_checkpoints: 2
  resume: auto
  nonfinite: error
  loss:
    label_smoothing: 0.0
    focal_gamma: 0.0
    class_weights: ~
  early_stopping:
    patience: 0
    metric: ~
    min_delta: 0.0
  best_metric: ~
  freeze:
    embeddings: false
    layers: 0
  report_to: []
parallel:
  devices: [auto]
  threads_per_replica: 0
adversarial:
  method: none
  epsilon: 0.3
  alpha: 0.1
  steps: 3
  init_mag: 0.0
  smart_lambda: 1.0
  smart_momentum: 0.99
  smart_bregman: 1.0
  rdrop_alpha: 1.0
span:
  doc_stride: 128
  max_query_length: 64
  max_answer_length: 30
  n_best_size: 20
  metric: auto
  null_score_diff_threshold: 0.0
  verifier: false
  verifier_weight: 0.5
embedding:
  loss: mnrl
  similarity: cosine
  scale: 20.0
  symmetric: false
  mini_batch_size: 32
  matryoshka_dims: []
  matryoshka_weights: []
crf:
  constrained: true
electra:
  rtd_weight: 50.0
)";
  CHECK(to_yaml(RunConfig{}) == expected);
  CHECK(to_yaml(parse_config("", "c.yaml")) == expected);
}

TEST_CASE("to_yaml of a config that sets every key: byte for byte", "[unit][config]") {
  const std::string input = R"(task: token_classification
output_dir: "123"
seed: 7
model:
  pretrained: null
  revision: v1.0
  bert: {vocab_size: 100, hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 128, hidden_act: gelu_new, hidden_dropout_prob: 0.05, attention_probs_dropout_prob: 0.0, max_position_embeddings: 256, type_vocab_size: 2, initializer_range: 0.02, layer_norm_eps: 1e-12, pad_token_id: 0, classifier_dropout: 0.3}
  config: {hidden_dropout_prob: 0.25, rope_theta: 10000, pos_att_type: [p2c, c2p], name: "yes"}
  vocab: v.txt
  do_lower_case: false
  max_seq_length: 200
  truncate_method: longer-FO
  sparse_embeddings: false
  unpadded: false
  mlm_probability: 0.2
  whole_word_mask: true
  crf: false
  early_exit: false
data:
  train: a.jsonl
  dev: b.jsonl
  test: c.jsonl
  text_fields: toks
  label_field: "yes"
  labels: [O, B-PER, "1", "true"]
  retrieval:
    queries: ~
    corpus: ~
training:
  batch_size: 8
  eval_batch_size: 12
  epochs: 0
  max_steps: 100
  grad_accum_steps: 2
  optimizer: {name: sgd, lr: 1e-3, weight_decay: 0, betas: [0.8, 0.99], eps: 1e-8, momentum: 0.9}
  schedule: {name: cosine, warmup_ratio: 0.25, warmup_steps: 3}
  max_grad_norm: 0
  layerwise_lr_decay: 0.9
  precision: bf16
  gradient_checkpointing: true
  shuffle: true
  group_by_length: true
  log_every: 3
  eval_every: 5
  save_every: 6
  keep_checkpoints: 4
  resume: runs/x/checkpoints/step-5
  nonfinite: skip
  loss: {label_smoothing: 0.1, focal_gamma: 2, class_weights: [1, 2.5, 3, 4]}
  early_stopping: {patience: 2, metric: f1, min_delta: 0.001}
  best_metric: precision
  freeze: {embeddings: true, layers: 1}
  report_to: tensorboard
parallel:
  devices: [cpu, cpu]
  threads_per_replica: 2
adversarial:
  method: pgd
  epsilon: 0.5
  alpha: 0.2
  steps: 4
  init_mag: 0.1
  smart_lambda: 2
  smart_momentum: 0.5
  smart_bregman: 0
  rdrop_alpha: 3
span: {doc_stride: 64, max_query_length: 32, max_answer_length: 10, n_best_size: 5, metric: squad, null_score_diff_threshold: -1.5, verifier: true, verifier_weight: 1}
distill: {teacher: runs/t, temperature: 3, alpha: 0.25}
embedding: {loss: mnrl, similarity: dot, scale: 1, symmetric: true, mini_batch_size: 8, matryoshka_dims: [64, 16], matryoshka_weights: [1, 0.5]}
crf: {constrained: false}
)";
  const std::string expected = R"(task: token_classification
output_dir: "123"
seed: 7
model:
  pretrained: ~
  revision: v1.0
  bert:
    vocab_size: 100
    hidden_size: 64
    num_hidden_layers: 2
    num_attention_heads: 4
    intermediate_size: 128
    hidden_act: gelu_new
    hidden_dropout_prob: 0.05
    attention_probs_dropout_prob: 0.0
    max_position_embeddings: 256
    type_vocab_size: 2
    initializer_range: 0.02
    layer_norm_eps: 1e-12
    pad_token_id: 0
    classifier_dropout: 0.3
  config:
    hidden_dropout_prob: 0.25
    name: "yes"
    pos_att_type: [p2c, c2p]
    rope_theta: 10000
  vocab: v.txt
  do_lower_case: false
  max_seq_length: 200
  truncate_method: longer-FO
  sparse_embeddings: false
  unpadded: false
  mlm_probability: 0.2
  whole_word_mask: true
  crf: false
  early_exit: false
  generator:
    config: {}
data:
  train: a.jsonl
  dev: b.jsonl
  test: c.jsonl
  text_fields: [toks]
  label_field: "yes"
  labels: [O, B-PER, "1", "true"]
  retrieval:
    queries: ~
    corpus: ~
  long_text: truncate
  long_text_stride: 0
  long_text_pooling: mean
training:
  batch_size: 8
  eval_batch_size: 12
  epochs: 0
  max_steps: 100
  grad_accum_steps: 2
  optimizer:
    name: sgd
    lr: 0.001
    weight_decay: 0.0
    betas: [0.8, 0.99]
    eps: 1e-08
    momentum: 0.9
  schedule:
    name: cosine
    warmup_ratio: 0.25
    warmup_steps: 3
  max_grad_norm: 0.0
  layerwise_lr_decay: 0.9
  precision: bf16
  gradient_checkpointing: true
  shuffle: true
  group_by_length: true
  log_every: 3
  eval_every: 5
  save_every: 6
  keep_checkpoints: 4
  resume: runs/x/checkpoints/step-5
  nonfinite: skip
  loss:
    label_smoothing: 0.1
    focal_gamma: 2.0
    class_weights: [1.0, 2.5, 3.0, 4.0]
  early_stopping:
    patience: 2
    metric: f1
    min_delta: 0.001
  best_metric: precision
  freeze:
    embeddings: true
    layers: 1
  report_to: [tensorboard]
parallel:
  devices: [cpu, cpu]
  threads_per_replica: 2
adversarial:
  method: pgd
  epsilon: 0.5
  alpha: 0.2
  steps: 4
  init_mag: 0.1
  smart_lambda: 2.0
  smart_momentum: 0.5
  smart_bregman: 0.0
  rdrop_alpha: 3.0
span:
  doc_stride: 64
  max_query_length: 32
  max_answer_length: 10
  n_best_size: 5
  metric: squad
  null_score_diff_threshold: -1.5
  verifier: true
  verifier_weight: 1.0
distill:
  teacher: runs/t
  temperature: 3.0
  alpha: 0.25
embedding:
  loss: mnrl
  similarity: dot
  scale: 1.0
  symmetric: true
  mini_batch_size: 8
  matryoshka_dims: [64, 16]
  matryoshka_weights: [1.0, 0.5]
crf:
  constrained: false
electra:
  rtd_weight: 50.0
)";
  const RunConfig c = parse_config(input, "all.yaml");
  CHECK(to_yaml(c) == expected);
  check_round_trip(c);
  // The other forms of the keys with more than one form.
  const RunConfig b = parse_config(
      "training: {loss: {class_weights: balanced}, resume: overwrite, precision: fp16}\n"
      "parallel: {devices: [cuda:0]}\nadversarial: {method: smart}\nspan: {metric: cmrc}\n",
      "b.yaml");
  const std::string yb = to_yaml(b);
  CHECK_THAT(yb, Catch::Contains("\n  resume: overwrite\n") && Catch::Contains("\n    class_weights: balanced\n") &&
                     Catch::Contains("\n  precision: fp16\n") && Catch::Contains("\n  method: smart\n") &&
                     Catch::Contains("\n  metric: cmrc\n") && Catch::Contains("\n  devices: [cuda:0]\n"));
  check_round_trip(b);
  const RunConfig n = parse_config("training: {resume: never}\n", "n.yaml");
  CHECK_THAT(to_yaml(n), Catch::Contains("\n  resume: never\n"));
  CHECK(n.training.resume == Resume::Never);
  CHECK(n.training.resume_path.empty());
  const RunConfig p = parse_config("training: {resume: \"true\"}\n", "p.yaml");  // a path that reads as a boolean
  CHECK(p.training.resume == Resume::Path);
  CHECK(p.training.resume_path == "true");
  CHECK_THAT(to_yaml(p), Catch::Contains("\n  resume: \"true\"\n"));
  check_round_trip(p);
}

TEST_CASE("every YAML example in README.md and docs/ reads, writes and reads back the same", "[unit][config]") {
  const fs::path root = UNIF_SOURCE_DIR;
  std::vector<fs::path> files{root / "README.md"};
  for (const auto& entry : fs::directory_iterator(root / "docs"))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  int examples = 0;
  for (const auto& file : files) {
    const auto blocks = yaml_blocks(slurp(file));
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      INFO(file.string() << " example " << i + 1);
      // Placeholders for a model directory: no directory (parse_config does not look for data files).
      const std::string text = std::regex_replace(
          std::regex_replace(blocks[i], std::regex("pretrained: (DIR|path/or/null)"), "pretrained: null"),
          std::regex("pretrained: tests/"), "pretrained: " + (root / "tests").string() + "/");
      try {
        check_round_trip(parse_config(text, file.filename().string()));
      } catch (const ConfigError& e) { FAIL(e.what()); }
      ++examples;
    }
  }
  CHECK(examples >= 7);
}

TEST_CASE("each choice's table maps its names and values one to one", "[unit][config]") {
  auto check_table = [](auto value) {
    using E = decltype(value);
    const auto names = unif::enum_name_list<E>();
    REQUIRE_FALSE(names.empty());
    for (const auto& name : names) {
      const auto v = unif::enum_from_name<E>(name);
      REQUIRE(v);
      CHECK(unif::name_of(*v) == name);
    }
    CHECK_FALSE(unif::enum_from_name<E>("no-such-name"));
  };
  check_table(OptimizerKind{});
  check_table(ScheduleKind{});
  check_table(Precision{});
  check_table(Resume{});
  check_table(NonFinite{});
  check_table(AdversarialMethod{});
  check_table(SpanMetric{});
  check_table(ClassWeights{});
  CHECK(unif::join_names<AdversarialMethod>(" | ") == "none | fgm | pgd | freelb | freeat | smart | rdrop");
  CHECK(unif::join_names<SpanMetric>(", ", " or ") == "auto, squad or cmrc");
}

TEST_CASE("task embedding: model.pooling and model.normalize round trip, null left out", "[unit][config]") {
  const RunConfig c = parse_config("task: embedding\nmodel: {pooling: cls, normalize: true}\n", "e.yaml");
  REQUIRE(c.model.pooling == std::optional<std::string>("cls"));
  REQUIRE(c.model.normalize == std::optional<bool>(true));
  const std::string yaml = to_yaml(c);
  CHECK(yaml.find("  pooling: cls\n  normalize: true\n") != std::string::npos);
  check_round_trip(c);
  const RunConfig unset = parse_config("task: embedding\nmodel: {pooling: null, normalize: null}\n", "e.yaml");
  CHECK_FALSE(unset.model.pooling.has_value());
  CHECK_FALSE(unset.model.normalize.has_value());
  CHECK(to_yaml(unset).find("\n  pooling:") == std::string::npos);  // model.pooling (not data.long_text_pooling)
}
