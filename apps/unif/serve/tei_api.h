// The text-embeddings-inference (TEI) routes of `unif serve` besides /embed (embeddings_api.h), and
// OpenAI's model list, apart from the HTTP library (as request.h): each decodes its request, or says
// the status and message that refuse it, and shapes its answer. The shapes are TEI's (its OpenAPI
// document, docs/openapi.json, and its router, router/src/http/{server,types}.rs):
//
//   POST /predict    {"inputs": "text" | ["text", "pair"] | [["text"], ["text", "pair"], ...],
//                     "raw_scores": false, "truncate": null, "truncation_direction": "right"}
//                    -> [{"score": s, "label": "..."}, ...] for one input, a list of those for a
//                       batch; every label, highest score first (ties: the later label first).
//   POST /rerank     {"query": "...", "texts": ["...", ...], "raw_scores": false, "return_text": false,
//                     "truncate": null, "truncation_direction": "right"}
//                    -> [{"index": i, "score": s, "text": "..." (return_text)}, ...], highest first.
//   POST /tokenize   {"inputs": "text" | ["text", ...], "add_special_tokens": true, "prompt_name": null}
//                    -> [[{"id": n, "text": "...", "special": false, "start": c, "stop": c}, ...], ...]
//                       one list per input; `text` is the input's slice [start, stop) in code points,
//                       a special token's own text with start and stop null.
//   POST /similarity {"inputs": {"source_sentence": "...", "sentences": ["...", ...]},
//                     "parameters": {"truncate": null, "truncation_direction": "right", "prompt_name": null}}
//                    -> [cosine similarity of each sentence's embedding with the source's, ...]
//   GET /info        TEI's Info object (tei_info), plus unif's "task" and "accepted_records".
//   GET /v1/models   {"object": "list", "data": [{"id": "...", "object": "model", "created": t,
//                     "owned_by": "unif"}]}
//   errors           {"error": "...", "error_type": "Validation" | "Empty" | "Overloaded" | "Backend"}:
//                    413 too many inputs (or, with truncate false, an input over max_input_length),
//                    422 a body that is not such a request, 400 an empty list, 415 a Content-Type
//                    other than JSON (424 the model cannot answer the route, 429 the queue is full:
//                    the server's).
//
// Scores (tei_scores): softmax of a classifier's logits, sigmoid of each of a multilabel model's,
// sigmoid of a regression model's value (TEI's score for a model with one output: a reranker); the
// raw outputs with raw_scores. Unknown request fields are ignored, as TEI's deserializer does.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/task.h"

namespace unif::app::serve {

/// A decoded request's verdict: 200, or the status, message and TEI error_type that refuse it.
struct TeiStatus {
  int status = 200;
  std::string error;
  std::string error_type;
  bool ok() const { return status == 200; }
};

/// TEI's error body.
nlohmann::json tei_error(const std::string& message, const std::string& error_type);
/// tei_error as the answer's text (and a newline); a message that is not UTF-8 (a Content-Type's
/// bytes echoed) has its bad bytes replaced with U+FFFD.
std::string tei_error_body(const std::string& message, const std::string& error_type);

/// One input of /predict: a text, or a text and its pair.
struct TeiSequence {
  std::string text;
  std::optional<std::string> pair;
};

struct TeiPredictRequest : TeiStatus {
  std::vector<TeiSequence> inputs;
  /// `inputs` was a batch ([[...], ...]): the answer is a list per input.
  bool batch = false;
  bool raw_scores = false;
  /// TEI's `truncate`; absent or null: true (the server truncates, /info's auto_truncate).
  bool truncate = true;
};

struct TeiRerankRequest : TeiStatus {
  std::string query;
  std::vector<std::string> texts;
  bool raw_scores = false;
  bool return_text = false;
  bool truncate = true;
};

struct TeiTokenizeRequest : TeiStatus {
  std::vector<std::string> inputs;
  bool add_special_tokens = true;
};

struct TeiSimilarityRequest : TeiStatus {
  std::string source_sentence;
  std::vector<std::string> sentences;
  bool truncate = true;
};

/// The decoders: `max_inputs` is the most inputs one request may hold (TEI's
/// --max-client-batch-size: 413 above it; /similarity counts the source sentence too). Never throw.
TeiPredictRequest decode_tei_predict(std::string_view body, std::string_view content_type, size_t max_inputs);
TeiRerankRequest decode_tei_rerank(std::string_view body, std::string_view content_type, size_t max_inputs);
TeiTokenizeRequest decode_tei_tokenize(std::string_view body, std::string_view content_type, size_t max_inputs);
TeiSimilarityRequest decode_tei_similarity(std::string_view body, std::string_view content_type, size_t max_inputs);

/// Whether a body is a sentence-similarity request ({"inputs": {...}}): huggingface_hub's
/// InferenceClient.sentence_similarity posts it to `/`, where feature_extraction posts embed requests.
bool is_similarity_body(std::string_view body);

/// Why a model of `task` cannot answer /predict ("" when it can: classification, multilabel,
/// regression).
std::string tei_predict_refusal(Task task);
/// Why it cannot answer /rerank ("" when it can): a regression model, a classifier with 2 labels (the
/// last label's score) or a multilabel model with one, that takes a pair of texts (`takes_pairs`).
std::string tei_rerank_refusal(Task task, size_t labels, bool takes_pairs);

/// One input's scores in label order (see the header): `logits` a classifier's or multilabel model's,
/// `value` a regression model's.
std::vector<double> tei_scores(Task task, const std::vector<double>& logits, double value, bool raw_scores);
/// The label names of those scores: the model's, or "LABEL_0" (HF's name) for a regression model.
std::vector<std::string> tei_labels(Task task, const std::vector<std::string>& labels);
/// A (query, text) pair's relevance: a regression model's value, a 2-label classifier's logit
/// difference (last minus first), a one-label multilabel model's logit; its sigmoid unless
/// raw_scores (so a 2-label classifier scores the last label's softmax probability).
double tei_rerank_score(Task task, const std::vector<double>& logits, double value, bool raw_scores);

/// [{"score", "label"}, ...] highest score first; ties keep TEI's order (the later label first).
nlohmann::json tei_predictions(const std::vector<std::string>& labels, const std::vector<double>& scores);
/// [{"index", "score"(, "text")}, ...] highest score first (ties: the later text first, as TEI).
nlohmann::json tei_ranks(const TeiRerankRequest& request, const std::vector<double>& scores);

/// A token of /tokenize's answer (the model's, from Predictor::tokenize).
struct TeiToken {
  int64_t id = 0;
  std::string token;
  bool special = false;
  int64_t start = -1, end = -1;  // code points in the input
};
/// One input's tokens in TEI's shape: `text` the input's code points [start, stop) (a special
/// token: its own text, start and stop null).
nlohmann::json tei_tokens(std::string_view input, const std::vector<TeiToken>& tokens);

/// The code points [start, end) of UTF-8 `text` (a byte that is no valid UTF-8 counts as one; a
/// range past the end is cut there).
std::string code_point_slice(std::string_view text, int64_t start, int64_t end);

/// Cosine similarity of each of embeddings[1..] with embeddings[0] (0 where either is all zeros).
std::vector<double> cosine_to_first(const std::vector<std::vector<double>>& embeddings);

/// What /info says: TEI's Info fields and unif's.
struct TeiServerInfo {
  std::string model_id;     // the model directory's name
  std::string model_dtype;  // "float32", or "int8" with --quantize int8
  Task task = Task::Classification;
  std::vector<std::string> labels;  // the model's labels (classifiers)
  std::string pooling;              // embedding models: "mean", "cls", ...
  std::string accepted_records;     // framework::accepted_record_shapes
  int64_t max_concurrent_requests = 0, max_input_length = 0, max_batch_tokens = 0, max_batch_requests = 0,
          max_client_batch_size = 0, tokenization_workers = 0;
  std::string version;
};
/// TEI's Info: model_type {"classifier": {id2label, label2id}} (classification, multilabel),
/// {"reranker": {...}} (regression: one output, "LABEL_0"), {"embedding": {"pooling"}}; another
/// task: {"<task>": {}} (no TEI type); model_sha, sha, docker_label null; auto_truncate true.
nlohmann::json tei_info(const TeiServerInfo& info);

/// OpenAI's GET /v1/models list with one model.
nlohmann::json openai_model_list(const std::string& id, int64_t created);

}  // namespace unif::app::serve
