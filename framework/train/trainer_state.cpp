// TrainerState: see trainer_state.h.
#include "framework/train/trainer_state.h"

#include <cmath>

namespace unif::framework {

using nlohmann::json;

namespace {
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double number_or_nan(const json& v) { return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>(); }
}  // namespace

json TrainerState::to_json() const {
  json st{{"step", step},
          {"epoch", epoch},
          {"batch_in_epoch", batch_in_epoch},
          {"best_metric", number_or_null(best_metric)},
          {"best_step", best_step},
          {"seed", seed},
          {"skipped_steps", skipped_steps},
          {"identity", identity},
          {"config", config},
          {"early_stopping",
           {{"best", number_or_null(early_stopping.best)},
            {"wait", early_stopping.wait},
            {"stopped", early_stopping.stopped}}}};
  if (loss_scale) {
    st["loss_scale"] = loss_scale->scale;
    st["loss_scale_good_steps"] = loss_scale->good_steps;
    st["loss_scale_skipped_steps"] = loss_scale->skipped_steps;
  }
  return st;
}

TrainerState TrainerState::from_json(const json& st) {
  TrainerState s;
  s.step = st.at("step").get<int64_t>();
  s.epoch = st.at("epoch").get<int64_t>();
  s.batch_in_epoch = st.at("batch_in_epoch").get<int64_t>();
  if (st.contains("best_metric")) s.best_metric = number_or_nan(st.at("best_metric"));  // null: no best yet
  s.best_step = st.value("best_step", int64_t{-1});
  s.seed = st.value("seed", int64_t{0});
  s.skipped_steps = st.value("skipped_steps", int64_t{0});
  if (st.contains("identity") && st.at("identity").is_object()) s.identity = st.at("identity");
  if (st.contains("config") && st.at("config").is_string()) s.config = st.at("config").get<std::string>();
  if (st.contains("early_stopping")) {
    const auto& es = st.at("early_stopping");
    s.early_stopping.best = number_or_nan(es.at("best"));
    s.early_stopping.wait = es.at("wait").get<int64_t>();
    s.early_stopping.stopped = es.at("stopped").get<bool>();
  }
  if (st.contains("loss_scale"))
    s.loss_scale = LossScaleState{st.at("loss_scale").get<double>(), st.at("loss_scale_good_steps").get<int64_t>(),
                                  st.value("loss_scale_skipped_steps", int64_t{0})};
  return s;
}

}  // namespace unif::framework
