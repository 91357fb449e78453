// Compiled once so that cmake/torch_pch.h becomes a precompiled header other targets reuse.
#include "torch_pch.h"
