// HF TrainingArguments names in a unif config (framework/config/hf_names): an unknown key that is an
// HF name says which unif key does the same, or that unif has none and what to do instead, at the
// top level and under `training:`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/config/config_keys.h"
#include "framework/config/hf_names.h"
#include "framework/config/run_config.h"

using namespace unif::framework;

namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "cfg.yaml", overrides);
  } catch (const ConfigError& e) { return e.what(); }
  FAIL("no ConfigError for:\n" << yaml);
  return "";
}

}  // namespace

TEST_CASE("an HF TrainingArguments name at the top level names the unif key", "[unit][config][hf]") {
  CHECK_THAT(error_of("learning_rate: 2.0e-5\n"),
             Catch::StartsWith("cfg.yaml: learning_rate: unknown key 'learning_rate' (did you mean "
                               "training.optimizer.lr (HF: learning_rate)?); known keys here: task,") &&
                 Catch::EndsWith("(line 1)"));
  CHECK_THAT(error_of("fp16: true\n"), Catch::Contains("(did you mean training.precision: fp16 (HF: fp16)?)"));
  CHECK_THAT(error_of("bf16: true\n"), Catch::Contains("(did you mean training.precision: bf16 (HF: bf16)?)"));
  // suggest_moved_keys' guess that already names the key stays as it was, with no second hint.
  CHECK_THAT(
      error_of("max_steps: 10\n"),
      Catch::Contains("unknown key 'max_steps' (did you mean 'training.max_steps'?);") && !Catch::Contains("HF:"));
  CHECK_THAT(error_of("training:\n  warmup_ratio: 0.2\n"),
             Catch::Contains("unknown key 'warmup_ratio' (did you mean 'training.schedule.warmup_ratio'?);"));
}

TEST_CASE("an HF name under training: names the unif key", "[unit][config][hf]") {
  CHECK_THAT(error_of("training:\n  num_train_epochs: 3\n"),
             Catch::StartsWith("cfg.yaml: training.num_train_epochs: unknown key 'num_train_epochs' (did you mean "
                               "training.epochs (HF: num_train_epochs;") &&
                 Catch::EndsWith("(line 2)"));
  // Any edit-distance guess among training's keys gives way to the HF hint.
  CHECK_THAT(error_of("training:\n  eval_steps: 100\n"),
             Catch::Contains("unknown key 'eval_steps' (did you mean training.eval_every (HF: eval_steps)?)"));
  // A key unif has at the top level keeps the moved-key guess.
  CHECK_THAT(error_of("training:\n  seed: 1\n"), Catch::Contains("unknown key 'seed' (did you mean 'seed'?);"));
  CHECK_THAT(error_of("training:\n  output_dir: x\n"),
             Catch::Contains("unknown key 'output_dir' (did you mean 'output_dir'?);"));
}

TEST_CASE("an HF name from --set gets the same hint", "[unit][config][hf]") {
  CHECK_THAT(error_of("", {"learning_rate=1e-4"}),
             Catch::Contains("unknown key 'learning_rate' (did you mean training.optimizer.lr (HF: learning_rate)?)") &&
                 Catch::Contains("(from --set learning_rate=1e-4)"));
}

TEST_CASE("every listed HF name gets a hint at the top level and under training", "[unit][config][hf]") {
  const std::vector<std::pair<std::string, std::string>> expected{
      {"learning_rate", "training.optimizer.lr"},
      {"num_train_epochs", "training.epochs"},
      {"per_device_train_batch_size", "training.batch_size"},
      {"per_device_eval_batch_size", "training.eval_batch_size"},
      {"gradient_accumulation_steps", "training.grad_accum_steps"},
      {"fp16", "training.precision: fp16"},
      {"bf16", "training.precision: bf16"},
      {"warmup_ratio", "training.schedule.warmup_ratio"},
      {"warmup_steps", "training.schedule.warmup_steps"},
      {"weight_decay", "training.optimizer.weight_decay"},
      {"max_grad_norm", "training.max_grad_norm"},
      {"evaluation_strategy", "has no unif key: unif evaluates data.dev every training.eval_every steps"},
      {"eval_strategy", "has no unif key: unif evaluates data.dev every training.eval_every steps"},
      {"eval_steps", "training.eval_every"},
      {"save_steps", "training.save_every"},
      {"save_total_limit", "training.keep_checkpoints"},
      {"logging_steps", "training.log_every"},
      {"metric_for_best_model", "training.best_metric"},
      {"load_best_model_at_end", "has no unif key: with data.dev, unif always writes best/"},
      {"report_to", "training.report_to: [tensorboard]"},
      {"seed", "seed"},
      {"max_steps", "training.max_steps"},
      {"lr_scheduler_type", "training.schedule.name"},
      {"adam_beta1", "training.optimizer.betas: [adam_beta1, adam_beta2]"},
      {"adam_beta2", "training.optimizer.betas: [adam_beta1, adam_beta2]"},
      {"adam_epsilon", "training.optimizer.eps"},
      {"output_dir", "output_dir"},
      {"resume_from_checkpoint", "training.resume"},
      {"label_smoothing_factor", "training.loss.label_smoothing"},
      {"max_seq_length", "model.max_seq_length"},
  };
  const auto keys = config_keys();
  for (const auto& [hf, want] : expected) {
    for (const std::string& where : {std::string("top"), std::string("training")}) {
      // seed, output_dir and max_grad_norm / max_steps / report_to are unif keys where HF users put them.
      const bool valid_there =
          (where == "top" && (hf == "seed" || hf == "output_dir")) ||
          (where == "training" && (hf == "max_grad_norm" || hf == "max_steps" || hf == "report_to"));
      if (valid_there) continue;
      const std::string yaml = where == "top" ? hf + ": 1\n" : "training:\n  " + hf + ": 1\n";
      const std::string message = error_of(yaml);
      INFO(where << ": " << message);
      const std::string hint = hf_hint(hf, keys);
      REQUIRE(!hint.empty());
      const auto& names = hf_names();
      const auto n = std::find_if(names.begin(), names.end(), [&](const HfName& x) { return x.hf == hf; });
      REQUIRE(n != names.end());
      // Either the HF hint, or the moved-key guess when it already names the same key.
      CHECK_THAT(message, Catch::Contains("unknown key '" + hf + "' (" + hint + ")") ||
                              Catch::Contains("unknown key '" + hf + "' (did you mean '" + n->unif + "'?)"));
      if (!want.empty() && want.rfind("has no", 0) == 0) {
        CHECK_THAT(hint, Catch::StartsWith("HF's " + hf + " " + want));
      } else if (!want.empty()) {
        CHECK_THAT(hint, Catch::StartsWith("did you mean " + want + " (HF: " + hf));
      }
    }
  }
}

TEST_CASE("an HF name whose unif key this build lacks says what to do instead", "[unit][config][hf]") {
  // A name with a fallback says it when the schema lacks the key; one without says nothing then.
  CHECK_THAT(hf_hint("load_best_model_at_end", {"training.epochs"}),
             Catch::StartsWith("HF's load_best_model_at_end has no unif key: with data.dev, unif always writes best/"));
  CHECK(hf_hint("metric_for_best_model", {"training.epochs"}).empty());
  CHECK_THAT(hf_hint("metric_for_best_model", {"training.best_metric"}),
             Catch::StartsWith("did you mean training.best_metric (HF: metric_for_best_model; a dev metric name"));
  CHECK_THAT(hf_hint("report_to", {"training.report_to"}),
             Catch::StartsWith("did you mean training.report_to: [tensorboard] (HF: report_to; tensorboard only"));
  CHECK(hf_hint("not_an_hf_name", config_keys()).empty());
}

TEST_CASE("every HF name's unif key is a key the parser accepts (or a documented future one)", "[unit][config][hf]") {
  const auto keys = config_keys();
  for (const auto& n : hf_names()) {
    INFO(n.hf << " -> " << n.unif);
    if (n.unif.empty()) {
      CHECK(!n.fallback.empty());
      continue;
    }
    const bool accepted = std::find(keys.begin(), keys.end(), n.unif) != keys.end();
    // A target not in this build (a key another branch adds) must carry a fallback.
    CHECK((accepted || !n.fallback.empty()));
  }
}

TEST_CASE("HF names deeper than a section get no HF hint (training.optimizer.learning_rate)", "[unit][config][hf]") {
  CHECK_THAT(error_of("training:\n  optimizer: {learning_rate: 0.1}\n"), !Catch::Contains("HF:"));
}
