// docs/cpp-api.md's inference example: load a model directory once, predict a batch of records.
// Usage: predict_api MODEL_DIR TEXT... (prints one JSON line per text, as `unif predict --top-k 2`)
#include <iostream>
#include <vector>

#include <unif/unif.h>

int main(int argc, char** argv) {
  if (argc < 3) return std::cerr << "usage: predict_api MODEL_DIR TEXT...\n", 2;
  unif::init_runtime(argc, argv);  // threads and the BLAS kernels as `unif` sets them (may re-exec once)
  try {
    unif::PredictorOptions options;  // device "cpu", batch_size 32, threads 0 = automatic
    options.top_k = 2;               // classification: "top", the 2 best labels with their scores
    const auto predictor = unif::Predictor::load(argv[1], options);
    std::vector<nlohmann::json> records;
    for (int i = 2; i < argc; ++i) records.push_back({{"text", argv[i]}});
    for (const unif::Prediction& p : predictor.predict(records)) {
      if (p.ok() && p.task == unif::Task::Classification)
        std::cerr << p.label << " (" << p.scores.front().score << ")\n";  // typed: label, scores by name
      std::cout << p.to_json().dump() << "\n";                            // the line `unif predict` writes
    }
  } catch (const unif::UserError& e) { return std::cerr << "error: " << e.what() << "\n", 2; }
}
