// The task table (framework/common/task.h) and the architecture table (models/architectures.h):
// names round trip, every row is consistent with the metric families, and the loaders that read a
// task from config.json (load_pretrained for model.pretrained, load_model_dir for --model and
// distill.teacher) agree, including the HF rule for no `architectures` and num_labels 1.
#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/checkpoint/pretrained.h"
#include "framework/common/task.h"
#include "framework/config/run_config.h"
#include "framework/metrics/metric_set.h"
#include "framework/model/model_dir.h"
#include "models/architectures.h"
#include "support/user_error.h"

using namespace unif;
using unif::test::user_error_of;

TEST_CASE("task table: one row per task, in enum order, names round trip", "[unit][tables]") {
  for (size_t i = 0; i < kTaskSpecs.size(); ++i) {
    const TaskSpec& t = kTaskSpecs[i];
    CHECK(static_cast<size_t>(t.task) == i);
    CHECK(find_task(t.name) == t.task);
    CHECK(framework::parse_task(t.name) == t.task);
    CHECK(to_string(t.task) == t.name);
  }
  CHECK(task_names() == std::vector<std::string>{"classification", "multilabel", "regression", "token_classification",
                                                 "span_extraction", "masked_lm", "embedding",
                                                 "replaced_token_detection"});
  CHECK_FALSE(find_task("ner").has_value());
  CHECK(user_error_of([] { framework::parse_task("clasification"); }).find("unknown task 'clasification'") !=
        std::string::npos);
  // The per-task metric family (framework/metrics) and its main metric.
  CHECK(framework::main_metric(framework::metric_kind(Task::Classification)) == "accuracy");
  CHECK(framework::main_metric(framework::metric_kind(Task::Multilabel)) == "micro_f1");
  CHECK(framework::main_metric(framework::metric_kind(Task::Regression)) == "pearson");
  CHECK(framework::main_metric(framework::metric_kind(Task::TokenClassification)) == "f1");
  CHECK(framework::main_metric(framework::metric_kind(Task::SpanExtraction)) == "f1");
  CHECK(framework::main_metric(framework::metric_kind(Task::MaskedLm)) == "perplexity");
  CHECK(framework::main_metric(framework::metric_kind(Task::ReplacedTokenDetection)) == "loss");
  for (const auto& t : kTaskSpecs) CHECK(framework::metric_kind_for_task(t.name) == framework::metric_kind(t.task));
  // Defaults of the data section and the head size.
  CHECK(default_fields(Task::TokenClassification).text_fields == std::vector<std::string>{"tokens"});
  CHECK(default_fields(Task::SpanExtraction).label_field == "answers");
  CHECK(default_fields(Task::MaskedLm).text_fields == std::vector<std::string>{"text"});
  CHECK(head_num_labels(Task::Regression, 0) == 1);
  CHECK(head_num_labels(Task::Classification, 3) == 3);
  CHECK(has_label_set(Task::Multilabel));
  CHECK_FALSE(has_label_set(Task::SpanExtraction));
}

TEST_CASE("architecture table: bert's row; an unknown model type names the supported ones", "[unit][tables]") {
  REQUIRE(models::find_architecture("bert") != nullptr);
  const models::Architecture& bert = models::architecture("bert");
  CHECK(bert.checkpoint_prefix() == "bert.");
  CHECK(std::string(bert.tokenizer) == "WordPiece");
  CHECK(bert.positions == models::PositionScheme::Absolute);
  CHECK(bert.token_type_ids);
  CHECK(models::find_architecture("gpt2") == nullptr);
  CHECK_THROWS_WITH(models::architecture("gpt2"), Catch::Contains("supported model types: \"bert\", \"roberta\""));
  CHECK(models::hf_class_name(bert, Task::Classification) == "BertForSequenceClassification");
  CHECK(models::hf_class_name(bert, Task::Regression) == "BertForSequenceClassification");
  CHECK(models::hf_class_name(bert, Task::TokenClassification) == "BertForTokenClassification");
  CHECK(models::hf_class_name(bert, Task::SpanExtraction) == "BertForQuestionAnswering");
  CHECK(models::hf_class_name(bert, Task::MaskedLm) == "BertForMaskedLM");
  // Every head's name and problem_type read back as its task; BertForPreTraining (MLM + next
  // sentence) is no replaced-token discriminator: ELECTRA's ForPreTraining alone is.
  for (const auto& t : kTaskSpecs) {
    INFO(t.name);
    if (t.task == Task::ReplacedTokenDetection)
      CHECK_FALSE(models::task_from_hf({models::hf_class_name(bert, t.task)}, t.problem_type, 1).has_value());
    else
      CHECK(models::task_from_hf({models::hf_class_name(bert, t.task)}, t.problem_type, 1) == t.task);
  }
  CHECK(models::task_from_hf({"ElectraForPreTraining"}, "", 2) == Task::ReplacedTokenDetection);
}

TEST_CASE("architecture table: MPNet's row, its classes and its input length", "[unit][tables][mpnet]") {
  const models::Architecture& mpnet = models::architecture("mpnet");
  CHECK(mpnet.checkpoint_prefix() == "mpnet.");
  CHECK(std::string(mpnet.tokenizer) == "WordPieceMPNet");
  CHECK(mpnet.positions == models::PositionScheme::Offset);
  CHECK_FALSE(mpnet.token_type_ids);
  CHECK_FALSE(mpnet.sequence_pooler);
  CHECK(models::hf_class_name(mpnet, Task::Classification) == "MPNetForSequenceClassification");
  CHECK(models::hf_class_name(mpnet, Task::SpanExtraction) == "MPNetForQuestionAnswering");
  CHECK(models::hf_class_name(mpnet, Task::MaskedLm) == "MPNetForMaskedLM");
  CHECK(models::task_from_hf({"MPNetForTokenClassification"}, "", 5) == Task::TokenClassification);
  CHECK(models::task_from_hf({"MPNetModel"}, "", 2) == Task::Embedding);
  // Positions start after HF's padding_idx 1 whatever pad_token_id says (MPNetEmbeddings); RoBERTa's
  // after pad_token_id.
  models::EncoderConfig o;
  o.model_type("mpnet").max_position_embeddings(514).pad_token_id(0);
  CHECK(models::max_input_length(o) == 512);
  o.model_type("roberta");
  CHECK(models::max_input_length(o) == 513);
}

TEST_CASE("the loaders read the same task from config.json (HF's rule for num_labels 1)", "[unit][tables]") {
  const std::vector<std::vector<std::string>> architectures{{},
                                                            {"BertForSequenceClassification"},
                                                            {"BertForTokenClassification"},
                                                            {"BertForQuestionAnswering"},
                                                            {"BertForMaskedLM"},
                                                            {"BertModel"},
                                                            {"BertForPreTraining"}};
  const std::vector<std::string> problem_types{"", "single_label_classification", "multi_label_classification",
                                               "regression"};
  for (const auto& arch : architectures)
    for (const auto& problem_type : problem_types)
      for (int64_t num_labels : {1, 2, 5}) {
        framework::HfConfig hf;
        hf.architectures = arch;
        hf.problem_type = problem_type;
        hf.num_labels = num_labels;
        INFO((arch.empty() ? std::string("(none)") : arch.front())
             << " problem_type '" << problem_type << "' num_labels " << num_labels);
        const Task pretrained = framework::task_from_config(hf);
        const auto table = models::task_from_hf(hf.architectures, hf.problem_type, hf.num_labels);
        if (table) {
          CHECK(*table == pretrained);
          CHECK(framework::plain_hf_task(hf, "config.json") == pretrained);
        } else {  // no task head: a fresh sequence head for fine-tuning, nothing to evaluate
          CHECK(pretrained == *models::task_from_hf({}, hf.problem_type, hf.num_labels));
          CHECK(user_error_of([&] { framework::plain_hf_task(hf, "config.json"); }).find("is not a task model") !=
                std::string::npos);
        }
      }
  framework::HfConfig none;  // no architectures, no problem_type, one label: regression, as HF
  none.num_labels = 1;
  CHECK(framework::task_from_config(none) == Task::Regression);
  CHECK(framework::plain_hf_task(none, "config.json") == Task::Regression);
  none.num_labels = 2;
  CHECK(framework::task_from_config(none) == Task::Classification);
  CHECK(framework::plain_hf_task(none, "config.json") == Task::Classification);
}
