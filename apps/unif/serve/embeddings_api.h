// The embedding routes of `unif serve` that other servers' clients call, apart from the HTTP library
// (as request.h): text-embeddings-inference's `POST /embed` and the OpenAI embeddings API's
// `POST /v1/embeddings`. Each decodes its request into texts and options, and renders the
// embeddings in its own answer shape; errors in each API's own error shape.
//
//   TEI     {"inputs": "text" | ["text", ...], "normalize": true, "truncate": false,
//            "truncation_direction": "right", "prompt_name": null, "dimensions": null}
//           -> [[float, ...], ...]   (one per input, also for a single string)
//           errors: {"error": "...", "error_type": "Validation"} (422; 413 for too many inputs)
//   OpenAI  {"input": "text" | ["text", ...], "model": "...", "encoding_format": "float" | "base64",
//            "dimensions": N, "user": "..."}
//           -> {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...] or
//              "base64 of little-endian float32"}], "model": "...", "usage": {"prompt_tokens": T,
//              "total_tokens": T}}   (embeddings L2-normalized, as OpenAI's are)
//           errors: {"error": {"message": "...", "type": "invalid_request_error", "param": ..., "code": null}}
//
// Inputs are truncated to the model's max_seq_length (TEI's `truncate: true`): a longer text is
// embedded from its first tokens, never refused.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace unif::app::serve {

enum class EmbeddingApi { Tei, OpenAi };

struct EmbedRequest {
  /// 200: `texts` to embed. Else the status and `error` (the message; answer_embed_error shapes it).
  int status = 200;
  std::string error;
  std::string param;  // OpenAI: the request field the error is about
  std::vector<std::string> texts;
  /// L2-normalize each (cut) embedding: TEI's `normalize` (default true); always for OpenAI.
  bool normalize = true;
  /// Keep the first `dimensions` features (0: all).
  int64_t dimensions = 0;
  /// OpenAI `encoding_format: base64`.
  bool base64 = false;
  /// OpenAI: the `model` named by the request, echoed in the answer.
  std::string model;
};

/// Decodes `POST /embed` (Tei) or `POST /v1/embeddings` (OpenAi). `max_inputs`: the most texts one
/// request may hold (TEI's --max-client-batch-size; 413 above it). Never throws.
EmbedRequest decode_embed_request(EmbeddingApi api, std::string_view body, std::string_view content_type,
                                  size_t max_inputs);

/// The embedding as the request asks: its first `dimensions` features, then L2-normalized when
/// `normalize` (a zero vector stays zero).
std::vector<float> shape_embedding(const std::vector<double>& embedding, int64_t dimensions, bool normalize);

/// The answer body: TEI's array of arrays, or OpenAI's list object (`tokens`: the inputs' tokens,
/// special tokens counted).
nlohmann::json embed_answer(EmbeddingApi api, const EmbedRequest& request,
                            const std::vector<std::vector<float>>& embeddings, int64_t tokens);

/// The error body of each API for `message` (`param`: OpenAI's field name, "" for none).
nlohmann::json embed_error(EmbeddingApi api, const std::string& message, const std::string& param = "");

/// Standard base64 (RFC 4648, padded) of `bytes`: OpenAI's base64 encoding of float32 vectors.
std::string base64_encode(std::string_view bytes);

}  // namespace unif::app::serve
