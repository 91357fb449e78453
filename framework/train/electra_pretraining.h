// ELECTRA pretraining's parts of a run (task replaced_token_detection): the generator beside the
// discriminator build made, the pair as the trained model, and its saves. A save (final/, best/, a
// checkpoint) holds `discriminator/` (ElectraForPreTraining: the encoder to fine-tune) and
// `generator/` (ElectraForMaskedLM, the shared embeddings copied in, unif.yaml task masked_lm), each
// a complete HF model directory; a checkpoint's trainer state sits beside them.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/checkpoint/hf_config.h"
#include "framework/config/model_meta.h"
#include "framework/config/run_config.h"
#include "framework/model/tokenizer_files.h"
#include "framework/train/parts.h"
#include "models/heads/encoder_task_model.h"

namespace unif::framework {

/// Where a pretraining run's model.pretrained has both models (a previous run's final/): its
/// `discriminator/` and `generator/`; else {pretrained, ""}.
std::pair<std::filesystem::path, std::filesystem::path> pretraining_dirs(const std::filesystem::path& pretrained);

/// Sets parts.model (the generator and `discriminator` trained together), parts.save_model and
/// parts.load_model. The generator is read from `generator_dir` when given (model.generator.config
/// must then be empty), else made fresh: models::default_generator_options of the discriminator's
/// with model.generator.config's fields over it. UserError on a bad generator config.
void add_electra_pretraining(const RunConfig& cfg, std::shared_ptr<models::EncoderTaskModel> discriminator,
                             const HfConfig& discriminator_hf, const std::filesystem::path& generator_dir,
                             const TokenizerFiles& tokenizer, const ModelMeta& meta, TrainerParts& parts);

}  // namespace unif::framework
