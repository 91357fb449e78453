// `unif serve`'s request decoding (SPEC §8), apart from the HTTP library so that the fuzz target
// (tests/fuzz/targets.cpp, "serve_request") reaches it alone: the body of `POST /v1/predict`,
// `{"inputs": [record, ...]}`, into its records, or the status and message of the answer that
// refuses it.
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

/// Decodes a request body. `content_type` is the Content-Type header ("" when absent, which is
/// accepted): application/json or any +json type, parameters (charset=...) ignored. JSON is read
/// by parse_json (framework/common/json_input.h): at most kMaxJsonDepth levels deep, so every
/// record is safe to copy and print; strings must be valid UTF-8. Never throws for any input.
PredictRequest decode_predict_request(std::string_view body, std::string_view content_type);

}  // namespace unif::app::serve
