// `unif serve`'s request decoding (SPEC §8), apart from the HTTP library so that the fuzz target
// (tests/fuzz/targets.cpp, "serve_request") reaches it alone: the body of `POST /v1/predict`,
// `{"inputs": [record, ...]}`, into its records, or the status and message of the answer that
// refuses it; and where a request ends in the bytes of its connection (frame_request).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace unif::app::serve {

struct PredictRequest {
  /// 200: `inputs` holds the records. 400: not JSON, nested too deep, or not an object with an
  /// "inputs" array. 415: a Content-Type other than JSON.
  int status = 200;
  std::string error;
  /// The records in order, as sent (a record that is not an object is answered with an error
  /// object by the predictor, not refused here).
  std::vector<nlohmann::json> inputs;
};

/// A JSON request body: 200 and its value, or 415 (a Content-Type other than JSON) or 400 (not
/// JSON) and the message. Content-Type and JSON rules as decode_predict_request's. Never throws.
struct JsonBody {
  int status = 200;
  std::string error;
  nlohmann::json value;
};
JsonBody decode_json_body(std::string_view body, std::string_view content_type);

/// Decodes a request body. `content_type` is the Content-Type header ("" when absent, which is
/// accepted): application/json or any +json type, parameters (charset=...) ignored. JSON is read
/// by parse_json (framework/common/json_input.h): at most kMaxJsonDepth levels deep, so every
/// record is safe to copy and print; strings must be valid UTF-8. Never throws for any input.
PredictRequest decode_predict_request(std::string_view body, std::string_view content_type);

/// Where one HTTP/1.1 request ends in the bytes a connection has sent (from the start of the
/// request), so that a request is read whole before a worker thread takes it: the head ends at the
/// first empty line; the body is `Content-Length` bytes, or chunks up to the last chunk and its
/// empty line (`Transfer-Encoding: chunked`, which wins over a length), or none (RFC 9112 6.3: a
/// request with neither has no body).
struct RequestFrame {
  enum class State {
    Incomplete,  // more bytes are needed
    Complete,    // the request is the first `size` bytes
    Unframed,    // its end cannot be known (a malformed head or chunk, a head over kMaxRequestHead, a
                 // body over max_body): the HTTP library reads what came and refuses it, and the
                 // connection is closed after the answer
  };
  State state = State::Incomplete;
  size_t size = 0;
  /// The request line's method and target, once that line is complete ("" before).
  std::string method, target;
  /// The head is complete, asks for `Expect: 100-continue`, and its body is yet to come.
  bool expects_continue = false;
};

/// The longest request head (request line and headers) read before the request is refused.
inline constexpr size_t kMaxRequestHead = 64 * 1024;

/// Frames the request at the start of `bytes`; `max_body`: the longest body taken (--max-body-bytes).
/// Never throws for any input.
RequestFrame frame_request(std::string_view bytes, size_t max_body);

}  // namespace unif::app::serve
