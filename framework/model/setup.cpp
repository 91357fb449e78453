// setup: what a run configuration makes that training and evaluation share (see setup.h).
#include "framework/model/setup.h"

#include "framework/common/error.h"
#include "framework/data/records.h"
#include "framework/model/sentence_transformers.h"
#include "framework/model/tokenizer_files.h"
#include "models/architectures.h"
#include "models/heads/distillation.h"
#include "models/heads/embedding_model.h"
#include "models/heads/loss.h"
#include "models/heads/sequence_classification.h"
#include "models/heads/span_extraction.h"
#include "models/heads/token_classification.h"

namespace unif::framework {

namespace fs = std::filesystem;

MlmMasking mlm_masking(const RunConfig& cfg, const Tokenizer& tokenizer) {
  MlmMasking m;
  m.probability = cfg.model.mlm_probability;
  m.whole_word = cfg.model.whole_word_mask;
  m.seed = static_cast<uint64_t>(cfg.seed);
  m.uniforms = cfg.task == Task::ReplacedTokenDetection;  // the generator samples with them
  const std::string& mask = tokenizer.specials().mask;
  m.vocab_size = tokenizer.vocab_size();
  if (tokenizer.find_id(mask) < 0)
    throw UserError("task " + to_string(cfg.task) + ": the vocabulary has no " + mask + " token");
  m.mask_id = tokenizer.token_to_id(mask);
  return m;
}

TaskData load_task_data(Task task, const DataConfig& data, const LabelSet& labels, const std::string& file,
                        const Tokenizer& tokenizer, int64_t max_seq_length, const std::string& truncate_method,
                        bool require_labels, const SpanConfig& span, const MlmMasking& mlm) {
  TaskData d;
  d.file = file;
  d.span = span;
  if (task_spec(task).input == TaskInput::MlmText) {
    d.examples = read_mlm_examples(file, data);
    d.encoded = encode_mlm_examples(d.examples, tokenizer, max_seq_length);
    d.mlm = mlm;
    if (!d.mlm.enabled()) {
      d.mlm.mask_id = tokenizer.token_to_id(tokenizer.specials().mask);
      d.mlm.vocab_size = tokenizer.vocab_size();
    }
    return d;
  }
  // Embedding: a dev or test file of scored pairs (the first two text fields and a score) beside a
  // training file with hard negatives is evaluated as pairs; a file whose first record holds the
  // third field is read with every field.
  DataConfig fields = data;
  if (task_spec(task).input == TaskInput::Texts && fields.text_fields.size() > 2) fields.text_fields.resize(2);
  auto records = read_records(file, record_fields(task, fields, require_labels));
  if (fields.text_fields.size() != data.text_fields.size() && !records.empty() && records.front().fields.is_object() &&
      records.front().fields.contains(data.text_fields[2]))
    fields = data;
  d.examples = make_examples(task, fields, labels, file, records, require_labels);
  d.windows = TextWindows::of(data.long_text, data.long_text_stride, data.long_text_pooling);
  d.encoded = encode_examples(task, d.examples, tokenizer, static_cast<int>(max_seq_length),
                              parse_truncate_method(truncate_method), span, d.windows);
  return d;
}

std::shared_ptr<models::TaskModel> distillation_model(const RunConfig& cfg,
                                                      std::shared_ptr<models::EncoderTaskModel> student,
                                                      const Tokenizer& tokenizer, const LabelSet& labels) {
  const std::string where = "distill.teacher: '" + cfg.distill.teacher + "'";
  LoadedModel teacher;
  try {
    teacher = load_model_dir(cfg.distill.teacher);
  } catch (const UserError& e) { throw UserError(where + ": " + e.what()); }
  if (teacher.meta.task != cfg.task)
    throw UserError(where + " was trained for task " + to_string(teacher.meta.task) + ", the run is " +
                    to_string(cfg.task));
  if (has_label_set(cfg.task) && teacher.meta.labels != labels.names)
    throw UserError(where + " has another label set (" + std::to_string(teacher.meta.labels.size()) +
                    " labels, or another order) than the run (" + std::to_string(labels.size()) +
                    "): set data.labels to the teacher's labels");
  if (!same_vocabulary(*teacher.tokenizer, tokenizer))
    throw UserError(where + " has another vocabulary than the student (" +
                    teacher.tokenizer_files.files.front().string() + "): distillation needs the same token ids");
  if (cfg.model.max_seq_length > models::max_input_length(teacher.hf.bert))
    throw UserError(where + ": model.max_seq_length " + std::to_string(cfg.model.max_seq_length) +
                    " exceeds the teacher's max_position_embeddings");
  // The teacher must see the run's text as it was trained to: the same lower-casing, the same
  // fields (a plain HF teacher records none), and token types it has.
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  if (teacher.meta.do_lower_case != cfg.model.do_lower_case)
    throw UserError(where + " was trained with do_lower_case " + flag(teacher.meta.do_lower_case) +
                    ", the run has model.do_lower_case " + flag(cfg.model.do_lower_case) +
                    ": the teacher would see differently tokenized text");
  const auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& f : v) out += (out.empty() ? "" : ", ") + f;
    return "[" + out + "]";
  };
  std::error_code ec;
  if (fs::exists(fs::path(cfg.distill.teacher) / "unif.yaml", ec) && teacher.meta.text_fields != cfg.data.text_fields)
    throw UserError(where + " was trained on text_fields " + list(teacher.meta.text_fields) +
                    ", the run's data.text_fields are " + list(cfg.data.text_fields) +
                    ": distillation feeds the teacher the run's inputs");
  check_segments(cfg.task, cfg.data.text_fields, "data.text_fields", models::usable_token_types(teacher.hf.bert),
                 "distill.teacher (" + (fs::path(cfg.distill.teacher) / "config.json").string() + ")");
  std::optional<models::IntermediateDistillation> layerwise;
  if (const IntermediateConfig& ic = cfg.distill.intermediate; ic.on()) {
    models::IntermediateDistillation d;
    if (ic.layers == LayerMap::Uniform)
      d.layers = models::uniform_layer_map(student->options().num_hidden_layers(),
                                           teacher.model->options().num_hidden_layers());
    for (size_t i = 0; i + 1 < ic.layer_pairs.size(); i += 2)
      d.layers.emplace_back(ic.layer_pairs[i], ic.layer_pairs[i + 1]);
    d.hidden_weight = ic.hidden_weight;
    d.attention_weight = ic.attention_weight;
    d.embedding_weight = ic.embedding_weight;
    layerwise = std::move(d);
  }
  try {
    return std::make_shared<models::DistillationModel>(std::move(student), teacher.model, cfg.distill.temperature,
                                                       cfg.distill.alpha, std::move(layerwise));
  } catch (const std::invalid_argument& e) { throw UserError(where + ": " + e.what()); }
}

torch::Tensor class_weights_for(const RunConfig& cfg, const LabelSet& labels, const TaskData& train,
                                std::vector<std::string>* notes) {
  const LossConfig& lc = cfg.training.loss;
  if (lc.class_weights_mode == ClassWeights::List) {
    if (static_cast<int64_t>(lc.class_weights.size()) != labels.size())
      throw UserError("training.loss.class_weights: expected one weight per label (" + std::to_string(labels.size()) +
                      " labels), got " + std::to_string(lc.class_weights.size()));
    return torch::tensor(lc.class_weights, torch::kFloat64).to(torch::kFloat32);
  }
  if (lc.class_weights_mode != ClassWeights::Balanced) return {};
  std::vector<int64_t> counts(static_cast<size_t>(labels.size()), 0);
  if (task_spec(cfg.task).labels == TaskLabels::TagList) {  // counts per labelled token
    for (const auto& e : train.encoded)
      for (auto y : e.token_labels)
        if (y >= 0) ++counts[static_cast<size_t>(y)];
  } else {
    for (const auto& ex : train.examples) ++counts[static_cast<size_t>(ex.labels.at(0))];
  }
  auto weights = models::balanced_class_weights(counts);
  if (notes) {
    std::string list;
    for (int64_t c = 0; c < labels.size(); ++c)
      list += (c ? ", " : "") + labels.names[static_cast<size_t>(c)] + "=" + std::to_string(weights[c].item<double>());
    notes->push_back("training.loss.class_weights: balanced: " + list);
  }
  return weights;
}

void apply_training_loss(const RunConfig& cfg, models::EncoderTaskModel& model, const torch::Tensor& class_weights) {
  models::LossOptions loss;
  loss.label_smoothing = cfg.training.loss.label_smoothing;
  loss.focal_gamma = cfg.training.loss.focal_gamma;
  loss.class_weights = class_weights;
  model.set_loss_options(loss);
}

void apply_embedding(const RunConfig& cfg, models::EncoderTaskModel& model, const fs::path& st_dir) {
  auto* embedder = dynamic_cast<models::EncoderForEmbeddingImpl*>(&model);
  if (embedder == nullptr) return;
  models::EmbeddingOptions o = embedder->embedding_options();
  std::optional<SentenceTransformersModules> st;
  if (!st_dir.empty()) st = read_sentence_transformers(st_dir);
  if (cfg.model.pooling)
    o.pooling = *enum_from_name<Pooling>(*cfg.model.pooling);
  else if (st && st->pooling)
    o.pooling = *enum_from_name<Pooling>(*st->pooling);
  if (cfg.model.normalize)
    o.normalize = *cfg.model.normalize;
  else if (st)
    o.normalize = st->normalize;
  const EmbeddingConfig& e = cfg.embedding;
  o.loss.loss = *enum_from_name<EmbeddingLoss>(e.loss);
  o.loss.similarity = *enum_from_name<Similarity>(e.similarity);
  o.loss.scale = e.scale;
  o.loss.symmetric = e.symmetric;
  o.loss.matryoshka_dims = e.matryoshka_dims;
  o.loss.matryoshka_weights = e.matryoshka_weights;
  o.mini_batch_size = e.loss == "cached_mnrl" ? e.mini_batch_size : 0;
  try {
    embedder->set_embedding_options(std::move(o));
  } catch (const std::invalid_argument& x) { throw UserError(x.what()); }
}

void apply_crf(const RunConfig& cfg, models::EncoderTaskModel& model, const LabelSet& labels,
               std::vector<std::string>* notes) {
  auto* tagger = dynamic_cast<models::EncoderForTokenClassificationImpl*>(&model);
  if (tagger == nullptr) return;
  if (!cfg.model.crf) {
    if (tagger->has_crf() && notes)
      notes->push_back("model.crf is false: the pretrained directory's crf.* tensors are not used");
    tagger->disable_crf();
    return;
  }
  std::optional<models::CrfConstraints> constraints;
  if (cfg.crf.constrained) constraints = models::crf_constraints(labels.names);
  tagger->enable_crf(constraints);
  if (!notes) return;
  if (!cfg.crf.constrained)
    notes->push_back("model.crf: every tag may follow every tag (crf.constrained false)");
  else if (constraints)
    notes->push_back("model.crf: " + constraints->scheme + " tags: the moves the scheme forbids are fixed at " +
                     std::to_string(static_cast<int>(models::CrfImpl::kForbidden)));
  else
    notes->push_back(
        "model.crf: the labels follow neither BIO nor BIOES (B-X, I-X, E-X, S-X, O): no move is "
        "forbidden");
}

void apply_verifier(const RunConfig& cfg, models::EncoderTaskModel& model, std::vector<std::string>* notes) {
  auto* reader = dynamic_cast<models::EncoderForQuestionAnsweringImpl*>(&model);
  if (reader == nullptr) return;
  if (cfg.span.verifier) {
    reader->enable_verifier();
    return;
  }
  if (!reader->has_verifier()) return;
  if (notes) notes->push_back("span.verifier is false: the pretrained directory's verifier.* tensors are not used");
  reader->unregister_module("verifier");
  reader->verifier = nullptr;
}

void apply_early_exit(const RunConfig& cfg, models::EncoderTaskModel& model, bool head_loaded,
                      std::vector<std::string>* notes) {
  auto* classifier = dynamic_cast<models::EncoderForSequenceClassificationImpl*>(&model);
  if (classifier == nullptr) return;
  if (!cfg.model.early_exit) {
    if (!classifier->has_early_exit()) return;
    if (notes)
      notes->push_back("model.early_exit is false: the pretrained directory's branches.* tensors are not used");
    classifier->unregister_module("branches");
    classifier->branches = nullptr;
    return;
  }
  if (!head_loaded)
    throw UserError(
        "model.early_exit: the exits learn from a fine-tuned classifier's head (FastBERT's second stage), "
        "and model.pretrained holds none for these labels: fine-tune without model.early_exit first, then "
        "train the exits with model.pretrained set to that run's final/ directory");
  classifier->enable_early_exit();
  int64_t tensors = 0, values = 0;
  for (const auto& p : classifier->named_parameters()) {
    if (p.key().rfind("branches.", 0) == 0) {
      ++tensors;
      values += p.value().numel();
      continue;
    }
    p.value().set_requires_grad(false);
  }
  if (notes)
    notes->push_back("model.early_exit: " + std::to_string(classifier->options().num_hidden_layers() - 1) +
                     " exit classifiers train (" + std::to_string(tensors) + " tensors, " + std::to_string(values) +
                     " parameters) by self-distillation from the head; the encoder and the head are frozen");
}

void apply_exit_threshold(models::TaskModel& model, double threshold) {
  auto* classifier = dynamic_cast<models::EncoderForSequenceClassificationImpl*>(&model);
  if (classifier == nullptr || !classifier->has_early_exit())
    throw UserError("--exit-threshold: the model has no early exits (train a classifier with model.early_exit: true)");
  try {
    classifier->set_exit_threshold(threshold);
  } catch (const std::invalid_argument& e) { throw UserError(std::string("--exit-threshold: ") + e.what()); }
}

EvaluationSetup evaluation_setup(const RunConfig& cfg, const LoadedModel& lm, const LabelSet& labels) {
  EvaluationSetup setup;
  setup.model = lm.model;
  // Balanced class weights are the training file's label frequencies: read it as training does.
  if (cfg.training.loss.class_weights_mode == ClassWeights::Balanced) {
    if (cfg.data.train.empty())
      throw UserError(
          "training.loss.class_weights: balanced weights come from data.train's labels, and data.train "
          "is not set: set it to the training file (or give the weights as a list)");
    const auto train = load_task_data(cfg.task, cfg.data, labels, cfg.data.train, *lm.tokenizer, lm.meta.max_seq_length,
                                      lm.meta.truncate_method, true, cfg.span);
    setup.class_weights = class_weights_for(cfg, labels, train, nullptr);
  } else {
    setup.class_weights = class_weights_for(cfg, labels, TaskData{}, nullptr);
  }
  apply_training_loss(cfg, *lm.model, setup.class_weights);
  apply_embedding(cfg, *lm.model, {});
  if (!cfg.distill.teacher.empty()) setup.model = distillation_model(cfg, lm.model, *lm.tokenizer, labels);
  return setup;
}

}  // namespace unif::framework
