// Value equality of the config structs: every key of Fields<S> (config_fields.h) compared, nothing
// else (RunConfig::source is not a key).
#include "framework/config/config_fields.h"

namespace unif::framework {

namespace {

/// Compares a and b on each member pointer a Fields list names; rules and flags are ignored.
template <class S>
struct EqualVisitor {
  const S& a;
  const S& b;
  bool equal = true;

  template <class... How>
  void operator()(const char* /*key*/, const How&... how) {
    (compare(how), ...);
  }
  template <class M>
  void compare(M S::*member) {
    equal = equal && a.*member == b.*member;
  }
  template <class Other>
  void compare(const Other&) {}
};

template <class S>
bool equal_fields(const S& a, const S& b) {
  EqualVisitor<S> v{a, b};
  detail::Fields<S>::visit(v);
  return v.equal;
}

}  // namespace

bool operator==(const BertOverrides& a, const BertOverrides& b) { return equal_fields(a, b); }
bool operator==(const IntermediateConfig& a, const IntermediateConfig& b) { return equal_fields(a, b); }
bool operator==(const ModelConfig& a, const ModelConfig& b) { return equal_fields(a, b); }
bool operator==(const RetrievalFilesConfig& a, const RetrievalFilesConfig& b) { return equal_fields(a, b); }
bool operator==(const DataConfig& a, const DataConfig& b) { return equal_fields(a, b); }
bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) { return equal_fields(a, b); }
bool operator==(const ScheduleConfig& a, const ScheduleConfig& b) { return equal_fields(a, b); }
bool operator==(const TrainingConfig& a, const TrainingConfig& b) { return equal_fields(a, b); }
bool operator==(const LossConfig& a, const LossConfig& b) { return equal_fields(a, b); }
bool operator==(const EarlyStoppingConfig& a, const EarlyStoppingConfig& b) { return equal_fields(a, b); }
bool operator==(const FreezeConfig& a, const FreezeConfig& b) { return equal_fields(a, b); }
bool operator==(const DistillConfig& a, const DistillConfig& b) { return equal_fields(a, b); }
bool operator==(const ParallelConfig& a, const ParallelConfig& b) { return equal_fields(a, b); }
bool operator==(const AdversarialConfig& a, const AdversarialConfig& b) { return equal_fields(a, b); }
bool operator==(const SpanConfig& a, const SpanConfig& b) { return equal_fields(a, b); }
bool operator==(const EmbeddingConfig& a, const EmbeddingConfig& b) { return equal_fields(a, b); }
bool operator==(const CrfConfig& a, const CrfConfig& b) { return equal_fields(a, b); }
bool operator==(const GeneratorConfig& a, const GeneratorConfig& b) { return equal_fields(a, b); }
bool operator==(const ElectraPretrainingConfig& a, const ElectraPretrainingConfig& b) { return equal_fields(a, b); }
bool operator==(const RunConfig& a, const RunConfig& b) { return equal_fields(a, b); }

}  // namespace unif::framework
