// build: the one place where config strings become concrete classes — the tokenizer, the BERT
// task model (pretrained or fresh), the encoded datasets, the gradient strategy. What evaluation
// shares with training (encoded data files, the loss, the distillation teacher) is in
// framework/model/setup.h, included here.
#pragma once
#include <memory>

#include "adversarial/strategy.h"
#include "framework/config/run_config.h"
#include "framework/model/model_dir.h"
#include "framework/model/setup.h"
#include "framework/train/parts.h"

namespace unif::framework {

/// Tokenizer, labels, encoded train/dev data and the BERT model of `cfg` (SPEC §3), ready for
/// Trainer. UserError on any bad input (files, labels, vocab/config mismatch).
TrainerParts build_trainer_parts(const RunConfig& cfg);

/// Resume: copies the weights of checkpoint `dir` into `model`. UserError naming `dir` and a few keys
/// when the checkpoint lacks a weight of the model or holds one the model does not have.
void load_checkpoint_weights(torch::nn::Module& model, const std::filesystem::path& dir);

/// The gradient strategy named by adversarial.method.
std::unique_ptr<adversarial::Strategy> make_strategy(const AdversarialConfig& cfg);

}  // namespace unif::framework
