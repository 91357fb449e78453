// Unit tests of the run configuration (framework/config): SPEC §3 defaults, every key parsed, each
// class of bad input reported with file, key path and line, several problems reported at once,
// --set overrides, and the to_yaml round trip.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/config/did_you_mean.h"
#include "framework/config/model_meta.h"
#include "framework/config/run_config.h"
#include "support/temp_dir.h"
#include "support/user_error.h"

using namespace unif::framework;
using unif::Task;

namespace {

/// The ConfigError message for `yaml` (with `overrides`); fails the test when nothing is thrown.
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {},
                     Purpose purpose = Purpose::Any) {
  try {
    parse_config(yaml, "cfg.yaml", overrides, purpose);
  } catch (const ConfigError& e) { return e.what(); }
  FAIL("no ConfigError for:\n" << yaml);
  return "";
}

std::size_t line_count(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')) + (s.empty() ? 0 : 1);
}

// Every key of SPEC §3 (and our additions) set to a value other than its default.
const char* const kEveryKey = R"(
task: token_classification
output_dir: runs/x
seed: 7
model:
  pretrained: models/base
  revision: v2
  bert: {vocab_size: 100, hidden_size: 48, num_hidden_layers: 3, num_attention_heads: 6,
         intermediate_size: 96, hidden_act: relu, hidden_dropout_prob: 0.0,
         attention_probs_dropout_prob: 0.05, max_position_embeddings: 256, type_vocab_size: 1,
         initializer_range: 0.01, layer_norm_eps: 1.0e-5, pad_token_id: 1, classifier_dropout: 0.2}
  vocab: v/vocab.txt
  do_lower_case: false
  max_seq_length: 200
  truncate_method: longer-FO
  sparse_embeddings: false
  unpadded: false
data:
  train: d/train.jsonl
  dev: d/dev.jsonl
  test: d/test.tsv
  text_fields: [words]
  label_field: ner
  labels: [O, B-PER, I-PER]
training:
  batch_size: 8
  epochs: 5
  max_steps: 100
  grad_accum_steps: 2
  optimizer: {name: sgd, lr: 0.1, weight_decay: 0.0, betas: [0.8, 0.95], eps: 1.0e-8, momentum: 0.9}
  schedule: {name: cosine, warmup_ratio: 0.2, warmup_steps: 10}
  max_grad_norm: 0
  layerwise_lr_decay: 0.9
  precision: fp16
  shuffle: false
  log_every: 5
  eval_every: 50
  save_every: 25
  keep_checkpoints: 3
  resume: never
parallel:
  devices: [cuda:0, cuda:1]
  threads_per_replica: 2
adversarial:
  method: freelb
  epsilon: 0
  alpha: 0.03
  steps: 2
  init_mag: 0.05
  smart_lambda: 5
  smart_momentum: 0.9
  smart_bregman: 0.5
)";

}  // namespace

TEST_CASE("an empty config has SPEC §3's defaults", "[unit][config]") {
  const RunConfig c = parse_config("", "empty.yaml");
  CHECK(c.source == "empty.yaml");
  CHECK(c.task == Task::Classification);
  CHECK(c.output_dir == "runs/demo");
  CHECK(c.seed == 42);
  CHECK(c.model.pretrained.empty());
  CHECK(c.model.bert.empty());
  CHECK(c.model.vocab.empty());
  CHECK(c.model.do_lower_case);
  CHECK(c.model.max_seq_length == 128);
  CHECK(c.model.truncate_method == "LIFO");
  CHECK(c.model.sparse_embeddings);
  CHECK(c.model.unpadded);
  CHECK(c.data.train.empty());
  CHECK(c.data.dev.empty());
  CHECK(c.data.test.empty());
  CHECK(c.data.text_fields == std::vector<std::string>{"text"});
  CHECK(c.data.label_field == "label");
  CHECK(c.data.labels.empty());
  CHECK_FALSE(c.data.labels_given);
  const TrainingConfig& t = c.training;
  CHECK(t.batch_size == 32);
  CHECK(t.epochs == 3);
  CHECK(t.max_steps == 0);
  CHECK(t.grad_accum_steps == 1);
  CHECK(t.optimizer.name == OptimizerKind::AdamW);
  CHECK(t.optimizer.lr == 5e-5);
  CHECK(t.optimizer.weight_decay == 0.01);
  CHECK(t.optimizer.beta1 == 0.9);
  CHECK(t.optimizer.beta2 == 0.999);
  CHECK(t.optimizer.eps == 1e-6);
  CHECK(t.optimizer.momentum == 0.0);
  CHECK(t.schedule.name == ScheduleKind::Linear);
  CHECK(t.schedule.warmup_ratio == 0.1);
  CHECK(t.schedule.warmup_steps == 0);
  CHECK(t.max_grad_norm == 1.0);
  CHECK(t.layerwise_lr_decay == 1.0);
  CHECK(t.shuffle);
  CHECK_FALSE(t.group_by_length);
  CHECK(t.log_every == 10);
  CHECK(t.eval_every == 0);
  CHECK(t.save_every == 0);
  CHECK(t.keep_checkpoints == 2);
  CHECK(t.resume == Resume::Auto);
  CHECK(c.parallel.devices == std::vector<std::string>{"auto"});  // SPEC §7
  CHECK(c.parallel.threads_per_replica == 0);
  CHECK(c.adversarial.method == AdversarialMethod::None);
  CHECK(c.adversarial.epsilon == 0.3);
  CHECK(c.adversarial.alpha == 0.1);
  CHECK(c.adversarial.steps == 3);
  CHECK(c.adversarial.init_mag == 0.0);
  CHECK(c.adversarial.smart_lambda == 1.0);
  CHECK(c.adversarial.smart_momentum == 0.99);
  CHECK(c.adversarial.smart_bregman == 1.0);
  CHECK(c == RunConfig{});
  // Empty sections and a comment-only file are the defaults too.
  CHECK(parse_config("# nothing\nmodel:\ntraining: {}\n", "x.yaml") == RunConfig{});
}

TEST_CASE("the SPEC §3 example block parses to its values", "[unit][config]") {
  const RunConfig c = parse_config(R"(
task: classification
output_dir: runs/demo
seed: 42
model:
  pretrained: null
  bert: {}
  vocab: path/to/vocab.txt
  do_lower_case: true
  max_seq_length: 128
  truncate_method: LIFO
  sparse_embeddings: true
data:
  train: path.jsonl
  dev: path.jsonl
  text_fields: [text]
  label_field: label
  labels: null
training:
  batch_size: 32
  epochs: 3
  max_steps: 0
  grad_accum_steps: 1
  optimizer: {name: adamw, lr: 5.0e-5, weight_decay: 0.01, betas: [0.9, 0.999], eps: 1.0e-6}
  schedule: {name: linear, warmup_ratio: 0.1}
  max_grad_norm: 1.0
  layerwise_lr_decay: 1.0
  shuffle: true
  log_every: 10
  eval_every: 0
  save_every: 0
  keep_checkpoints: 2
  resume: auto
parallel:
  devices: [cpu]
  threads_per_replica: 0
adversarial:
  method: none
  epsilon: 0.3
  alpha: 0.1
  steps: 3
  init_mag: 0.0
)",
                                   "spec.yaml");
  RunConfig expected;
  expected.model.vocab = "path/to/vocab.txt";
  expected.data.train = "path.jsonl";
  expected.data.dev = "path.jsonl";
  expected.parallel.devices = {"cpu"};  // SPEC §3's block spells [cpu]; the default is auto (SPEC §7)
  CHECK(c == expected);
}

TEST_CASE("every key is parsed", "[unit][config]") {
  const RunConfig c = parse_config(kEveryKey, "every.yaml");
  CHECK(c.task == Task::TokenClassification);
  CHECK(c.output_dir == "runs/x");
  CHECK(c.seed == 7);
  const BertOverrides& b = c.model.bert;
  CHECK(c.model.pretrained == "models/base");
  CHECK(c.model.revision == "v2");
  CHECK(b.vocab_size == 100);
  CHECK(b.hidden_size == 48);
  CHECK(b.num_hidden_layers == 3);
  CHECK(b.num_attention_heads == 6);
  CHECK(b.intermediate_size == 96);
  CHECK(b.hidden_act == "relu");
  CHECK(b.hidden_dropout_prob == 0.0);
  CHECK(b.attention_probs_dropout_prob == 0.05);
  CHECK(b.max_position_embeddings == 256);
  CHECK(b.type_vocab_size == 1);
  CHECK(b.initializer_range == 0.01);
  CHECK(b.layer_norm_eps == 1e-5);
  CHECK(b.pad_token_id == 1);
  CHECK(b.classifier_dropout == 0.2);
  CHECK(c.model.vocab == "v/vocab.txt");
  CHECK_FALSE(c.model.do_lower_case);
  CHECK(c.model.max_seq_length == 200);
  CHECK(c.model.truncate_method == "longer-FO");
  CHECK_FALSE(c.model.sparse_embeddings);
  CHECK_FALSE(c.model.unpadded);
  CHECK(c.data.train == "d/train.jsonl");
  CHECK(c.data.dev == "d/dev.jsonl");
  CHECK(c.data.test == "d/test.tsv");
  CHECK(c.data.text_fields == std::vector<std::string>{"words"});
  CHECK(c.data.label_field == "ner");
  CHECK(c.data.labels == std::vector<std::string>{"O", "B-PER", "I-PER"});
  CHECK(c.data.labels_given);
  const TrainingConfig& t = c.training;
  CHECK(t.batch_size == 8);
  CHECK(t.epochs == 5);
  CHECK(t.max_steps == 100);
  CHECK(t.grad_accum_steps == 2);
  CHECK(t.optimizer.name == OptimizerKind::Sgd);
  CHECK(t.optimizer.lr == 0.1);
  CHECK(t.optimizer.weight_decay == 0.0);
  CHECK(t.optimizer.beta1 == 0.8);
  CHECK(t.optimizer.beta2 == 0.95);
  CHECK(t.optimizer.eps == 1e-8);
  CHECK(t.optimizer.momentum == 0.9);
  CHECK(t.schedule.name == ScheduleKind::Cosine);
  CHECK(t.schedule.warmup_ratio == 0.2);
  CHECK(t.schedule.warmup_steps == 10);
  CHECK(t.max_grad_norm == 0.0);
  CHECK(t.layerwise_lr_decay == 0.9);
  CHECK(t.precision == Precision::FP16);
  CHECK_FALSE(t.shuffle);
  CHECK(t.log_every == 5);
  CHECK(t.eval_every == 50);
  CHECK(t.save_every == 25);
  CHECK(t.keep_checkpoints == 3);
  CHECK(t.resume == Resume::Never);
  CHECK(c.parallel.devices == std::vector<std::string>{"cuda:0", "cuda:1"});
  CHECK(c.parallel.threads_per_replica == 2);
  CHECK(c.adversarial.method == AdversarialMethod::FreeLb);
  CHECK(c.adversarial.epsilon == 0.0);
  CHECK(c.adversarial.alpha == 0.03);
  CHECK(c.adversarial.steps == 2);
  CHECK(c.adversarial.init_mag == 0.05);
  CHECK(c.adversarial.smart_lambda == 5.0);
  CHECK(c.adversarial.smart_momentum == 0.9);
  CHECK(c.adversarial.smart_bregman == 0.5);
}

TEST_CASE("scalar shorthands and YAML spellings", "[unit][config]") {
  const RunConfig c = parse_config(
      "parallel: {devices: auto}\ndata: {text_fields: sentence, labels: [1, 2]}\nmodel: {do_lower_case: no}\n"
      "training: {optimizer: {lr: 3e-5}}\nadversarial: {epsilon: +1}\n",
      "s.yaml");
  CHECK(c.parallel.devices == std::vector<std::string>{"auto"});
  CHECK(c.data.text_fields == std::vector<std::string>{"sentence"});
  CHECK(c.data.labels == std::vector<std::string>{"1", "2"});  // labels are strings
  CHECK_FALSE(c.model.do_lower_case);
  CHECK(c.training.optimizer.lr == 3e-5);
  CHECK(c.adversarial.epsilon == 1.0);
}

TEST_CASE("task-specific defaults for the data fields", "[unit][config]") {
  const RunConfig tok = parse_config("task: token_classification", "t.yaml");
  CHECK(tok.data.text_fields == std::vector<std::string>{"tokens"});
  CHECK(tok.data.label_field == "tags");
  const RunConfig span = parse_config("task: span_extraction", "t.yaml");
  CHECK(span.data.text_fields == std::vector<std::string>{"question", "context"});
  CHECK(span.data.label_field == "answers");
  const RunConfig reg = parse_config("task: regression\ndata: {text_fields: [text_a, text_b]}", "t.yaml");
  CHECK(reg.data.text_fields == std::vector<std::string>{"text_a", "text_b"});
  CHECK(reg.data.label_field == "label");
  // Given explicitly, they are kept.
  const RunConfig given =
      parse_config("task: token_classification\ndata: {text_fields: [w], label_field: y}", "t.yaml");
  CHECK(given.data.text_fields == std::vector<std::string>{"w"});
  CHECK(given.data.label_field == "y");
}

TEST_CASE("training.precision: fp32 by default - bf16 anywhere - fp16 not with CPU devices", "[unit][config]") {
  CHECK(parse_config("", "c.yaml").training.precision == Precision::FP32);
  CHECK(parse_config("training: {precision: bf16}", "c.yaml").training.precision == Precision::BF16);
  CHECK(parse_config("training: {precision: fp16}\nparallel: {devices: auto}", "c.yaml").training.precision ==
        Precision::FP16);
  CHECK_THAT(error_of("training: {precision: fp8}"),
             Catch::StartsWith("cfg.yaml: training.precision: expected one of fp32 | bf16 | fp16 | auto, got 'fp8'"));
  CHECK_THAT(error_of("training: {precision: fp16}\nparallel: {devices: [cpu]}"),
             Catch::Contains("training.precision: expected fp32 or bf16 with CPU devices"));
  CHECK_THAT(error_of("training: {precision: fp16}\nparallel: {devices: [cuda:0, cpu]}"),
             Catch::Contains("training.precision"));
  const auto c = parse_config("training: {precision: bf16}", "c.yaml");
  CHECK(parse_config(to_yaml(c), "again.yaml") == c);
}

TEST_CASE("cuda devices on a build without CUDA are an error when training", "[unit][config]") {
  const std::string yaml = "data: {train: t.jsonl}\nmodel: {vocab: v.txt}\nparallel: {devices: [cpu, cuda:1]}";
#ifdef UNIF_WITH_CUDA
  CHECK_NOTHROW(parse_config(yaml, "cfg.yaml", {}, Purpose::Train));
#else
  CHECK_THAT(error_of(yaml, {}, Purpose::Train),
             Catch::Contains("cfg.yaml: parallel.devices[1]: 'cuda:1' needs a CUDA build of unif"));
  CHECK_NOTHROW(parse_config(yaml, "cfg.yaml", {}, Purpose::Any));  // parsing alone stays possible
#endif
}

TEST_CASE("task names", "[unit][config]") {
  for (Task t :
       {Task::Classification, Task::Multilabel, Task::Regression, Task::TokenClassification, Task::SpanExtraction})
    CHECK(parse_task(to_string(t)) == t);
  CHECK(to_string(Task::TokenClassification) == "token_classification");
  CHECK_THROWS_WITH(parse_task("clasification"),
                    Catch::Contains("did you mean 'classification'?") && Catch::Contains("span_extraction"));
}

// ---- bad input: one test per class --------------------------------------------------------------

TEST_CASE("a YAML syntax error names file, line and column", "[unit][config]") {
  const std::string e = error_of("task: classification\ntraining:\n  batch_size: [8, 16\n  epochs: 3\n");
  CHECK_THAT(e, Catch::StartsWith("cfg.yaml: line 4, column ") && Catch::Contains("invalid YAML"));
  const std::string tab = error_of("model:\n\tmax_seq_length: 3\n");
  CHECK_THAT(tab, Catch::StartsWith("cfg.yaml: line 2, column ") && Catch::Contains("invalid YAML"));
}

// Found by fuzzing (tests/fuzz/corpus/config/invalid_utf8_path.yaml): yaml-cpp read the bytes and
// to_yaml wrote them back as U+FFFD, so the resolved config.yaml named another path.
TEST_CASE("invalid UTF-8 in a config or an override is an error naming line and byte", "[unit][config]") {
  CHECK(error_of("task: regression\nmodel:\n  pretrained: a\xff\xfe b\n") ==
        "cfg.yaml: line 3, byte 16: invalid UTF-8 (0xFF); a config file must be UTF-8");
  CHECK(error_of("\xc3(") == "cfg.yaml: line 1, byte 1: invalid UTF-8 (0xC3); a config file must be UTF-8");
  CHECK(error_of("seed: 1\n", {"model.vocab=v\x80.txt"}) ==
        "cfg.yaml: --set: an override is not valid UTF-8 (line 1, byte 14: invalid UTF-8 (0x80))");
  CHECK_NOTHROW(parse_config("output_dir: runs/今天 café\n", "cfg.yaml"));
}

// Found by fuzzing (tests/fuzz/corpus/model_meta/invalid_utf8_label_field.yaml): the same for the
// unif.yaml of a model directory, which write_model_meta wrote back changed.
TEST_CASE("invalid UTF-8 in unif.yaml is an error naming line and byte", "[unit][config]") {
  unif::test::TempDir dir;
  const auto file = dir / "unif.yaml";
  std::ofstream(file) << "task: classification\nlabels: [neg, pos]\nlabel_field: \xff\xfflabel\n";
  CHECK(unif::test::user_error_of([&] { read_model_meta(file); }) ==
        file.string() + ": line 3, byte 14: invalid UTF-8 (0xFF); unif.yaml must be UTF-8");
  std::ofstream(file) << "task: classification\nlabels: [négatif, 正]\n";
  CHECK(read_model_meta(file).labels == std::vector<std::string>{"négatif", "正"});
}

// Found by fuzzing (tests/fuzz/corpus/model_meta/truncate_method_not_a_method_with_carriage_returns.yaml):
// unif.yaml's truncate_method was taken as any string, here one ending in carriage returns that did
// not survive writing and reading back; it must be one of the methods, as in a config.
TEST_CASE("unif.yaml's truncate_method is one of the methods", "[unit][config][bad-input]") {
  unif::test::TempDir dir;
  const auto file = dir / "unif.yaml";
  std::ofstream(file) << "task: classification\ntruncate_method: lo20, metrier_leng}\r\r\n";
  CHECK_THAT(unif::test::user_error_of([&] { read_model_meta(file); }),
             Catch::StartsWith(
                 file.string() +
                 ": truncate_method: expected LIFO, FIFO, longer-FO or longest_first, got 'lo20, metrier_leng}"));
  std::ofstream(file) << "task: classification\ntruncate_method: longest_first\n";
  CHECK(read_model_meta(file).truncate_method == "longest_first");
}

// Found by fuzzing (tests/fuzz/corpus/model_meta/control_character_in_text_field.yaml):
// yaml-cpp read a raw \x01\x00 inside a text field name, which write_model_meta wrote back changed.
// YAML allows only tab, LF, CR and printable characters in a stream; anything else is an error.
TEST_CASE("a control character in a config, an override or unif.yaml is an error naming line and byte",
          "[unit][config]") {
  CHECK(error_of("task: regression\nmodel:\n  pretrained: a\x01"
                 "b\n") ==
        "cfg.yaml: line 3, byte 16: control character 0x01 (YAML allows tab, line feed, carriage return and "
        "printable characters only)");
  CHECK(error_of(std::string("seed: 1\noutput_dir: r\0\n", 23)) ==
        "cfg.yaml: line 2, byte 14: control character 0x00 (YAML allows tab, line feed, carriage return and "
        "printable characters only)");
  CHECK(error_of("seed: 1\noutput_dir: r\xc2\x9f\n") ==
        "cfg.yaml: line 2, byte 14: control character U+009F (YAML allows tab, line feed, carriage return and "
        "printable characters only)");
  CHECK(error_of("seed: 1\n", {"output_dir=r\x7f"}) ==
        "cfg.yaml: --set: an override holds a control character 0x7F (YAML allows tab, line feed, carriage "
        "return and printable characters only)");
  // An escaped control character in a double-quoted scalar is YAML; the resolved config.yaml must
  // write it back so that it reads the same.
  const auto escaped = parse_config("seed: 1\r\noutput_dir:\t\"r\\x01 escaped is fine\"\r\n", "cfg.yaml");
  CHECK(escaped.output_dir == "r\x01 escaped is fine");
  CHECK(parse_config(to_yaml(escaped), "cfg.yaml") == escaped);
  unif::test::TempDir dir;
  const auto file = dir / "unif.yaml";
  std::ofstream(file) << std::string("task: classification\ntext_fields: [te\x01\0_a, text_b]\n", 51);
  CHECK(unif::test::user_error_of([&] { read_model_meta(file); }) ==
        file.string() +
            ": line 2, byte 17: control character 0x01 (YAML allows tab, line feed, carriage return "
            "and printable characters only)");
}

// Found by fuzzing (tests/fuzz/corpus/model_meta/label_field_ending_in_carriage_return.yaml): a
// string that ends in a carriage return was written plain, and the reader took the CR and the line
// feed after it for one line break. Such strings are written double-quoted, in unif.yaml and in a
// resolved config.yaml alike.
TEST_CASE("strings holding a carriage return survive unif.yaml and config.yaml", "[unit][config]") {
  unif::test::TempDir dir;
  const auto file = dir / "unif.yaml";
  std::ofstream(file) << "text_fields: [question, context]\nlabel_field: answer a\r";
  const auto meta = read_model_meta(file);
  REQUIRE(meta.label_field == "answer a\r");
  write_model_meta(file, meta);
  CHECK(read_model_meta(file).label_field == "answer a\r");
  ModelMeta odd;
  odd.labels = {"a\r", "\rb", "1", "c"};
  odd.text_fields = {"t\r"};
  write_model_meta(file, odd);
  const auto back = read_model_meta(file);
  CHECK(back.labels == odd.labels);
  CHECK(back.text_fields == odd.text_fields);
  const auto cfg = parse_config("seed: 1\ndata: {label_field: \"l\\r\", labels: [\"x\\r\", y]}\n", "cfg.yaml");
  REQUIRE(cfg.data.label_field == "l\r");
  CHECK(parse_config(to_yaml(cfg), "cfg.yaml") == cfg);
}

TEST_CASE("an unknown key is an error with a did-you-mean", "[unit][config]") {
  CHECK(error_of("trainig:\n  batch_size: 8\n") ==
        "cfg.yaml: trainig: unknown key 'trainig' (did you mean 'training'?); known keys here: task, "
        "output_dir, seed, model, data, training, parallel, adversarial, span, distill, embedding, crf, electra (line "
        "1)");
  CHECK_THAT(error_of("training:\n  batchsize: 8\n"),
             Catch::StartsWith("cfg.yaml: training.batchsize: unknown key 'batchsize' (did you mean 'batch_size'?)") &&
                 Catch::EndsWith("(line 2)"));
  CHECK_THAT(
      error_of("model:\n  bert: {hiden_size: 8}\n"),
      Catch::StartsWith("cfg.yaml: model.bert.hiden_size: unknown key 'hiden_size' (did you mean 'hidden_size'?)"));
  CHECK_THAT(error_of("training:\n  optimizer: {learning_rate: 0.1}\n"),
             Catch::StartsWith("cfg.yaml: training.optimizer.learning_rate: unknown key 'learning_rate'") &&
                 !Catch::Contains("did you mean"));  // nothing close: no guess
  CHECK_THAT(error_of("seed: 1\nseed: 2\n"), Catch::StartsWith("cfg.yaml: seed: duplicate key 'seed'"));
}

TEST_CASE("span: defaults, values, bad values", "[unit][config]") {
  const auto d = parse_config("task: span_extraction\n", "cfg.yaml");
  CHECK(d.span.doc_stride == 128);
  CHECK(d.span.max_query_length == 64);
  CHECK(d.span.max_answer_length == 30);
  CHECK(d.span.n_best_size == 20);
  CHECK(d.span.metric == SpanMetric::Auto);
  const auto c = parse_config("task: span_extraction\nspan: {doc_stride: 32, metric: cmrc}\n", "cfg.yaml");
  CHECK(c.span.doc_stride == 32);
  CHECK(c.span.metric == SpanMetric::Cmrc);
  CHECK(parse_config(to_yaml(c), "again.yaml") == c);
  CHECK(error_of("span: {doc_stride: 0}") ==
        "cfg.yaml: span.doc_stride: expected a positive integer, got '0' (line 1)");
  CHECK_THAT(error_of("span: {metric: f1}"),
             Catch::StartsWith("cfg.yaml: span.metric: expected one of auto | squad | cmrc, got 'f1'"));
  CHECK_THAT(error_of("span: {stride: 8}"), Catch::Contains("unknown key 'stride'"));
  CHECK_THAT(error_of("task: span_extraction\nmodel: {max_seq_length: 4}"),
             Catch::Contains("model.max_seq_length: expected at least 5 for span_extraction"));
}

TEST_CASE("a value of the wrong type names the key and what was expected", "[unit][config]") {
  CHECK(error_of("training:\n  batch_size: abc\n") ==
        "cfg.yaml: training.batch_size: expected a positive integer, got 'abc' (line 2)");
  CHECK(error_of("seed: [1, 2]") == "cfg.yaml: seed: expected a non-negative integer, got a list (line 1)");
  CHECK(error_of("training:\n  batch_size: \"32\"\n") ==
        "cfg.yaml: training.batch_size: expected a positive integer, got '32' (line 2)");  // quoted: a string
  CHECK(error_of("training: {epochs: 2.5}") ==
        "cfg.yaml: training.epochs: expected a non-negative integer, got '2.5' (line 1)");
  CHECK(error_of("model: {do_lower_case: maybe}") ==
        "cfg.yaml: model.do_lower_case: expected true or false, got 'maybe' (line 1)");
  CHECK(error_of("output_dir: {a: 1}") == "cfg.yaml: output_dir: expected a non-empty string, got a mapping (line 1)");
  CHECK(error_of("output_dir:") == "cfg.yaml: output_dir: expected a non-empty string, got null (line 1)");
  CHECK(error_of("training: 5") == "cfg.yaml: training: expected a mapping of keys, got '5' (line 1)");
  CHECK(error_of("data: {labels: pos}") == "cfg.yaml: data.labels: expected a list of strings, got 'pos' (line 1)");
  CHECK(error_of("parallel:\n  devices: [cpu, {a: 1}]\n") ==
        "cfg.yaml: parallel.devices[1]: expected a non-empty string, got a mapping (line 2)");
  CHECK(error_of("training: {optimizer: {lr: 1e-3x}}") ==
        "cfg.yaml: training.optimizer.lr: expected a number > 0 that float32 can hold (at most 3.4e38), got '1e-3x' "
        "(line 1)");
}

TEST_CASE("an out-of-range value names the key and the range", "[unit][config]") {
  auto first_line = [](const std::string& yaml) {
    const std::string e = error_of(yaml);
    CHECK(line_count(e) == 1);
    return e;
  };
  CHECK(first_line("training: {batch_size: -4}") ==
        "cfg.yaml: training.batch_size: expected a positive integer, got '-4' (line 1)");
  CHECK(first_line("training: {batch_size: 0}") ==
        "cfg.yaml: training.batch_size: expected a positive integer, got '0' (line 1)");
  CHECK_THAT(
      first_line("training: {optimizer: {lr: 0}}"),
      Catch::Contains("training.optimizer.lr: expected a number > 0 that float32 can hold (at most 3.4e38), got '0'"));
  CHECK_THAT(first_line("training: {optimizer: {eps: 0}}"),
             Catch::Contains("training.optimizer.eps: expected a number > 0"));
  CHECK_THAT(first_line("training: {optimizer: {weight_decay: -0.1}}"),
             Catch::Contains("training.optimizer.weight_decay: expected a number >= 0"));
  CHECK(first_line("training: {optimizer: {betas: [0.9]}}") ==
        "cfg.yaml: training.optimizer.betas: expected a list of 2 numbers in [0, 1), got ['0.9'] (line 1)");
  CHECK_THAT(first_line("training: {optimizer: {betas: [0.9, 1.0]}}"),
             Catch::Contains("training.optimizer.betas: expected a list of 2 numbers in [0, 1), got ['0.9', '1.0']"));
  CHECK_THAT(first_line("training: {optimizer: {betas: 0.9}}"),
             Catch::Contains("training.optimizer.betas: expected a list of 2 numbers"));
  CHECK_THAT(first_line("training: {optimizer: {momentum: 0.9}}"),
             Catch::Contains("training.optimizer.momentum: expected 0 for optimizer adamw"));
  CHECK_THAT(first_line("training: {schedule: {warmup_ratio: 1.5}}"),
             Catch::Contains("training.schedule.warmup_ratio: expected a number in [0, 1], got '1.5'"));
  CHECK_THAT(first_line("training: {schedule: {warmup_steps: -1}}"),
             Catch::Contains("training.schedule.warmup_steps: expected a non-negative integer"));
  CHECK_THAT(first_line("training: {max_grad_norm: -1}"),
             Catch::Contains("training.max_grad_norm: expected a number >= 0"));
  CHECK_THAT(first_line("training: {layerwise_lr_decay: 0}"),
             Catch::Contains("training.layerwise_lr_decay: expected a number in (0, 1]"));
  CHECK_THAT(first_line("training: {grad_accum_steps: 0}"),
             Catch::Contains("training.grad_accum_steps: expected a positive integer"));
  CHECK_THAT(first_line("training: {epochs: 0}"),
             Catch::Contains("training.epochs: expected a positive integer when training.max_steps is 0, got 0"));
  CHECK(parse_config("training: {epochs: 0, max_steps: 10}", "ok.yaml").training.max_steps == 10);
  CHECK_THAT(first_line("training: {keep_checkpoints: 0}"),
             Catch::Contains("training.keep_checkpoints: expected a positive integer"));
  CHECK_THAT(first_line("training: {log_every: 0}"),
             Catch::Contains("training.log_every: expected a positive integer"));
  CHECK_THAT(first_line("parallel: {threads_per_replica: -1}"),
             Catch::Contains("parallel.threads_per_replica: expected a non-negative integer"));
  CHECK_THAT(first_line("parallel: {devices: []}"), Catch::Contains("parallel.devices: expected at least one device"));
  CHECK_THAT(first_line("parallel: {devices: [auto, cpu]}"),
             Catch::Contains("parallel.devices[0]: expected 'auto' alone"));
  CHECK_THAT(first_line("adversarial: {epsilon: -0.1}"),
             Catch::Contains("adversarial.epsilon: expected a number >= 0"));
  CHECK_THAT(first_line("adversarial: {method: pgd, epsilon: 0}"),
             Catch::Contains("adversarial.epsilon: expected a number > 0 for method pgd"));
  CHECK_THAT(first_line("adversarial: {alpha: -1}"), Catch::Contains("adversarial.alpha: expected a number >= 0"));
  CHECK_THAT(first_line("adversarial: {steps: 0}"), Catch::Contains("adversarial.steps: expected a positive integer"));
  CHECK_THAT(first_line("adversarial: {smart_momentum: 1.5}"),
             Catch::Contains("adversarial.smart_momentum: expected a number in [0, 1]"));
  CHECK_THAT(first_line("training: {shuffle: false, group_by_length: true}"),
             Catch::Contains("training.group_by_length: expected false when training.shuffle is false"));
  CHECK_THAT(first_line("training: {group_by_length: 1}"), Catch::Contains("training.group_by_length: expected"));
  CHECK(parse_config("training: {group_by_length: true}", "ok.yaml").training.group_by_length);
  CHECK_THAT(first_line("adversarial: {smart_bregman: -1}"),
             Catch::Contains("adversarial.smart_bregman: expected a number >= 0"));
  CHECK_THAT(first_line("model: {max_seq_length: 2}"),
             Catch::Contains("model.max_seq_length: expected an integer >= 3"));
  CHECK(parse_config("model: {max_seq_length: 1024}", "ok.yaml").model.max_seq_length == 1024);  // the model checks
  CHECK_THAT(
      first_line("model: {max_seq_length: 300, bert: {max_position_embeddings: 256}}"),
      Catch::Contains("model.max_seq_length: expected at most model.bert.max_position_embeddings (256), got 300"));
  CHECK_THAT(first_line("model: {bert: {hidden_size: 30, num_attention_heads: 4}}"),
             Catch::Contains("model.bert.num_attention_heads: expected a divisor of hidden_size (30), got 4"));
  CHECK_THAT(first_line("model: {bert: {hidden_dropout_prob: 1}}"),
             Catch::Contains("model.bert.hidden_dropout_prob: expected a number in [0, 1)"));
  CHECK_THAT(first_line("model: {bert: {vocab_size: 0}}"),
             Catch::Contains("model.bert.vocab_size: expected a positive integer"));
  CHECK(parse_config("model: {bert: {classifier_dropout: null}}", "ok.yaml").model.bert.empty());
  CHECK_THAT(first_line("data: {text_fields: [a, b, c]}"),
             Catch::Contains("data.text_fields: expected 1 field (a text) or 2 (a text pair), got 3"));
  CHECK_THAT(
      first_line("task: token_classification\ndata: {text_fields: [a, b]}"),
      Catch::Contains("data.text_fields: expected exactly 1 field (the token list) for token_classification, got 2"));
  CHECK_THAT(first_line("task: span_extraction\ndata: {text_fields: [q]}"),
             Catch::Contains("data.text_fields: expected exactly 2 fields (question, context) for span_extraction"));
  CHECK_THAT(first_line("data: {text_fields: [a, a]}"),
             Catch::Contains("data.text_fields: expected two different fields"));
  CHECK_THAT(first_line("data: {labels: [a, b, a]}"), Catch::Contains("data.labels: duplicate label 'a'"));
  CHECK_THAT(first_line("data: {labels: []}"), Catch::Contains("data.labels: expected a non-empty list"));
  CHECK_THAT(first_line("task: regression\ndata: {labels: [a]}"),
             Catch::Contains("data.labels: expected null for task regression"));
  CHECK_THAT(first_line("training: {resume: ''}"), Catch::Contains("training.resume: expected a non-empty string"));
}

TEST_CASE("a value outside an enumeration lists the choices", "[unit][config]") {
  CHECK(error_of("task: clasification") ==
        "cfg.yaml: task: expected one of classification | multilabel | regression | token_classification | "
        "span_extraction | masked_lm | embedding | replaced_token_detection, got 'clasification' (did you mean "
        "'classification'?) (line 1)");
  CHECK_THAT(error_of("model: {truncate_method: lifo}"),
             Catch::Contains("model.truncate_method: expected one of LIFO | FIFO | longer-FO | longest_first, got "
                             "'lifo' (did you mean 'LIFO'?)"));
  CHECK_THAT(error_of("training: {optimizer: {name: adam}}"),
             Catch::Contains(
                 "training.optimizer.name: expected one of adamw | sgd | lamb, got 'adam' (did you mean 'adamw'?)"));
  CHECK_THAT(error_of("training: {schedule: {name: step}}"),
             Catch::Contains("training.schedule.name: expected one of linear | constant | cosine"));
  CHECK_THAT(error_of("adversarial: {method: freeLB}"),
             Catch::Contains("adversarial.method: expected one of none | fgm | pgd | freelb"));
  CHECK_THAT(error_of("model: {bert: {hidden_act: gelu_fast}}"),
             Catch::Contains("model.bert.hidden_act: expected one of gelu | gelu_new | relu"));
  CHECK(error_of("parallel: {devices: [cpu, gpu]}") ==
        "cfg.yaml: parallel.devices[1]: expected cpu, cuda:N or auto, got 'gpu' (did you mean 'cpu'?) (line 1)");
  CHECK_THAT(error_of("parallel: {devices: [cuda:x]}"),
             Catch::Contains("parallel.devices[0]: expected cpu, cuda:N or auto, got 'cuda:x'"));
}

TEST_CASE("a bad override is an error naming it", "[unit][config]") {
  CHECK(error_of("", {"training.batch_size"}) ==
        "cfg.yaml: --set 'training.batch_size': expected KEY=VALUE with a dotted key, e.g. training.batch_size=16");
  CHECK_THAT(error_of("", {"training..lr=1"}), Catch::Contains("--set 'training..lr=1': expected KEY=VALUE"));
  CHECK_THAT(error_of("", {"trainig.batch_size=8"}),
             Catch::StartsWith("cfg.yaml: trainig: unknown key 'trainig' (did you mean 'training'?)") &&
                 Catch::EndsWith("(from --set trainig.batch_size=8)"));
  CHECK_THAT(error_of("training: {batch_size: 8}", {"training.batchsize=8"}),
             Catch::StartsWith("cfg.yaml: training.batchsize: unknown key 'batchsize' (did you mean 'batch_size'?)") &&
                 Catch::EndsWith("(from --set training.batchsize=8)"));
  CHECK(error_of("training: {batch_size: 8}", {"training.batch_size=abc"}) ==
        "cfg.yaml: training.batch_size: expected a positive integer, got 'abc' (from --set training.batch_size=abc)");
  CHECK_THAT(error_of("", {"parallel.devices=[cpu"}),
             Catch::StartsWith("cfg.yaml: parallel.devices: the --set value is not valid YAML"));
  CHECK_THAT(
      error_of("", {"training.batch_size.x=3"}),
      Catch::Contains(
          "training.batch_size: expected a positive integer, got a mapping (from --set training.batch_size.x=3)"));
}

TEST_CASE("YAML merge keys are expanded before the keys are read; an empty section override is refused",
          "[unit][config]") {
  // <<: *anchor, and a list of mappings (the first wins among them; the mapping's own keys win).
  const auto cfg = parse_config(R"(
model:
  config: &dropouts {hidden_dropout_prob: 0.2, attention_probs_dropout_prob: 0.3}
training:
  <<: [{batch_size: 4, max_steps: 7}, {max_steps: 8, epochs: 2}]
  max_steps: 9
  optimizer:
    <<: {name: sgd, lr: 0.5}
    lr: 0.25
distill:
  temperature: 3
)",
                                "cfg.yaml");
  CHECK(cfg.training.batch_size == 4);
  CHECK(cfg.training.max_steps == 9);
  CHECK(cfg.training.epochs == 2);
  CHECK(cfg.training.optimizer.lr == 0.25);
  CHECK(to_yaml(cfg).find("<<") == std::string::npos);
  // An alias of a mapping merged into model.config, with a key of its own.
  const auto merged = parse_config(R"(
model:
  config:
    <<: &d {hidden_dropout_prob: 0.2}
    attention_probs_dropout_prob: 0.3
)",
                                   "cfg.yaml");
  CHECK(merged.model.config.at("hidden_dropout_prob") == 0.2);
  CHECK(merged.model.config.at("attention_probs_dropout_prob") == 0.3);
  // What a merge brings is checked as if written there.
  CHECK_THAT(error_of("training:\n  <<: {batch_sise: 4}\n"),
             Catch::Contains("training.batch_sise: unknown key 'batch_sise' (did you mean 'batch_size'?)"));
  CHECK_THAT(error_of("training:\n  <<: 3\n"),
             Catch::Contains("training.<<: a merge key takes a mapping or a list of mappings"));
  // --set training= would reset every training key to its default: refused, as training.max_steps= is.
  CHECK_THAT(error_of("training: {max_steps: 3}", {"training="}),
             Catch::Contains("--set 'training=': training is a section; set its keys one at a time (e.g. training."));
  CHECK_THAT(error_of("", {"training.optimizer=null"}),
             Catch::Contains("--set 'training.optimizer=null': training.optimizer is a section"));
  CHECK_THAT(error_of("", {"training.max_steps="}), Catch::Contains("training.max_steps"));
}

TEST_CASE("a missing or unreadable file is an error naming it", "[unit][config]") {
  const auto missing = std::filesystem::temp_directory_path() / "unif-no-such-config.yaml";
  CHECK_THROWS_MATCHES(load_config(missing), ConfigError,
                       Catch::Matchers::Message(missing.string() + ": cannot read the config file: no such file"));
  const auto dir = std::filesystem::temp_directory_path();
  CHECK_THROWS_WITH(load_config(dir),
                    Catch::Contains(dir.string() + ": cannot read the config file: it is a directory"));
  // A ConfigError is a UserError (the CLI prints it and exits 2).
  CHECK_THROWS_AS(load_config(missing), unif::UserError);
}

TEST_CASE("a top level that is not a mapping is an error", "[unit][config]") {
  CHECK(
      error_of("- task: classification\n") ==
      "cfg.yaml: expected a mapping of keys (task, model, data, training, ...) at the top level, got a list (line 1)");
  CHECK_THAT(error_of("just some text"), Catch::Contains("at the top level, got 'just some text'"));
}

TEST_CASE("every problem is reported at once, one per line", "[unit][config]") {
  try {
    parse_config(
        "task: clasification\ntrainig: {}\ntraining:\n  batch_size: -1\n  optimizer: {lr: 0}\n"
        "parallel: {devices: [gpu]}\n",
        "many.yaml", {"seed=x"});
    FAIL("no ConfigError");
  } catch (const ConfigError& e) {
    REQUIRE(e.problems.size() == 6);
    CHECK(line_count(e.what()) == 6);
    for (const auto& p : e.problems) CHECK_THAT(p, Catch::StartsWith("many.yaml: "));
    const std::string all = e.what();
    for (const char* key :
         {"many.yaml: task: ", "many.yaml: trainig: ", "many.yaml: training.batch_size: ",
          "many.yaml: training.optimizer.lr: ", "many.yaml: parallel.devices[0]: ", "many.yaml: seed: "})
      CHECK_THAT(all, Catch::Contains(key));
  }
}

TEST_CASE("overrides win over the file, later over earlier", "[unit][config]") {
  const std::string yaml = "training:\n  batch_size: 8\n  optimizer: {name: sgd, lr: 0.5}\n";
  const RunConfig c =
      parse_config(yaml, "o.yaml",
                   {"training.batch_size=16", "parallel.devices=[cpu,cpu]", "training.optimizer.lr=0.25", "seed=1",
                    "seed = 2", "model.pretrained=null", "data.labels=[b, a]", "model.bert.hidden_dropout_prob=0",
                    "output_dir=runs/with spaces"});
  CHECK(c.training.batch_size == 16);
  CHECK(c.training.optimizer.name == OptimizerKind::Sgd);  // the rest of the section is kept
  CHECK(c.training.optimizer.lr == 0.25);
  CHECK(c.parallel.devices == std::vector<std::string>{"cpu", "cpu"});
  CHECK(c.seed == 2);
  CHECK(c.model.pretrained.empty());
  CHECK(c.data.labels == std::vector<std::string>{"b", "a"});
  CHECK(c.model.bert.hidden_dropout_prob == 0.0);
  CHECK(c.output_dir == "runs/with spaces");
  // A whole section replaced by a mapping value.
  const RunConfig s = parse_config(yaml, "o.yaml", {"training.optimizer={name: adamw}"});
  CHECK(s.training.optimizer.name == OptimizerKind::AdamW);
  CHECK(s.training.optimizer.lr == 5e-5);
  // An override can fix a bad value in the file.
  CHECK(parse_config("training: {batch_size: -1}", "o.yaml", {"training.batch_size=4"}).training.batch_size == 4);
}

TEST_CASE("model.revision: a branch, tag or commit the cache's refs/ can hold", "[unit][config]") {
  CHECK(parse_config("", "r.yaml").model.revision == "main");
  CHECK(parse_config("model: {revision: v1.0}", "r.yaml").model.revision == "v1.0");
  CHECK(parse_config("model: {revision: refs/pr/1}", "r.yaml").model.revision == "refs/pr/1");
  for (const char* bad : {"model: {revision: ../x}", "model: {revision: /abs}", "model: {revision: ''}",
                          "model: {revision: 'a b'}", "model: {revision: null}"}) {
    INFO(bad);
    CHECK_THAT(error_of(bad), Catch::Contains("model.revision"));
  }
}

TEST_CASE("purpose-specific requirements", "[unit][config]") {
  CHECK(error_of("model: {pretrained: m}", {}, Purpose::Train) ==
        "cfg.yaml: data.train: required for training (a .jsonl or .tsv file)");
  CHECK(error_of("data: {train: t.jsonl}", {}, Purpose::Train) ==
        "cfg.yaml: model.vocab: required when model.pretrained is null (a vocab.txt file)");
  CHECK(error_of("data: {train: t.jsonl}", {}, Purpose::Eval) ==
        "cfg.yaml: data.dev: required for evaluation (a .jsonl or .tsv file; or data.retrieval for task embedding)");
  CHECK_NOTHROW(parse_config("data: {dev: d.jsonl}", "e.yaml", {}, Purpose::Eval));
  CHECK_NOTHROW(parse_config("data: {train: t.jsonl}\nmodel: {vocab: v.txt}", "t.yaml", {}, Purpose::Train));
  const RunConfig c = parse_config("", "any.yaml");
  CHECK_NOTHROW(validate_for(c, Purpose::Any));
  CHECK_THROWS_WITH(
      validate_for(c, Purpose::Eval),
      "any.yaml: data.dev: required for evaluation (a .jsonl or .tsv file; or data.retrieval for task embedding)");
}

TEST_CASE("to_yaml writes every key and reads back to the same config", "[unit][config]") {
  SECTION("defaults") {
    const RunConfig c = parse_config("", "d.yaml");
    const std::string y = to_yaml(c);
    CHECK(parse_config(y, "again.yaml") == c);
    for (const char* key : {"task:",
                            "output_dir:",
                            "seed:",
                            "pretrained:",
                            "bert:",
                            "vocab:",
                            "do_lower_case:",
                            "max_seq_length:",
                            "truncate_method:",
                            "sparse_embeddings:",
                            "train:",
                            "dev:",
                            "test:",
                            "text_fields:",
                            "label_field:",
                            "labels:",
                            "batch_size:",
                            "epochs:",
                            "max_steps:",
                            "grad_accum_steps:",
                            "name:",
                            "lr:",
                            "weight_decay:",
                            "betas:",
                            "eps:",
                            "momentum:",
                            "warmup_ratio:",
                            "warmup_steps:",
                            "max_grad_norm:",
                            "layerwise_lr_decay:",
                            "shuffle:",
                            "group_by_length:",
                            "log_every:",
                            "eval_every:",
                            "save_every:",
                            "keep_checkpoints:",
                            "resume:",
                            "devices:",
                            "threads_per_replica:",
                            "method:",
                            "epsilon:",
                            "alpha:",
                            "steps:",
                            "init_mag:",
                            "smart_lambda:",
                            "smart_momentum:",
                            "smart_bregman:"})
      CHECK_THAT(y, Catch::Contains(key));
  }
  SECTION("every key set") {
    const RunConfig c = parse_config(kEveryKey, "every.yaml");
    CHECK(parse_config(to_yaml(c), "again.yaml") == c);
  }
  SECTION("awkward strings and numbers") {
    RunConfig c;
    c.task = Task::Multilabel;
    c.output_dir = "runs/a b: c #d";
    c.data.labels = {"null", "true", "1", "~", "a: b", "#x", "- y", "体育", "'q'", "[z]", "yes"};
    c.data.labels_given = true;
    c.data.train = "data/x.jsonl";
    c.training.optimizer.lr = 1.0 / 3.0;
    c.training.optimizer.eps = 1e-300;
    c.training.schedule.warmup_ratio = 0.1 + 0.2;
    c.adversarial.epsilon = 5e-324;  // the smallest double
    c.model.bert.layer_norm_eps = 1e-12;
    c.model.bert.classifier_dropout = 0.0;
    const std::string y = to_yaml(c);
    const RunConfig back = parse_config(y, "again.yaml");
    CHECK(back == c);
    CHECK(back.data.labels == c.data.labels);
    // Strings another YAML reader would take for a number or a boolean are quoted.
    CHECK_THAT(y, Catch::Contains("\"true\", \"1\"") && Catch::Contains("\"yes\"]"));
  }
}

TEST_CASE("did-you-mean suggestions", "[unit][config]") {
  CHECK(edit_distance("trainig", "training") == 1);
  CHECK(edit_distance("trianing", "training") == 1);  // a swap counts 1
  CHECK(edit_distance("Training", "training") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(closest_match("batchsize", {"batch_size", "epochs"}) == "batch_size");
  CHECK(closest_match("lrr", {"lr", "eps"}) == "lr");
  CHECK(closest_match("xyz", {"lr", "eps"}).empty());
  CHECK(closest_match("learning_rate", {"lr", "weight_decay"}).empty());
  CHECK(did_you_mean("adam", {"adamw", "sgd"}) == " (did you mean 'adamw'?)");
  CHECK(did_you_mean("qqq", {"adamw", "sgd"}).empty());
}

TEST_CASE("objective keys: loss - early_stopping - rdrop - masked_lm - distill parse and round-trip",
          "[unit][config]") {
  const RunConfig d = parse_config("", "d.yaml");
  CHECK(d.training.loss == LossConfig{});
  CHECK(d.training.early_stopping.patience == 0);
  CHECK(d.training.early_stopping.metric.empty());
  CHECK(d.adversarial.rdrop_alpha == 1.0);
  CHECK(d.model.mlm_probability == 0.15);
  CHECK_FALSE(d.model.whole_word_mask);
  CHECK(d.distill.teacher.empty());
  CHECK(to_yaml(d).find("distill:") == std::string::npos);  // absent = off

  const RunConfig c = parse_config(R"(
task: token_classification
training:
  loss: {label_smoothing: 0.1, focal_gamma: 2, class_weights: [1, 2.5, 0.5]}
  early_stopping: {patience: 3, metric: loss, min_delta: 0.01}
data: {dev: d.jsonl}
adversarial: {method: rdrop, rdrop_alpha: 4}
distill: {teacher: runs/t/best, temperature: 3, alpha: 0.25}
)",
                                   "c.yaml");
  CHECK(c.training.loss.label_smoothing == 0.1);
  CHECK(c.training.loss.focal_gamma == 2.0);
  CHECK(c.training.loss.class_weights_mode == ClassWeights::List);
  CHECK(c.training.loss.class_weights == std::vector<double>{1.0, 2.5, 0.5});
  CHECK(c.training.early_stopping.patience == 3);
  CHECK(c.training.early_stopping.metric == "loss");
  CHECK(c.adversarial.method == AdversarialMethod::RDrop);
  CHECK(c.adversarial.rdrop_alpha == 4.0);
  CHECK(c.distill.teacher == "runs/t/best");
  CHECK(c.distill.temperature == 3.0);
  CHECK(parse_config(to_yaml(c), "again.yaml") == c);
  const RunConfig b = parse_config("training: {loss: {class_weights: balanced}}\n", "b.yaml");
  CHECK(b.training.loss.class_weights_mode == ClassWeights::Balanced);
  CHECK(parse_config(to_yaml(b), "again.yaml") == b);
  const RunConfig m = parse_config("task: masked_lm\nmodel: {mlm_probability: 0.3, whole_word_mask: true}\n", "m.yaml");
  CHECK(m.task == Task::MaskedLm);
  CHECK(m.model.mlm_probability == 0.3);
  CHECK(parse_config(to_yaml(m), "again.yaml") == m);
}

TEST_CASE("objective keys: each class of bad value names the key", "[unit][config]") {
  CHECK_THAT(
      error_of("training: {loss: {class_weights: heavy}}"),
      Catch::Contains("training.loss.class_weights: expected null, balanced, or a non-empty list of numbers > 0"));
  CHECK_THAT(error_of("training: {loss: {class_weights: [1, -2]}}"), Catch::Contains("training.loss.class_weights"));
  CHECK_THAT(error_of("training: {loss: {label_smoothing: 1.0}}"), Catch::Contains("training.loss.label_smoothing"));
  CHECK_THAT(error_of("training: {loss: {focal_gamma: -1}}"), Catch::Contains("training.loss.focal_gamma"));
  CHECK_THAT(error_of("task: regression\ntraining: {loss: {label_smoothing: 0.1}}"),
             Catch::Contains("training.loss: expected the defaults") && Catch::Contains("task regression"));
  CHECK_THAT(error_of("data: {labels: [a, b]}\ntraining: {loss: {class_weights: [1, 2, 3]}}"),
             Catch::Contains("expected one weight per label (2 in data.labels), got 3"));
  CHECK_THAT(error_of("training: {early_stopping: {patience: 2}}"),
             Catch::Contains("training.early_stopping.patience: expected 0 without data.dev"));
  CHECK_THAT(error_of("training: {early_stopping: {patience: -1}}"),
             Catch::Contains("training.early_stopping.patience"));
  CHECK_THAT(error_of("training: {early_stopping: {patiense: 2}}"), Catch::Contains("did you mean 'patience'"));
  CHECK_THAT(error_of("adversarial: {method: rdrop, rdrop_alpha: -1}"), Catch::Contains("adversarial.rdrop_alpha"));
  CHECK_THAT(error_of("task: masked_lm\nadversarial: {method: fgm}"),
             Catch::Contains("adversarial.method: expected none for task masked_lm"));
  CHECK_THAT(error_of("task: masked_lm\ndata: {text_fields: [a, b]}"),
             Catch::Contains("exactly 1 field (the text) for masked_lm"));
  CHECK_THAT(error_of("task: masked_lm\nmodel: {mlm_probability: 0}"), Catch::Contains("model.mlm_probability"));
  CHECK_THAT(error_of("task: multilabel\ndistill: {teacher: t}"),
             Catch::Contains("distill.teacher: expected null for task multilabel"));
  CHECK_THAT(error_of("distill: {teacher: t, temperature: 0}"), Catch::Contains("distill.temperature"));
  CHECK_THAT(error_of("distill: {teacher: t, alpha: 1.5}"), Catch::Contains("distill.alpha"));
}

TEST_CASE("review fixes: an lr float32 cannot hold and rdrop with regression are config errors", "[unit][config]") {
  CHECK_THAT(error_of("training: {optimizer: {lr: 1.0e39}}"),
             Catch::Contains("training.optimizer.lr: expected a number > 0 that float32 can hold"));
  CHECK_NOTHROW(parse_config("training: {optimizer: {lr: 3.0e38}}", "ok.yaml"));
  CHECK_THAT(error_of("task: regression\nadversarial: {method: rdrop}"),
             Catch::Contains("adversarial.method: expected none, fgm, pgd, freelb or freeat for task regression") &&
                 Catch::Contains("got rdrop"));
  CHECK_NOTHROW(parse_config("task: classification\nadversarial: {method: rdrop}", "ok.yaml"));
}

TEST_CASE("config_changes names each key that differs from an earlier run's config", "[unit][config]") {
  const RunConfig before = parse_config("training: {optimizer: {lr: 2.0e-4}, max_steps: 10}", "a.yaml");
  const RunConfig now = parse_config("training: {optimizer: {lr: 5.0e-5}, max_steps: 20}", "b.yaml");
  const auto changes = config_changes(to_yaml(before), now);
  REQUIRE(changes.size() == 2);
  CHECK(changes[0] == "training.max_steps 10 -> 20");
  CHECK(changes[1] == "training.optimizer.lr 0.0002 -> 5e-05");
  CHECK(config_changes(to_yaml(now), now).empty());
  CHECK(config_changes("", now).empty());
  CHECK(config_changes("[not, a, mapping]", now).empty());
  const RunConfig d = parse_config("distill: {teacher: t}", "c.yaml");
  CHECK(config_changes(to_yaml(before), d).size() >= 3);  // distill.* (absent) -> ..., lr, max_steps
}

TEST_CASE("model.config: a mapping of HF fields kept as JSON, written back the same, --set reaches it",
          "[unit][config]") {
  const RunConfig c = parse_config(
      "model:\n  config:\n    hidden_dropout_prob: 0.25\n    classifier_dropout: null\n"
      "    num_hidden_layers: 4\n    hidden_act: gelu_new\n    pos_att_type: [p2c, c2p]\n    legacy: false\n"
      "    label: '1'\n",
      "cfg.yaml", {"model.config.max_position_embeddings=64"});
  const nlohmann::json& j = c.model.config;
  CHECK(j.at("hidden_dropout_prob") == 0.25);
  CHECK(j.at("classifier_dropout").is_null());
  CHECK(j.at("num_hidden_layers").is_number_integer());
  CHECK(j.at("hidden_act") == "gelu_new");
  CHECK(j.at("pos_att_type") == nlohmann::json({"p2c", "c2p"}));
  CHECK(j.at("legacy") == false);
  CHECK(j.at("label") == "1");  // quoted: a string
  CHECK(j.at("max_position_embeddings") == 64);
  const RunConfig back = parse_config(to_yaml(c), "config.yaml");
  CHECK(back.model.config == j);
  CHECK(back == c);
  // Absent: an empty mapping, written as {}.
  const RunConfig plain = parse_config("task: classification\n", "cfg.yaml");
  CHECK(plain.model.config.empty());
  CHECK_THAT(to_yaml(plain), Catch::Contains("config: {}"));
  CHECK_THAT(error_of("model: {config: 3}\n"),
             Catch::StartsWith("cfg.yaml: model.config: expected a mapping of HF config fields (e.g. "
                               "{hidden_dropout_prob: 0.2}), got '3'"));
  CHECK_THAT(error_of("model: {config: [a, b]}\n"), Catch::StartsWith("cfg.yaml: model.config: expected a mapping"));
}

TEST_CASE("task embedding: each class of bad embedding setting is an error naming its key", "[unit][config]") {
  CHECK_THAT(error_of("task: embedding\ndata: {text_fields: [a]}"),
             Catch::Contains("data.text_fields: expected 2 or more fields for embedding"));
  CHECK_THAT(error_of("task: embedding\ndata: {text_fields: [a, b, a]}"),
             Catch::Contains("data.text_fields: expected different fields, got 'a' twice"));
  CHECK_THAT(error_of("task: embedding\ndata: {text_fields: [a, b, c]}\nembedding: {loss: cosent}"),
             Catch::Contains("embedding.loss: expected mnrl or cached_mnrl with 3 data.text_fields"));
  CHECK_THAT(error_of("task: embedding\nembedding: {loss: cosine, symmetric: true}"),
             Catch::Contains("embedding.symmetric: expected false for loss cosine"));
  CHECK_THAT(error_of("task: embedding\nembedding: {matryoshka_dims: [64, 32], matryoshka_weights: [1]}"),
             Catch::Contains("embedding.matryoshka_weights: expected one weight per matryoshka_dims entry (2), got 1"));
  CHECK_THAT(error_of("task: embedding\nembedding: {matryoshka_dims: [64, 64]}"),
             Catch::Contains("embedding.matryoshka_dims: expected distinct sizes, got 64 twice"));
  CHECK_THAT(error_of("task: embedding\nembedding: {matryoshka_dims: [64, -1]}"),
             Catch::Contains("embedding.matryoshka_dims[1]: expected"));
  CHECK_THAT(error_of("task: embedding\nembedding: {loss: triplet}"),
             Catch::Contains("embedding.loss: expected one of mnrl | cached_mnrl | cosent | cosine"));
  CHECK_THAT(error_of("task: embedding\nmodel: {pooling: avg}"),
             Catch::Contains("model.pooling: expected one of mean | cls | max | lasttoken"));
  CHECK_THAT(error_of("task: embedding\nmodel: {normalize: sometimes}"),
             Catch::Contains("model.normalize: expected true, false or null"));
  CHECK_THAT(error_of("task: classification\nmodel: {pooling: mean}"),
             Catch::Contains("model.pooling: expected null for task classification"));
  CHECK_THAT(error_of("task: embedding\nadversarial: {method: fgm}"),
             Catch::Contains("adversarial.method: expected none for task embedding, got fgm"));
}

TEST_CASE("distill.intermediate: absent, uniform when given, pairs, and bad values", "[unit][config]") {
  CHECK_FALSE(parse_config("distill: {teacher: t}\n", "c.yaml").distill.intermediate.on());
  const RunConfig given = parse_config("distill: {teacher: t, intermediate: {attention_weight: 0}}\n", "c.yaml");
  CHECK(given.distill.intermediate.layers == LayerMap::Uniform);
  CHECK(given.distill.intermediate.attention_weight == 0.0);
  const RunConfig pairs = parse_config("distill: {teacher: t, intermediate: {layers: [[1, 2], [2, 4]]}}\n", "c.yaml");
  CHECK(pairs.distill.intermediate.layers == LayerMap::Pairs);
  CHECK(pairs.distill.intermediate.layer_pairs == std::vector<int64_t>{1, 2, 2, 4});
  // Written and read back the same.
  CHECK(parse_config(to_yaml(pairs), "w.yaml").distill == pairs.distill);
  CHECK(parse_config(to_yaml(given), "w.yaml").distill == given.distill);
  CHECK_THAT(error_of("distill: {teacher: t, intermediate: {layers: [[0, 1]]}}"),
             Catch::Contains("distill.intermediate.layers: expected uniform or a non-empty list"));
  CHECK_THAT(error_of("distill: {teacher: t, intermediate: {layers: [1, 2]}}"),
             Catch::Contains("distill.intermediate.layers: expected uniform"));
  CHECK_THAT(error_of("distill: {teacher: t, intermediate: {layers: every}}"),
             Catch::Contains("distill.intermediate.layers"));
  CHECK_THAT(error_of("distill: {teacher: t, intermediate: {hidden_weight: -1}}"),
             Catch::Contains("distill.intermediate.hidden_weight"));
  CHECK_THAT(error_of("distill: {intermediate: {layers: uniform}}"),
             Catch::Contains("expected distill.teacher with distill.intermediate"));
  CHECK_THAT(error_of("distill: {teacher: t, intermediate: {hidden: 1}}"),
             Catch::Contains("distill.intermediate.hidden"));
}

TEST_CASE("model.early_exit: classification only, without a teacher", "[unit][config]") {
  const RunConfig ok = parse_config("task: classification\nmodel: {early_exit: true}\n", "c.yaml");
  CHECK(ok.model.early_exit);
  CHECK_THAT(error_of("task: regression\nmodel: {early_exit: true}"),
             Catch::Contains("model.early_exit: expected false for task regression"));
  CHECK_THAT(error_of("task: token_classification\nmodel: {early_exit: true}"),
             Catch::Contains("model.early_exit: expected false for task token_classification"));
  CHECK_THAT(error_of("task: classification\nmodel: {early_exit: true}\ndistill: {teacher: t}"),
             Catch::Contains("distill.teacher: expected null with model.early_exit"));
  CHECK_THAT(error_of("task: classification\nmodel: {early_exit: maybe}"),
             Catch::Contains("model.early_exit: expected true or false"));
}

TEST_CASE("replaced_token_detection: its keys, and each class of bad setting an error naming its key",
          "[unit][config]") {
  const RunConfig ok = parse_config(
      "task: replaced_token_detection\nmodel: {generator: {config: {hidden_size: 64, num_attention_heads: 1}}}\n"
      "electra: {rtd_weight: 20}\n",
      "c.yaml");
  CHECK(ok.task == Task::ReplacedTokenDetection);
  CHECK(ok.model.generator.config.at("hidden_size") == 64);
  CHECK(ok.electra.rtd_weight == 20.0);
  CHECK(parse_config("task: replaced_token_detection\n", "c.yaml").electra.rtd_weight == 50.0);
  CHECK_THAT(error_of("task: masked_lm\nmodel: {generator: {config: {hidden_size: 64}}}"),
             Catch::Contains("model.generator.config: expected {} for task masked_lm"));
  CHECK_THAT(error_of("task: replaced_token_detection\nadversarial: {method: fgm}"),
             Catch::Contains("adversarial.method: expected none for task replaced_token_detection"));
  CHECK_THAT(error_of("task: replaced_token_detection\nelectra: {rtd_weight: -1}"),
             Catch::Contains("electra.rtd_weight"));
  CHECK_THAT(error_of("task: replaced_token_detection\nmodel: {generator: {config: [64]}}"),
             Catch::Contains("model.generator.config: expected a mapping of HF config fields"));
  CHECK_THAT(error_of("task: replaced_token_detection\ndistill: {teacher: runs/t}"),
             Catch::Contains("distill.teacher: expected null for task replaced_token_detection"));
  CHECK_THAT(error_of("task: replaced_token_detection\nelectra: {rtd_wieght: 2}"),
             Catch::Contains("did you mean 'rtd_weight'"));
}

TEST_CASE("model.crf: each class of bad CRF setting is an error naming its key", "[unit][config]") {
  const RunConfig ok =
      parse_config("task: token_classification\nmodel: {crf: true}\ncrf: {constrained: false}\n", "c.yaml");
  CHECK(ok.model.crf);
  CHECK_FALSE(ok.crf.constrained);
  CHECK_THAT(error_of("task: classification\nmodel: {crf: true}"),
             Catch::Contains("model.crf: expected false for task classification"));
  CHECK_THAT(error_of("task: token_classification\nmodel: {crf: true}\ntraining: {loss: {focal_gamma: 2}}"),
             Catch::Contains("training.loss: expected the defaults with model.crf"));
  CHECK_THAT(error_of("task: token_classification\nmodel: {crf: true}\ndistill: {teacher: t}"),
             Catch::Contains("distill.teacher: expected null with model.crf"));
  CHECK_THAT(error_of("task: token_classification\nmodel: {crf: yes please}"),
             Catch::Contains("model.crf: expected true or false"));
  CHECK_THAT(error_of("task: token_classification\ncrf: {constrain: true}"), Catch::Contains("crf.constrain"));
  // Unanswerable questions' keys.
  CHECK_THAT(error_of("task: span_extraction\nspan: {verifier: true}\ndistill: {teacher: t}"),
             Catch::Contains("distill.teacher: expected null with span.verifier"));
  CHECK_THAT(error_of("task: span_extraction\nspan: {verifier_weight: 1.5}"),
             Catch::Contains("span.verifier_weight: expected a number in [0, 1]"));
  CHECK_THAT(error_of("task: span_extraction\nspan: {null_score_diff_threshold: high}"),
             Catch::Contains("span.null_score_diff_threshold: expected a number"));
}

TEST_CASE("data.retrieval: a queries and a corpus file for task embedding, written and read back", "[unit][config]") {
  const RunConfig c = parse_config(
      "task: embedding\ndata: {retrieval: {queries: q.jsonl, corpus: c.jsonl}}\ntraining: {best_metric: mrr@10}\n",
      "cfg.yaml");
  CHECK(c.data.retrieval.queries == "q.jsonl");
  CHECK(c.data.retrieval.corpus == "c.jsonl");
  CHECK(parse_config(to_yaml(c), "config.yaml") == c);
  // Not given: written as nulls, read back as not given.
  const RunConfig plain = parse_config("task: embedding\n", "cfg.yaml");
  CHECK_FALSE(plain.data.retrieval.given());
  CHECK_THAT(to_yaml(plain), Catch::Contains("  retrieval:\n    queries: ~\n    corpus: ~\n"));
  CHECK(parse_config(to_yaml(plain), "config.yaml") == plain);
  CHECK_THAT(error_of("task: classification\ndata: {retrieval: {queries: q.jsonl, corpus: c.jsonl}}"),
             Catch::Contains("data.retrieval: expected null for task classification"));
  CHECK_THAT(error_of("task: embedding\ndata: {retrieval: {queries: q.jsonl}}"),
             Catch::Contains("data.retrieval: expected both queries and corpus (two JSONL files), got no corpus"));
  CHECK_THAT(error_of("task: embedding\ndata: {retrieval: {corpus: c.jsonl, query: q.jsonl}}"),
             Catch::Contains("data.retrieval.query"));
  CHECK_THAT(error_of("task: embedding\ndata: {retrieval: {queries: q.jsonl, corpus: c.jsonl}}\n"
                      "training: {best_metric: ndcg@100}"),
             Catch::Contains("training.best_metric: expected a dev metric of task embedding"));
}
