// Predictor: see predictor.h.
#include "framework/inference/predictor.h"

#include "framework/inference/predictor_state.h"
#include "framework/inference/standard_records.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>

#include <c10/core/InferenceMode.h>

#include "framework/common/error.h"
#include "framework/common/hub_cache.h"
#include "framework/data/dataset.h"
#include "framework/data/word_windows.h"
#include "framework/engines/auto_devices.h"
#include "framework/engines/devices.h"
#include "framework/model/evaluate.h"
#include "framework/model/model_dir.h"
#include "framework/model/setup.h"
#include "framework/parallel/worker_pool.h"
#include "framework/text/unicode.h"
#include "models/architectures.h"
#include "models/quantize.h"

namespace unif {

using nlohmann::json;

namespace {

const char* const kNotFinite = "the model's outputs are not finite (NaN or inf) for this input";

std::vector<double> to_vec(const torch::Tensor& t) {
  auto c = t.to(torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Every label with its probability, highest first (label order on ties).
std::vector<LabelScore> ranked(const std::vector<std::string>& names, const std::vector<double>& probs) {
  std::vector<size_t> order(probs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return probs[a] > probs[b]; });
  std::vector<LabelScore> out;
  out.reserve(order.size());
  for (size_t i : order) out.push_back({names.at(i), probs[i]});
  return out;
}

}  // namespace

namespace {

// The model's data.long_text, as unif.yaml records it.
fw::TextWindows windows_of(const fw::ModelMeta& meta) {
  return fw::TextWindows::of(meta.long_text, meta.long_text_stride, meta.long_text_pooling);
}

}  // namespace

json Prediction::to_json() const {
  json j;
  if (!error.empty()) {
    j = {{"error", error}};
  } else {
    const auto top = [&] {
      json t = json::array();
      for (size_t i = 0; i < scores.size() && static_cast<int64_t>(i) < top_k; ++i)
        t.push_back({{"label", scores[i].label}, {"score", scores[i].score}});
      return t;
    };
    switch (task_spec(task).output) {
      case PredictKind::Label:
        j = {{"label", label}, {"probs", probs}, {"logits", logits}};
        if (top_k > 0) j["top"] = top();
        if (exit_layer > 0) j["exit_layer"] = exit_layer;
        break;
      case PredictKind::Labels:
        j = {{"labels", labels}, {"probs", probs}};
        if (top_k > 0) j["top"] = top();
        break;
      case PredictKind::Value: j = {{"value", value}}; break;
      case PredictKind::Tags: {
        json t = json::array();  // null: a word without any word piece, which the model never sees
        for (const auto& tag : tags) t.push_back(tag ? json(*tag) : json(nullptr));
        j = {{"tags", t}};
        if (has_entities) {
          json w = json::array(), e = json::array();
          for (const auto& word : words) w.push_back(word.text);
          for (const auto& x : entities)
            e.push_back({{"type", x.type}, {"text", x.text}, {"start", x.start}, {"end", x.end}, {"score", x.score}});
          j["words"] = w;
          j["entities"] = e;
        }
        break;
      }
      case PredictKind::Answer:
        j = no_answer ? nlohmann::json{{"answer", ""}, {"no_answer", true}, {"score", score}}
                      : nlohmann::json{{"answer", answer}, {"start", start}, {"end", end}, {"score", score}};
        break;
      case PredictKind::Masks: {
        json m = json::array();
        for (const auto& f : masks) m.push_back({{"tokens", f.tokens}, {"scores", f.scores}});
        j = {{"masks", m}};
        break;
      }
      case PredictKind::Embedding: j = {{"embedding", embedding}}; break;
    }
    if (truncated) j["truncated"] = true;  // the model saw the text's first max_seq_length tokens
    if (windows > 1) j["windows"] = windows;
  }
  if (!input.is_null()) j["input"] = input;
  return j;
}

int64_t PreparedRecord::rows() const { return inputs_ ? inputs_->rows : 0; }
int64_t PreparedRecord::longest() const { return inputs_ ? inputs_->longest : 0; }

// Reads and tokenizes one record: its example(s) and their rows (masked_lm: its text's ids), or
// the answer it gets without the model.
PreparedRecord Predictor::State::prepare(const fw::Record& given, const std::string& source) const {
  const Task task = lm.meta.task;
  // The standard shapes ({"text"}, a string, a pair) in the model's own field names.
  const fw::Record r{
      given.fields.is_null()
          ? given.fields
          : fw::with_model_fields(task, given.fields, plain_hf ? std::vector<std::string>{} : lm.meta.text_fields),
      given.line};
  auto in = std::make_shared<PreparedRecord::Inputs>();
  Prediction& p = in->answer;
  p.task = task;
  PreparedRecord out;
  const auto done = [&] {
    out.inputs_ = std::move(in);
    return out;
  };
  if (r.fields.is_null()) {
    p.error = "blank line";
    return done();
  }
  if (task_spec(task).output == PredictKind::Masks) {  // HF's fill-mask on the model's text field
    const std::string field = lm.meta.text_fields.empty() ? "text" : lm.meta.text_fields.front();
    const auto& f = r.fields;
    if (!f.is_object() || !f.contains(field) || !f.at(field).is_string()) {
      p.error = source + ":" + std::to_string(r.line) + ": expected a JSON object with a string field '" + field + "'";
      p.rejected = true;
      return done();
    }
    in->masked = fw::encode_masked_text(*lm.tokenizer, f.at(field).get<std::string>(), lm.meta.max_seq_length);
    p.input = f;
    in->forward = true;
    in->rows = 1;  // a text with an error takes its row in fill_mask's batches too
    in->longest = static_cast<int64_t>(in->masked.ids.size());
    return done();
  }
  const bool tokens_task = task_spec(task).input == TaskInput::Tokens;
  if (task_spec(task).output == PredictKind::Embedding) {  // one text per record: `text`, else the first field
    const auto& f = r.fields;
    const std::string field =
        f.is_object() && f.contains("text") ? "text" : (lm.meta.text_fields.empty() ? "text" : lm.meta.text_fields[0]);
    if (!f.is_object() || !f.contains(field) || !f.at(field).is_string()) {
      p.error = source + ":" + std::to_string(r.line) + ": expected a JSON object with a string field '" + field + "'";
      p.rejected = true;
      return done();
    }
    fw::Example ex;
    ex.texts = {f.at(field).get<std::string>()};
    ex.record = f;
    in->examples = {std::move(ex)};
    in->encoded = fw::encode_examples(task, in->examples, *lm.tokenizer, static_cast<int>(lm.meta.max_seq_length),
                                      fw::parse_truncate_method(lm.meta.truncate_method));
    p.input = f;
    in->forward = true;
    in->rows = 1;
    in->longest = static_cast<int64_t>(in->encoded.front().input_ids.size());
    p.tokens = in->longest;
    return done();
  }
  try {
    if (!r.fields.is_object())
      throw UserError(fw::where(source, r) + "expected " +
                      fw::accepted_record_shapes(task, plain_hf ? std::vector<std::string>{} : lm.meta.text_fields));
    fw::DataConfig dc;
    dc.text_fields = text_fields_for(r, source);
    dc.label_field = lm.meta.label_field;
    // Token classification of a text: its words (split_words) stand for the list of tokens.
    const std::string& tokens_field = dc.text_fields.empty() ? std::string() : dc.text_fields.front();
    const auto& f = r.fields;
    const bool text_input = tokens_task && f.contains("text") && f.at("text").is_string() &&
                            (tokens_field == "text" || !f.contains(tokens_field) || f.at(tokens_field).is_null());
    if (text_input) {
      in->text_input = true;
      in->words = split_words(f.at("text").get_ref<const std::string&>());
      if (in->words.empty()) {  // nothing to tag: no words, no entities
        p.input = f;
        p.has_entities = true;
        return done();
      }
      fw::Record words_record{json::object(), r.line};
      json list = json::array();
      for (const auto& w : in->words) list.push_back(w.text);
      words_record.fields[tokens_field] = std::move(list);
      in->examples = fw::make_examples(task, dc, labels, source, {words_record}, false);
    } else {
      // The label field is not an input: a labelled file (a class the model lacks, tags in
      // another scheme) predicts as it would without it, the field carried through in "input".
      fw::Record unlabelled = r;
      if (!dc.label_field.empty() && unlabelled.fields.contains(dc.label_field))
        unlabelled.fields.erase(dc.label_field);
      in->examples = fw::make_examples(task, dc, labels, source, {unlabelled}, false);
    }
    for (auto& e : in->examples) {
      e.record = f;
      e.has_label = false;  // labels in the input are checked, then ignored: no metrics here
    }
  } catch (const UserError& e) {
    p.error = e.what();
    p.rejected = true;
    in->examples.clear();
    in->words.clear();
    return done();
  }
  if (in->examples.empty()) return done();
  const int max_len = static_cast<int>(lm.meta.max_seq_length);
  const auto method = fw::parse_truncate_method(lm.meta.truncate_method);
  // Token classification: every word gets a tag from the model, in windows when the input is long.
  in->encoded = tokens_task ? fw::encode_word_windows(*lm.tokenizer, in->examples, max_len, method)
                            : fw::encode_examples(task, in->examples, *lm.tokenizer, max_len, method, lm.meta.span,
                                                  windows_of(lm.meta));
  p.input = in->examples.front().record;
  in->forward = true;
  in->rows = static_cast<int64_t>(in->encoded.size());
  for (const auto& e : in->encoded) in->longest = std::max(in->longest, static_cast<int64_t>(e.input_ids.size()));
  return done();
}

// The model on a batch of prepared records: their examples and rows as one data set (the batches
// evaluate() makes of it, as one predict() call of the same records would).
ForwardOutputs Predictor::State::forward(const std::vector<PreparedRecord>& records) const {
  const Task task = lm.meta.task;
  auto out = std::make_shared<ForwardOutputs::Outputs>();
  const size_t n = records.size();
  out->logits.resize(n);
  out->answers.resize(n);
  out->fills.resize(n);
  out->exit_layers.assign(n, 0);
  ForwardOutputs result;
  if (task_spec(task).output == PredictKind::Masks) {
    std::vector<fw::MaskedText> texts;
    std::vector<size_t> slot;
    for (size_t i = 0; i < n; ++i)
      if (records[i].inputs_ && records[i].inputs_->forward) {
        texts.push_back(records[i].inputs_->masked);
        slot.push_back(i);
      }
    if (!texts.empty()) {
      std::vector<fw::FillMaskResult> fills;
      {
        std::lock_guard<std::mutex> lock(forward_mutex);
        c10::InferenceMode inference;
        fills = fw::fill_mask_encoded(*lm.model, *lm.tokenizer, texts, options.batch_size, 5, workers.get());
      }
      for (size_t k = 0; k < fills.size(); ++k) out->fills[slot[k]] = std::move(fills[k]);
    }
    result.outputs_ = std::move(out);
    return result;
  }
  fw::TaskData data;
  data.span = lm.meta.span;
  data.windows = windows_of(lm.meta);
  std::vector<int64_t> first_example(n, -1);  // the record's first example in `data`
  std::vector<size_t> record_of;              // per example of `data`: its record
  for (size_t i = 0; i < n; ++i) {
    const auto& in = records[i].inputs_;
    if (!in || !in->forward) continue;
    const auto base = static_cast<int64_t>(data.examples.size());
    first_example[i] = base;
    for (const auto& e : in->examples) {
      data.examples.push_back(e);
      record_of.push_back(i);
    }
    for (const auto& e : in->encoded) {
      data.encoded.push_back(e);
      data.encoded.back().example += base;
    }
  }
  if (!data.examples.empty()) {
    fw::Evaluation ev;
    {
      std::lock_guard<std::mutex> lock(forward_mutex);
      c10::InferenceMode inference;
      // Fewer entries than a batch per worker: smaller batches, so that every worker has one (a
      // server's batch of 32 on 2 CPU workers runs as 2 x 16 at once, not 32 on one core).
      const auto entries_n = static_cast<int64_t>(data.encoded.size());
      const int64_t per_worker = (entries_n + workers->size() - 1) / workers->size();
      const int64_t batch = std::max<int64_t>(1, std::min(options.batch_size, per_worker));
      ev = fw::evaluate(*lm.model, task, data, labels, batch, {}, true, workers.get());
    }
    c10::InferenceMode inference;
    if (data.windows.on && task_spec(task).input == TaskInput::Text) {  // one pooled row per text
      for (size_t i = 0; i < n; ++i) {
        if (first_example[i] < 0) continue;
        const auto x = static_cast<size_t>(first_example[i]);
        out->logits[i].push_back(ev.logits.at(x).cpu());
        if (!ev.exit_layers.empty()) out->exit_layers[i] = ev.exit_layers[x];
      }
    } else {
      for (size_t k = 0; k < data.encoded.size(); ++k) {
        const auto x = data.encoded[k].example;
        const size_t i = record_of[static_cast<size_t>(x)];
        if (x != first_example[i]) continue;
        out->logits[i].push_back(ev.logits[k].cpu());
        if (!ev.exit_layers.empty()) out->exit_layers[i] = ev.exit_layers[k];
      }
    }
    if (task == Task::SpanExtraction)
      for (size_t i = 0; i < n; ++i)
        if (first_example[i] >= 0) out->answers[i] = ev.answers.at(static_cast<size_t>(first_example[i]));
  }
  result.outputs_ = std::move(out);
  return result;
}

// One record's answer from its inputs and the batch's outputs (`index`: its place in the batch).
Prediction Predictor::State::postprocess(const PreparedRecord& record, const ForwardOutputs::Outputs& outputs,
                                         size_t index) const {
  const Task task = lm.meta.task;
  if (!record.inputs_) {
    Prediction p;
    p.task = task;
    return p;
  }
  const auto& in = *record.inputs_;
  Prediction p = in.answer;
  if (!in.forward) return p;
  if (task_spec(task).output == PredictKind::Masks) {
    auto& fills = outputs.fills.at(index);
    if (!fills.error.empty())
      p.error = fills.error;
    else if (fills.masks.empty())
      p.error = "no [MASK] in the text";
    else
      p.masks = fills.masks;
    return p;
  }
  c10::InferenceMode inference;
  const auto& logits = outputs.logits.at(index);
  p.top_k = options.top_k;
  bool finite = true;
  for (const auto& l : logits) finite = finite && torch::isfinite(l).all().item<bool>();
  if (!finite) {
    p.error = kNotFinite;
    return p;
  }
  const auto& row = logits.at(0);
  if (task_spec(task).input == TaskInput::Text) {
    p.truncated = in.encoded.size() == 1 && in.encoded.front().truncated;
    p.windows = static_cast<int64_t>(in.encoded.size());
  }
  switch (task_spec(task).output) {
    case PredictKind::Label: {
      p.label = labels.names.at(static_cast<size_t>(row.argmax().item<int64_t>()));
      p.probs = to_vec(torch::softmax(row, -1));
      p.logits = to_vec(row);
      p.scores = ranked(labels.names, p.probs);
      p.exit_layer = outputs.exit_layers.at(index);
      break;
    }
    case PredictKind::Labels: {
      auto probs = torch::sigmoid(row);
      for (int64_t c = 0; c < probs.size(0); ++c)
        if (probs[c].item<double>() > 0.5) p.labels.push_back(labels.names.at(static_cast<size_t>(c)));
      p.probs = to_vec(probs);
      p.logits = to_vec(row);
      p.scores = ranked(labels.names, p.probs);
      break;
    }
    case PredictKind::Value: p.value = row.flatten()[0].item<double>(); break;
    case PredictKind::Tags: {
      std::vector<const fw::EncodedExample*> windows;
      for (const auto& e : in.encoded)
        if (e.example == 0) windows.push_back(&e);
      const fw::TagDecoder decode = [this](const torch::Tensor& e, torch::Tensor* probs) {
        return lm.model->decode_tags(e, probs);  // argmax, or a CRF's Viterbi path and marginals
      };
      for (const auto& id : fw::word_window_predictions(in.examples.front(), windows, logits, &p.tag_scores, decode))
        p.tags.push_back(id ? std::optional<std::string>(labels.names.at(static_cast<size_t>(*id))) : std::nullopt);
      if (in.text_input) {
        p.has_entities = true;
        p.words = in.words;
        p.entities = group_entities(p.input.at("text").get_ref<const std::string&>(), p.words, p.tags, p.tag_scores);
      }
      break;
    }
    case PredictKind::Answer: {
      const auto& a = outputs.answers.at(index);
      p.answer = a.text;
      p.start = a.start;
      p.end = a.end;
      p.score = a.score;
      p.no_answer = a.no_answer;
      break;
    }
    case PredictKind::Masks: break;
    case PredictKind::Embedding: {
      torch::Tensor e = row.reshape({-1});  // (1, H) rows of one text
      if (options.dimensions > 0 && options.dimensions < e.size(0)) e = e.narrow(0, 0, options.dimensions);
      if (options.normalize.value_or(false)) e = e / e.norm().clamp_min(1e-12);
      p.embedding = to_vec(e);
      break;
    }
  }
  return p;
}

Predictor Predictor::load(const std::filesystem::path& dir, const PredictorOptions& options) {
  if (options.batch_size < 1) throw UserError("batch size must be at least 1");
  if (options.threads < 0) throw UserError("threads must be 0 (automatic) or more");
  if (options.top_k < 0) throw UserError("top_k must be 0 or more");
  if (options.quantize != "none" && options.quantize != "int8")
    throw UserError("quantize must be none or int8, got '" + options.quantize + "'");
  const auto devices = fw::parse_devices({options.device});
  fw::check_present(devices);
  auto s = std::make_shared<State>();
  s->options = options;
  // A Hub id ("org/name") that is no directory: its snapshot in the Hugging Face cache (hub_cache.h).
  s->dir = resolve_model(dir.string(), "main", "--model");
  s->lm = fw::load_model_dir(s->dir, options.unpadded);
  s->plain_hf = !std::filesystem::exists(s->dir / "unif.yaml");
  s->labels = fw::LabelSet::from_names(s->lm.meta.labels);
  const auto device = fw::eval_device(devices);
  if (device.is_cuda()) s->lm.model->to(device);
  s->lm.model->eval();
  if (options.exit_threshold) fw::apply_exit_threshold(*s->lm.model, *options.exit_threshold);
  if (options.quantize == "int8") {
    if (device.is_cuda())
      throw UserError(
          "int8 runs on the CPU (dynamic int8 Linear layers); the model is on " + device.str() +
          ": load it on the CPU (PredictorOptions device \"cpu\"; unif eval: --set parallel.devices=[cpu]), or "
          "run fp32 on the GPU");
    try {
      s->quantization = models::quantize_dynamic_int8(*s->lm.model).summary();
    } catch (const std::runtime_error& e) { throw UserError(e.what()); }
  }
  const int64_t workers = device.is_cuda() ? 1
                          : options.threads > 0
                              ? options.threads
                              : fw::cpu_eval_workers(fw::DeviceSet{}, s->lm.model->options().hidden_size());
  s->workers = std::make_unique<fw::WorkerPool>(workers);
  return Predictor(std::move(s));
}

std::vector<PreparedRecord> Predictor::preprocess(const std::vector<fw::Record>& records,
                                                  const std::string& source) const {
  std::vector<PreparedRecord> out;
  out.reserve(records.size());
  for (const auto& r : records) out.push_back(state_->prepare(r, source));
  return out;
}

std::vector<PreparedRecord> Predictor::preprocess(const std::vector<json>& records, int64_t first) const {
  std::vector<PreparedRecord> out;
  out.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const auto line = static_cast<int64_t>(i) + first;
    if (records[i].is_object() || records[i].is_string() || records[i].is_array()) {
      out.push_back(state_->prepare(fw::Record{records[i], line}, "record"));
      continue;
    }
    auto in = std::make_shared<PreparedRecord::Inputs>();
    in->answer.task = task();
    in->answer.error = "record:" + std::to_string(line) + ": expected a JSON object, a string or a pair of strings";
    in->answer.rejected = true;
    PreparedRecord p;
    p.inputs_ = std::move(in);
    out.push_back(std::move(p));
  }
  return out;
}

ForwardOutputs Predictor::forward(const std::vector<PreparedRecord>& records) const { return state_->forward(records); }

std::vector<Prediction> Predictor::postprocess(const std::vector<PreparedRecord>& records,
                                               const ForwardOutputs& outputs) const {
  if (!outputs.outputs_ || outputs.outputs_->logits.size() != records.size())
    throw std::logic_error("Predictor::postprocess: the outputs are not forward()'s of these records");
  std::vector<Prediction> out;
  out.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) out.push_back(state_->postprocess(records[i], *outputs.outputs_, i));
  return out;
}

std::vector<Prediction> Predictor::predict(const std::vector<fw::Record>& records, const std::string& source) const {
  const auto prepared = preprocess(records, source);
  return postprocess(prepared, forward(prepared));
}

std::vector<Prediction> Predictor::predict(const std::vector<json>& records) const {
  const auto prepared = preprocess(records);
  return postprocess(prepared, forward(prepared));
}

Prediction Predictor::predict_one(const json& record) const { return predict(std::vector<json>{record}).at(0); }

std::vector<std::vector<float>> Predictor::embed(const std::vector<std::string>& texts) const {
  if (task_spec(task()).output != PredictKind::Embedding)
    throw UserError("embed: the model is a " + to_string(task()) + " model, not an embedding model");
  std::vector<json> records;
  records.reserve(texts.size());
  for (const auto& t : texts) records.push_back(json{{"text", t}});
  const auto predictions = predict(records);
  std::vector<std::vector<float>> out;
  out.reserve(predictions.size());
  for (size_t i = 0; i < predictions.size(); ++i) {
    const auto& p = predictions[i];
    if (!p.ok()) throw UserError("embed: text:" + std::to_string(i + 1) + ": " + p.error);
    out.emplace_back(p.embedding.begin(), p.embedding.end());
  }
  return out;
}

Task Predictor::task() const { return state_->lm.meta.task; }
const std::vector<std::string>& Predictor::labels() const { return state_->labels.names; }
const std::vector<std::string>& Predictor::text_fields() const { return state_->lm.meta.text_fields; }
const std::string& Predictor::label_field() const { return state_->lm.meta.label_field; }
const PredictorOptions& Predictor::options() const { return state_->options; }
int64_t Predictor::max_seq_length() const { return state_->lm.meta.max_seq_length; }
bool Predictor::plain_hf() const { return state_->plain_hf; }

const std::string& Predictor::quantization() const { return state_->quantization; }

std::vector<Word> split_words(std::string_view text) {
  namespace u = fw::unicode;
  std::vector<Word> words;
  const std::u32string cps = u::decode_utf8(text);
  Word cur;
  bool open = false;
  const auto close = [&] {
    if (open) words.push_back(std::move(cur));
    cur = Word{};
    open = false;
  };
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const auto at = static_cast<int64_t>(i);
    if (u::is_bert_whitespace(c) || u::is_white_space(c)) {
      close();
      continue;
    }
    // Deleted, as BERT's basic tokenizer cleans them: the characters around one join
    // ("soft\u00ADware" is one word).
    if (c == 0 || c == 0xFFFD || u::is_control(c)) continue;
    if (u::is_punctuation(c) || u::is_chinese_char(c)) {
      close();
      Word w;
      u::append_utf8(w.text, c);
      w.start = at;
      w.end = at + 1;
      words.push_back(std::move(w));
      continue;
    }
    if (!open) {
      open = true;
      cur.start = at;
    }
    u::append_utf8(cur.text, c);
    cur.end = at + 1;
  }
  close();
  return words;
}

std::vector<Entity> group_entities(std::string_view text, const std::vector<Word>& words,
                                   const std::vector<std::optional<std::string>>& tags,
                                   const std::vector<double>& scores) {
  const std::u32string cps = fw::unicode::decode_utf8(text);
  std::vector<Entity> out;
  // The open group: its type ("O" too, dropped at the end as HF drops it), words, and whether it
  // may still grow (an "E-" or "S-" word closes it).
  std::string type;
  size_t first = 0, last = 0;
  std::vector<double> group_scores;
  bool open = false, closed = false;
  const auto flush = [&] {
    if (open && type != "O") {
      Entity e;
      e.type = type;
      e.start = words[first].start;
      e.end = words[last].end;
      const auto a = static_cast<size_t>(std::clamp<int64_t>(e.start, 0, static_cast<int64_t>(cps.size())));
      const auto b = static_cast<size_t>(std::clamp<int64_t>(e.end, 0, static_cast<int64_t>(cps.size())));
      e.text = fw::unicode::encode_utf8(std::u32string_view(cps).substr(a, b - a));
      double sum = 0;
      for (double s : group_scores) sum += s;
      e.score = group_scores.empty() ? 0.0 : sum / static_cast<double>(group_scores.size());
      out.push_back(std::move(e));
    }
    open = false;
    closed = false;
    group_scores.clear();
  };
  for (size_t w = 0; w < words.size() && w < tags.size(); ++w) {
    if (!tags[w]) continue;  // no word piece: the model gave it nothing (HF has no token for it)
    const std::string& tag = *tags[w];
    char prefix = 'I';
    std::string t = tag;
    if (tag.size() > 2 && tag[1] == '-' && (tag[0] == 'B' || tag[0] == 'I' || tag[0] == 'E' || tag[0] == 'S')) {
      prefix = tag[0];
      t = tag.substr(2);
    }
    const bool continues = open && !closed && t == type && (prefix == 'I' || prefix == 'E');
    if (!continues) {
      flush();
      open = true;
      type = t;
      first = w;
    }
    last = w;
    group_scores.push_back(w < scores.size() ? scores[w] : 0.0);
    if (prefix == 'E' || prefix == 'S') closed = true;
  }
  flush();
  return out;
}

}  // namespace unif
