// unif::metrics — evaluation metrics as pure C++ functions (no Torch), one header per task family.
// Include this header for all of them. Each `*_metrics` function returns a MetricSet ready for
// JSON; main_metric() names the key that selects the best checkpoint.
#pragma once
#include "framework/metrics/classification.h"
#include "framework/metrics/metric_set.h"
#include "framework/metrics/multilabel.h"
#include "framework/metrics/regression.h"
#include "framework/metrics/retrieval.h"
#include "framework/metrics/sequence_labeling.h"
#include "framework/metrics/span.h"
