// The text-embeddings-inference routes' requests and answers: see tei_api.h.
#include "apps/unif/serve/tei_api.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "apps/unif/serve/request.h"

namespace unif::app::serve {

namespace {

using nlohmann::json;

// TEI's deserializer refuses what is not its request with 422 (axum's JSON rejection); an empty list
// is its `Empty` error, 400; more inputs than --max-client-batch-size its `Validation` error, 413.
constexpr int kTeiInvalid = 422;

template <class R>
R refuse_tei(int status, std::string error, const char* type = "Validation") {
  R r;
  r.status = status;
  r.error = std::move(error);
  r.error_type = type;
  return r;
}

// The JSON object of a body, or the refusal (415 for a Content-Type other than JSON, else 422).
bool tei_object_body(std::string_view body, std::string_view content_type, json& out, TeiStatus& verdict) {
  JsonBody decoded = decode_json_body(body, content_type);
  if (decoded.status != 200) {
    verdict.status = decoded.status == 415 ? 415 : kTeiInvalid;
    verdict.error = decoded.error;
    verdict.error_type = "Validation";
    return false;
  }
  if (!decoded.value.is_object()) {
    verdict.status = kTeiInvalid;
    verdict.error = "expected a JSON object";
    verdict.error_type = "Validation";
    return false;
  }
  out = std::move(decoded.value);
  return true;
}

// A boolean field: absent or null keeps `out`; false when it is another type.
bool tei_flag(const json& j, const char* key, bool& out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  if (!it->is_boolean()) return false;
  out = it->get<bool>();
  return true;
}

// The shared options of the model routes: truncate (absent: true), truncation_direction (right only,
// as /embed), prompt_name (no prompts). "" when they are fine, else the message.
std::string truncation_options(const json& j, bool& truncate) {
  if (!tei_flag(j, "truncate", truncate)) return "\"truncate\" must be true, false or null";
  const auto d = j.find("truncation_direction");
  if (d != j.end() && !d->is_null()) {
    if (*d == "left" || *d == "Left")
      return "\"truncation_direction\": only \"right\" is supported (a long input keeps its first tokens)";
    if (*d != "right" && *d != "Right") return "\"truncation_direction\" must be \"right\"";
  }
  const auto p = j.find("prompt_name");
  if (p != j.end() && !p->is_null()) return "\"prompt_name\": this model has no prompts";
  return "";
}

std::string tei_too_many(size_t n, size_t max) {
  return "batch size " + std::to_string(n) + " > maximum allowed batch size " + std::to_string(max);
}

bool tei_all_strings(const json& a) {
  return a.is_array() && std::all_of(a.begin(), a.end(), [](const json& x) { return x.is_string(); });
}

double tei_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Indices of `scores` highest first; equal scores: the later index first (TEI sorts ascending,
// stably, then reverses).
std::vector<size_t> tei_descending(const std::vector<double>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  std::reverse(order.begin(), order.end());
  return order;
}

// The length of the UTF-8 sequence a lead byte starts (1 for a byte that starts none).
size_t utf8_sequence_length(std::string_view s, size_t at) {
  const auto b = static_cast<unsigned char>(s[at]);
  const size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
  if (at + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[at + k]) & 0xC0) != 0x80) return 1;
  return n;
}

}  // namespace

json tei_error(const std::string& message, const std::string& error_type) {
  return {{"error", message}, {"error_type", error_type}};
}

std::string tei_error_body(const std::string& message, const std::string& error_type) {
  return tei_error(message, error_type).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

TeiPredictRequest decode_tei_predict(std::string_view body, std::string_view content_type, size_t max_inputs) {
  using R = TeiPredictRequest;
  R r;
  json j;
  if (!tei_object_body(body, content_type, j, r)) return r;
  const auto in = j.find("inputs");
  constexpr const char* kShapes =
      "\"inputs\" must be a string, a pair [\"text\", \"text_pair\"] or a batch [[\"text\"], [\"text\", "
      "\"text_pair\"], ...]";
  if (in == j.end()) return refuse_tei<R>(kTeiInvalid, std::string("missing field \"inputs\": ") + kShapes);
  if (in->is_string()) {
    r.inputs.push_back({in->get<std::string>(), std::nullopt});
  } else if (in->is_array() && !in->empty() && in->front().is_string()) {
    // One input: [text] or [text, pair] (TEI reads a list whose first item is a string so).
    if (in->size() > 2 || !tei_all_strings(*in))
      return refuse_tei<R>(kTeiInvalid, std::string(kShapes) + ": a list of strings is one input of 1 or 2 texts");
    r.inputs.push_back({(*in)[0].get<std::string>(),
                        in->size() == 2 ? std::optional<std::string>((*in)[1].get<std::string>()) : std::nullopt});
  } else if (in->is_array() && !in->empty()) {
    r.batch = true;
    for (const auto& item : *in) {
      if (!tei_all_strings(item) || item.empty() || item.size() > 2)
        return refuse_tei<R>(
            kTeiInvalid, std::string(kShapes) + ": each item of a batch is [\"text\"] or [\"text\", \"text_pair\"]");
      r.inputs.push_back({item[0].get<std::string>(),
                          item.size() == 2 ? std::optional<std::string>(item[1].get<std::string>()) : std::nullopt});
    }
    if (r.inputs.size() > max_inputs) return refuse_tei<R>(413, tei_too_many(r.inputs.size(), max_inputs));
  } else {
    return refuse_tei<R>(kTeiInvalid, kShapes);
  }
  if (!tei_flag(j, "raw_scores", r.raw_scores))
    return refuse_tei<R>(kTeiInvalid, "\"raw_scores\" must be true or false");
  if (auto bad = truncation_options(j, r.truncate); !bad.empty()) return refuse_tei<R>(kTeiInvalid, bad);
  return r;
}

TeiRerankRequest decode_tei_rerank(std::string_view body, std::string_view content_type, size_t max_inputs) {
  using R = TeiRerankRequest;
  R r;
  json j;
  if (!tei_object_body(body, content_type, j, r)) return r;
  const auto q = j.find("query");
  if (q == j.end() || !q->is_string()) return refuse_tei<R>(kTeiInvalid, "\"query\" must be a string");
  const auto t = j.find("texts");
  if (t == j.end() || !tei_all_strings(*t)) return refuse_tei<R>(kTeiInvalid, "\"texts\" must be a list of strings");
  if (t->empty()) return refuse_tei<R>(400, "`texts` cannot be empty", "Empty");
  if (t->size() > max_inputs) return refuse_tei<R>(413, tei_too_many(t->size(), max_inputs));
  r.query = q->get<std::string>();
  for (const auto& s : *t) r.texts.push_back(s.get<std::string>());
  if (!tei_flag(j, "raw_scores", r.raw_scores))
    return refuse_tei<R>(kTeiInvalid, "\"raw_scores\" must be true or false");
  if (!tei_flag(j, "return_text", r.return_text))
    return refuse_tei<R>(kTeiInvalid, "\"return_text\" must be true or false");
  if (auto bad = truncation_options(j, r.truncate); !bad.empty()) return refuse_tei<R>(kTeiInvalid, bad);
  return r;
}

TeiTokenizeRequest decode_tei_tokenize(std::string_view body, std::string_view content_type, size_t max_inputs) {
  using R = TeiTokenizeRequest;
  R r;
  json j;
  if (!tei_object_body(body, content_type, j, r)) return r;
  const auto in = j.find("inputs");
  if (in != j.end() && in->is_string()) {
    r.inputs.push_back(in->get<std::string>());
  } else if (in != j.end() && tei_all_strings(*in)) {
    if (in->empty()) return refuse_tei<R>(400, "`inputs` cannot be empty", "Empty");
    if (in->size() > max_inputs) return refuse_tei<R>(413, tei_too_many(in->size(), max_inputs));
    for (const auto& s : *in) r.inputs.push_back(s.get<std::string>());
  } else {
    return refuse_tei<R>(kTeiInvalid, "\"inputs\" must be a string or a list of strings");
  }
  if (!tei_flag(j, "add_special_tokens", r.add_special_tokens))
    return refuse_tei<R>(kTeiInvalid, "\"add_special_tokens\" must be true or false");
  const auto p = j.find("prompt_name");
  if (p != j.end() && !p->is_null()) return refuse_tei<R>(kTeiInvalid, "\"prompt_name\": this model has no prompts");
  return r;
}

TeiSimilarityRequest decode_tei_similarity(std::string_view body, std::string_view content_type, size_t max_inputs) {
  using R = TeiSimilarityRequest;
  R r;
  json j;
  if (!tei_object_body(body, content_type, j, r)) return r;
  const auto in = j.find("inputs");
  constexpr const char* kShape = "\"inputs\" must be {\"source_sentence\": \"...\", \"sentences\": [\"...\", ...]}";
  if (in == j.end() || !in->is_object()) return refuse_tei<R>(kTeiInvalid, kShape);
  const auto source = in->find("source_sentence");
  const auto sentences = in->find("sentences");
  if (source == in->end() || !source->is_string() || sentences == in->end() || !tei_all_strings(*sentences))
    return refuse_tei<R>(kTeiInvalid, kShape);
  if (sentences->empty()) return refuse_tei<R>(400, "`inputs.sentences` cannot be empty", "Empty");
  if (sentences->size() + 1 > max_inputs) return refuse_tei<R>(413, tei_too_many(sentences->size() + 1, max_inputs));
  r.source_sentence = source->get<std::string>();
  for (const auto& s : *sentences) r.sentences.push_back(s.get<std::string>());
  const auto params = j.find("parameters");
  if (params != j.end() && !params->is_null()) {
    if (!params->is_object()) return refuse_tei<R>(kTeiInvalid, "\"parameters\" must be an object or null");
    if (auto bad = truncation_options(*params, r.truncate); !bad.empty()) return refuse_tei<R>(kTeiInvalid, bad);
  }
  return r;
}

bool is_similarity_body(std::string_view body) {
  const JsonBody decoded = decode_json_body(body, "");
  if (decoded.status != 200 || !decoded.value.is_object()) return false;
  const auto in = decoded.value.find("inputs");
  return in != decoded.value.end() && in->is_object();
}

std::string tei_predict_refusal(Task task) {
  switch (task_spec(task).output) {
    case PredictKind::Label:
    case PredictKind::Labels:
    case PredictKind::Value: return "";
    default:
      return "this server's model is a " + to_string(task) +
             " model, not a sequence classification model: use POST /v1/predict";
  }
}

std::string tei_rerank_refusal(Task task, size_t labels, bool takes_pairs) {
  const bool scorer = task == Task::Regression || (task == Task::Classification && labels == 2) ||
                      (task == Task::Multilabel && labels == 1);
  if (!scorer) {
    if (task == Task::Classification || task == Task::Multilabel)
      return "model is not a re-ranker model: a " + to_string(task) + " model with " + std::to_string(labels) +
             " labels (rerank takes a regression model, a classifier with 2 labels or a multilabel model with 1)";
    return "model is not a re-ranker model: this server's model is a " + to_string(task) + " model";
  }
  if (!takes_pairs)
    return "model is not a re-ranker model: it reads one text, not a (query, text) pair (its unif.yaml has one "
           "text field)";
  return "";
}

std::vector<double> tei_scores(Task task, const std::vector<double>& logits, double value, bool raw_scores) {
  if (task == Task::Regression) return {raw_scores ? value : tei_sigmoid(value)};
  std::vector<double> out = logits;
  if (raw_scores) return out;
  if (task == Task::Multilabel) {
    for (auto& x : out) x = tei_sigmoid(x);
    return out;
  }
  if (out.empty()) return out;
  const double top = *std::max_element(out.begin(), out.end());
  double sum = 0.0;
  for (auto& x : out) sum += (x = std::exp(x - top));
  for (auto& x : out) x /= sum;
  return out;
}

std::vector<std::string> tei_labels(Task task, const std::vector<std::string>& labels) {
  if (task == Task::Regression) return {"LABEL_0"};
  return labels;
}

double tei_rerank_score(Task task, const std::vector<double>& logits, double value, bool raw_scores) {
  double raw = value;
  if (task == Task::Classification && logits.size() == 2) raw = logits[1] - logits[0];
  if (task == Task::Multilabel && logits.size() == 1) raw = logits[0];
  return raw_scores ? raw : tei_sigmoid(raw);
}

json tei_predictions(const std::vector<std::string>& labels, const std::vector<double>& scores) {
  json out = json::array();
  for (size_t i : tei_descending(scores))
    out.push_back({{"score", scores[i]}, {"label", i < labels.size() ? labels[i] : "LABEL_" + std::to_string(i)}});
  return out;
}

json tei_ranks(const TeiRerankRequest& request, const std::vector<double>& scores) {
  json out = json::array();
  for (size_t i : tei_descending(scores)) {
    json rank{{"index", i}, {"score", scores[i]}};
    if (request.return_text && i < request.texts.size()) rank["text"] = request.texts[i];
    out.push_back(std::move(rank));
  }
  return out;
}

std::string code_point_slice(std::string_view text, int64_t start, int64_t end) {
  std::string out;
  if (start < 0 || end <= start) return out;
  int64_t cp = 0;
  for (size_t at = 0; at < text.size() && cp < end; ++cp) {
    const size_t n = utf8_sequence_length(text, at);
    if (cp >= start) out.append(text.substr(at, n));
    at += n;
  }
  return out;
}

json tei_tokens(std::string_view input, const std::vector<TeiToken>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) {
    if (t.special || t.start < 0) {
      out.push_back({{"id", t.id}, {"text", t.token}, {"special", true}, {"start", nullptr}, {"stop", nullptr}});
    } else {
      out.push_back({{"id", t.id},
                     {"text", code_point_slice(input, t.start, t.end)},
                     {"special", false},
                     {"start", t.start},
                     {"stop", t.end}});
    }
  }
  return out;
}

std::vector<double> cosine_to_first(const std::vector<std::vector<double>>& embeddings) {
  std::vector<double> out;
  if (embeddings.empty()) return out;
  const auto& a = embeddings.front();
  double na = 0.0;
  for (double x : a) na += x * x;
  for (size_t i = 1; i < embeddings.size(); ++i) {
    const auto& b = embeddings[i];
    double dot = 0.0, nb = 0.0;
    for (size_t k = 0; k < b.size(); ++k) {
      nb += b[k] * b[k];
      if (k < a.size()) dot += a[k] * b[k];
    }
    out.push_back(na > 0.0 && nb > 0.0 ? dot / std::sqrt(na * nb) : 0.0);
  }
  return out;
}

json tei_info(const TeiServerInfo& info) {
  const auto classifier = [](const std::vector<std::string>& labels) {
    json id2label = json::object(), label2id = json::object();
    for (size_t i = 0; i < labels.size(); ++i) {
      id2label[std::to_string(i)] = labels[i];
      label2id[labels[i]] = i;
    }
    return json{{"id2label", id2label}, {"label2id", label2id}};
  };
  json model_type;
  switch (task_spec(info.task).output) {
    case PredictKind::Label:
    case PredictKind::Labels: model_type = {{"classifier", classifier(info.labels)}}; break;
    case PredictKind::Value: model_type = {{"reranker", classifier({"LABEL_0"})}}; break;
    case PredictKind::Embedding: model_type = {{"embedding", {{"pooling", info.pooling}}}}; break;
    default: model_type = {{to_string(info.task), json::object()}}; break;
  }
  return {{"model_id", info.model_id},
          {"model_sha", nullptr},
          {"model_dtype", info.model_dtype},
          {"model_type", std::move(model_type)},
          {"max_concurrent_requests", info.max_concurrent_requests},
          {"max_input_length", info.max_input_length},
          {"max_batch_tokens", info.max_batch_tokens},
          {"max_batch_requests", info.max_batch_requests},
          {"max_client_batch_size", info.max_client_batch_size},
          {"auto_truncate", true},
          {"tokenization_workers", info.tokenization_workers},
          {"version", info.version},
          {"sha", nullptr},
          {"docker_label", nullptr},
          {"task", to_string(info.task)},
          {"accepted_records", info.accepted_records}};
}

json openai_model_list(const std::string& id, int64_t created) {
  return {{"object", "list"},
          {"data", json::array({{{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "unif"}}})}};
}

}  // namespace unif::app::serve
