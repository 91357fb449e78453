// The config's closed choices (SPEC §3, §7) as enums, each with its one table of YAML names: the
// reader parses with it, the writer writes with it, and "expected one of ..." messages list it.
// Precision's table is in framework/common/precision_names.h (the autocast code shares it).
// No YAML, no Torch.
#pragma once
#include <array>

#include "framework/common/enum_names.h"
#include "framework/common/precision_names.h"

namespace unif::framework {

using unif::Precision;  // training.precision

/// training.optimizer.name
enum class OptimizerKind { AdamW, Sgd, Lamb };
inline constexpr std::array<EnumName<OptimizerKind>, 3> kOptimizerNames{
    {{OptimizerKind::AdamW, "adamw"}, {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Lamb, "lamb"}}};
constexpr const auto& enum_names(OptimizerKind) { return kOptimizerNames; }

/// training.schedule.name
enum class ScheduleKind { Linear, Constant, Cosine };
inline constexpr std::array<EnumName<ScheduleKind>, 3> kScheduleNames{
    {{ScheduleKind::Linear, "linear"}, {ScheduleKind::Constant, "constant"}, {ScheduleKind::Cosine, "cosine"}}};
constexpr const auto& enum_names(ScheduleKind) { return kScheduleNames; }

/// training.resume: one of these names, or else a checkpoint path (Resume::Path, the path beside it).
enum class Resume { Auto, Never, Overwrite, Path };
inline constexpr std::array<EnumName<Resume>, 3> kResumeNames{
    {{Resume::Auto, "auto"}, {Resume::Never, "never"}, {Resume::Overwrite, "overwrite"}}};
constexpr const auto& enum_names(Resume) { return kResumeNames; }

/// training.nonfinite: what a step whose loss or gradient norm is not finite does.
enum class NonFinite { Error, Skip };
inline constexpr std::array<EnumName<NonFinite>, 2> kNonFiniteNames{
    {{NonFinite::Error, "error"}, {NonFinite::Skip, "skip"}}};
constexpr const auto& enum_names(NonFinite) { return kNonFiniteNames; }

/// adversarial.method
enum class AdversarialMethod { None, Fgm, Pgd, FreeLb, FreeAt, Smart, RDrop };
inline constexpr std::array<EnumName<AdversarialMethod>, 7> kAdversarialMethodNames{
    {{AdversarialMethod::None, "none"},
     {AdversarialMethod::Fgm, "fgm"},
     {AdversarialMethod::Pgd, "pgd"},
     {AdversarialMethod::FreeLb, "freelb"},
     {AdversarialMethod::FreeAt, "freeat"},
     {AdversarialMethod::Smart, "smart"},
     {AdversarialMethod::RDrop, "rdrop"}}};
constexpr const auto& enum_names(AdversarialMethod) { return kAdversarialMethodNames; }

/// span.metric: which script's EM/F1 is "exact_match"/"f1" (auto: cmrc for Chinese data, else squad).
enum class SpanMetric { Auto, Squad, Cmrc };
inline constexpr std::array<EnumName<SpanMetric>, 3> kSpanMetricNames{
    {{SpanMetric::Auto, "auto"}, {SpanMetric::Squad, "squad"}, {SpanMetric::Cmrc, "cmrc"}}};
constexpr const auto& enum_names(SpanMetric) { return kSpanMetricNames; }

/// distill.intermediate.layers: which student layer learns from which teacher layer. None (the
/// section absent: logits only) is YAML null, Pairs the list of [student, teacher] pairs itself.
enum class LayerMap { None, Uniform, Pairs };
inline constexpr std::array<EnumName<LayerMap>, 1> kLayerMapNames{{{LayerMap::Uniform, "uniform"}}};
constexpr const auto& enum_names(LayerMap) { return kLayerMapNames; }

/// training.loss.class_weights: null (None), balanced, or a list of weights (List). Only "balanced" is
/// written as a name; None is YAML null and List the list itself.
enum class ClassWeights { None, Balanced, List };
inline constexpr std::array<EnumName<ClassWeights>, 1> kClassWeightsNames{{{ClassWeights::Balanced, "balanced"}}};
constexpr const auto& enum_names(ClassWeights) { return kClassWeightsNames; }

}  // namespace unif::framework
